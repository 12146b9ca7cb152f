"""Grid points: the cartesian product of an experiment's lists, with stable ids.

Points are enumerated in the kind's parameter order, so points that share
random draws (same stream, e.g. differing only in noise_scale) sit side by
side and usually land in the same chunk.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from attnsim.kinds import as_kind, get_kind
from attnsim.kinds.base import Kind
from attnsim.seeding import ID_HEX_DIGITS, canonical_value, digest, point_id


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
        value = (
            params[column.name]
            if column.default is None
            else params.get(column.name, column.default)
        )
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


def chunk(
    points: list[Point], size: int, costs: list[float] | None = None, budget: float = math.inf
) -> list[list[Point]]:
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


# ----------------------------------------------------------------------------------------------
# Columnar grids: a million points without a million Python objects.
#
# An experiment's grid is held as one list of canonical values per parameter and, per point, one
# index array per parameter (the cartesian product in enumeration order). Point ids are the same
# sha256 of the same canonical JSON text as `seeding.point_id`: the text is assembled from each
# value's JSON rendering with a per-kind template and hashed in a tight loop (tests compare the
# two on every kind). `Point` objects are made only for the chunk a job computes.


def canonical_column_value(param, value):
    """A grid value as `make_point` canonicalises it: floats as floats, integers as ints."""
    if pa.types.is_floating(param.type):
        value = float(value)
    elif pa.types.is_integer(param.type):
        value = int(value)
    return canonical_value(value)


def _json(value) -> str:
    return json.dumps(value, allow_nan=False)


def _id_template(kind: Kind) -> str:
    """A str.format template of the canonical JSON text of a point id: `{i}` is the i-th parameter
    in the kind's order, placed where `json.dumps(..., sort_keys=True)` puts it."""
    names = kind.param_names
    esc = lambda text: text.replace("{", "{{").replace("}", "}}")
    fields = ",".join(f"{esc(_json(name))}:{{{names.index(name)}}}" for name in sorted(names))
    return "{{" + f'"kind":{esc(_json(kind.name))},"params":{{{{' + fields + "}}}}"


def _hash_texts(template: str, rows) -> list[str]:
    sha256, fmt, n = hashlib.sha256, template.format, ID_HEX_DIGITS
    return [sha256(fmt(*row).encode()).hexdigest()[:n] for row in rows]


@dataclass(frozen=True)
class GridColumns:
    """An experiment's grid as columns: `values[name]` (canonical, distinct) and, per point in
    enumeration order, `index[name]` into it."""

    kind: Kind
    values: dict[str, list]

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.values.values())

    @cached_property
    def index(self) -> dict[str, np.ndarray]:
        size, stride, index = self.size, self.size, {}
        for name in self.kind.param_names:
            count = len(self.values[name])
            stride //= count
            index[name] = ((np.arange(size, dtype=np.int64) // stride) % count).astype(
                np.int32 if count < 2**31 else np.int64
            )
        return index

    def column(self, name: str, rows: np.ndarray | slice = slice(None)) -> list:
        """The values of parameter `name` at `rows` (Python objects, canonical)."""
        return np.asarray(self.values[name], dtype=object)[self.index[name][rows]].tolist()

    def rows(self, rows: np.ndarray | slice = slice(None)) -> list[tuple]:
        """The points at `rows` as tuples of canonical values in the kind's parameter order."""
        return list(zip(*(self.column(name, rows) for name in self.kind.param_names)))

    def ids(self) -> list[str]:
        """Every point's id (as `seeding.point_id`), in enumeration order.

        The canonical text is `head + field of one parameter + tail`, where head and tail depend
        only on the other parameters: the parameter with the most values is that inner one, head
        is hashed once per combination of the others (their `"name":value` fields rendered once
        each), and each point copies that hash state and adds its own field and the tail."""
        names = self.kind.param_names
        fields = {
            name: [_json(name).encode() + b":" + _json(v).encode() for v in self.values[name]]
            for name in names
        }
        inner = max(names, key=lambda name: len(self.values[name]))
        outer = [name for name in names if name != inner]
        keys = sorted(names)
        at = keys.index(inner)
        before, after = keys[:at], keys[at + 1 :]
        start = b'{"kind":' + _json(self.kind.name).encode() + b',"params":{'
        strides = {}
        stride = 1
        for name in reversed(names):
            strides[name] = stride
            stride *= len(self.values[name])
        inner_fields = fields[inner]
        step = strides[inner]
        sha256, n = hashlib.sha256, ID_HEX_DIGITS
        out: list[str] = [""] * self.size
        ranges = [range(len(self.values[name])) for name in outer]
        for combo in itertools.product(*ranges):
            given = dict(zip(outer, combo))
            base = sum(given[name] * strides[name] for name in outer)
            head = start + b"".join(fields[k][given[k]] + b"," for k in before)
            tail = b"".join(b"," + fields[k][given[k]] for k in after) + b"}}"
            state = sha256(head)
            for i, value in enumerate(inner_fields):
                h = state.copy()
                h.update(value + tail)
                out[base + i * step] = h.hexdigest()[:n]
        return out

    def codes(self, names) -> tuple[np.ndarray, tuple[int, ...]]:
        """Per point, one integer per combination of the parameters `names` (row-major over their
        value lists), and the shape of that sub-grid."""
        names = list(names)
        shape = tuple(len(self.values[n]) for n in names)
        if not names:
            return np.zeros(self.size, dtype=np.int64), ()
        return np.ravel_multi_index([self.index[n] for n in names], shape), shape

    def stream_codes(self) -> np.ndarray:
        return self.codes(self.kind.stream_params)[0]

    def distinct(self, fn) -> tuple[list[str], list]:
        """`fn(params)` once per combination of the parameters it reads: (those parameters, the
        results in row-major order over their value lists). Other parameters are given their first
        value. Which parameters `fn` reads is found by recording the keys it reads: a combination
        whose evaluation read only keys already in the set gives the value for every point that
        shares those keys (fn must be a pure function of its params, as the kinds' are)."""
        names = self.kind.param_names
        first = {n: self.values[n][0] for n in names}
        deps: list[str] = []
        while True:
            results, read = [], set()
            for combo in itertools.product(*(self.values[n] for n in deps)):
                params = _Recording(first | dict(zip(deps, combo)))
                results.append(fn(params))
                read |= params.read
            extra = [n for n in names if n in read and n not in deps]
            if not extra:
                return deps, results
            deps += extra

    def evaluate(self, fn) -> np.ndarray:
        """`fn(params)` for every point in enumeration order (see `distinct`)."""
        deps, results = self.distinct(fn)
        codes = self.codes(deps)[0]
        return np.asarray(results)[codes]

    def params_at(self, deps: list[str], flat: int) -> dict:
        """The params of the `flat`-th combination of `deps` (others at their first value)."""
        combo = np.unravel_index(flat, tuple(len(self.values[n]) for n in deps)) if deps else ()
        chosen = {n: self.values[n][int(i)] for n, i in zip(deps, combo)}
        return {n: chosen.get(n, self.values[n][0]) for n in self.kind.param_names}


class _Recording(dict):
    """A params dict that records which keys were read. Reading it whole (iterating, copying,
    `dict(p)`, `{**p}`, items, values) counts as reading every key: overriding `__iter__` and
    `keys` makes CPython's dict merges go through them instead of the dict's own storage."""

    def __init__(self, *args):
        super().__init__(*args)
        self.read: set[str] = set()

    def _all(self):
        self.read |= set(super().keys())

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)

    def __iter__(self):
        self._all()
        return super().__iter__()

    def keys(self):
        self._all()
        return super().keys()

    def items(self):
        self._all()
        return super().items()

    def values(self):
        self._all()
        return super().values()

    def copy(self):
        self._all()
        return dict(super().items())

    def __or__(self, other):
        self._all()
        return dict(super().items()) | other

    def __reduce__(self):  # pragma: no cover (pickling reads it whole)
        self._all()
        return (dict, (dict(super().items()),))


