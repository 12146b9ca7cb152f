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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from attnsim.kinds import get_kind
from attnsim.kinds.base import Kind, Param
from attnsim.seeding import ID_HEX_DIGITS, canonical_value, digest
from attnsim.store import arrays


@dataclass(frozen=True)
class Point:
    kind: str
    params: dict[str, Any]  # parameter name -> canonical value, in the kind's order
    id: str
    stream: str  # id of the random stream (shared by common-random-number siblings)


def chunk_id(ids: list[str]) -> str:
    """A chunk's id: `seeding.digest` of the list of its points' ids, in order (hex strings need
    no escaping, so the JSON text is joined directly: 10x faster for a chunk of 10^5 points)."""
    text = '["' + '","'.join(ids) + '"]' if ids else "[]"
    return hashlib.sha256(text.encode()).hexdigest()[:ID_HEX_DIGITS]


# ----------------------------------------------------------------------------------------------
# Columnar grids: a million points without a million Python objects.
#
# An experiment's grid is held as one list of canonical values per parameter and, per point, one
# index array per parameter (the cartesian product in enumeration order). A point's id is the
# sha256 of the canonical JSON text of its kind and parameters (`json.dumps(..., sort_keys=True)`,
# the definition tests/oracles/points.py writes out and tests compare on every kind), assembled
# by `point_ids` from each distinct value's JSON rendering. `Point` objects are made only for the
# chunk a job computes.


def canonical_column_value(param: Param, value: Any) -> Any:
    """A grid value canonicalised for its parameter: floats as floats, integers as ints, a
    renamed value under its name now (`Param.renamed`)."""
    if pa.types.is_floating(param.type):
        value = float(value)
    elif pa.types.is_integer(param.type):
        value = int(value)
    elif param.renamed:
        value = param.current(value)
    return canonical_value(value)


def _json(value: Any) -> str:
    # a plain int's or a finite float's JSON text is its repr (what json's encoder writes), at a
    # tenth of a json.dumps call: a grid of 50,000 scales renders each once
    if type(value) is int or (type(value) is float and math.isfinite(value)):
        return repr(value)
    return json.dumps(value, allow_nan=False)


def _fields(param: Param, values: list[Any]) -> list[bytes]:
    """Each value's `"name":value` text in a point's id; b"" for the default of a parameter whose
    default is left out of ids (`Param.id_omits_default`: added after its kind had points); a
    renamed value under its old name (`Param.id_value`)."""
    omitted = canonical_column_value(param, param.default) if param.id_omits_default else None
    name = _json(param.name).encode() + b":"
    return [
        b"" if omitted is not None and v == omitted else name + _json(param.id_value(v)).encode()
        for v in values
    ]


def _then(first: bytes, second: bytes) -> bytes:
    """A field and its comma, or nothing for an omitted (empty) field."""
    return first + second if first and second else b""


def point_id_array(
    kind: Kind, values: dict[str, list[Any]], index: dict[str, np.ndarray]
) -> pa.Array:
    """`point_ids` as an Arrow string array: the ids are fixed-width ASCII, so they are joined
    into one buffer at once (a million in ~0.03 s, where encoding each costs ~0.2 s and a
    million bytes objects)."""
    ids = point_ids(kind, values, index)
    return arrays.fixed_width_strings("".join(ids).encode("ascii"), len(ids), ID_HEX_DIGITS)


def json_fields(kind: Kind, values: dict[str, list[Any]]) -> dict[str, list[bytes]]:
    """Per parameter, each distinct value's `"name":value` field of the canonical JSON text
    (b"" for an omitted default, `_fields`)."""
    return {param.name: _fields(param, values[param.name]) for param in kind.schema.params}


def _distinct(positions: np.ndarray, count: int) -> int:
    """How many of a parameter's `count` values the points at `positions` take."""
    return int(np.count_nonzero(np.bincount(np.asarray(positions), minlength=count)))


