"""Next order of the delta method for noisy softmax attention (docs/science.md §2.8).

Notation (as in `attnsim.theory.noise`): eps_i i.i.d. with standard deviation sigma, drawn as in
`attnsim.kernels.noise` (gaussian N(0, s^2); uniform U(-sqrt3 s, sqrt3 s); laplace b log(U1/U2),
b = s/sqrt2; gumbel -beta log E, E ~ Exp(1), beta = s sqrt6/pi, i.e. the max-Gumbel law with
location 0, long upper tail; student_t 3 dof scaled to std s). Location shifts cancel in
w = e^eps / E[e^eps] and in the softmax, so only the law of w matters.

With x_i = v_i - o (so sum_i p_i x_i = 0), u_i = w_i - 1, kappa = E[u^2], mu3 = E[u^3],
mu4 = E[u^4], and per trial the clean-weight sums

    P2 = sum p_i^2,  P3 = sum p_i^3,  G = sum p_i^2 |x_i|^2  (grad_sq),  c3 = sum p_i^3 |x_i|^2,
    c4 = sum p_i^4 |x_i|^2,  m2 = |sum p_i^2 x_i|^2,

expanding |o~ - o|^2 = |A|^2 / (1 + S)^2, A = sum p_i u_i x_i, S = sum p_i u_i, in powers of u
and sorting the expectations by their order in sum p^2 gives (`next_order_from_stats`)

    p1: kappa G - 2 mu3 c3 + 3 kappa^2 G P2                           (first correction)
    p2: p1 + 3 (mu4 - 3 kappa^2) c4 + 6 kappa^2 m2
           - 4 kappa mu3 (G P3 + 3 c3 P2) + 15 kappa^3 G P2^2          (second; the default)
    u4: kappa G - 2 mu3 c3 + 3 [mu4 c4 + kappa^2 (G P2 + 2 m2 - 3 c4)] (all terms of order <= 4 in
    u)

Where E[e^{3 eps}] or E[e^{4 eps}] = inf but kappa < inf (laplace, gumbel with 2 < k* < 4,
k* = `moment_order`), single large noisy weights add a term -K sum_i p_i^{k*} |x_i|^2
(`tail_constant`), relative size (sum p^2)^{k* - 2}, and the divergent moment is replaced by its
analytic continuation (`u_moments(..., continued=True)`).
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.subjects import noise_families

ORDER_CAP = 4  # `finite_moment_order` reports at most this: all the orders the correction uses


def _law(family: str, sigma: float) -> noise_families.NoiseFamily:
    law = noise_families.get(family)
    if not sigma >= 0:
        raise ValueError(f"noise scale must be >= 0, got {sigma}")
    return law


def log_exp_moment(family: str, sigma: float, k: float) -> float:
    """log E[e^{k eps}] for k >= 0 in the project's convention (+inf where it diverges), from the
    family's record: gaussian k^2 s^2/2; uniform log(sinh(k a)/(k a)), a = sqrt3 s; laplace
    -log(1 - k^2 b^2); gumbel log Gamma(1 - k beta); student_t +inf for every k > 0. Within
    POLE_TOL (relative) of the pole k = k* counts as the pole, so that k = `moment_order` itself
    gives +inf despite rounding."""
    law = _law(family, sigma)
    if k < 0:
        raise ValueError(f"order must be >= 0, got {k}")
    if k == 0 or sigma == 0:
        return 0.0
    return law.log_exp_moment(sigma, k)


def moment_order(family: str, sigma: float) -> float:
    """k* = sup{k : E[e^{k eps}] < inf}: +inf for gaussian and uniform (and sigma = 0), 1/b =
    sqrt2/sigma for laplace, 1/beta = pi/(sqrt6 sigma) for gumbel, 0 for student_t.

    A supremum, not a maximum: at k = k* itself the moment is infinite (1/(1 - k^2 b^2) and
    Gamma(1 - k beta) both diverge there), so E[e^{k eps}] < inf exactly for 0 <= k < k*.
    """
    law = _law(family, sigma)
    if sigma == 0:
        return math.inf
    return law.moment_order(sigma)


def finite_moment_order(noise, sigma, cap: int = ORDER_CAP):
    """Highest integer k <= cap with E[e^{k eps}] < inf (0 if not even E[e^eps] is), vectorised:
    scalars in, int out; arrays (broadcast) in, int64 array out. The summary column next to
    `kappa_finite`: >= 2 means kappa < inf, cap (4) means every moment `sq_err_next_order` uses.

    Decided by the same test as `log_exp_moment` (k b < 1, k beta < 1), so the boundary cases
    agree with the closed forms: at k = k* exactly the moment is infinite and k is not counted.
    """
    noise_arr, sigma_arr = np.broadcast_arrays(
        np.asarray(noise, dtype=object), np.asarray(sigma, dtype=np.float64)
    )
    out = np.empty(noise_arr.shape, dtype=np.int64)
    for idx in np.ndindex(noise_arr.shape):
        fam, s = str(noise_arr[idx]), float(sigma_arr[idx])
        out[idx] = max(
            (k for k in range(cap + 1) if math.isfinite(log_exp_moment(fam, s, k))), default=0
        )
    return int(out) if out.ndim == 0 else out


def regime(noise: str, sigma: float) -> str:
    """Refines `attnsim.theory.noise.regime`, splitting its 'delta':

    - delta: E[e^{k eps}] < inf for k <= 4, every moment of `sq_err_next_order` finite; the
      relative error of the delta method is O(sum p^2) (gaussian, uniform, laplace sigma < sqrt2/4,
      gumbel sigma < pi/(4 sqrt6));
    - delta_slow: kappa < inf but E[e^{3 eps}] or E[e^{4 eps}] infinite; with k* < 3 the delta
      method still holds as sum p^2 -> 0 but its relative error falls only like (sum p^2)^{k* - 2};
    - heavy: only E[e^eps] finite; no_mean: E[e^eps] = inf (student_t).
    """
    order = finite_moment_order(noise, sigma)
    if order >= 4:
        return "delta"
    if order >= 2:
        return "delta_slow"
    return "heavy" if order == 1 else "no_mean"


def exp_moment_continued(family: str, sigma: float, k: float) -> float:
    """E[e^{k eps}] continued analytically in k past the divergence at k*: 1/(1 - k^2 b^2) for
    laplace, Gamma(1 - k beta) for gumbel (the finite part of the divergent integral: negative
    between the first and second pole); equal to exp(`log_exp_moment`) where that is finite; nan at
    a pole and for student_t (no continuation: the moment diverges for every k > 0)."""
    law = _law(family, sigma)
    log_m = log_exp_moment(family, sigma, k)
    if math.isfinite(log_m):
        return math.exp(log_m) if log_m < 709 else math.inf
    if law.exp_moment_continued is None:
        return math.nan
    return law.exp_moment_continued(sigma, k)


def u_moments(noise: str, sigma: float, continued: bool = False) -> tuple[float, float, float]:
    """(kappa, mu3, mu4) = (E[u^2], E[u^3], E[u^4]) of u = e^eps / E[e^eps] - 1.

    From e_k = E[w^k] - 1: kappa = e_2, mu3 = e_3 - 3 e_2, mu4 = e_4 - 4 e_3 + 6 e_2, with
    e_k = expm1(log E[e^{k eps}] - k log E[e^eps]) (mu3 loses ~1e-16/sigma^2 of relative precision
    to cancellation). A moment whose exponential moment diverges is +inf, or with `continued` its
    analytic continuation (`exp_moment_continued`: the coefficient of the regular term of the
    asymptotic expansion when k* is below its order; nan exactly at k* = 3 or 4).
    All three are +inf (nan with `continued`) when E[e^eps] = inf.
    """
    log_m1 = log_exp_moment(noise, sigma, 1)
    if not math.isfinite(log_m1):
        return (math.nan,) * 3 if continued else (math.inf,) * 3
    e = {}
    for k in (2, 3, 4):
        g = log_exp_moment(noise, sigma, k) - k * log_m1
        if math.isfinite(g):
            e[k] = math.expm1(g) if g < 709 else math.inf
        elif continued:
            e[k] = exp_moment_continued(noise, sigma, k) * math.exp(-k * log_m1) - 1
        else:
            e[k] = math.inf
    kappa = e[2]
    mu3 = e[3] - 3 * e[2] if math.isfinite(e[3]) else e[3]
    mu4 = e[4] - 4 * e[3] + 6 * e[2] if math.isfinite(e[4]) else e[4]
    return kappa, mu3, mu4


def tail_constant(noise: str, sigma: float) -> float:
    """K of the heavy-tail term: kappa - E[u^2/(1 + p u)^2] = (regular terms in p) + K p^{k* - 2} +
    ...

    From the Pareto tail P(w > t) ~ C t^{-k*} of w = e^eps/E[e^eps] (docs/science.md §2.8):
    K = C k* int_0^inf y^{1-k*} (1 - (1+y)^{-2}) dy = C Gamma(3 - k*) Gamma(k* + 1) / (k* - 2)
    (for 2 < k* < 3; continued in k* beyond, negative for 3 < k* < 4),
    C = M1^{-k*} / 2 for laplace, M1^{-k*} for gumbel, M1 = E[e^eps].
    0 when k* = inf (no tail term), nan when k* <= 2 or k* is an integer (a log term instead).
    """
    k = moment_order(noise, sigma)
    if math.isinf(k):
        return 0.0
    if k <= 2 or k == round(k):
        return math.nan
    m1 = math.exp(log_exp_moment(noise, sigma, 1))
    factor = _law(noise, sigma).tail_factor
    c = (math.nan if factor is None else factor) * m1**-k
    return c * math.gamma(3 - k) * math.gamma(k + 1) / (k - 2)


# --------------------------------------------------------------------------- per-trial statistics

ORDERS = ("p1", "p2", "u4")


def next_order_stats(p, v, tail_power: float | None = None) -> dict[str, np.ndarray]:
    """The clean-weight sums of the expansion, per trial: p (..., n), v (..., n, d) -> each (...).

    With x_i = v_i - o, o = sum p_i v_i (p is normalised here):
    sum_p2 = sum p_i^2, sum_p3 = sum p_i^3, grad_sq = G = sum p_i^2 |x_i|^2, c3 = sum p_i^3 |x_i|^2,
    c4 = sum p_i^4 |x_i|^2, m2 = |sum p_i^2 x_i|^2 and, given `tail_power` = k* (finite),
    c_tail = sum p_i^{k*} |x_i|^2.
    """
    p = np.asarray(p, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    p = p / p.sum(axis=-1, keepdims=True)
    o = np.einsum("...n,...nd->...d", p, v)
    x = v - o[..., None, :]
    norms = np.einsum("...nd,...nd->...n", x, x)
    p2 = p * p
    m2_vec = np.einsum("...n,...nd->...d", p2, x)
    stats = {
        "sum_p2": p2.sum(axis=-1),
        "sum_p3": (p2 * p).sum(axis=-1),
        "grad_sq": np.einsum("...n,...n->...", p2, norms),
        "c3": np.einsum("...n,...n->...", p2 * p, norms),
        "c4": np.einsum("...n,...n->...", p2 * p2, norms),
        "m2": np.einsum("...d,...d->...", m2_vec, m2_vec),
    }
    if tail_power is not None and math.isfinite(tail_power):
        stats["c_tail"] = np.einsum("...n,...n->...", p**tail_power, norms)
    return stats


def _tail_used(k_star: float, order: str) -> bool:
    """Whether the heavy-tail term K c_tail (relative size (sum p^2)^{k* - 2}) is above the
    truncation error of `order` (relative (sum p^2)^2 for p1, (sum p^2)^3 for p2; never for u4)."""
    if order == "u4" or math.isinf(k_star):
        return False
    return k_star - 2 < (2 if order == "p1" else 3)


def prediction_order(noise: str, sigma: float) -> str | None:
    """The highest order `next_order_from_stats` can give at this noise: "p2" where k* > 3, "p1"
    where 2 < k* <= 3 (both with the heavy-tail term when k* < 5), None where k* <= 2 (kappa =
    inf)."""
    k_star = moment_order(noise, sigma)
    return "p2" if k_star > 3 else "p1" if k_star > 2 else None


def tail_power(noise: str, sigma: float) -> float | None:
    """k*, the power of c_tail = sum p^{k*} |x|^2, when the order of `prediction_order` includes the
    heavy-tail term (2 < k* < 5, not an integer); None otherwise (no c_tail needed)."""
    order = prediction_order(noise, sigma)
    k_star = moment_order(noise, sigma)
    if order is None or not _tail_used(k_star, order) or k_star == round(k_star):
        return None
    return k_star


def next_order_from_stats(stats, noise: str, sigma: float, order: str = "p2"):
    """E|o~ - o|^2 to the next order, from per-trial sums (`next_order_stats`; arrays or floats).

    With P2, P3, G, c3, c4, m2, c_tail as there, (kappa, mu3, mu4) = `u_moments`, K =
    `tail_constant`:

    p1 = kappa G - 2 mu3 c3 + 3 kappa^2 G P2 - [K c_tail]
         error O((sum p^2)^min(2, k* - 1)) relative; needs k* > 2 (mu3 continued when k* < 3),
    p2 = p1 + 3 (mu4 - 3 kappa^2) c4 + 6 kappa^2 m2 - 4 kappa mu3 (G P3 + 3 c3 P2) + 15 kappa^3 G
    P2^2
         error O((sum p^2)^min(3, k* - 1)) relative; needs k* > 3 (mu4 continued when k* < 4),
    u4 = kappa G - 2 mu3 c3 + 3 [mu4 c4 + kappa^2 (G P2 + 2 m2 - 3 c4)]
         every term of total order <= 4 in u (no tail term, no continuation; needs k* > 4).

    [K c_tail] is included when k* - 2 is below the truncation order (k* < 4 for p1, < 5 for p2) and
    needs `stats["c_tail"]` for that k*. Returns +inf where the order does not apply (k* too small)
    and nan at the integer k* where the expansion has log terms.
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    g = np.asarray(stats["grad_sq"], dtype=np.float64)
    k_star = moment_order(noise, sigma)
    need = {"p1": 2, "p2": 3, "u4": 4}[order]

    def constant(value):
        return np.full(g.shape, value) if g.ndim else value

    if not k_star > need:
        return constant(math.inf)
    kappa, mu3, mu4 = u_moments(noise, sigma, continued=order != "u4")
    tail = _tail_used(k_star, order)
    K = tail_constant(noise, sigma) if tail else 0.0
    if not (math.isfinite(mu3) and (order == "p1" or math.isfinite(mu4)) and math.isfinite(K)):
        return constant(math.nan)
    out = expansion_from_moments(stats, kappa, mu3, mu4, order)
    if order == "u4":
        return out
    if tail:
        out = out - K * np.asarray(stats["c_tail"])
    return out


