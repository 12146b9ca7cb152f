"""Gradient of the attention output with respect to the logits at initialisation, batched over
trials.

Logits are dot products s_i = q.k_i / sqrt(d) with entries of q, k_i i.i.d. N(0, scale^2),
drawn with the exact trick of `attnsim.kernels.logit_entropy` (s = scale^2 r z,
r = sqrt(chi2_d / d)); values v_i ~ N(0, I_d). Shapes: z (T, n), values (T, n, d).

Per trial, with p = softmax(s) and o = sum_i p_i v_i:

- grad_sq = ||do/ds||_F^2 = sum_i p_i^2 ||v_i - o||^2   (column i of do/ds is p_i (v_i - o)),
- jacobian_fro = ||diag(p) - p p^T||_F = sqrt(sum p^2 - 2 sum p^3 + (sum p^2)^2).

Both vanish as the weights become one-hot, and both are computed so that they keep
their relative accuracy there instead of stopping at a rounding floor:

- The literal closed form of ||J||_F^2 cancels 1 - 2 + 1 when p is one-hot, leaving
  ~1e-16 of noise (a floor of ~1e-8 on jacobian_fro). We use the same polynomial
  regrouped into non-negative terms around the largest weight p_m (index m):
      ||J||_F^2 = (1 + S2) R2 - 2 sum_{i != m} p_i^3 + p_m^2 (R1^2 + R2),
  with R1 = sum_{i != m} p_i (= 1 - p_m), R2 = sum_{i != m} p_i^2, S2 = p_m^2 + R2;
  since p_i <= 1/2 for i != m, (1 + S2) R2 - 2 sum p_i^3 >= S2 R2 >= 0: no cancellation.
  The result is still clipped at 0 before the square root.
- Values are measured from the top key's value: w_i = v_i - v_m (w_m = 0),
  u = o - v_m = sum_i p_i w_i (accurate even when 1 - p_m is below the rounding of o), and
      grad_sq = sum_i p_i^2 ||w_i||^2 - 2 u . sum_i p_i^2 w_i + ||u||^2 sum_i p_i^2
  (= sum_i p_i^2 ||w_i - u||^2): with one-hot weights the first and last terms are both
  ~p_2^2 ||w_2||^2 and the middle one smaller by p_2, so nothing cancels; clipped at 0.

Precision (algorithm version 4). The entropy, the Jacobian's sums and n_eff are float64: near
uniform weights H sits within ~scale^4/2 of log n with a spread across trials of ~1e-6 nats or
less (SE ~1e-8 at 15,000 trials), below float32's rounding of the weights (~1e-7 relative). The
sums of grad_sq are float32: the weights enter relative to the runner-up key (the smallest gap
g_2 over i != m), q_i = p_i / p_2 = exp(-c (g_i - g_2)) <= 1 (exp in float32, argument floored at
-Q_FLOOR), with p_2 = e^{-c g_2} / Z in float64, so
    grad_sq = p_2^2 (sum q^2 ||w||^2 - 2 p_2 A1 . A2 + ||A1||^2 sum p^2),
    A1 = sum q w,  A2 = sum q^2 w
(key m has w = 0 and drops out) keeps its relative accuracy however small p_2 is (down to
float64's range, not float32's). w, ||w||^2 and the (2 x m) by (m x d) products are float32.
Measured against the float64 kernel of version 3 on the same draws (n = 16 .. 4096, d = 16,
scales 0.1 .. 100): grad_sq within 1.4e-5 relative (2e-6 typical), the other metrics changed in
their last bits only; the per-point relative SE of grad_sq's mean is >= 0.8% in the default
sweep (per-trial sd >= the mean, 15,000 trials): the rounding is >500x below it. On AVX2-only
CPUs numpy's float64 exp runs at a third of float32's rate, which is why the values pass (one
exp and one product per scale and chunk) is float32.

Common random numbers: z, r and the values serve every scale; each scale is computed on its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnsim.kernels.sampling import query_factor, standard_normal
from attnsim.kernels.softmax import GapSoftmax, gaps
from attnsim.kinds.base import Counts, Work

# working set of one key chunk per trial (part of the algorithm: it fixes the draw order)
CHUNK_BYTES = 4 * 2**20
F32 = np.float32
# The float32 weights of the values pass, q_i = exp(-c (g_i - g_2)) <= 1, are floored at e^-FLOOR:
# q^2 >= e^-80 stays a normal float32 (denormals slow the products ~10x), and a floored key adds
# at most e^-40 = 4e-18 of the runner-up's share to each sum (<= 5e-12 relative at n = 2^20).
Q_FLOOR = 40.0


def chunk_bytes_per_key(d: int) -> int:
    """Bytes per key of a chunk: the float32 values, made differences in place (4 d), their norms
    and the float32 rows q, q^2 (12); d + 4 more for the sampler's pieces (a fixed ~1 MB)."""
    return 5 * d + 16


def key_chunk(n: int, d: int) -> int:
    """Keys per chunk: all n if they fit CHUNK_BYTES, else an even split into chunks that do."""
    count = math.ceil(n * chunk_bytes_per_key(d) / CHUNK_BYTES)
    return math.ceil(n / count)


def bytes_per_trial(n: int, d: int) -> int:
    """Peak working set per trial: z and the shifted gaps (float32), the gaps and the float64
    weights, one key chunk."""
    return 28 * n + key_chunk(n, d) * chunk_bytes_per_key(d) + 32 * d + 256


