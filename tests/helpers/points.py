"""Points, chunk specs and noise made by hand, for tests and benchmarks: the run itself makes its
points from the columnar grid (`attnsim.records.grid`) and its specs in the planner."""

from __future__ import annotations

import numpy as np

from attnsim.kernels.noise import standard_noise32
from attnsim.kinds import as_kind
from attnsim.kinds.base import Kind
from attnsim.records.chunk import ChunkSpec
from attnsim.records.experiment import TrialSettings
from attnsim.records.grid import Point, points_from_rows


def make_point(kind: Kind | str, params: dict) -> Point:
    """One point from a mapping of parameter values (defaults filled in), through the same path
    as every chunk's points (`points_from_rows`)."""
    kind = as_kind(kind)
    values = [
        params[p.name] if p.default is None else params.get(p.name, p.default)
        for p in kind.schema.params
    ]
    return points_from_rows(kind, [values])[0]


def spec_of_points(
    experiment: str, kind: Kind, seed: int, trials: int, points, extends: str | None = None
) -> ChunkSpec:
    """A chunk spec of `Point`s (a spec holds rows of parameter values) at fixed trials."""
    rows = tuple(tuple(p.params[k] for k in kind.param_names) for p in points)
    return ChunkSpec(experiment, kind, TrialSettings(seed, trials), rows, extends)


def standard_noise(rng: np.random.Generator, family: str, shape) -> np.ndarray:
    """The kernels' float32 noise draws (`standard_noise32`), widened to float64."""
    return standard_noise32(rng, family, shape).astype(np.float64)