def expansion_from_moments(stats, kappa: float, mu3: float, mu4: float, order: str = "p2"):
    """p1, p2 or u4 of `next_order_from_stats` (without the heavy-tail term) for any i.i.d. law of
    u = e^eps / E[e^eps] - 1 given by its moments kappa, mu3, mu4 (another kind's noise law, e.g.
    dropout as logit noise, docs/science.md §11.6)."""
    g = np.asarray(stats["grad_sq"], dtype=np.float64)
    p2, c3 = np.asarray(stats["sum_p2"]), np.asarray(stats["c3"])
    if order == "u4":
        c4, m2 = np.asarray(stats["c4"]), np.asarray(stats["m2"])
        return kappa * g - 2 * mu3 * c3 + 3 * (mu4 * c4 + kappa**2 * (g * p2 + 2 * m2 - 3 * c4))
    out = kappa * g - 2 * mu3 * c3 + 3 * kappa**2 * g * p2
    if order == "p2":
        c4, m2, p3 = np.asarray(stats["c4"]), np.asarray(stats["m2"]), np.asarray(stats["sum_p3"])
        out = (
            out
            + 3 * (mu4 - 3 * kappa**2) * c4
            + 6 * kappa**2 * m2
            - 4 * kappa * mu3 * (g * p3 + 3 * c3 * p2)
            + 15 * kappa**3 * g * p2 * p2
        )
    return out


