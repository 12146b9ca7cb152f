"""Noisy attention on the trained heads of all-MiniLM-L6-v2 (docs/science.md §5.6).

Draw order per block: the trials' windows and query positions (`heads.draw_trials`), then two
raw 64-bit words that seed one generator per noise family, layer and head (`SeedSequence(words,
spawn_key=(family index, layer, head))`); the standard noise z (T, K, n) float32 of each comes
from its own generator. So a point's noise does not depend on which other families, layers,
heads or scales share the block; every scale of a family and head sees the same z (common
random numbers), while different heads get independent noise, so that pooling heads (per layer)
averages independent noise realisations.

Per trial, layer and head (all float64): the clean row's statistics (`heads.row_stats`), and
for each noise scale sigma the K noisy outputs o~_k - o = sum_i q_ki (v_i - o) / sum_i q_ki,
q_ki = exp(log p_i + sigma z_ki - max_j(log p_j + sigma z_kj)): shifted, so nothing overflows
for heavy tails; at small sigma the numerator's cancellation costs ~1e-16/sigma relative.

Nested windows (`keys` > 0, docs/science.md §5.9): after the noise words, one more draw, the
nested query position (uniform among the first `NEST_QUERIES` positions), made whatever the
block holds. A point with `keys` = m uses the window [CLS], the first m - 2 word pieces of the
trial's text, [SEP] (the same text for every m), that query (the same position, hence the same
token and left context, for every m) and the first m columns of the head's noise. So windows
of different m differ only by the text appended after the first m - 2 pieces, and a head's
error can be followed in m row by row. Points with `keys` = 0 use the trial's n-token window
and its own query, as before (their rows are those of algorithm version 1).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from attnsim.kernels.noise import standard_noise32
from attnsim.kinds import real_model
from attnsim.kinds.base import Counts, Work
from attnsim.models import heads
from attnsim.subjects import noise_families
from attnsim.theory import delta_next


def head_noise(words: np.ndarray, family: str, layer: int, head: int, shape) -> np.ndarray:
    """The block's standard noise of one family for one head, from its own generator."""
    sequence = np.random.SeedSequence(
        [int(w) for w in words], spawn_key=(noise_families.names().index(family), layer, head)
    )
    return standard_noise32(np.random.Generator(np.random.SFC64(sequence)), family, shape)


def noisy_sq_err(log_p: np.ndarray, dev: np.ndarray, z: np.ndarray, sigma: float) -> np.ndarray:
    """mean_k ||o~_k - o||^2 per row: log_p (t, n), dev = v - o (t, n, d), z (t, K, n)."""
    a = log_p[:, None, :] + sigma * z.astype(np.float64)
    a -= a.max(axis=-1, keepdims=True)
    q = np.exp(a, out=a)
    diff = q @ dev  # (t, K, d)
    diff /= q.sum(axis=-1, keepdims=True)
    return np.einsum("tkd,tkd->t", diff, diff) / z.shape[1]


NEXT_ORDER_SUMS = ("sum_p2", "sum_p3", "c3", "c4", "m2", "c_tail")


def next_order_sums(
    stats: dict[str, np.ndarray], tail_power: float | None
) -> dict[str, np.ndarray]:
    """The sums `delta_next.next_order_from_stats` needs, from a row's p and dev = v - o
    (docs/science.md §2.8):
    c_r = sum p^r ||v - o||^2, m2 = ||sum p^2 (v - o)||^2; c_tail (r = k*) nan where no tail term
    applies."""
    p, dev = stats["p"], stats["dev"]
    dist2 = np.einsum("...nd,...nd->...n", dev, dev)
    p2 = p * p
    m2 = np.einsum("...n,...nd->...d", p2, dev)
    return {
        "sum_p2": stats["sum_p2"],
        "sum_p3": np.sum(p2 * p, axis=-1),
        "c3": np.sum(p2 * p * dist2, axis=-1),
        "c4": np.sum(p2 * p2 * dist2, axis=-1),
        "m2": np.einsum("...d,...d->...", m2, m2),
        "c_tail": np.full(p.shape[0], np.nan)
        if tail_power is None
        else np.sum(p**tail_power * dist2, axis=-1),
    }


