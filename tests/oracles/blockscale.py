"""Block-scaled quantisation written plainly (`attnsim.kernels.blockscale`): one scale group at a
time, the scale from the group's maximum by the OCP MX / NVFP4 recipes, the elements by
ml-dtypes' saturating cast (`to_format`)."""

from __future__ import annotations

import math

import numpy as np

from attnsim.kernels.rounding import F32, FORMATS, to_format


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
    if scale_type == "e8m0":
        return 2.0 ** math.ceil(math.log2(raw))
    g = np.float32(np.float32(np.float32(tensor_amax) / np.float32(top)) / np.float32(448))
    rounded = float(to_format(np.float32(raw / g), FORMATS["float8_e4m3fn"])) * g
    return float(np.float32(rounded)) if rounded > 0 else 1.0


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
            out[i] = np.float32(to_format(np.float32(x[i] / s), fmt)) * s
    return out


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