@dataclass(frozen=True)
class Draws:
    """A block's random numbers as the kernel used them (recorded for the tests' oracles)."""

    # (T, n) float32 standard normals, the largest at index 0; logits = scale^2 * query_factor * z
    z: np.ndarray
    query_factor: np.ndarray  # (T,) r = sqrt(chi2_d / d)
    values: np.ndarray  # (T, n, d) float32


def simulate(rng: np.random.Generator, trials: int, n: int, d: int, scales, record: bool = False):
    """Per scale, metric -> (T,) float64: entropy, grad_sq, jacobian_fro, n_eff.

    With `record`, also returns the `Draws` (all values kept: for tests on small sizes only).
    """
    rows = np.arange(trials)
    factor = query_factor(rng, trials, d)
    z = standard_normal(rng, (trials, n))
    top = np.argmax(z, axis=1)
    peak = z[rows, top]
    z[rows, top] = z[:, 0]
    z[:, 0] = peak
    softmax = GapSoftmax(gaps(z))
    gap = softmax.gap
    multipliers = [float(scale) ** 2 * factor for scale in scales]
    # the runner-up's gap g_2 and the gaps from it, h_i = g_i - g_2 >= 0 (key 0: w_0 = 0, any h)
    second = gap[:, 1:].min(axis=1)
    shifted = np.subtract(gap, second[:, None], dtype=F32)
    shifted[:, 0] = 0.0

    # per scale (float64): totals, entropy, the Jacobian's sums and the runner-up's weight p_2
    runner_up, results = [], []
    for c in multipliers:
        e = softmax.weights(c)
        others = e[:, 1:]
        rest = others.sum(axis=-1)
        total = 1.0 + rest
        entropy = np.log(total) + c * np.vecdot(e, gap) / total
        np.clip(entropy, 0.0, softmax.log_n, out=entropy)
        p_top = 1.0 / total
        r1 = rest / total
        square = others * others
        r2 = square.sum(axis=-1) / total**2
        r3 = np.vecdot(square, others) / total**3
        del square
        sum_p2 = p_top**2 + r2
        jac_sq = (1 + sum_p2) * r2 - 2 * r3 + p_top**2 * (r1**2 + r2)
        runner_up.append(np.exp(-c * second) / total)  # p_2, not floored
        results.append(
            {
                "entropy": entropy,
                "jacobian_fro": np.sqrt(np.maximum(jac_sq, 0.0)),
                "n_eff": 1.0 / sum_p2,
                "sum_p2": sum_p2,
            }
        )

    # values chunk by chunk (float32): per scale sum q w and sum q^2 w, one (2 x m) by (m x d)
    # product, and sum q^2 ||w||^2, with q_i = p_i / p_2 (see the module docstring)
    chunk = key_chunk(n, d)
    sums = np.zeros((len(scales), trials, 2, d))
    p2_ww = np.zeros((len(scales), trials))
    kept: list[np.ndarray] = []
    head = None
    pair = np.empty((trials, 2, min(n, chunk)), F32)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        rel = standard_normal(rng, (trials, stop - start, d))
        if record:
            kept.append(rel.copy())
        if start == 0:
            head = rel[:, :1, :].copy()  # v_m
        rel -= head  # w = v - v_m (w_0 = 0 exactly)
        norms = np.einsum("tmd,tmd->tm", rel, rel)  # ||w||^2
        q = pair[:, :, : stop - start]
        for j, c in enumerate(multipliers):
            np.multiply(shifted[:, start:stop], (-c).astype(F32)[:, None], out=q[:, 0])
            np.maximum(q[:, 0], F32(-Q_FLOOR), out=q[:, 0])
            np.exp(q[:, 0], out=q[:, 0])  # q = p / p_2
            np.square(q[:, 0], out=q[:, 1])
            sums[j] += np.matmul(q, rel)
            p2_ww[j] += np.vecdot(q[:, 1], norms)
        del rel, norms  # before the next chunk is drawn
    for j, out in enumerate(results):
        p2 = runner_up[j]
        a1, a2, b = sums[j][:, 0], sums[j][:, 1], p2_ww[j]
        # sum p^2 ||w||^2 - 2 u . sum p^2 w + ||u||^2 sum p^2 with u = p_2 a1, sum p^2 w = p_2^2 a2
        bracket = (
            b
            - 2 * p2 * np.einsum("td,td->t", a1, a2)
            + np.einsum("td,td->t", a1, a1) * out.pop("sum_p2")
        )
        out["grad_sq"] = p2 * p2 * np.maximum(bracket, 0.0)
    results = [
        {name: out[name] for name in ("entropy", "grad_sq", "jacobian_fro", "n_eff")}
        for out in results
    ]
    if record:
        return results, Draws(z=z, query_factor=factor, values=np.concatenate(kept, axis=1))
    return results


def counts(n: int, d: int) -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `simulate`: per stream the
    n + n d normals, the gaps and the values' differences and norms; per scale the float64
    softmax statistics (one exp, ~12 passes of 8 bytes per logit), then per key chunk the float32
    weights (one exp) and the (2 x m) by (m x d) product. Calls: ~25 per scale and block, ~10 per
    key chunk and scale."""
    chunks = math.ceil(n / key_chunk(n, d))
    return Work(
        own=Counts(exps=n, exps32=n, flops=4 * n * d, bytes=110 * n),
        shared=Counts(normals=n + n * d, bytes=16 * n * d + 60 * n),
        own_block=Counts(calls=25 + 10 * chunks),
        shared_block=Counts(calls=20 + 6 * chunks),
    )
