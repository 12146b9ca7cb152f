"""Grid points: the cartesian product of an experiment's lists, with stable ids.

Points are enumerated in the kind's parameter order, so points that share
random draws (same stream, e.g. differing only in noise_scale) sit side by
side and usually land in the same chunk.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import pyarrow as pa

from attnsim.kinds import as_kind, get_kind
from attnsim.kinds.base import Kind
from attnsim.seeding import canonical_value, digest, point_id


@dataclass(frozen=True)
class Point:
    kind: str
    params: dict  # parameter name -> canonical value, in the kind's order
    id: str
    stream: str  # id of the random stream (shared by common-random-number siblings)


def make_point(kind: Kind | str, params: dict) -> Point:
    kind = as_kind(kind)
    canonical = {}
    for column in kind.params:
        value = params[column.name]
        if pa.types.is_floating(column.type):
            value = float(value)
        elif pa.types.is_integer(column.type):
            value = int(value)
        canonical[column.name] = canonical_value(value)
    stream = digest({"kind": kind.name, "stream": {k: canonical[k] for k in kind.stream_params}})
    return Point(kind=kind.name, params=canonical, id=point_id(kind.name, canonical), stream=stream)


def expand(experiment) -> list[Point]:
    """All points of an experiment (anything with `.kind` and `.grid`), in enumeration order."""
    kind = get_kind(experiment.kind)
    names = kind.param_names
    lists = [experiment.grid[name] for name in names]
    return [make_point(kind, dict(zip(names, values))) for values in itertools.product(*lists)]


def chunk(points: list[Point], size: int, costs: list[float] | None = None, budget: float = math.inf) -> list[list[Point]]:
    """Consecutive runs that end once they hold `size` points or, given per-point `costs`, once
    their cost reaches `budget` (so a run exceeds the budget by less than its last point's cost).

    Whether a run ends depends only on its own points, never on the point after it, so removing
    finished chunks from the pending list and re-chunking what is left reproduces the other
    chunks: a job that re-plans (on a cluster node) finds its own chunk again.
    """
    costs = [0.0] * len(points) if costs is None else costs
    chunks: list[list[Point]] = []
    run: list[Point] = []
    spent = 0.0
    for point, cost in zip(points, costs, strict=True):
        run.append(point)
        spent += cost
        if len(run) == size or spent >= budget:
            chunks.append(run)
            run, spent = [], 0.0
    return chunks + [run] if run else chunks


def chunk_id(points: list[Point]) -> str:
    return digest([p.id for p in points])
