"""numpy <-> Arrow through buffers, for the jobs that never need pandas (simulate, collect).

pyarrow imports pandas the first time it converts: `pa.array` of numpy or Python values,
`pa.scalar`, `Array.to_numpy` and `np.asarray` of an Arrow array all do (its C++ conversion and
its shim both import pandas when it is installed). That import costs ~0.27 CPU-s per process
(measured after numpy and pyarrow are loaded), paid by each of a run's ~40 job processes for
nothing: these functions build and read the buffers themselves, with the same values and types.
`tests/jobs/test_no_pandas.py` checks that simulate and collect jobs import no pandas.

Each function takes what the jobs have (contiguous numeric arrays, Python strings with None for
nulls) and hands anything else to pyarrow's own conversion: the same result, pandas imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa


def _numpy_dtype(type_: pa.DataType) -> np.dtype[Any] | None:
    """The numpy dtype of a fixed-width numeric Arrow type (None for any other type)."""
    if pa.types.is_integer(type_) or pa.types.is_floating(type_):
        dtype: np.dtype[Any] = np.dtype(type_.to_pandas_dtype())
        return dtype
    return None


def from_numpy(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    """A numeric or boolean Arrow array of numpy `values` (no nulls; NaN stays NaN, as in
    `pa.array`); numeric data shares the array's buffer."""
    if pa.types.is_boolean(type_):
        flags = np.ascontiguousarray(values, dtype=bool)
        bits = np.packbits(flags, bitorder="little")
        return pa.Array.from_buffers(type_, len(flags), [None, pa.py_buffer(bits)])
    dtype = _numpy_dtype(type_)
    if dtype is None:
        raise TypeError(f"from_numpy: {type_} is not a numeric or boolean Arrow type")
    values = np.ascontiguousarray(values, dtype=dtype)
    return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(values)])


def scalar(value: Any, type_: pa.DataType) -> pa.Scalar:
    """A numeric, boolean or string Arrow scalar (`pa.scalar` without its conversion)."""
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return strings([value], type_)[0]
    return from_numpy(np.array([value]), type_)[0]


