"""Per-trial rows stay bit-identical across refactors: a small sweep of every built-in kind against
sha256 digests of its metric columns recorded before (tests/data/reference_rows.json).

The file lists, per kind, the metrics it hashed (`metrics`, in hashing order); only those are
checked. A kind that gains a metric (a new algorithm version: old stores are refused, not mixed)
keeps its recorded list, and the test then proves that the metrics it had are unchanged
(noisy_attention's sq_err_next, algorithm version 3). A change of the recorded numbers themselves
is only legitimate with a new algorithm version: regenerate the file in the same commit and say why."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from attnsim.config.grid import expand
from attnsim.config.load import load
from attnsim.kinds import get_kind
from attnsim.run.simulate import simulate_points

REFERENCE = json.loads((Path(__file__).parent / "data" / "reference_rows.json").read_text())


def digests(threads: int) -> dict[str, str]:
    settings = load(REFERENCE["config"])
    out = {}
    for experiment in settings.experiments.values():
        kind = get_kind(experiment.kind)
        points = expand(experiment)
        results = simulate_points(kind, settings.seed, experiment.trials, points, threads=threads)
        for point in points:
            h = hashlib.sha256()
            for metric in REFERENCE["metrics"][kind.name]:
                h.update(metric.encode())
                h.update(np.ascontiguousarray(results[point.id][metric], dtype=np.float64).tobytes())
            out[point.id] = h.hexdigest()
    return out


@pytest.mark.parametrize("threads", [1, 2])
def test_rows_equal_the_recorded_digests(threads):
    got = digests(threads)
    expected = REFERENCE["rows_sha256"]
    assert set(got) == set(expected), "point ids changed"
    changed = [pid for pid in expected if got[pid] != expected[pid]]
    assert not changed, f"{len(changed)} of {len(expected)} points have different rows (first: {changed[0]})"


def test_recorded_metrics_are_still_metrics_of_their_kind():
    """A recorded metric that a kind no longer has would make the digest test fail obscurely; a kind's
    recorded list is a subset of its metrics (new metrics may be added, none removed)."""
    for name, recorded in REFERENCE["metrics"].items():
        current = [m.name for m in get_kind(name).metrics]
        assert set(recorded) <= set(current), (name, sorted(set(recorded) - set(current)))
