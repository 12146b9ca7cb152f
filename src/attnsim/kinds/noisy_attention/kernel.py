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
- grad_sq = sum_i p_i^2 ||v_i - o||^2 = sum_i p_i^2 ||w_i||^2 - 2 u_o . sum_i p_i^2 w_i + ||u_o||^2
sum_i p_i^2,

accumulated in float64 chunk by chunk; r stays within ~|o| of o, so neither difference loses
more than a factor ~2 of precision, and both stay accurate when the weights are one-hot.

Noisy output k at scale sigma: w~_ki = p_i e^{sigma z_ki} / sum_j p_j e^{sigma z_kj}. One float32
matrix product per chunk and scale, F (K x m) times the p-weighted values (m x d), gives the
output; the small (K x d) result is normalised, not the weights. Three forms, chosen per block
and scale from sigma * max|z| over the block (before any value is drawn):

1. sigma max|z| <= 0.5: F = expm1(sigma z) = u, A = sum p u w, B = sum p u, and
   o~ - o = (A - B u_o) / (1 + B): the difference of the two softmaxes is formed from the small
   quantity u itself, keeping float32's relative precision for any small sigma
   (1 + B >= e^-0.5, so the denominator loses at most a factor ~1.6 of precision). The limit was
   4 up to algorithm version 3 and 1 in version 4: numpy's float32 expm1 has no SIMD loop on
   AVX2-only CPUs (~5-12 ns per number there, 0.4 ns on AVX-512; exp: 1.2 and 0.5 ns), and form 2
   is accurate enough from R = 0.5 on: its float32 rounding (~1e-7/sigma relative, times up to
   ~sqrt(n_eff) at uniform weights) is random, not a bias. Measured against form 1 on the same
   draws: sq_err within 6e-6 per trial for sigma >= 0.1 (n = 16 .. 4096, the five families), and
   at the worst case, student_t at sigma = 0.01 (R = 0.6), uniform weights, n = 4096: 1.3e-4 per
   trial, mean over 60 trials (2 +- 4)e-6, against the ~0.2% SE of a point's mean.
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
from typing import cast

import numpy as np

from attnsim.kernels.noise import standard_noise32
from attnsim.kernels.sampling import standard_normal
from attnsim.kinds.base import Counts, Work
from attnsim.theory import delta_next

F32 = np.float32
# working set of one key chunk per trial (part of the algorithm: it fixes the draw order)
CHUNK_BYTES = 4 * 2**20
EXPM1_LIMIT = 0.5  # sigma * max|z| up to which form 1 (expm1) is used
EXP_LIMIT = 25.0  # ... and form 2 (unshifted exp); beyond it form 3
GROUP_SCALES = 8  # at most this many scales share one call of each ufunc / batched matrix product
GROUP_BYTES = (
    2**20
    # ... and their noisy weights and outputs stay below this per trial (large n: one scale per
    # call, in
    # L2)
)


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
    """Bytes per trial and scale of a group: noisy weights of a chunk (K x m) and outputs (K x (d +
    1)), float32."""
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
    return (
        56 * n
        + 4 * k * n
        + key_chunk(n, d, k) * chunk_bytes_per_key(d, k)
        + group * scale_bytes(n, d, k)
        + group * 16 * k * (d + 1)
        + sums
    )


def form(noise_scale: float, bound: float) -> int:
    """Which form computes a scale, from sigma * max|z| over the block (see the module
    docstring)."""
    reach = noise_scale * bound
    return 1 if reach <= EXPM1_LIMIT else 2 if reach <= EXP_LIMIT else 3


@dataclass(frozen=True)
class Draws:
    """A block's random numbers as the kernel used them (recorded for the tests' oracles)."""

    logits: np.ndarray  # (T, n) float64, the key with the largest logit at index 0
    noise: np.ndarray  # (T, K, n) float32, unit variance
    values: np.ndarray  # (T, n, d) float32


