"""Every kernel's output is checked before it is stored (issue 22 item 3): a plugin kernel that
returns 19 values for 20 trials, a (trials, 2) array or NaN where its kind does not declare it
fails the job with one line naming the kind, the metric and the point; nothing is written."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers.points import make_point, spec_of_points

from attnsim import kinds as registry_module
from attnsim.cli.main import main
from attnsim.errors import KernelOutputError
from attnsim.jobs.simulate import simulate_points
from attnsim.kinds import get_kind
from attnsim.records.experiment import TrialSettings
from attnsim.store import parquet as store

BASE = get_kind("temperature_entropy")
POINT = dict(n=16, d=3, tau=1.0)


def broken(name: str, damage) -> object:
    """temperature_entropy under another name, its kernel's output passed through `damage`."""

    def simulate_block(rng, trials, points):
        out = BASE.compute.simulate_block(rng, trials, points)
        return [damage(dict(m), trials) for m in out]

    compute = dataclasses.replace(BASE.compute, simulate_block=simulate_block)
    return dataclasses.replace(BASE, name=name, compute=compute)


def short(m, trials):
    m["entropy"] = m["entropy"][:-1]
    return m


def wide(m, trials):
    m["gap"] = np.stack([m["gap"], m["gap"]], axis=1)
    return m


def nan(m, trials):
    m["entropy"] = m["entropy"].copy()
    m["entropy"][3] = np.nan
    return m


def strings(m, trials):
    m["gap"] = np.array(["x"] * trials)
    return m


def as_bool(m, trials):
    m["gap"] = m["gap"] > 0.1
    return m


def as_list(m, trials):
    m["gap"] = m["gap"].tolist()
    return m


def int64_max(m, trials):
    """2**63 - 1 would be stored as 2**63 (float64's nearest)."""
    m["gap"] = np.full(trials, np.iinfo(np.int64).max)
    return m


def uint64_max(m, trials):
    m["gap"] = np.full(trials, np.iinfo(np.uint64).max)
    return m


def as_float16(m, trials):
    m["gap"] = m["gap"].astype(np.float16)
    return m


def ragged(m, trials):
    m["gap"] = [[0.5]] * (trials - 1) + [[0.5, 0.5]]  # np.asarray of it raised a ValueError
    return m


def missing(m, trials):
    del m["gap"]
    return m


@pytest.mark.parametrize(
    ("damage", "needle"),
    [
        (short, "metric entropy, point {pid} (n=16, d=3, tau=1.0): 19 values for 20 trials"),
        (
            wide,
            "metric gap, point {pid} (n=16, d=3, tau=1.0): an array of shape (20, 2), not one "
            "value per trial (20,)",
        ),
        (
            nan,
            "metric entropy, point {pid} (n=16, d=3, tau=1.0): 1 of 20 values are NaN, which the "
            "kind does not declare",
        ),
        (
            strings,
            "metric gap, point {pid} (n=16, d=3, tau=1.0): values of dtype <U1, not float64 or "
            "float32",
        ),
        (as_bool, "metric gap, point {pid} (n=16, d=3, tau=1.0): values of dtype bool, not"),
        (as_list, "metric gap, point {pid} (n=16, d=3, tau=1.0): values given as a list, not a"),
        (int64_max, "metric gap, point {pid} (n=16, d=3, tau=1.0): values of dtype int64, not"),
        (uint64_max, "metric gap, point {pid} (n=16, d=3, tau=1.0): values of dtype uint64, not"),
        (as_float16, "metric gap, point {pid} (n=16, d=3, tau=1.0): values of dtype float16, not"),
        (ragged, "metric gap, point {pid} (n=16, d=3, tau=1.0): values given as a list, not a"),
        (
            missing,
            "point {pid} (n=16, d=3, tau=1.0): simulate_block's output has missing metric gap",
        ),
    ],
)
def test_bad_kernel_output_is_refused_naming_kind_metric_and_point(damage, needle):
    kind = broken("plugin_kind", damage)
    point = make_point(BASE, POINT)
    with pytest.raises(KernelOutputError) as error:
        simulate_points(kind, TrialSettings(1, 20), [point])
    text = str(error.value)
    assert (
        text.startswith("kind plugin_kind, ")
        and needle.format(pid=point.id) in text
        and "\n" not in text
    ), text


def test_float32_passes_and_is_stored_exactly():
    def narrow(m, trials):
        m["gap"] = m["gap"].astype(np.float32)
        return m

    point = make_point(BASE, POINT)
    out = simulate_points(broken("plugin_kind", narrow), TrialSettings(1, 20), [point])[point.id]
    assert out["gap"].dtype == np.float32


def test_nan_is_allowed_where_declared():
    kind = broken("plugin_kind", nan)
    summary = dataclasses.replace(kind.summary, finite_metrics=("entropy",))
    kind = dataclasses.replace(kind, summary=summary)
    out = simulate_points(kind, TrialSettings(1, 20), [make_point(BASE, POINT)])
    assert np.isnan(next(iter(out.values()))["entropy"]).sum() == 1


def test_the_job_fails_with_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    kind = broken("temperature_entropy", short)  # the registered name: the job looks it up
    kinds, broken_kinds = registry_module.registry()
    monkeypatch.setitem(kinds, "temperature_entropy", kind)
    point = make_point(BASE, POINT)
    spec = spec_of_points("temperature", kind, 1, 20, (point,))
    output = store.chunk_path(tmp_path, "temperature_entropy", "temperature", spec.id)
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(spec.to_json())
    assert main(["simulate", "--spec-file", str(spec_file), "--output", str(output)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"attnsim: error: kind temperature_entropy, metric entropy, point {point.id} (n=16, d=3, "
        "tau=1.0): 19 values for 20 trials"
    ]
    assert not output.exists() and not list(tmp_path.rglob("*.parquet"))


def test_every_built_in_kind_passes_on_a_small_point():
    """The check does not refuse what the built-in kinds produce (inf where kappa is infinite)."""
    point = make_point(
        "noisy_attention",
        dict(n=16, d=2, logit_scale=1.0, noise="student_t", noise_draws=2, noise_scale=0.5),
    )
    out = simulate_points(get_kind("noisy_attention"), TrialSettings(1, 8), [point])[point.id]
    assert np.isinf(out["kappa"]).all()  # student_t's default df has no finite kappa: declared