# nested windows: the query is [CLS] or one of the 14 word pieces after it, in every window of >= 16
# keys
NEST_QUERIES = 15
ROW_SUMS = ("sq_err", "spread", "grad_sq", "entropy", "n_eff", "sink_weight", *NEXT_ORDER_SUMS)


def window(
    ids: np.ndarray, positions: np.ndarray, nested: np.ndarray, keys: int
) -> tuple[np.ndarray, np.ndarray]:
    """(ids (T, m), query positions (T,)) of the rows a point with `keys` uses: 0 -> the trial's own
    window and query; m > 0 -> [CLS], the first m - 2 word pieces of the trial's text, [SEP], and
    the nested query."""
    if keys == 0:
        return ids, positions
    out = ids[:, :keys].copy()
    out[:, -1] = ids[:, -1]  # [SEP]
    return out, nested


def simulate(
    rng: np.random.Generator,
    trials: int,
    n: int,
    noise_draws: int,
    points: Sequence,
    record: bool = False,
):
    """Per point (dicts with keys, layer, head, noise, noise_scale): sq_err, spread, grad_sq,
    entropy,
    n_eff, sink_weight (T,) and the clean-row sums of the next-order theory (`next_order_sums`:
    sum_p2, sum_p3, c3, c4, m2, c_tail).

    With `record`, also (ids, positions, nested positions, {(family, layer, head): z}) for the
    tests' oracle."""
    ids, positions = heads.draw_trials(rng, n, trials)
    words = rng.bit_generator.random_raw(2)
    nested = rng.integers(NEST_QUERIES, size=trials)
    noise_keys = sorted({(p["noise"], p["layer"], p["head"]) for p in points})
    z = {key: head_noise(words, *key, (trials, noise_draws, n)) for key in noise_keys}
    # keys -> (layer, head) -> points
    wanted: dict[int, dict[tuple[int, int], list[int]]] = defaultdict(lambda: defaultdict(list))
    for i, p in enumerate(points):
        wanted[int(p.get("keys", 0))][(p["layer"], p["head"])].append(i)
    out = [{k: np.empty(trials) for k in ROW_SUMS} for _ in points]
    for m, by_head in sorted(wanted.items()):
        m_ids, m_positions = window(ids, positions, nested, m)
        width = m_ids.shape[1]
        for part, layers in heads.rows(
            heads.trained(), m_ids, m_positions, {layer for layer, _ in by_head}
        ):
            for (layer, head), members in by_head.items():
                logits, values = layers[layer]
                stats = heads.row_stats(logits[:, head], values[:, head])
                for i in members:
                    p = points[i]
                    row = out[i]
                    noise = z[(p["noise"], layer, head)][part][..., :width]
                    row["sq_err"][part] = noisy_sq_err(
                        stats["log_p"], stats["dev"], noise, p["noise_scale"]
                    )
                    row["spread"][part] = stats["spread"]
                    row["grad_sq"][part] = stats["grad_sq"]
                    row["entropy"][part] = stats["entropy"]
                    row["n_eff"][part] = 1.0 / stats["sum_p2"]
                    row["sink_weight"][part] = stats["p"][:, 0] + stats["p"][:, -1]
                    tail = delta_next.tail_power(p["noise"], float(p["noise_scale"]))
                    for name, sums in next_order_sums(stats, tail).items():
                        row[name][part] = sums
    if record:
        return out, (ids, positions, nested, z)
    return out


def counts(n: int, keys: int, k: int) -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `simulate_block`: per stream
    the window's forward pass (`real_model.forward_counts`); per point its own K x keys noise
    numbers (~2 words and a transform each), one float32 exp per noisy weight and the K noisy
    outputs ((K x keys) by (keys x d_h), float32), and the clean row's statistics in float64.
    Setup: the trained model's weights."""
    noisy = k * keys
    return Work(
        own=Counts(
            normals=noisy,
            exps32=noisy,
            exps=keys,
            flops=2 * noisy * heads.HEAD_SIZE,
            bytes=60 * noisy + 160 * keys * heads.HEAD_SIZE,
        ),
        shared=real_model.forward_counts(n),
        own_block=Counts(calls=60),
        shared_block=Counts(calls=400),
        setup=real_model.MODEL_SETUP,
    )