@dataclass
class CleanSoftmax:
    """The clean logits of a block, top key first, and their softmax in float64."""

    logits: np.ndarray  # (T, n)
    log_w: np.ndarray  # (T, n) log p - log p_0 <= 0, exactly 0 at key 0
    weights: np.ndarray  # (T, n) p
    rest: np.ndarray  # (T,) 1 - p_0, without cancellation
    entropy: np.ndarray  # (T,)
    sum_p2: np.ndarray  # (T,)
    pair: np.ndarray  # (T, 2, n) float32: p and p^2, the rows of the moments' product


def clean_softmax(
    rng: np.random.Generator, trials: int, n: int, logit_scale: float
) -> CleanSoftmax:
    """Draw the logits and put each trial's top key at index 0 (a relabelling: every law is
    symmetric in the keys)."""
    rows = np.arange(trials)
    logits = standard_normal(rng, (trials, n)).astype(np.float64)
    logits *= float(logit_scale)
    top = np.argmax(logits, axis=1)
    peak = logits[rows, top]
    logits[rows, top] = logits[:, 0]
    logits[:, 0] = peak
    log_w = logits - peak[:, None]
    weights = np.exp(log_w)
    rest = weights[:, 1:].sum(axis=1)
    total = 1.0 + rest
    weights /= total[:, None]
    rest /= total
    entropy = np.log(total) - np.einsum("tn,tn->t", weights, log_w)
    np.clip(entropy, 0.0, math.log(n), out=entropy)
    sum_p2 = np.einsum("tn,tn->t", weights, weights)
    pair = np.empty((trials, 2, n), F32)
    pair[:, 0] = weights
    np.square(pair[:, 0], out=pair[:, 1])
    return CleanSoftmax(logits, log_w, weights, rest, entropy, sum_p2, pair)


@dataclass
class NoisePlan:
    """The block's standard noise, chunk by chunk, and how each scale is computed (its form, see
    above)."""

    z: list  # per key chunk (T, K, m) float32
    starts: range  # first key of each chunk
    chunk: int  # keys per chunk
    order: np.ndarray  # scales sorted by form: each form is one run of rows
    sigma: np.ndarray  # (S, 1, 1, 1) float32, in that order
    runs: dict  # form -> (first, end) rows of `sigma`
    log_w32: np.ndarray | None  # float32 log-weights, for form 3 only
    row_max: np.ndarray | None  # form 3's row maxima

    @property
    def heavy(self) -> bool:
        return self.log_w32 is not None


def plan_noise(
    rng: np.random.Generator, clean: CleanSoftmax, noise: str, k: int, d: int, scales: np.ndarray
) -> NoisePlan:
    """Draw the noise of every key chunk (before any value) and choose each scale's form from sigma
    * max|z|."""
    trials, n = clean.weights.shape
    chunk = key_chunk(n, d, k)
    starts = range(0, n, chunk)
    z = [
        standard_noise32(rng, noise, (trials, k, min(n, start + chunk) - start)) for start in starts
    ]
    bound = max(max(float(part.max()), -float(part.min())) for part in z)
    forms = np.array([form(s, bound) for s in scales], dtype=int)
    order = np.argsort(forms, kind="stable")
    sigma = scales[order].astype(F32)[:, None, None, None]
    runs = {
        f: (
            int(np.searchsorted(forms[order], f)),
            int(np.searchsorted(forms[order], f, side="right")),
        )
        for f in (1, 2, 3)
    }
    heavy = runs[3][1] > runs[3][0]
    log_w32 = clean.log_w.astype(F32) if heavy else None
    row_max = _row_max(z, log_w32, sigma[runs[3][0] : runs[3][1]], chunk) if heavy else None
    return NoisePlan(z, starts, chunk, order, sigma, runs, log_w32, row_max)


