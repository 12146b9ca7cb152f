"""Grid points written plainly, one at a time: the definitions the columnar code in
`attnsim.records.grid` and `attnsim.plan.sweep` is tested against.

A point's id is the first 16 hex digits of the sha256 of the JSON text of its kind and its
canonical parameter values with sorted keys (a parameter declared `id_omits_default` left out at
its default, a value the kind has renamed written under its old name); its stream's id the same
of its kind and the values of the parameters that shape its random draws.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math

import pyarrow as pa

from attnsim.errors import ConfigError
from attnsim.kinds import as_kind, get_kind
from attnsim.records.grid import Point
from attnsim.seeding import canonical_value


def digest(payload) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def point_id(kind: str, params: dict) -> str:
    """The canonical definition of a point's id: a parameter the kind declares `id_omits_default`
    is named only off its default (a kind that is not registered omits nothing); a value renamed
    after points were stored (`Param.renamed`) is written under its old name, so it keeps them."""
    try:
        declared = get_kind(kind).schema.params
    except ConfigError:  # a made-up kind name
        declared = ()
    omitted = {c.name: canonical_value(c.default) for c in declared if c.id_omits_default}
    old_names = {c.name: {new: old for old, new in c.renamed} for c in declared}
    named = {
        k: canonical_value(old_names.get(k, {}).get(v, v))
        for k, v in params.items()
        if not (k in omitted and canonical_value(v) == omitted[k])
    }
    return digest({"kind": kind, "params": named})


def reference_point(kind, params: dict) -> Point:
    """One point from a mapping of values (defaults filled in), canonicalised value by value."""
    kind = as_kind(kind)
    canonical = {}
    for column in kind.schema.params:
        value = (
            params[column.name]
            if column.default is None
            else params.get(column.name, column.default)
        )
        if pa.types.is_floating(column.type):
            value = float(value)
        elif pa.types.is_integer(column.type):
            value = int(value)
        else:  # an old name of a renamed value: the name now
            value = dict(column.renamed).get(value, value)
        canonical[column.name] = canonical_value(value)
    old_names = {c.name: {new: old for old, new in c.renamed} for c in kind.schema.params}
    stream = digest(
        {
            "kind": kind.name,
            "stream": {
                k: old_names[k].get(canonical[k], canonical[k]) for k in kind.schema.stream_params
            },
        }
    )
    return Point(kind=kind.name, params=canonical, id=point_id(kind.name, canonical), stream=stream)


def expand(experiment) -> list[Point]:
    """All points of an experiment (anything with `.kind` and `.grid`), in enumeration order: the
    cartesian product of its lists in the kind's parameter order."""
    kind = get_kind(experiment.kind)
    names = kind.param_names
    lists = [experiment.grid[name] for name in names]
    return [reference_point(kind, dict(zip(names, values))) for values in itertools.product(*lists)]


def chunk(points: list, size: int, costs: list[float] | None = None, budget: float = math.inf):
    """Consecutive runs that end once they hold `size` points or, given per-point `costs`, once
    their cost reaches `budget` (so a run exceeds the budget by less than its last point's cost).

    Whether a run ends depends only on its own points, never on the point after it, so removing
    finished chunks from the pending list and re-chunking what is left reproduces the other
    chunks: a job that re-plans (on a cluster node) finds its own chunk again."""
    costs = [0.0] * len(points) if costs is None else costs
    chunks: list[list] = []
    run: list = []
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
