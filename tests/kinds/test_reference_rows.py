"""Per-trial rows stay the same across refactors, per CPU class bit for bit and across classes
within the stated tolerance (docs/science.md §8.4, docs/usage.md "Reproducibility").

Each built-in kind has a small reference sweep in tests/data/reference_rows/<kind>.json with the
sha256 digests of its rows per CPU class (`attnsim.records.cpu.cpu_class`: numpy's SIMD dispatch
level and OpenBLAS's core, e.g. X86_V4-SkylakeX, X86_V3-Haswell) and per-point values (finite
count, mean, min, median, max of every hashed metric). On a recorded class the rows must be
bit-identical; on any other class each value must lie within rtol = 1e-4 of the point's scale.

After a deliberate change of a kind's rows (a new algorithm_version; say why in the commit),
regenerate that kind's file in the same commit, from the repository's root:

    python -m tests.helpers.reference_rows record KIND            # this machine's CPU class only
    python -m tests.helpers.reference_rows record KIND --all-metrics   # also hash metrics added
    since python -m tests.helpers.reference_rows record NEW_KIND --config sweep.yaml   # a new
    kind's sweep python -m tests.helpers.reference_rows check [KIND ...]       # what this test
    checks, as JSON

Recording replaces the digests of the other classes when this class's digests changed (they are
then checked within the tolerance), and keeps them otherwise. A kind that gains a metric keeps
its recorded list (noisy_attention's sq_err_next, algorithm version 3): the test then proves that
the metrics it had are unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest
from helpers import reference_rows as rr

from attnsim.kinds import get_kind
from attnsim.records import cpu

REPO = rr.DATA.parents[2]
KINDS = rr.kind_names()


def test_every_built_in_synthetic_kind_has_reference_rows():
    assert {"noisy_attention", "logit_entropy", "init_gradient", "temperature_entropy"} <= set(
        KINDS
    )


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", KINDS)
def test_rows_equal_the_reference(kind, threads):
    result = rr.check(kind, threads)
    assert result["ids_match"], f"{kind}: point ids changed"
    failed = result["failed"]
    if result["mode"] == "digests":
        assert not failed, (
            f"{kind} on {result['class']}: {len(failed)} of {result['points']} points have "
            f"different rows (first: {failed[0]})"
        )
    else:
        warnings.warn(
            f"{kind}: no digests recorded for CPU class {result['class']} (recorded: "
            f"{', '.join(result['recorded_classes'])}); "
            f"rows checked within rtol {result['rtol']:g} instead (worst {result['worst']:.1e})",
            stacklevel=1,
        )
        assert not failed, (
            f"{kind} on {result['class']}: {len(failed)} values outside the cross-class tolerance "
            f"(first: {failed[0]})"
        )


@pytest.mark.parametrize("kind", KINDS)
def test_recorded_values_are_this_class_rows(kind):
    """On the class the values were recorded on, they are the rows' exact statistics (a file whose
    values and digests disagree would make the tolerance check test something else)."""
    reference = rr.read(kind)
    if reference["values_class"] != cpu.cpu_class():
        pytest.skip(f"values recorded on {reference['values_class']}, this is {cpu.cpu_class()}")
    got = rr.values_of(rr.rows(reference, 1), reference["metrics"])
    # NaN == NaN here
    assert json.dumps(got, sort_keys=True) == json.dumps(reference["values"], sort_keys=True)


def disable_from_current_level() -> str:
    """NPY_DISABLE_CPU_FEATURES that drops numpy's dispatch from AVX-512 to AVX2: the other CPU
    class's numpy side (skipped on an AVX2 machine: its other class has more, not less)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    level = cpu.numpy_dispatch()
    if level != "X86_V4":  # the machine kind's classes are X86_V4 and X86_V3 (x86-64-v2 is not one)
        pytest.skip(
            f"numpy dispatches {level}: the other CPU class of this machine kind (AVX-512) cannot "
            "be emulated here"
        )
    order = list(__cpu_dispatch__)
    return " ".join(order[order.index(level) :])


def test_another_numpy_dispatch_is_within_the_tolerance():
    """The other CPU class's numpy side, emulated: numpy's SIMD loops one level down (OpenBLAS's
    core stays; its core-type variables are never changed here). Rows change in their last bits
    (so digests differ, or the check would not test the tolerance) and stay within it."""
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": disable_from_current_level()}
    run = subprocess.run(
        [sys.executable, "-m", "tests.helpers.reference_rows", "check"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    results = json.loads(run.stdout)
    assert all(r["class"] != cpu.cpu_class() for r in results), (
        "the emulation did not change the CPU class"
    )
    for r in results:
        assert r["ids_match"] and not r["failed"], (r["kind"], r["class"], r["failed"][:3])
    tolerance_checked = [r for r in results if r["mode"] == "tolerance"]
    assert any(r["worst"] > 0 for r in tolerance_checked) or not tolerance_checked, (
        "no row changed: the emulation tested nothing"
    )
    assert run.returncode == 0, run.stderr[-2000:]


def test_recorded_metrics_are_still_metrics_of_their_kind():
    """A recorded metric that a kind no longer has would make the digest test fail obscurely; a
    kind's recorded list is a subset of its metrics (new metrics may be added, none removed)."""
    for name in KINDS:
        recorded = rr.read(name)["metrics"]
        current = [m.name for m in get_kind(name).schema.metrics]
        assert set(recorded) <= set(current), (name, sorted(set(recorded) - set(current)))


def test_tolerance_check_fails_outside_the_tolerance():
    ref = [10, 1.0, -2.0, 0.5, 3.0]  # scale 3
    assert rr.within_tolerance(list(ref), ref, 1e-4)
    assert rr.within_tolerance([10, 1.0 + 2.9e-4, -2.0, 0.5, 3.0], ref, 1e-4)
    assert not rr.within_tolerance([10, 1.0 + 3.1e-4, -2.0, 0.5, 3.0], ref, 1e-4)
    assert not rr.within_tolerance([9, 1.0, -2.0, 0.5, 3.0], ref, 1e-4), (
        "a trial that became non-finite"
    )


def test_recorder_keeps_other_classes_only_while_rows_are_unchanged(tmp_path, monkeypatch):
    monkeypatch.setattr(rr, "DATA", tmp_path / "tests" / "data" / "reference_rows")
    config = {
        "seed": 3,
        "experiments": {
            "t": {
                "kind": "temperature_entropy",
                "trials": 5,
                "grid": {"n": [8], "d": [3], "tau": [1.0]},
            }
        },
    }
    line = rr.record("temperature_entropy", config)
    here = cpu.cpu_class()
    assert here in line
    reference = rr.read("temperature_entropy")
    assert list(reference["digests"]) == [here] and reference["values_class"] == here
    assert reference["metrics"] == [m.name for m in get_kind("temperature_entropy").schema.metrics]
    reference["digests"]["OTHER-Class"] = {"x": "y"}
    rr.write("temperature_entropy", reference)
    rr.record("temperature_entropy")
    assert set(rr.read("temperature_entropy")["digests"]) == {here, "OTHER-Class"}, (
        "unchanged rows keep other classes"
    )
    reference = rr.read("temperature_entropy")
    # as if the rows changed
    reference["digests"][here] = {pid: "0" * 64 for pid in reference["digests"][here]}
    rr.write("temperature_entropy", reference)
    line = rr.record("temperature_entropy")
    assert "dropped" in line and "OTHER-Class" in line
    assert list(rr.read("temperature_entropy")["digests"]) == [here]
    assert rr.check("temperature_entropy")["failed"] == []