@dataclass
class Sums:
    """What the key chunks add up, in float64 where it matters (see the module docstring)."""

    moments: np.ndarray  # (T, 2, d): sum p w, sum p^2 w
    norms: np.ndarray  # (T, n) float32: ||w_i||^2
    powers: tuple  # r of the next-order rows: 3, 4 and each scale's k* with a tail term
    high_w: np.ndarray  # (T, R, d): sum p^r w
    high_ww: np.ndarray  # (T, R): sum p^r ||w||^2
    high_p: np.ndarray  # (T, R): sum p^r
    outputs_a: np.ndarray | None  # (S, T, K, d): sum f w per sorted scale (several chunks only)
    outputs_b: np.ndarray | None  # (S, T, K, 1): sum f


def noisy_outputs(plan: NoisePlan, c: int, weighted, values, p_col, buffer, group: int):
    """Yield (first, end, A, B) per group of sorted scales for key chunk `c`: A = sum f w, B = sum f
    (p-weighted in forms 1 and 2), one float32 product per form run and trial."""
    size, trials, k = len(plan.sigma), values.shape[0], plan.z[c].shape[1]
    m, d = values.shape[1], values.shape[2]
    start = plan.starts[c]
    ones = np.ones((1, m, 1), F32) if plan.heavy else None
    for g0 in range(0, size, group):
        g1 = min(size, g0 + group)
        noisy = buffer[: g1 - g0, :, :, :m]
        np.multiply(plan.z[c][None], plan.sigma[g0:g1], out=noisy)
        out_a = np.empty((g1 - g0, trials, k, d), F32)
        out_b = np.empty((g1 - g0, trials, k, 1), F32)
        for which, (r0, r1) in plan.runs.items():
            r0, r1 = max(r0, g0), min(r1, g1)
            if r0 >= r1:
                continue
            part = noisy[r0 - g0 : r1 - g0]
            if which == 1:
                np.expm1(part, out=part)
            elif which == 2:
                np.exp(part, out=part)
            else:
                assert plan.log_w32 is not None and plan.row_max is not None  # heavy tails
                part += plan.log_w32[None, :, None, start : start + m]
                part -= plan.row_max[r0 - plan.runs[3][0] : r1 - plan.runs[3][0]]
                np.exp(part, out=part)
            np.matmul(part, values if which == 3 else weighted, out=out_a[r0 - g0 : r1 - g0])
            np.matmul(
                part, cast(np.ndarray, ones) if which == 3 else p_col, out=out_b[r0 - g0 : r1 - g0]
            )
        yield g0, g1, out_a, out_b


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
    """Per noise scale (in the order given), metric -> (T,) float64: sq_err, spread, grad_sq,
    entropy, n_eff, and the clean-weight sums of the next-order theory
    (`attnsim.theory.delta_next.next_order_stats`): sum_p2, sum_p3, c3, c4, m2 and c_tail (sum
    p^{k*} ||v - o||^2 for the scale's k*; nan where `delta_next.tail_power` gives no tail term).

    Phases: the clean softmax, the noise and each scale's form, then key chunk by key chunk the
    values (measured from r = p_0 v_0), their moments and the noisy outputs, and last the metrics.
    With `record`, also returns the `Draws` (all values kept: for tests on small sizes only).
    """
    k = int(noise_draws)
    scales = np.asarray(noise_scales, dtype=np.float64).reshape(-1)
    clean = clean_softmax(rng, trials, n, logit_scale)
    plan = plan_noise(rng, clean, noise, k, d, scales)
    del clean.log_w
    size, group = len(scales), group_scales(n, d, k)
    buffer = np.empty((min(group, size), trials, k, plan.chunk), F32)
    single = len(plan.starts) == 1
    tails = sorted(
        {t for t in (delta_next.tail_power(noise, float(s)) for s in scales) if t is not None}
    )
    powers = (3.0, 4.0, *tails)
    sums = Sums(
        moments=np.zeros((trials, 2, d)),
        norms=np.empty((trials, n), F32),
        powers=powers,
        high_w=np.zeros((trials, len(powers), d)),
        high_ww=np.zeros((trials, len(powers))),
        high_p=np.zeros((trials, len(powers))),
        outputs_a=None if single else np.zeros((size, trials, k, d)),
        outputs_b=None if single else np.zeros((size, trials, k, 1)),
    )
    sq_sorted = np.empty((size, trials))
    w32 = clean.pair[:, 0]
    kept: list[np.ndarray] = []
    reference = None
    for c, start in enumerate(plan.starts):
        stop = min(n, start + plan.chunk)
        values = standard_normal(rng, (trials, stop - start, d))
        if record:
            kept.append(values.copy())
        if start == 0:
            head = values[:, 0, :]
            reference = w32[:, :1, None] * head[:, None, :]  # r = p_0 v_0, (T, 1, d)
            head_rel = (clean.rest[:, None] * head).astype(F32)  # (1 - p_0) v_0
            values -= reference
            values[:, 0, :] = head_rel
        else:
            values -= reference
        np.einsum("tmd,tmd->tm", values, values, out=sums.norms[:, start:stop])
        sums.moments += np.matmul(clean.pair[:, :, start:stop], values)
        _high_moments(
            clean.weights[:, start:stop],
            sums.norms[:, start:stop],
            values,
            powers,
            sums.high_w,
            sums.high_ww,
            sums.high_p,
        )
        weighted = w32[:, start:stop, None] * values  # p w
        for g0, g1, out_a, out_b in noisy_outputs(
            plan, c, weighted, values, clean.pair[:, 0, start:stop, None], buffer, group
        ):
            if single:
                sq_sorted[g0:g1] = _sq_err(out_a, out_b, sums.moments[:, 0], plan.runs, g0)
            else:
                assert sums.outputs_a is not None and sums.outputs_b is not None
                sums.outputs_a[g0:g1] += out_a
                sums.outputs_b[g0:g1] += out_b
        del weighted, values
    if not single:
        assert sums.outputs_a is not None and sums.outputs_b is not None
        sq_sorted = _sq_err(sums.outputs_a, sums.outputs_b, sums.moments[:, 0], plan.runs, 0)
    sq_err = np.empty_like(sq_sorted)
    sq_err[plan.order] = sq_sorted
    result = metrics(clean, sums, sq_err, noise, scales)
    if record:
        return result, Draws(
            logits=clean.logits,
            noise=np.concatenate(plan.z, axis=2),
            values=np.concatenate(kept, axis=1),
        )
    return result


