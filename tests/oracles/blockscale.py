"""Block-scaled quantisation written plainly (`attnsim.kernels.blockscale`): one scale group at a
time, the scale from the group's maximum by the OCP MX / NVFP4 recipes, the elements by
ml-dtypes' saturating cast (`to_format`). The two E8M0 rules are written out from their
definitions, element by element, with ml-dtypes' own casts and an explicit clip (float8_e4m3fn
has no inf: past 448 a plain cast gives NaN, so the saturating cast clips first)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from attnsim.kernels.rounding import F32, FORMATS, to_format

# OCP MX v1.0, table of element formats: emax_elem (the exponent of the largest binade). The
# classic formats are not MX elements: the kernel aims their scaled maxima at 2^16 (bfloat16)
# and 65504 (float16), so emax 16 and 15.
EMAX = {
    "float8_e4m3fn": 8,
    "float8_e5m2": 15,
    "float6_e2m3fn": 2,
    "float6_e3m2fn": 4,
    "float4_e2m1fn": 2,
    "bfloat16": 16,
    "float16": 15,
}
DTYPES = {
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float6_e2m3fn": ml_dtypes.float6_e2m3fn,
    "float6_e3m2fn": ml_dtypes.float6_e3m2fn,
    "float4_e2m1fn": ml_dtypes.float4_e2m1fn,
    "bfloat16": ml_dtypes.bfloat16,
    "float16": np.float16,
}


def groups(trials: int, rows: int, cols: int, granularity: str):
    """Index sets (tuples of (t, r, c)) of every scale group."""
    for t in range(trials):
        if granularity == "tensor":
            yield [(t, r, c) for r in range(rows) for c in range(cols)]
        elif granularity == "row":
            for r in range(rows):
                yield [(t, r, c) for c in range(cols)]
        elif granularity == "channel":
            for c in range(cols):
                yield [(t, r, c) for r in range(rows)]
        else:
            size = int(granularity.removeprefix("block"))
            for r in range(rows):
                for start in range(0, cols, size):
                    yield [(t, r, c) for c in range(start, min(cols, start + size))]


def scale(amax: float, fmt, scale_type: str, tensor_amax: float) -> float:
    """A group's scale; e4m3: NVFP4's block scale under the trial's float32 scale."""
    if amax == 0:
        return 1.0
    top = min(fmt.max, 2.0**16)  # bfloat16's scales aim at 2^16, not at float32's edge
    raw = np.float32(np.float32(amax) / np.float32(top))
    if scale_type == "fp32":
        return float(raw)
    if scale_type == "e8m0_ceil":  # round up: amax / S <= max, never saturating
        return 2.0 ** math.ceil(math.log2(raw))
    if scale_type == "e8m0_ocp":  # OCP MX v1.0: 2^(floor(log2 amax) - emax), E8M0's range
        exponent = math.floor(math.log2(amax)) - EMAX[fmt.name]
        return 2.0 ** min(max(exponent, -127), 127)
    g = np.float32(np.float32(np.float32(tensor_amax) / np.float32(top)) / np.float32(448))
    rounded = float(to_format(np.float32(raw / g), FORMATS["float8_e4m3fn"])) * g
    return float(np.float32(rounded)) if rounded > 0 else 1.0


def saturating_cast(value: float, name: str) -> float:
    """One element cast to the format by ml-dtypes, clipped to +-max first (what `satfinite`
    conversions do)."""
    largest = float(ml_dtypes.finfo(DTYPES[name]).max)
    clipped = min(max(float(np.float32(value)), -largest), largest)
    return float(np.array(clipped, dtype=F32).astype(DTYPES[name]).astype(F32))


def quantise(x, fmt_name: str, granularity: str, scale_type: str) -> np.ndarray:
    fmt = FORMATS[fmt_name]
    x = np.asarray(x, dtype=F32)
    if granularity == "none":
        return to_format(x, fmt)
    out = np.empty_like(x)
    for members in groups(*x.shape, granularity):
        amax = max(abs(float(x[i])) for i in members)
        tensor_amax = float(np.abs(x[members[0][0]]).max())
        s = np.float32(scale(amax, fmt, scale_type, tensor_amax))
        for i in members:
            if scale_type.startswith("e8m0"):
                out[i] = np.float32(saturating_cast(float(np.float32(x[i] / s)), fmt_name)) * s
            else:
                out[i] = np.float32(to_format(np.float32(x[i] / s), fmt)) * s
    return out


def mx_blocks(x, fmt_name: str, rule: str, size: int = 32) -> tuple[np.ndarray, int]:
    """The MX recipe on a 1-D array, block by block as the spec describes it: the block's
    shared exponent from its largest magnitude by `rule`, each element divided by 2^exponent
    and cast with saturation. Returns the kept values and how many blocks clipped a value."""
    x = np.asarray(x, dtype=F32)
    out = np.empty_like(x)
    clipped = 0
    largest = float(ml_dtypes.finfo(DTYPES[fmt_name]).max)
    for start in range(0, len(x), size):
        block = [float(v) for v in x[start : start + size]]
        amax = max(abs(v) for v in block)
        if amax == 0:
            exponent = 0
        elif rule == "e8m0_ocp":
            exponent = math.floor(math.log2(amax)) - EMAX[fmt_name]
        else:
            target = np.float32(min(largest, 2.0**16))
            exponent = math.ceil(math.log2(float(np.float32(amax) / target)))
        s = 2.0**exponent
        clipped += any(abs(v) / s > largest for v in block)
        for offset, v in enumerate(block):
            out[start + offset] = saturating_cast(v / s, fmt_name) * s
    return out, clipped


def accumulate_fp16(a, b) -> np.ndarray:
    """sum_m a_m b_im with every partial sum rounded to float16 (a (d,), b (n, d))."""
    half = FORMATS["float16"]
    out = np.empty(b.shape[0], dtype=F32)
    for i in range(b.shape[0]):
        total = np.float32(0)
        for m in range(b.shape[1]):
            total = np.float32(to_format(np.float32(total + np.float32(b[i, m] * a[m])), half))
        out[i] = total
    return out