def point_ids(
    kind: Kind,
    values: dict[str, list[Any]],
    index: dict[str, np.ndarray],
    fields: dict[str, list[bytes]] | None = None,
) -> list[str]:
    """The ids of points given as columns: per parameter its distinct canonical `values` and, per
    point, an `index` into them. The only place ids are made (a grid's, a chunk's, a job's).

    The canonical text is `head + field of one parameter + tail`, where head and tail depend only
    on the other parameters: the parameter with the most values is that inner one, head is hashed
    once per combination of the others (their `"name":value` fields rendered once each), and each
    point copies that hash state and adds its own field and the tail. `fields`: `json_fields`
    of `values`, when the caller has them (a grid's chunks, one call each, share them)."""
    names = kind.param_names
    fields = fields if fields is not None else json_fields(kind, values)
    # the inner field is never an omitted one (it sits between two commas); it is the one with
    # the most distinct values among these points, not in the whole grid: a chunk of a grid
    # whose largest axis varies slowest holds one or two of its values (a million points made
    # ~900,000 heads of one point each, ~19 CPU-s to plan, where its own largest axis makes 37,000)
    always = [p.name for p in kind.schema.params if not p.id_omits_default] or list(names)
    inner = max(always, key=lambda name: _distinct(index[name], len(values[name])))
    outer = [name for name in names if name != inner]
    keys = sorted(names)
    at = keys.index(inner)
    before, after = keys[:at], keys[at + 1 :]
    start = b'{"kind":' + _json(kind.name).encode() + b',"params":{'
    shape = tuple(len(values[name]) for name in outer)
    inner_index = np.asarray(index[inner])
    count = len(inner_index)
    codes = (
        np.ravel_multi_index([np.asarray(index[name]) for name in outer], shape)
        if outer
        else np.zeros(count, dtype=np.int64)
    )
    # points sharing a head, grouped (a grid's are already: its inner parameter varies fastest)
    grouped = count < 2 or bool((codes[1:] >= codes[:-1]).all())
    order = np.arange(count) if grouped else np.argsort(codes, kind="stable")
    starts = np.flatnonzero(np.diff(codes[order], prepend=-1)).tolist() + [count]
    sha256, n = hashlib.sha256, ID_HEX_DIGITS
    inner_fields = fields[inner]
    out: list[str] = [""] * count
    for a, b in zip(starts[:-1], starts[1:]):
        if grouped:
            members, inners = range(a, b), inner_index[a:b].tolist()
        else:
            members, inners = order[a:b].tolist(), inner_index[order[a:b]].tolist()
        given = dict(zip(outer, np.unravel_index(int(codes[order[a]]), shape) if outer else ()))
        state = sha256(start + b"".join(_then(fields[k][given[k]], b",") for k in before))
        tail = b"".join(_then(b",", fields[k][given[k]]) for k in after) + b"}}"
        copy = state.copy
        for at, i in zip(members, inners):
            h = copy()
            h.update(inner_fields[i] + tail)
            out[at] = h.hexdigest()[:n]
    return out