def metrics(
    clean: CleanSoftmax, sums: Sums, sq_err: np.ndarray, noise: str, scales: np.ndarray
) -> list[dict[str, np.ndarray]]:
    """Per scale, the trial metrics from the block's sums (the formulas of the module docstring)."""
    weights, sum_p2 = clean.weights, clean.sum_p2
    u_o, p2_w = sums.moments[:, 0], sums.moments[:, 1]
    uu = np.einsum("td,td->t", u_o, u_o)
    spread = np.maximum(np.einsum("tn,tn->t", weights, sums.norms) - uu, 0.0)
    p2_ww = np.einsum("tn,tn,tn->t", weights, weights, sums.norms)
    grad_sq = np.maximum(p2_ww - 2 * np.einsum("td,td->t", u_o, p2_w) + uu * sum_p2, 0.0)
    n_eff = 1.0 / sum_p2
    # c_r = sum p^r ||w - u_o||^2 = sum p^r ||w||^2 - 2 u_o . sum p^r w + ||u_o||^2 sum p^r, like
    # grad_sq
    c_high = np.maximum(
        sums.high_ww - 2 * np.einsum("td,trd->tr", u_o, sums.high_w) + uu[:, None] * sums.high_p,
        0.0,
    )
    m2_vec = p2_w - sum_p2[:, None] * u_o  # sum p^2 (w - u_o) = sum p^2 (v - o)
    shared = {
        "sum_p2": sum_p2,
        "sum_p3": sums.high_p[:, 0],
        "c3": c_high[:, 0],
        "c4": c_high[:, 1],
        "m2": np.einsum("td,td->t", m2_vec, m2_vec),
    }
    no_tail = np.full(len(sum_p2), np.nan)
    result = []
    for s, sq in zip(scales, sq_err):
        tail = delta_next.tail_power(noise, float(s))
        c_tail = no_tail if tail is None else c_high[:, sums.powers.index(tail)]
        result.append(
            {
                "sq_err": sq,
                "spread": spread,
                "grad_sq": grad_sq,
                "entropy": clean.entropy,
                "n_eff": n_eff,
                **shared,
                "c_tail": c_tail,
            }
        )
    return result