def sq_err_delta(p, v, noise: str, sigma: float):
    """The plain delta method kappa * sum p_i^2 |v_i - o|^2 per trial (+inf where kappa is)."""
    kappa = u_moments(noise, sigma)[0]
    g = next_order_stats(p, v)["grad_sq"]
    return kappa * g if math.isfinite(kappa) else np.full(np.shape(g), np.inf)


def sq_err_next_order(p, v, noise: str, sigma: float, order: str = "p2"):
    """Next-order prediction of E|o~ - o|^2 for clean weights p (..., n) (normalised here) and
    values v (..., n, d), batched over any leading axes; see `next_order_from_stats` for the
    orders."""
    return next_order_from_stats(
        next_order_stats(p, v, tail_power=moment_order(noise, sigma)), noise, sigma, order
    )


# --------------------------------------------------------------------------- predicted sizes
# (regimes)


def correction_sizes(
    noise: str, sigma: float, sum_p2: float, logit_scale: float = 0.0
) -> dict[str, float | str | None] | None:
    """The predicted relative size of each term of the expansion of `ratio` = E|o~ - o|^2 / (kappa
    G) (docs/science.md §2.8) at mean sum p^2 = `sum_p2`, for clean logits s_i ~ N(0, logit_scale^2)
    (logit_scale 0: uniform weights), from the noise law and sum p^2 alone: nothing measured enters.

    Weights p_i ~ e^{s_i} give P_r = sum p^r ~ n^{1-r} e^{l^2 r (r-1)/2} (l = logit_scale), so with
    P = P2: P3 = P^2 e^{l^2}, c_r / G ~ P_r / P2 = P^{r-2} e^{l^2 (r-1)(r-2)/2} and, for values
    independent of the weights, m2 / G ~ P^2 (e^{3 l^2} - 2 e^{l^2} + 1). Signed relative terms:

        first  = P (3 kappa - 2 (mu3 / kappa) e^{l^2})                       (uniform: (3 kappa^2 -
        2 mu3) / kappa * P) tail   = -(K / kappa) P^{k* - 2} e^{l^2 (k* - 1)(k* - 2) / 2}     (2 <
        k* < 5, non-integer; else 0) second = P^2 [3 (mu4 - 3 kappa^2) / kappa e^{3 l^2} + 6 kappa
        (e^{3 l^2} - 2 e^{l^2} + 1)
                      - 16 mu3 e^{l^2} + 15 kappa^2]                         (uniform: the 1/n^2
                      term of §2.8)

    with mu3, mu4 continued past their poles (`u_moments(continued=True)`). Also `order`, the order
    of the stored next-order prediction (`prediction_order`), and `k_star`. None where kappa is 0 or
    infinite (no delta method) and at an integer k* (log terms: no prediction of the size).
    """
    k_star = moment_order(noise, sigma)
    if not k_star > 2 or not sum_p2 > 0:
        return None
    kappa, mu3, mu4 = u_moments(noise, sigma, continued=True)
    if not (kappa > 0 and math.isfinite(kappa)) or (
        math.isfinite(k_star) and k_star == round(k_star)
    ):
        return None
    e1, e3 = math.exp(logit_scale**2), math.exp(3 * logit_scale**2)
    p = float(sum_p2)
    first = p * (3 * kappa - 2 * mu3 / kappa * e1)
    tail = 0.0
    if k_star < 5:
        k = k_star
        tail = (
            -tail_constant(noise, sigma)
            / kappa
            * p ** (k - 2)
            * math.exp(logit_scale**2 * (k - 1) * (k - 2) / 2)
        )
    second = (
        p
        * p
        * (
            3 * (mu4 - 3 * kappa**2) / kappa * e3
            + 6 * kappa * (e3 - 2 * e1 + 1)
            - 16 * mu3 * e1
            + 15 * kappa**2
        )
    )
    return {
        "first": first,
        "tail": tail,
        "second": second,
        "k_star": k_star,
        "order": prediction_order(noise, sigma),
    }


