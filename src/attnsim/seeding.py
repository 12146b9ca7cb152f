"""Stable ids and independent random streams for grid points.

A point's id hashes its kind and canonicalised parameter values (`digest` of
the two, made columnwise by `attnsim.records.grid.point_ids`), so it does not
depend on the order of the grid, the chunk or the machine. Its random
numbers come from `SeedSequence(root_seed, spawn_key=(stream, block))`, where
`stream` hashes the parameters that shape the random draws (points that
differ only in, say, the noise scale share them: common random numbers) and
`block` numbers fixed-size trial blocks. Which job, thread or chunk computes
a block therefore never changes its numbers.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np

ID_HEX_DIGITS = 16


def canonical_value(value: Any) -> Any:
    """Floats by shortest round-trip repr (so 1 == 1.0 and -0.0 == 0.0); others unchanged."""
    if isinstance(value, bool):
        raise TypeError("booleans are not grid values")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"grid values must be finite, got {value!r}")
        return float(repr(value + 0.0))
    return value


def digest(payload) -> str:
    """Hex digest of a JSON-serialisable payload with sorted keys."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:ID_HEX_DIGITS]


def block_generator(seed: int, stream: str, block: int) -> np.random.Generator:
    """The generator for one trial block of one stream (SFC64: fast and well mixed)."""
    sequence = np.random.SeedSequence(entropy=seed, spawn_key=(int(stream, 16), block))
    return np.random.Generator(np.random.SFC64(sequence))