def _high_moments(weights, norms, values, powers, high_w, high_ww, high_p) -> None:
    """Add one key chunk's sum p^r w (float32 product, like `moments`), sum p^r ||w||^2 and sum p^r
    (float64) for r in `powers` to the accumulators (T, R, d), (T, R), (T, R). A separate product
    from `moments`, so that the rows the older metrics use are computed exactly as before. Powers
    below 1e-30 are flushed to 0 in the float32 rows (their terms are negligible; denormals slow the
    product)."""
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
    """max_i (log p_i + sigma z_ki) per scale, trial and row, shape (S, T, K, 1) float32 (form 3's
    shift)."""
    best = np.full((len(sigma),) + z[0].shape[:2] + (1,), -np.inf, F32)
    for c, z_chunk in enumerate(z):
        for j in range(len(sigma)):  # one scale at a time: a chunk-sized temporary
            part = z_chunk * sigma[j, 0]
            part += log_w32[:, None, c * chunk : c * chunk + z_chunk.shape[2]]
            np.maximum(best[j], part.max(axis=-1, keepdims=True), out=best[j])
    return best


def _sq_err(
    sum_a: np.ndarray, sum_b: np.ndarray, u_o: np.ndarray, runs: dict, first: int
) -> np.ndarray:
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


def noise_counts(noise: str, size: float) -> Counts:
    """Drawing `size` standardised noise numbers of a family (`kernels.noise.standard_noise32`)."""
    if noise == "gaussian":
        return Counts(normals=size, bytes=8 * size, calls=0)
    if noise == "uniform":
        return Counts(words=size, bytes=12 * size)
    if noise == "laplace":
        return Counts(words=2 * size, exps32=size, bytes=32 * size)
    if noise == "gumbel":
        return Counts(words=size, exps32=2 * size, bytes=40 * size)
    return Counts(normals=2 * size, words=size, exps32=2 * size, bytes=64 * size)  # student_t


def counts(n: int, d: int, k: int, noise: str) -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `simulate`: per stream the
    logits, the noise and the values with their moments and next-order rows (float32 products of
    2 and ~3 rows by the values); per scale one float32 exp per noise number (form 2; form 1's
    expm1, at sigma max|z| <= 0.5, costs more on AVX2-only CPUs: left to the kind's factor, so the
    planner need not evaluate the counts once per noise scale) and the (K x n) by (n x (d + 1))
    product. Calls: ~20 per key chunk and scale, ~300 call-equivalents per block and point besides
    (the point's metrics and the driver's checks of them), ~100 per block and stream."""
    chunks = math.ceil(n / key_chunk(n, d, k))
    return Work(
        own=Counts(exps32=k * n, flops=2 * k * n * (d + 1), bytes=12 * k * n),
        shared=noise_counts(noise, k * n)
        + Counts(normals=n + n * d, exps=2 * n, flops=10 * n * d, bytes=40 * n * d + 200 * n),
        own_block=Counts(calls=20 * chunks + 300),
        shared_block=Counts(calls=25 * chunks + 100),
    )


# --------------------------------------------------------------------------- oracle for the tests
