"""Rows of the trained heads of all-MiniLM-L6-v2 with one rounding (docs/science.md §11.7).

Draw order per block: the trials' windows and query positions (`heads.draw_trials`), then, only
when a point of the block rounds at `qk_rotated`, the (T, d_h, d_h) normals of one rotation per
row (shared by every layer and head of the row). One forward pass of the block serves every
layer, head, format and site; per (layer, head) the row's logits (float64, as `heads.rows`), q, k
and v (float32, as the model computes them) go through `kernels.block_sites.Block` (today's
`kernels.precision` rounding at the default scaling).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from attnsim.kernels import block_sites, precision
from attnsim.kernels.sampling import standard_normal
from attnsim.kinds import low_precision
from attnsim.models import heads


def simulate(rng: np.random.Generator, trials: int, n: int, points, record: bool = False):
    """Per point (dicts with layer, head, format, site): `kernels.precision.METRIC_NAMES` (T,) each.
    With `record`, also (ids, positions, rotations) for the tests' oracle."""
    ids, positions = heads.draw_trials(rng, n, trials)
    rotate = any(p["site"] == "qk_rotated" for p in points)
    rotations = (
        precision.rotations(standard_normal(rng, (trials, heads.HEAD_SIZE, heads.HEAD_SIZE)))
        if rotate
        else None
    )
    wanted: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, p in enumerate(points):
        wanted[(int(p["layer"]), int(p["head"]))].append(i)
    out: list[dict[str, np.ndarray]] = [{} for _ in points]
    for part, layers in heads.query_key_rows(
        heads.trained(), ids, positions, {layer for layer, _ in wanted}
    ):
        for (layer, head), members in wanted.items():
            logits, q, k, v = layers[layer]
            block = block_sites.Block(
                logits[:, head],
                v[:, head],
                q[:, head],
                k[:, head],
                None if rotations is None else rotations[part],
            )
            for i in members:
                p = points[i]
                metrics = block.metrics(p["site"], p["format"], low_precision.scaling(p))
                for name, values in metrics.items():
                    out[i].setdefault(name, np.empty(trials))[part] = values
    if record:
        return out, (ids, positions, rotations)
    return out