def delta_correction(sizes: dict[str, float] | None) -> float:
    """The predicted size of the delta method's first correction: |first| + |tail| where
    2 < k* <= 4 (the heavy-tail term leads the regular second order there), else |first|; +inf
    without a prediction (`correction_sizes` None). Added in size, not in sign: the regime does not
    rely on the two cancelling."""
    if sizes is None:
        return math.inf
    tail = abs(sizes["tail"]) if sizes["k_star"] <= 4 else 0.0
    return abs(sizes["first"]) + tail


def next_order_truncation(sizes: dict[str, float] | None) -> float:
    """The predicted size of what the stored next-order prediction leaves out (+inf without one):
    - p1 (2 < k* <= 3: first order and heavy-tail term kept): the regular second order |second|;
    - p2 (k* > 3: second order kept): the next term estimated from the last two kept ones,
      second^2 / max(|first|, |second|), the ratio estimate of §2.8's own truncation estimate
      (p2 - p1)^2 / |p1 - kappa G|, bounded by |second| itself."""
    if sizes is None or sizes["order"] is None:
        return math.inf
    first, second = abs(sizes["first"]), abs(sizes["second"])
    if sizes["order"] == "p1":
        return second
    return second * second / max(first, second) if second > 0 else 0.0


# --- heavy tails (1 < k* <= 2): the stable rate and its finite-n correction (§2.7) -------------