def _string_array(
    type_: pa.DataType, lengths: np.ndarray, data: bytes, present: np.ndarray | None = None
) -> pa.Array:
    """A string or large string Arrow array from its values' byte lengths and their bytes, end
    to end; `present` flags the non-null values (None: all are)."""
    offsets = np.zeros(len(lengths) + 1, np.int64 if pa.types.is_large_string(type_) else np.int32)
    np.cumsum(lengths, out=offsets[1:])
    nulls = 0 if present is None else int(len(present) - present.sum())
    valid = pa.py_buffer(np.packbits(present, bitorder="little")) if present is not None else None
    valid = valid if nulls else None
    return pa.Array.from_buffers(
        type_, len(lengths), [valid, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls
    )


def strings(values: Sequence[str | None], type_: pa.DataType | None = None) -> pa.Array:
    """A string (default) or large string Arrow array of Python strings, None as null."""
    encoded = [b"" if v is None else v.encode() for v in values]
    lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
    present = np.fromiter((v is not None for v in values), bool, len(encoded))
    return _string_array(
        pa.string() if type_ is None else type_, lengths, b"".join(encoded), present
    )


def fixed_width_strings(data: bytes, count: int, width: int) -> pa.Array:
    """A string array of `count` values of `width` ASCII bytes each, end to end in `data`."""
    if len(data) != count * width:
        raise ValueError(f"fixed_width_strings: {len(data)} bytes are not {count} x {width}")
    return _string_array(pa.string(), np.full(count, width, dtype=np.int64), data)


def repeated(values: list[Any], counts: list[int], type_: pa.DataType) -> pa.Array:
    """values[i] repeated counts[i] times (a chunk's point ids and parameters, one per row)."""
    if not (pa.types.is_string(type_) or pa.types.is_large_string(type_)):
        return from_numpy(
            np.repeat(np.asarray(values, dtype=type_.to_pandas_dtype()), counts), type_
        )
    encoded = [str(v).encode() for v in values]
    lengths = np.repeat(np.array([len(e) for e in encoded], dtype=np.int64), counts)
    return _string_array(
        type_, lengths, b"".join(e * c for e, c in zip(encoded, counts, strict=True))
    )


def from_values(values: Any, type_: pa.DataType) -> pa.Array:
    """An Arrow array of `type_` from what a summary column holds: an Arrow array (cast), a
    numeric numpy array, or Python strings and None; anything else through `pa.array`."""
    if isinstance(values, pa.Array):
        return values.cast(type_)
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        numeric = _numpy_dtype(type_)
        same_family = numeric is not None and numeric.kind == values.dtype.kind
        if (pa.types.is_boolean(type_) and values.dtype.kind == "b") or same_family:
            return from_numpy(values, type_)
    if (pa.types.is_string(type_) or pa.types.is_large_string(type_)) and all(
        v is None or isinstance(v, str) for v in values
    ):
        return strings(values, type_)
    if isinstance(values, list):
        numbers = _from_numbers(values, type_)
        if numbers is not None:
            return numbers
    return pa.array(values, type=type_)


_EXACT = 2**53  # integers up to this size convert to float64 exactly (pa.array refuses others)


def _from_numbers(values: list[Any], type_: pa.DataType) -> pa.Array | None:
    """A list of Python or numpy numbers (booleans for a boolean type) and None as an Arrow
    array of `type_`, None as null; None when the list holds anything else. numpy converts the
    list (C speed: a million-point summary's columns), Python only finds the None."""
    try:
        array = np.array(values) if values else np.zeros(0)
        present = None
        if array.dtype == object:  # None among the values (or something else)
            present = np.fromiter((v is not None for v in values), bool, len(values))
            numbers = [v for v, keep in zip(values, present, strict=True) if keep]
            array = np.array(numbers) if numbers else np.zeros(0)
    except ValueError:  # ragged: lists of lists
        return None
    if array.ndim != 1:
        return None
    kind = array.dtype.kind if len(array) else None
    if pa.types.is_boolean(type_):
        ok = kind in (None, "b")
    elif pa.types.is_integer(type_):
        ok = kind in (None, "i", "u")
    elif pa.types.is_floating(type_):
        ok = kind in (None, "f") or (kind in ("i", "u") and np.abs(array).max() <= _EXACT)
    else:
        ok = False
    if not ok:
        return None
    dtype = bool if pa.types.is_boolean(type_) else _numpy_dtype(type_)
    if present is None:
        return from_numpy(array.astype(dtype, copy=False), type_)
    full = np.zeros(len(values), dtype=dtype)
    full[present] = array
    dense = from_numpy(full, type_)
    nulls = int(len(values) - present.sum())
    valid = pa.py_buffer(np.packbits(present, bitorder="little"))
    return pa.Array.from_buffers(type_, len(values), [valid, dense.buffers()[1]], null_count=nulls)


def to_numpy(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A numeric or boolean Arrow array without nulls as numpy: a read-only view of the buffer
    for one chunk of numbers, else a copy. Anything else through pyarrow's `to_numpy`."""
    if isinstance(values, pa.ChunkedArray):
        if values.num_chunks == 1:
            return to_numpy(values.chunk(0))
        dtype = bool if pa.types.is_boolean(values.type) else _numpy_dtype(values.type)
        if dtype is None or values.null_count:
            return np.asarray(values.to_numpy())
        parts = [to_numpy(chunk) for chunk in values.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    if values.null_count:
        return np.asarray(values.to_numpy(zero_copy_only=False))
    if pa.types.is_boolean(values.type):
        if not len(values):
            return np.zeros(0, dtype=bool)
        bits = np.frombuffer(values.buffers()[1], np.uint8)
        start = values.offset
        return np.unpackbits(bits, count=start + len(values), bitorder="little")[start:].astype(
            bool
        )
    dtype = _numpy_dtype(values.type)
    if dtype is None:
        return np.asarray(values.to_numpy(zero_copy_only=False))
    if not len(values):
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(
        values.buffers()[1], dtype, count=len(values), offset=values.offset * dtype.itemsize
    )
