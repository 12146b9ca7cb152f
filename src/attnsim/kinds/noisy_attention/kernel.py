"""Softmax attention with i.i.d. noise on the logits, batched over trials and streamed over keys.

Shapes: logits (T, n) float64, standard noise z (T, K, n) float32, values (T, n, d) float32
drawn in chunks of keys (`key_chunk`), so a trial never holds all n x d values at once.
One set of draws serves every noise scale sigma (common random numbers); each scale is
computed on its own, so a point's numbers do not depend on its siblings: up to GROUP_SCALES
scales share each ufunc call (elementwise, so an element's value does not depend on its
neighbours), and numpy's batched matmul makes one BLAS call per scale and trial, of the same
shape whichever scales share the block.

Order of the draws per block: logits (Box-Muller), the noise chunk by chunk, then the values
chunk by chunk.
The key with the largest clean logit is swapped to index 0 before the values are drawn (the
metrics are symmetric in the keys and the values are i.i.d. and independent of the logits, so
this relabelling leaves every law unchanged); its value, drawn first, gives the reference point
r = p_0 v_0 that the other values are measured from, w_i = v_i - r (w_0 = (1 - p_0) v_0, with
1 - p_0 = sum_{i>0} p_i computed without cancellation). With u_o = o - r = sum_i p_i w_i:

- spread  = sum_i p_i ||v_i - o||^2   = sum_i p_i ||w_i||^2 - ||u_o||^2,
- grad_sq = sum_i p_i^2 ||v_i - o||^2 = sum_i p_i^2 ||w_i||^2 - 2 u_o . sum_i p_i^2 w_i + ||u_o||^2 sum_i p_i^2,

accumulated in float64 chunk by chunk; r stays within ~|o| of o, so neither difference loses
more than a factor ~2 of precision, and both stay accurate when the weights are one-hot.

Noisy output k at scale sigma: w~_ki = p_i e^{sigma z_ki} / sum_j p_j e^{sigma z_kj}. One float32
matrix product per chunk and scale, F (K x m) times the p-weighted values (m x d), gives the
output; the small (K x d) result is normalised, not the weights. Three forms, chosen per block
and scale from sigma * max|z| over the block (before any value is drawn):

1. sigma max|z| <= 4: F = expm1(sigma z) = u, A = sum p u w, B = sum p u, and
   o~ - o = (A - B u_o) / (1 + B): the difference of the two softmaxes is formed from the small
   quantity u itself, keeping float32's relative precision for any small sigma
   (1 + B >= e^-4, so the denominator loses at most a factor ~60 of precision).
2. sigma max|z| <= 25: F = exp(sigma z), o~ - o = A / B - u_o (no overflow or harmful underflow:
   terms lost to float32 underflow of p_i are below e^-20 of the largest term).
3. otherwise (heavy tails, large sigma): F = exp(log p + sigma z - row max) with unweighted
   values, A / B - u_o: exact shift, so nothing overflows and the dominant key is kept.

The float32 rounding of the noisy log-weights acts like extra noise of relative size ~1e-7, so
biases in sq_err are ~1e-14 relative; the statistical tests pin this down at sigma = 0.01.

The next-order theory (docs/science.md §2.8) needs, per trial, c_r = sum_i p_i^r ||v_i - o||^2 for
r = 3, 4 and r = k* of each scale with a heavy-tail term, from the same reference point:
c_r = sum p^r ||w||^2 - 2 u_o . sum p^r w + ||u_o||^2 sum p^r, with sum p^r w from one more float32
product per chunk (rows p^3, p^4, p^{k*}; kept apart from the product of `moments`, so the older
metrics are computed exactly as before), and m2 = ||sum p^2 w - (sum p^2) u_o||^2 from `moments`.
It costs ~2-4% of a block at n = 16384, d = 64, K = 32, 8 scales and draws no random numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnsim.kernels.noise import standard_noise32
from attnsim.kernels.sampling import standard_normal
from attnsim.theory import delta_next

F32 = np.float32
CHUNK_BYTES = 4 * 2**20  # working set of one key chunk per trial (part of the algorithm: it fixes the draw order)
EXPM1_LIMIT = 4.0  # sigma * max|z| up to which form 1 (expm1) is used
EXP_LIMIT = 25.0  # ... and form 2 (unshifted exp); beyond it form 3
GROUP_SCALES = 8  # at most this many scales share one call of each ufunc / batched matrix product
GROUP_BYTES = 2**20  # ... and their noisy weights and outputs stay below this per trial (large n: one scale per call, in L2)


def chunk_bytes_per_key(d: int, k: int) -> int:
    """Bytes per key of a chunk's working set: drawing the values (words, radius, output: 10 d;
    the noise before them: up to 32 K for student_t) or holding them with the weighted values
    (8 d), small rows."""
    return max(10 * d, 32 * k) + 48


def key_chunk(n: int, d: int, k: int) -> int:
    """Keys per chunk: all n if they fit CHUNK_BYTES, else an even split into chunks that do."""
    count = math.ceil(n * chunk_bytes_per_key(d, k) / CHUNK_BYTES)
    return math.ceil(n / count)


def scale_bytes(n: int, d: int, k: int) -> int:
    """Bytes per trial and scale of a group: noisy weights of a chunk (K x m) and outputs (K x (d + 1)), float32."""
    return 4 * k * (key_chunk(n, d, k) + d + 1)


def group_scales(n: int, d: int, k: int) -> int:
    """Scales computed together (a function of the stream's parameters, like every block shape)."""
    return max(1, min(GROUP_SCALES, GROUP_BYTES // scale_bytes(n, d, k)))


def bytes_per_trial(n: int, d: int, k: int) -> int:
    """Peak working set per trial: float64 logits and weights (7 x 8 n), float32 noise (4 K n), one
    key chunk, a group of scales with their float64 outputs while they are reduced and, when n
    takes several chunks, the float64 sums of a group's outputs."""
    chunks = math.ceil(n / key_chunk(n, d, k))
    sums = GROUP_SCALES * 8 * k * (d + 1) if chunks > 1 else 0
    group = group_scales(n, d, k)
    return 56 * n + 4 * k * n + key_chunk(n, d, k) * chunk_bytes_per_key(d, k) + group * scale_bytes(n, d, k) + group * 16 * k * (d + 1) + sums


def form(noise_scale: float, bound: float) -> int:
    """Which form computes a scale, from sigma * max|z| over the block (see the module docstring)."""
    reach = noise_scale * bound
    return 1 if reach <= EXPM1_LIMIT else 2 if reach <= EXP_LIMIT else 3


@dataclass(frozen=True)
class Draws:
    """A block's random numbers as the kernel used them (recorded for the tests' oracles)."""

    logits: np.ndarray  # (T, n) float64, the key with the largest logit at index 0
    noise: np.ndarray  # (T, K, n) float32, unit variance
    values: np.ndarray  # (T, n, d) float32


def simulate(
    rng: np.random.Generator,
    trials: int,
    n: int,
    d: int,
    logit_scale: float,
    noise: str,
    noise_draws: int,
    noise_scales,
    record: bool = False,
):
    """Per noise scale (in the order given), metric -> (T,) float64: sq_err, spread, grad_sq, entropy, n_eff,
    and the clean-weight sums of the next-order theory (`attnsim.theory.delta_next.next_order_stats`):
    sum_p2, sum_p3, c3, c4, m2 and c_tail (sum p^{k*} ||v - o||^2 for the scale's k*; nan where
    `delta_next.tail_power` gives no tail term).

    With `record`, also returns the `Draws` (all values kept: for tests on small sizes only).
    """
    k = int(noise_draws)
    scales = np.asarray(noise_scales, dtype=np.float64).reshape(-1)
    rows = np.arange(trials)

    # clean logits, top key first, and their softmax in float64
    logits = standard_normal(rng, (trials, n)).astype(np.float64)
    logits *= float(logit_scale)
    top = np.argmax(logits, axis=1)
    peak = logits[rows, top]
    logits[rows, top] = logits[:, 0]
    logits[:, 0] = peak
    log_w = logits - peak[:, None]  # <= 0, exactly 0 at key 0
    weights = np.exp(log_w)
    rest = weights[:, 1:].sum(axis=1)
    total = 1.0 + rest
    weights /= total[:, None]
    rest /= total  # 1 - p_0
    entropy = np.log(total) - np.einsum("tn,tn->t", weights, log_w)
    np.clip(entropy, 0.0, math.log(n), out=entropy)
    sum_p2 = np.einsum("tn,tn->t", weights, weights)
    pair = np.empty((trials, 2, n), F32)  # p and p^2, float32
    pair[:, 0] = weights
    np.square(pair[:, 0], out=pair[:, 1])
    w32 = pair[:, 0]

    # the noise, chunk by chunk, and each scale's form from sigma * max|z| over the block
    chunk = key_chunk(n, d, k)
    starts = range(0, n, chunk)
    z = [standard_noise32(rng, noise, (trials, k, min(n, start + chunk) - start)) for start in starts]
    bound = max(max(float(part.max()), -float(part.min())) for part in z)
    forms = np.array([form(s, bound) for s in scales], dtype=int)
    order = np.argsort(forms, kind="stable")  # scales sorted by form: each form is one run of rows
    sigma = scales[order].astype(F32)[:, None, None, None]
    runs = {f: (int(np.searchsorted(forms[order], f)), int(np.searchsorted(forms[order], f, side="right"))) for f in (1, 2, 3)}
    size = len(scales)
    group = group_scales(n, d, k)
    buffer = np.empty((min(group, size), trials, k, chunk), F32)
    heavy = runs[3][1] > runs[3][0]
    log_w32 = log_w.astype(F32) if heavy else None
    del log_w
    row_max = _row_max(z, log_w32, sigma[runs[3][0] : runs[3][1]], chunk) if heavy else None

    single = len(starts) == 1
    sums_a = None if single else np.zeros((size, trials, k, d))
    sums_b = None if single else np.zeros((size, trials, k, 1))
    sq_sorted = np.empty((size, trials))
    moments = np.zeros((trials, 2, d))  # sum p w, sum p^2 w
    # next-order statistics (docs/science.md §2.8): sums over p^r for r = 3, 4 and the k* of each scale with a tail term
    tails = sorted({t for t in (delta_next.tail_power(noise, float(s)) for s in scales) if t is not None})
    powers = (3.0, 4.0, *tails)
    high_w = np.zeros((trials, len(powers), d))  # sum p^r w
    high_ww = np.zeros((trials, len(powers)))  # sum p^r ||w||^2
    high_p = np.zeros((trials, len(powers)))  # sum p^r
    norms = np.empty((trials, n), F32)  # ||w_i||^2
    kept = [] if record else None
    reference = None
    for c, start in enumerate(starts):
        stop = min(n, start + chunk)
        values = standard_normal(rng, (trials, stop - start, d))
        if record:
            kept.append(values.copy())
        if start == 0:
            head = values[:, 0, :]
            reference = w32[:, :1, None] * head[:, None, :]  # r = p_0 v_0, (T, 1, d)
            head_rel = (rest[:, None] * head).astype(F32)  # (1 - p_0) v_0
            values -= reference
            values[:, 0, :] = head_rel
        else:
            values -= reference
        np.einsum("tmd,tmd->tm", values, values, out=norms[:, start:stop])
        moments += np.matmul(pair[:, :, start:stop], values)
        _high_moments(weights[:, start:stop], norms[:, start:stop], values, powers, high_w, high_ww, high_p)
        weighted = w32[:, start:stop, None] * values  # p w
        p_col = pair[:, 0, start:stop, None]
        ones = np.ones((1, stop - start, 1), F32) if heavy else None
        for g0 in range(0, size, group):
            g1 = min(size, g0 + group)
            noisy = buffer[: g1 - g0, :, :, : stop - start]
            np.multiply(z[c][None], sigma[g0:g1], out=noisy)
            out_a = np.empty((g1 - g0, trials, k, d), F32)  # sum f w (p-weighted in forms 1, 2)
            out_b = np.empty((g1 - g0, trials, k, 1), F32)  # sum f (p-weighted in forms 1, 2)
            for which, (r0, r1) in runs.items():
                r0, r1 = max(r0, g0), min(r1, g1)
                if r0 >= r1:
                    continue
                part = noisy[r0 - g0 : r1 - g0]
                if which == 1:
                    np.expm1(part, out=part)
                elif which == 2:
                    np.exp(part, out=part)
                else:
                    part += log_w32[None, :, None, start:stop]
                    part -= row_max[r0 - runs[3][0] : r1 - runs[3][0]]
                    np.exp(part, out=part)
                np.matmul(part, values if which == 3 else weighted, out=out_a[r0 - g0 : r1 - g0])
                np.matmul(part, ones if which == 3 else p_col, out=out_b[r0 - g0 : r1 - g0])
            if single:
                sq_sorted[g0:g1] = _sq_err(out_a, out_b, moments[:, 0], runs, g0)
            else:
                sums_a[g0:g1] += out_a
                sums_b[g0:g1] += out_b
        del weighted, values
    if not single:
        sq_sorted = _sq_err(sums_a, sums_b, moments[:, 0], runs, 0)
    sq_err = np.empty_like(sq_sorted)
    sq_err[order] = sq_sorted

    u_o, p2_w = moments[:, 0], moments[:, 1]
    uu = np.einsum("td,td->t", u_o, u_o)
    spread = np.maximum(np.einsum("tn,tn->t", weights, norms) - uu, 0.0)
    p2_ww = np.einsum("tn,tn,tn->t", weights, weights, norms)
    grad_sq = np.maximum(p2_ww - 2 * np.einsum("td,td->t", u_o, p2_w) + uu * sum_p2, 0.0)
    n_eff = 1.0 / sum_p2
    # c_r = sum p^r ||w - u_o||^2 = sum p^r ||w||^2 - 2 u_o . sum p^r w + ||u_o||^2 sum p^r, like grad_sq
    c_high = np.maximum(high_ww - 2 * np.einsum("td,trd->tr", u_o, high_w) + uu[:, None] * high_p, 0.0)
    m2_vec = p2_w - sum_p2[:, None] * u_o  # sum p^2 (w - u_o) = sum p^2 (v - o)
    shared = {"sum_p2": sum_p2, "sum_p3": high_p[:, 0], "c3": c_high[:, 0], "c4": c_high[:, 1], "m2": np.einsum("td,td->t", m2_vec, m2_vec)}
    no_tail = np.full(trials, np.nan)
    result = []
    for s, sq in zip(scales, sq_err):
        tail = delta_next.tail_power(noise, float(s))
        c_tail = no_tail if tail is None else c_high[:, powers.index(tail)]
        result.append({"sq_err": sq, "spread": spread, "grad_sq": grad_sq, "entropy": entropy, "n_eff": n_eff, **shared, "c_tail": c_tail})
    if record:
        return result, Draws(logits=logits, noise=np.concatenate(z, axis=2), values=np.concatenate(kept, axis=1))
    return result


def _high_moments(weights, norms, values, powers, high_w, high_ww, high_p) -> None:
    """Add one key chunk's sum p^r w (float32 product, like `moments`), sum p^r ||w||^2 and sum p^r
    (float64) for r in `powers` to the accumulators (T, R, d), (T, R), (T, R). A separate product from
    `moments`, so that the rows the older metrics use are computed exactly as before. Powers below
    1e-30 are flushed to 0 in the float32 rows (their terms are negligible; denormals slow the product)."""
    rows = np.empty((weights.shape[0], len(powers), weights.shape[1]), F32)
    square = weights * weights
    for j, r in enumerate(powers):
        p_r = square * weights if r == 3 else square * square if r == 4 else np.power(weights, r)
        high_p[:, j] += p_r.sum(axis=1)
        high_ww[:, j] += np.einsum("tm,tm->t", p_r, norms)
        np.copyto(rows[:, j], p_r, casting="same_kind")
    rows[rows < 1e-30] = 0
    high_w += np.matmul(rows, values)


def _row_max(z, log_w32, sigma, chunk) -> np.ndarray:
    """max_i (log p_i + sigma z_ki) per scale, trial and row, shape (S, T, K, 1) float32 (form 3's shift)."""
    best = np.full((len(sigma),) + z[0].shape[:2] + (1,), -np.inf, F32)
    for c, z_chunk in enumerate(z):
        for j in range(len(sigma)):  # one scale at a time: a chunk-sized temporary
            part = z_chunk * sigma[j, 0]
            part += log_w32[:, None, c * chunk : c * chunk + z_chunk.shape[2]]
            np.maximum(best[j], part.max(axis=-1, keepdims=True), out=best[j])
    return best


def _sq_err(sum_a: np.ndarray, sum_b: np.ndarray, u_o: np.ndarray, runs: dict, first: int) -> np.ndarray:
    """mean_k ||o~_k - o||^2, (S, T), for the scales first, first + 1, ... (sorted by form) from
    A = sum f w (S, T, K, d), B = sum f (S, T, K, 1) and u_o = o - r (T, d), in float64, one run
    of scales of the same form at a time (float64 inputs are overwritten)."""
    sq = np.empty(sum_a.shape[:2])
    u = u_o[:, None, :]
    for which, (r0, r1) in runs.items():
        r0, r1 = max(r0 - first, 0), min(r1 - first, sum_a.shape[0])
        if r0 >= r1:
            continue
        a = sum_a[r0:r1].astype(np.float64, copy=False)
        b = sum_b[r0:r1].astype(np.float64, copy=False)
        if which == 1:
            a -= b * u
            b += 1.0
            a /= b
        else:
            a /= b
            a -= u
        sq[r0:r1] = np.einsum("stkd,stkd->st", a, a)
    sq /= sum_a.shape[2]
    return sq


def safe_ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator with 0/0 = 0 and x/0 = +inf (one-hot weights), never NaN."""
    out = np.zeros_like(numerator)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    out[(denominator <= 0) & (numerator > 0)] = np.inf
    return out


# --------------------------------------------------------------------------- oracle for the tests