def heavy_rate(noise: str, sigma: float) -> float:
    """1/k* - 1, the asymptotic log-log slope of rel_err in n at uniform weights where kappa = inf
    but E[e^eps] < inf (1 < k* <= 2): the numerator sum (w_i - 1) x_i is in the domain of a
    k*-stable law, so it grows like n^{1/k*} against the denominator's n (§2.7)."""
    return 1 / moment_order(noise, sigma) - 1


def heavy_rate_exponent(noise: str, sigma: float) -> float:
    """gamma = (k* - 1)^2 / k*: the finite-n correction to E[rel_err] ~ n^{1/k* - 1} is of
    relative order n^{-gamma} (§2.7). A key with w ~ n saturates (its weight w/(W + w) <= 1), which
    removes from the stable law the part of its tail beyond s_max = n^{1 - 1/k*}: that part carries
    int_{s_max}^inf s^{-k*} ds ~ s_max^{1 - k*} = n^{-gamma} of the mean."""
    k_star = moment_order(noise, sigma)
    return (k_star - 1) ** 2 / k_star


def heavy_slope_correction(noise: str, sigma: float, n: float) -> float:
    """The order of the local slope's distance from 1/k* - 1 at n: gamma n^{-gamma} (the derivative
    of log(1 - D n^{-gamma}) in log n with an amplitude D of order one, which the theory does not
    fix: an order of magnitude, used to say where the asymptotic rate can be judged)."""
    gamma = heavy_rate_exponent(noise, sigma)
    return gamma * n ** (-gamma)


def heavy_rate_min_n(noise: str, sigma: float, size: float) -> float:
    """The smallest n at which `heavy_slope_correction` is at most `size`."""
    gamma = heavy_rate_exponent(noise, sigma)
    return (gamma / size) ** (1 / gamma) if gamma > size else 1.0
