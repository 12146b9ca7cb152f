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
from attnsim.kinds import low_precision, real_model
from attnsim.kinds.base import Counts, Work
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


def counts(n: int, site: str) -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `simulate_block`: per stream
    the window's forward pass (`real_model.forward_counts`); per point one head's rows rounded at
    its site (n logits or weights, (n + 1) d_h for q and k) with the rounding model's passes
    (~40 doubles per number) and the clean row's statistics. Setup: the trained model's weights and
    ml-dtypes' import."""
    size = n if site in ("logits", "probs") else (n + 1) * heads.HEAD_SIZE
    return Work(
        own=Counts(casts=size, exps=n, bytes=320 * size + 160 * n * heads.HEAD_SIZE),
        shared=real_model.forward_counts(n),
        own_block=Counts(calls=80),
        shared_block=Counts(calls=400),
        setup=real_model.MODEL_SETUP + low_precision.SETUP,
    )