def grid_columns(experiment) -> GridColumns:
    """The columnar grid of an experiment (anything with `.kind` and `.grid`); index arrays are
    made when first used."""
    kind = get_kind(experiment.kind)
    return GridColumns(
        kind,
        {
            p.name: [canonical_column_value(p, v) for v in experiment.grid[p.name]]
            for p in kind.params
        },
    )


def row_ids(kind: Kind | str, rows) -> list[str]:
    """Ids (as `seeding.point_id`) of points given as rows of raw values in the kind's parameter
    order, e.g. a chunk spec's `points`; each distinct value is canonicalised and rendered once."""
    kind = as_kind(kind)
    return _hash_texts(_id_template(kind), _rendered_rows(kind, rows))


def _rendered_rows(kind: Kind, rows):
    memo: list[dict] = [{} for _ in kind.params]
    for row in rows:
        out = []
        for value, param, seen in zip(row, kind.params, memo):
            key = (type(value), value)
            text = seen.get(key)
            if text is None:
                text = seen[key] = _json(canonical_column_value(param, value))
            out.append(text)
        yield out


def points_from_rows(kind: Kind | str, rows) -> list[Point]:
    """`make_point` for many rows (raw values in the kind's parameter order), without its per-point
    JSON and canonicalisation: what a job does with the chunk it is given."""
    kind = as_kind(kind)
    names = kind.param_names
    canon = [{} for _ in names]
    canonical_rows = []
    for row in rows:
        if len(row) != len(names):
            raise ValueError(
                f"a point has {len(row)} values, kind {kind.name} has {len(names)} parameters"
            )
        out = []
        for value, param, seen in zip(row, kind.params, canon):
            key = (type(value), value)
            c = seen.get(key)
            if c is None:
                c = seen[key] = canonical_column_value(param, value)
            out.append(c)
        canonical_rows.append(out)
    ids = row_ids(kind, canonical_rows)
    stream_at = [names.index(n) for n in kind.stream_params]
    streams: dict[tuple, str] = {}
    points = []
    for row, pid in zip(canonical_rows, ids):
        key = tuple(row[i] for i in stream_at)
        stream = streams.get(key)
        if stream is None:
            stream = streams[key] = digest(
                {"kind": kind.name, "stream": dict(zip(kind.stream_params, key))}
            )
        points.append(Point(kind=kind.name, params=dict(zip(names, row)), id=pid, stream=stream))
    return points


def chunk_id_of(ids) -> str:
    """`chunk_id` from the member points' ids."""
    return digest(list(ids))
