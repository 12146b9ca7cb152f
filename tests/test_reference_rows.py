"""Per-trial rows stay bit-identical across refactors: a small sweep of every built-in kind against
sha256 digests of its metric columns recorded before (tests/data/reference_rows.json).

A change of these numbers is only legitimate with a new algorithm version of the kind (old stores
are then refused, not mixed): regenerate the file in the same commit and say why."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from attnsim.config import load
from attnsim.grid import expand
from attnsim.kinds import get_kind
from attnsim.simulate import simulate_points

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
            for metric in kind.metrics:
                h.update(metric.name.encode())
                h.update(np.ascontiguousarray(results[point.id][metric.name], dtype=np.float64).tobytes())
            out[point.id] = h.hexdigest()
    return out


@pytest.mark.parametrize("threads", [1, 2])
def test_rows_equal_the_recorded_digests(threads):
    got = digests(threads)
    expected = REFERENCE["rows_sha256"]
    assert set(got) == set(expected), "point ids changed"
    changed = [pid for pid in expected if got[pid] != expected[pid]]
    assert not changed, f"{len(changed)} of {len(expected)} points have different rows (first: {changed[0]})"