@dataclass(frozen=True)
class GridColumns:
    """An experiment's grid as columns: `values[name]` (canonical, distinct) and, per point in
    enumeration order, `index[name]` into it."""

    kind: Kind
    values: dict[str, list[Any]]

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.values.values())

    @property
    def shape(self) -> tuple[int, ...]:
        """The grid's shape, one axis per parameter in the kind's order (the last varies
        fastest)."""
        return tuple(len(self.values[name]) for name in self.kind.param_names)

    @cached_property
    def index(self) -> dict[str, np.ndarray]:
        # each value repeated for the points of the faster axes, the run tiled over the slower
        # ones: 10^7 points in ~0.1 s, where (arange // stride) % count took ~1 s
        size, stride = self.size, self.size
        index: dict[str, np.ndarray] = {}
        for name in self.kind.param_names:
            count = len(self.values[name])
            stride //= count
            axis = np.arange(count, dtype=np.int32 if count < 2**31 else np.int64)
            index[name] = np.tile(np.repeat(axis, stride), size // (count * stride))
        return index

    def column(self, name: str, rows: np.ndarray | slice = slice(None)) -> list[Any]:
        """The values of parameter `name` at `rows` (Python objects, canonical)."""
        return _take(self.values[name], self.index[name][rows])

    def arrow_column(self, name: str, type_: pa.DataType) -> pa.Array:
        """Every point's value of parameter `name` as an Arrow array of `type_`: its distinct
        values converted once and taken by the index (a million-point column in milliseconds,
        where a list of Python objects costs ~0.1-0.3 s to build and convert)."""
        index = self.index[name]
        positions = arrays.from_numpy(index, pa.int32() if index.dtype == np.int32 else pa.int64())
        return arrays.from_values(list(self.values[name]), type_).take(positions)

    def rows(self, rows: np.ndarray | slice = slice(None)) -> list[tuple[Any, ...]]:
        """The points at `rows` as tuples of canonical values in the kind's parameter order."""
        return list(zip(*(self.column(name, rows) for name in self.kind.param_names)))

    def ids(self, rows: np.ndarray | slice = slice(None)) -> list[str]:
        """The ids of the points at `rows` (every point's, in enumeration order, by default)."""
        if not isinstance(rows, slice) and len(rows) == self.size and (np.diff(rows) > 0).all():
            rows = slice(None)  # all of them, in order: views of the index, no copies
        index = {n: i[rows] for n, i in self.index.items()}
        return point_ids(self.kind, self.values, index, self.fields)

    @cached_property
    def fields(self) -> dict[str, list[bytes]]:
        return json_fields(self.kind, self.values)

    def id_array(self) -> pa.Array:
        """Every point's id in enumeration order, as an Arrow string array (`point_id_array`)."""
        return point_id_array(self.kind, self.values, self.index)

    def codes(self, names: Iterable[str]) -> tuple[np.ndarray, tuple[int, ...]]:
        """Per point, one integer per combination of the parameters `names` (row-major over their
        value lists), and the shape of that sub-grid."""
        names = list(names)
        shape = tuple(len(self.values[n]) for n in names)
        return self.spread(names, np.arange(math.prod(shape), dtype=np.int64)), shape

    def spread(self, names: list[str], table: np.ndarray) -> np.ndarray:
        """Per point, the entry of `table` (row-major over the value lists of `names`) at its
        values of `names`: the table laid out along those axes and broadcast over the others,
        the same numbers as indexing it by ravel_multi_index of the index arrays without reading
        10^7 of them per name."""
        if not names:
            return np.full(self.size, table[0], dtype=table.dtype)
        shape = tuple(len(self.values[n]) for n in names)
        order = sorted(range(len(names)), key=lambda i: self.kind.param_names.index(names[i]))
        laid = table.reshape(shape).transpose(order)
        along = [len(self.values[n]) if n in names else 1 for n in self.kind.param_names]
        return np.broadcast_to(laid.reshape(along), self.shape).ravel()

    def stream_codes(self) -> np.ndarray:
        return self.codes(self.kind.schema.stream_params)[0]

    def distinct(self, fn: Callable[[Any], Any]) -> tuple[list[str], list[Any]]:
        """`fn(params)` once per combination of the parameters it reads: (those parameters, the
        results in row-major order over their value lists). Other parameters are given their first
        value. Which parameters `fn` reads is found by recording the keys it reads: a combination
        whose evaluation read only keys already in the set gives the value for every point that
        shares those keys (fn must be a pure function of its params, as the kinds' are)."""
        names = self.kind.param_names
        first = {n: self.values[n][0] for n in names}
        deps: list[str] = []
        while True:
            results: list[Any] = []
            read: set[str] = set()
            for combo in itertools.product(*(self.values[n] for n in deps)):
                params = _Recording(first | dict(zip(deps, combo)))
                results.append(fn(params))
                read |= params.read
            extra = [n for n in names if n in read and n not in deps]
            if not extra:
                return deps, results
            deps += extra

    def evaluate(self, fn: Callable[[Any], Any]) -> np.ndarray:
        """`fn(params)` for every point in enumeration order (see `distinct`)."""
        deps, results = self.distinct(fn)
        return self.spread(deps, np.asarray(results))

    def params_at(self, deps: list[str], flat: int) -> dict[str, Any]:
        """The params of the `flat`-th combination of `deps` (others at their first value)."""
        combo = np.unravel_index(flat, tuple(len(self.values[n]) for n in deps)) if deps else ()
        chosen = {n: self.values[n][int(i)] for n, i in zip(deps, combo)}
        return {n: chosen.get(n, self.values[n][0]) for n in self.kind.param_names}


class _Recording(dict[str, Any]):
    """A params dict that records which keys were read. Reading it whole (iterating, copying,
    `dict(p)`, `{**p}`, items, values) counts as reading every key: overriding `__iter__` and
    `keys` makes CPython's dict merges go through them instead of the dict's own storage."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.read: set[str] = set()

    def _all(self) -> None:
        self.read |= set(super().keys())

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return super().__contains__(key)

    def __iter__(self) -> Any:
        self._all()
        return super().__iter__()

    def keys(self) -> Any:
        self._all()
        return super().keys()

    def items(self) -> Any:
        self._all()
        return super().items()

    def values(self) -> Any:
        self._all()
        return super().values()

    def copy(self) -> dict[str, Any]:
        self._all()
        return dict(super().items())

    def __or__(self, other: Any) -> Any:
        self._all()
        return dict(super().items()) | other

    def __reduce__(self) -> Any:  # pragma: no cover (pickling reads it whole)
        self._all()
        return (dict, (dict(super().items()),))


def grid_columns(experiment: Any) -> GridColumns:
    """The columnar grid of an experiment (anything with `.kind` and `.grid`); index arrays are
    made when first used."""
    kind = get_kind(experiment.kind)
    return GridColumns(
        kind,
        {
            p.name: [canonical_column_value(p, v) for v in experiment.grid[p.name]]
            for p in kind.schema.params
        },
    )


def row_ids(kind: Kind, rows: Sequence[Sequence[Any]]) -> list[str]:
    """Ids of points given as rows of raw values in the kind's parameter order, e.g. a chunk
    spec's `points`: each column's distinct values canonicalised once, then `point_ids`."""
    values, index = _columns(kind, rows)
    return point_ids(kind, values, index)


def _columns(
    kind: Kind, rows: Sequence[Sequence[Any]]
) -> tuple[dict[str, list[Any]], dict[str, np.ndarray]]:
    """Rows of raw values as `point_ids` columns: distinct canonical values and indices."""
    values: dict[str, list[Any]] = {}
    index: dict[str, np.ndarray] = {}
    columns: list[tuple[Any, ...]] = list(zip(*rows)) if rows else [() for _ in kind.schema.params]
    for param, column in zip(kind.schema.params, columns, strict=True):
        seen: dict[Any, int] = {}  # canonical value -> position
        memo: dict[tuple[type, Any], int] = {}  # (type, raw value) -> position
        positions = []
        for value in column:
            key = (type(value), value)
            at = memo.get(key)
            if at is None:
                at = memo[key] = seen.setdefault(canonical_column_value(param, value), len(seen))
            positions.append(at)
        values[param.name] = list(seen)
        index[param.name] = np.asarray(positions, dtype=np.int64)
    return values, index


def canonical_rows(kind: Kind, rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows of raw values in the kind's parameter order, checked and canonicalised."""
    values, index = _checked_columns(kind, rows)
    return list(zip(*(_take(values[name], index[name]) for name in kind.param_names)))


def _checked_columns(
    kind: Kind, given: Iterable[Sequence[Any]]
) -> tuple[dict[str, list[Any]], dict[str, np.ndarray]]:
    rows = list(given)
    for row in rows:
        expected = len(kind.schema.params)
        if len(row) != expected:
            raise ValueError(
                f"a point has {len(row)} values, kind {kind.name} has {expected} parameters"
            )
    return _columns(kind, rows)


def points_from_rows(kind: Kind, rows: Iterable[Sequence[Any]]) -> list[Point]:
    """The points of rows of raw values in the kind's parameter order (canonicalised): what a job
    makes of the chunk it is given."""
    names = kind.param_names
    values, index = _checked_columns(kind, rows)
    ids = point_ids(kind, values, index)
    columns = [_take(values[name], index[name]) for name in names]
    stream_at = [names.index(n) for n in kind.schema.stream_params]
    by_name = {p.name: p for p in kind.schema.params}
    streams: dict[tuple[Any, ...], str] = {}
    points = []
    for row, pid in zip(zip(*columns), ids):
        key = tuple(row[i] for i in stream_at)
        stream = streams.get(key)
        if stream is None:
            hashed = {n: by_name[n].id_value(v) for n, v in zip(kind.schema.stream_params, key)}
            stream = streams[key] = digest({"kind": kind.name, "stream": hashed})
        points.append(Point(kind=kind.name, params=dict(zip(names, row)), id=pid, stream=stream))
    return points


def _take(values: list[Any], index: Any) -> list[Any]:
    """`values` at `index`, as Python objects."""
    column = np.empty(len(values), dtype=object)
    column[:] = values
    taken: list[Any] = column[index].tolist()
    return taken


SUB_GRID_ENDS = 2  # a thinned numeric parameter keeps at least its smallest and largest value


def spread(values: Sequence[Any], count: int) -> list[Any]:
    """At most `count` of the distinct `values`, evenly spread over their sorted order (the
    smallest and largest among them), as `figures.common.spread` picks a figure's lines."""
    distinct = sorted(set(values))
    if len(distinct) <= count:
        return distinct
    step = (len(distinct) - 1) / (count - 1) if count > 1 else 0.0
    picks = sorted({round(i * step) for i in range(count)})
    return [distinct[i] for i in picks]


def sub_grid(values: Mapping[str, Sequence[Any]], bound: int) -> dict[str, list[Any]]:
    """The sub-grid a large experiment's figures are drawn from (`attnsim.report.figure_data`):
    each parameter's kept values, all of them when the grid (`values`: parameter -> its distinct
    values) has at most `bound` points, else the parameter with the most values (numbers first)
    halved, again and again, until the product is at most `bound` or nothing can be thinned
    further (a numeric parameter keeps at least its two ends)."""
    counts = {name: len(set(v)) for name, v in values.items()}
    numeric = {
        name: all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
        for name, v in values.items()
    }
    while math.prod(counts.values()) > bound:
        for group in (True, False):  # numbers first, names only when numbers cannot go lower
            floor = SUB_GRID_ENDS if group else 1
            candidates = [n for n in counts if numeric[n] == group and counts[n] > floor]
            if candidates:
                name = max(candidates, key=lambda n: (counts[n], n))
                counts[name] = max(floor, math.ceil(counts[name] / 2))
                break
        else:
            break
    return {name: spread(list(v), counts[name]) for name, v in values.items()}
