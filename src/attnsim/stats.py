"""The project's statistics, each with one owner: means with standard errors and Student-t 95%
intervals, ratios of paired means, the median's distribution-free interval, Wilson's interval of a
share, the weighted slope fit, McNemar's exact test, Spearman's rank correlation with its Fisher-z
interval, and right-censored times (Kaplan-Meier with Greenwood's variance; the censored
regression of escape times). Kinds, the claims engine and the collect jobs call these and write
none of their own (docs/science.md §7); tests/foundation checks each against scipy
(tests/oracles/stats.py).

Only numpy and the standard library: the collect jobs import this module. The t quantile inverts
the exact finite-series CDF (Abramowitz & Stegun 26.7.3-4) by bisection for up to 60 degrees of
freedom and uses the Cornish-Fisher expansion (26.7.5, error < 1e-8 there) beyond.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

CONFIDENCE = 0.95
# The normal quantiles every interval and power calculation uses, defined here once: Z95 for a
# two-sided 95% interval, Z80 for 80% power (one-sided).
Z95 = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)  # 1.9599639845400536
Z80 = NormalDist().inv_cdf(0.80)
EXACT_DF = 60


def _t_cdf_integer_df(t: float, df: int) -> float:
    """P(T <= t) for integer df from the closed finite series in theta = atan(t / sqrt(df))."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2:  # odd
        term, total = math.cos(theta), 0.0
        if df > 1:
            total = term
            for k in range(3, df - 1, 2):
                term *= c2 * (k - 1) / k
                total += term
        a = (2 / math.pi) * (theta + math.sin(theta) * total)
    else:
        term = total = 1.0
        for k in range(2, df - 1, 2):
            term *= c2 * (k - 1) / k
            total += term
        a = math.sin(theta) * total
    return 0.5 + a / 2  # a = P(|T| <= t) signed by t


def t_quantile(p: float, df: float) -> float:
    """Quantile of Student's t with `df` >= 1 degrees of freedom."""
    if df < 1:
        raise ValueError(f"t_quantile needs df >= 1, got {df}")
    z = NormalDist().inv_cdf(p)
    if df <= EXACT_DF and float(df).is_integer():
        lo, hi = (0.0, 1e6) if p >= 0.5 else (-1e6, 0.0)
        for _ in range(200):
            mid = (lo + hi) / 2
            if _t_cdf_integer_df(mid, int(df)) < p:
                lo = mid
            else:
                hi = mid
            if hi - lo < 1e-12 * max(1.0, abs(mid)):
                break
        return (lo + hi) / 2
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def mean_ci(values: np.ndarray) -> dict[str, float]:
    """Mean, standard error and 95% t-interval of i.i.d. trial values.

    Infinite values make the mean infinite and the interval unbounded
    rather than NaN, so a diverging quantity stays visible as +inf.
    """
    x = np.asarray(values, dtype=np.float64)
    count = x.size
    if count == 0:
        nan = float("nan")
        return {"mean": nan, "se": nan, "ci_low": nan, "ci_high": nan}
    if not np.all(np.isfinite(x)):
        mean = float(np.mean(x))  # +inf when a trial diverged (e.g. kappa = inf)
        return {"mean": mean, "se": float("inf"), "ci_low": mean, "ci_high": mean}
    mean = float(np.mean(x))
    se = float(np.std(x, ddof=1) / math.sqrt(count)) if count > 1 else float("inf")
    half = t_quantile(0.5 + CONFIDENCE / 2, count - 1) * se if count > 1 else float("inf")
    return {"mean": mean, "se": se, "ci_low": mean - half, "ci_high": mean + half}


def ratio_of_means(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """mean(x)/mean(y) for paired trials, with a delta-method standard error and 95% interval.

    Var(R) ~ Var(x - R y) / (T mean(y)^2): pairing cancels the variation the
    two share, which is what makes a measured-vs-predicted ratio sharp.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    nan = float("nan")
    if x.size < 2 or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))) or np.mean(y) <= 0:
        return {"mean": nan, "se": nan, "ci_low": nan, "ci_high": nan}
    ratio = float(np.mean(x) / np.mean(y))
    se = float(np.std(x - ratio * y, ddof=1) / (math.sqrt(x.size) * np.mean(y)))
    half = t_quantile(0.5 + CONFIDENCE / 2, x.size - 1) * se
    return {"mean": ratio, "se": se, "ci_low": ratio - half, "ci_high": ratio + half}


def wilson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (sensible at 0 and at 1, unlike the
    t-interval)."""
    if trials == 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    share = successes / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    half = (
        z
        / (1 + z * z / trials)
        * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials))
    )
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    # exact at the ends
    return (0.0 if successes == 0 else low), (1.0 if successes == trials else high)


def median_ci(values: np.ndarray) -> dict[str, float]:
    """The median and its distribution-free 95% interval (order statistics of ranks
    T/2 -+ 1.96 sqrt(T)/2, the normal approximation to the binomial)."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    x = x[~np.isnan(x)]
    if x.size < 2:
        return {"mean": math.nan, "ci_low": math.nan, "ci_high": math.nan}
    half = 1.96 * math.sqrt(x.size) / 2
    low = max(0, int(math.floor(x.size / 2 - half)))
    high = min(x.size - 1, int(math.ceil(x.size / 2 + half)))
    return {"mean": float(np.median(x)), "ci_low": float(x[low]), "ci_high": float(x[high])}


# --- the weighted slope fit ----------------------------------------------------------------------


@dataclass(frozen=True)
class SlopeFits:
    """Weighted least-squares lines, one per group (arrays over the groups, in group order)."""

    slope: np.ndarray
    intercept: np.ndarray
    se: np.ndarray  # sqrt(max(1, chi2_dof) / S_xx): never below what the points' own SEs give
    ci_low: np.ndarray  # slope -+ t_0.975(points - 2) se
    ci_high: np.ndarray
    chi2_dof: np.ndarray  # sum w (y - fit)^2 / (points - 2): above 1 the points scatter beyond
    points: np.ndarray  # their SEs


def weighted_slopes(x, y, w, group=None) -> SlopeFits:
    """The weighted least-squares line of y on x per group (`group`: an integer label 0..k-1 per
    point; None: one line through every point), weights w = 1 / Var(y) (docs/science.md §7.5).

    slope = sum w (x - x_w) y / S_xx with S_xx = sum w (x - x_w)^2 and x_w the weighted mean of x.
    The slope's variance is 1 / S_xx times max(1, chi2 / dof), chi2 = sum w (y - fit)^2 over the
    m points, dof = m - 2: the points may scatter about the line for real (curvature, a
    pre-asymptotic rate), not only by their own noise, and the interval must cover that lack of
    fit; a fit never claims more precision than the points' own SEs give. The 95% interval uses
    Student t with dof degrees of freedom (nan with fewer than 3 points). Grouped sums
    (`bincount`): a thousand lines cost one pass."""
    x, y, w = (np.asarray(v, dtype=np.float64) for v in (x, y, w))
    group = np.zeros(x.size, dtype=np.int64) if group is None else np.asarray(group)
    size = np.bincount(group).astype(float)

    def total(values):
        return np.bincount(group, weights=values, minlength=len(size))

    weight = total(w)
    xm = total(w * x) / weight
    sxx = total(w * (x - xm[group]) ** 2)
    slope = total(w * (x - xm[group]) * y) / sxx
    intercept = total(w * y) / weight - slope * xm
    dof = size - 2
    with np.errstate(divide="ignore", invalid="ignore"):
        residual = total(w * (y - intercept[group] - slope[group] * x) ** 2)
        chi2 = np.where(dof > 0, residual / dof, np.nan)
        se = np.where(dof > 0, np.sqrt(np.fmax(chi2, 1.0) / sxx), np.nan)
    quantile = {d: t_quantile(0.975, d) for d in set(dof[dof > 0].tolist())}
    t = np.array([quantile.get(d, math.nan) for d in dof.tolist()])
    return SlopeFits(slope, intercept, se, slope - t * se, slope + t * se, chi2, size.astype(int))


def weighted_slope(x, y, w) -> dict[str, float]:
    """`weighted_slopes` of one line, as floats: slope, intercept, se, ci_low, ci_high, chi2_dof,
    points."""
    fit = weighted_slopes(x, y, w)
    return {name: float(getattr(fit, name)[0]) for name in SlopeFits.__dataclass_fields__}


# --- paired outcomes and rank correlation --------------------------------------------------------


def mcnemar_p(saved: int, lost: int) -> float:
    """Exact two-sided McNemar p-value of the discordant pairs: binomial(saved + lost, 1/2)."""
    total = saved + lost
    if total == 0:
        return 1.0
    tail = sum(math.comb(total, i) for i in range(min(saved, lost) + 1)) / 2.0**total
    return min(1.0, 2.0 * tail)


def average_ranks(values) -> np.ndarray:
    """Ranks 1..n, ties given the mean of the ranks they share."""
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], x.size]
    ranks = np.empty(x.size)
    ranks[order] = np.repeat((starts + 1 + ends) / 2, ends - starts)
    return ranks


def spearman(x, y) -> float:
    """Spearman's rank correlation (average ranks for ties); nan with a missing value or a
    constant variable."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if np.isnan(x).any() or np.isnan(y).any():
        return math.nan
    rx, ry = average_ranks(x), average_ranks(y)
    if np.std(rx) == 0 or np.std(ry) == 0:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def fisher_interval(rho: float, count: int, confidence: float = 0.95) -> tuple[float, float]:
    """Fisher-z interval of a Spearman correlation over `count` points, with the Bonett-Wright
    variance (1 + rho^2 / 2) / (count - 3)."""
    if count <= 3 or not math.isfinite(rho):
        return math.nan, math.nan
    z = math.atanh(max(-0.999999, min(0.999999, rho)))
    half = NormalDist().inv_cdf(0.5 + confidence / 2) * math.sqrt((1 + rho * rho / 2) / (count - 3))
    return math.tanh(z - half), math.tanh(z + half)


# --- right-censored times: Kaplan-Meier ---------------------------------------------------------
#
# Right-censored times (a training run's steps to a loss threshold, censored at its budget): the
# Kaplan-Meier estimate, Greenwood's variance, log-log intervals, the median with its interval
# (docs/science.md §9.2).
#
# A time is `(time, event)`: `event` = 1 if the run reached the threshold at `time`, 0 if it was
# still above it when it stopped at `time` (its budget, or its divergence). The estimate of the
# survival function (the share of runs not yet escaped) at the distinct event times t_j is
#
#     S(t_j) = prod_{i <= j} (1 - d_i / n_i)
#
# with d_i events at t_i and n_i runs at risk just before t_i (a run censored at t_i is at risk at
# t_i: events are taken before censorings at a tie). Greenwood: Var S = S^2 sum d_i / (n_i (n_i -
# d_i)). The pointwise 95% interval is the log-log one, S^exp(+-z sqrt(v)) with v = sum d_i / (n_i
# (n_i - d_i)) / (log S)^2: it stays inside [0, 1] and behaves at small counts. The median is the
# first event time with S <= 1/2 (+inf if S never gets there: more than half censored), and its
# interval is that of Brookmeyer and Crowley: from the first time the upper band is <= 1/2 to the
# first time the lower band is (+inf if it never is).


@dataclass(frozen=True)
class KaplanMeier:
    """The estimate at its distinct event times (increasing)."""

    times: np.ndarray  # distinct event times t_j
    at_risk: np.ndarray  # n_j
    events: np.ndarray  # d_j
    survival: np.ndarray  # S(t_j)
    # sum_{i <= j} d_i / (n_i (n_i - d_i)): Var S = S^2 * greenwood (inf once S = 0)
    greenwood: np.ndarray
    low: np.ndarray  # log-log 95% band of S(t_j)
    high: np.ndarray
    runs: int

    def at(self, t: float) -> tuple[float, float, float]:
        """S(t) with its 95% band (a step function, right-continuous: S(t_j) counts the events at
        t_j)."""
        j = int(np.searchsorted(self.times, t, side="right")) - 1
        if j < 0:
            return 1.0, 1.0, 1.0
        return float(self.survival[j]), float(self.low[j]), float(self.high[j])

    def quantile(self, share: float = 0.5) -> tuple[float, float, float]:
        """The time by which `share` of the runs have escaped, S(t) <= 1 - share, with its 95%
        interval (Brookmeyer-Crowley on the log-log band); +inf where it is not reached."""
        level = 1.0 - share

        def first(values):
            hit = np.flatnonzero(values <= level + 1e-12)
            return float(self.times[hit[0]]) if hit.size else math.inf

        return first(self.survival), first(self.low), first(self.high)


def kaplan_meier(time, event, z: float = Z95) -> KaplanMeier:
    time = np.asarray(time, dtype=np.float64)
    event = np.asarray(event, dtype=np.float64)
    if time.shape != event.shape or time.ndim != 1:
        raise ValueError("time and event must be 1-d arrays of one length")
    if not np.all(np.isin(event, (0.0, 1.0))):
        raise ValueError("event must be 0 (censored) or 1 (escaped)")
    if np.any(~np.isfinite(time)):
        raise ValueError("times must be finite (a censored run's time is when it stopped)")
    times = np.unique(time[event == 1])
    at_risk = np.array([np.sum(time >= t) for t in times], dtype=np.float64)
    events = np.array([np.sum((time == t) & (event == 1)) for t in times], dtype=np.float64)
    survival = np.cumprod(1.0 - events / at_risk)
    with np.errstate(divide="ignore", invalid="ignore"):
        greenwood = np.cumsum(
            np.where(at_risk > events, events / (at_risk * (at_risk - events)), np.inf)
        )
        log_s = np.log(survival)
        se = np.sqrt(greenwood) / np.abs(log_s)
        low = np.where((survival > 0) & (survival < 1), survival ** np.exp(z * se), survival)
        high = np.where((survival > 0) & (survival < 1), survival ** np.exp(-z * se), survival)
    return KaplanMeier(times, at_risk, events, survival, greenwood, low, high, int(time.size))


def escaped_share(km: KaplanMeier, time, event, t: float) -> tuple[float, float, float]:
    """1 - S(t) with its 95% interval: from the log-log band where 0 < S(t) < 1; where S(t) is 0
    or 1 (the band has no width there) the Wilson interval of the escaped count among the runs not
    censored before t (without censoring before t, Kaplan-Meier is that binomial share)."""
    s, low, high = km.at(t)
    if 0.0 < s < 1.0:
        return 1.0 - s, 1.0 - high, 1.0 - low
    time, event = np.asarray(time, dtype=np.float64), np.asarray(event, dtype=np.float64)
    known = int(np.sum((time >= t) | (event == 1)))
    escaped = int(np.sum((time <= t) & (event == 1)))
    w_low, w_high = wilson(escaped, known)
    return 1.0 - s, w_low, w_high


# --- right-censored times: the censored regression ----------------------------------------------
#
# Censored regression of escape times on a log-scale predictor (docs/science.md §9.4): the
# accelerated-failure-time (AFT) model fitted by maximum likelihood on every run, right-censored
# runs included, with the slope's 95% interval by profile likelihood.
#
# Model: log T = a + b x + sigma W, with x the log of the predictor (the initial logit std) and W
# a standard error law of one of two families:
# - `weibull`: W standard minimum-Gumbel, f(w) = exp(w - e^w), S(w) = exp(-e^w): T is Weibull with
#   shape 1/sigma and log-scale a + b x (proportional hazards as well as AFT);
# - `lognormal`: W standard normal: T is log-normal.
#
# A run escaped at t (event = 1) contributes the density of T at t, a run censored at t (event = 0:
# still on the plateau when its budget ran out, or when it diverged) contributes S(t) = P(T > t),
# so a censored run says "later than t" and is neither dropped nor counted as an escape at t.
#
# Numerics. With y = log t, gamma = (a/sigma, b/sigma, 1/sigma) and
# z = y/sigma - a/sigma - x b/sigma (linear in gamma), both log-likelihoods are concave in gamma
# (Burridge 1981; the log-normal one as for the Tobit model, Olsen 1978), so Newton's method with
# a halving line search on the analytic gradient and Hessian finds the maximum whenever it exists.
# It exists unless the escaped runs sit at fewer than two distinct x (then b is not identified:
# `NotIdentified`). The profile likelihood of b fixes b and maximises over (a, sigma): the
# intercept-only model of y - b x, concave in the same way. Its 95% interval is where the deviance
# 2 (l_max - l_profile(b)) stays below chi^2_1(0.95) = Z95^2, found by bracketing and bisection on
# each side. The slope's standard error is the delta method on the inverse observed information
# (a Wald SE, for reporting).

AFT_FAMILIES = ("weibull", "lognormal")
DEVIANCE_95 = Z95 * Z95  # chi^2 with 1 degree of freedom, 95% quantile
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_NEWTON_STEPS = 200
_TOLERANCE = 1e-10  # on the Newton decrement (the log-likelihood's predicted gain)


class NotIdentified(ValueError):
    """The data do not determine the slope (escapes at fewer than two distinct x, or no
    maximum)."""


@dataclass(frozen=True)
class AftFit:
    """The maximum-likelihood fit of one family and the slope's profile-likelihood interval."""

    family: str
    intercept: float  # a
    slope: float  # b
    sigma: float  # the scale of log T around the line
    slope_se: float  # Wald SE of b (inverse observed information, delta method)
    slope_low: float  # 95% profile-likelihood interval of b
    slope_high: float
    loglik: float  # the log-likelihood of the times t (densities of T, not of log T)
    runs: int
    events: int


def _erfc(values: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.erfc, 1, 1)(values).astype(np.float64)


def _normal_log_sf(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log P(W > z) for W ~ N(0, 1) and the hazard phi(z) / P(W > z), accurate in both tails:
    erfc below z = 25, the asymptotic series 1 - 1/z^2 + 3/z^4 - 15/z^6 beyond (error < 1e-9)."""
    far = z > 25.0
    near = np.where(far, 0.0, z)
    sf = 0.5 * _erfc(near / math.sqrt(2.0))
    log_phi = -0.5 * z * z - _LOG_SQRT_2PI
    zf = np.where(far, z, 25.0)
    series = 1.0 - zf**-2 + 3.0 * zf**-4 - 15.0 * zf**-6
    log_sf = np.where(far, log_phi - np.log(zf) + np.log(series), np.log(sf))
    return log_sf, np.exp(log_phi - log_sf)


def _terms(family: str, z: np.ndarray, event: np.ndarray):
    """Per run: the log-likelihood in z (without the log(1/sigma) and -y terms), its first and
    second derivatives in z."""
    if family == "weibull":
        ez = np.exp(np.minimum(z, 700.0))
        return event * z - ez, event - ez, -ez
    log_sf, hazard = _normal_log_sf(z)
    ll = np.where(event == 1, -0.5 * z * z - _LOG_SQRT_2PI, log_sf)
    d1 = np.where(event == 1, -z, -hazard)
    d2 = np.where(event == 1, -1.0, -hazard * (hazard - z))
    return ll, d1, d2


def _loglik(family, gamma, design, y, event):
    """The log-likelihood of the times and its gradient and Hessian in gamma = (alpha, tau):
    z = tau y - design @ alpha."""
    alpha, tau = gamma[:-1], gamma[-1]
    if tau <= 0:
        return -math.inf, None, None
    z = tau * y - design @ alpha
    ll, d1, d2 = _terms(family, z, event)
    events = float(event.sum())
    value = float(ll.sum() + events * math.log(tau) - (event * y).sum())
    u = np.column_stack([-design, y])  # dz / dgamma
    grad = u.T @ d1
    grad[-1] += events / tau
    hess = (u * d2[:, None]).T @ u
    hess[-1, -1] -= events / tau**2
    return value, grad, hess


def _maximise(family, design, y, event, start) -> tuple[np.ndarray, float, np.ndarray]:
    """Newton's method with step halving on the concave log-likelihood; NotIdentified if it does
    not converge (no maximum)."""
    gamma = np.array(start, dtype=np.float64)
    value, grad, hess = _loglik(family, gamma, design, y, event)
    for _ in range(_NEWTON_STEPS):
        try:
            step = -np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            raise NotIdentified("singular information: the slope is not determined") from None
        decrement = float(grad @ step)
        if not math.isfinite(decrement):
            break
        if decrement < _TOLERANCE:
            return gamma, value, hess
        length = 1.0
        while length > 1e-12:
            trial = gamma + length * step
            new, new_grad, new_hess = _loglik(family, trial, design, y, event)
            if new >= value + 1e-4 * length * decrement:
                break
            length /= 2
        else:
            break
        gamma, value, grad, hess = trial, new, new_grad, new_hess
    raise NotIdentified("the likelihood has no maximum (the escapes do not determine the line)")


def _aft_inputs(x, time, event) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, time, event = (np.asarray(v, dtype=np.float64) for v in (x, time, event))
    if not (x.ndim == 1 and x.shape == time.shape == event.shape):
        raise ValueError("x, time and event must be 1-d arrays of one length")
    if not np.all(np.isin(event, (0.0, 1.0))):
        raise ValueError("event must be 0 (censored) or 1 (escaped)")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(time)) and np.all(time > 0)):
        raise ValueError("x must be finite and times finite and positive")
    if np.unique(x[event == 1]).size < 2:
        raise NotIdentified("escapes at fewer than two distinct values of x")
    return x, time, event


def _aft_start(y, event) -> np.ndarray:
    """gamma for the line a = mean log time of the escaped runs, b = 0, sigma = 1."""
    return np.array([float(np.mean(y[event == 1])), 0.0, 1.0])


def _profile(family, b, x, y, event, start) -> tuple[float, np.ndarray]:
    """The largest log-likelihood with the slope fixed at b, and its (alpha0, tau): the intercept
    model of y - b x, whose density term -sum(event y) is then put back from y - b x to y."""
    gamma, value, _ = _maximise(family, np.ones((y.size, 1)), y - b * x, event, start)
    return value - b * float((event * x).sum()), gamma


def _profile_end(family, fit_gamma, best, b_hat, se, x, y, event, side: float) -> float:
    """Where the deviance reaches DEVIANCE_95 on one side of b_hat (side = -1 or +1): the step
    doubles until the deviance passes it, then bisection to 1e-9 of the slope's scale."""
    start = np.array([fit_gamma[0], fit_gamma[2]])
    inner, step = b_hat, max(se, 1e-6)
    for _ in range(60):
        outer = b_hat + side * step
        value, gamma = _profile(family, outer, x, y, event, start)
        if 2 * (best - value) > DEVIANCE_95:
            break
        inner, start, step = outer, gamma, 2 * step
    else:
        return side * math.inf
    while abs(outer - inner) > 1e-9 * max(1.0, abs(b_hat)):
        middle = 0.5 * (inner + outer)
        value, gamma = _profile(family, middle, x, y, event, start)
        if 2 * (best - value) > DEVIANCE_95:
            outer = middle
        else:
            inner, start = middle, gamma
    return 0.5 * (inner + outer)


def fit_aft(x, time, event, family: str = "weibull") -> AftFit:
    """The AFT fit of log `time` on `x` (one entry per run; `event` 1 escaped, 0 censored)."""
    if family not in AFT_FAMILIES:
        raise ValueError(f"family must be one of {AFT_FAMILIES}, got {family!r}")
    x, time, event = _aft_inputs(x, time, event)
    y = np.log(time)
    design = np.column_stack([np.ones_like(x), x])
    gamma, best, hess = _maximise(family, design, y, event, _aft_start(y, event))
    a0, a1, tau = gamma
    slope = a1 / tau
    cov = np.linalg.inv(-hess)
    gradient = np.array([0.0, 1.0 / tau, -a1 / tau**2])  # d b / d gamma
    se = math.sqrt(max(float(gradient @ cov @ gradient), 0.0))
    low = _profile_end(family, gamma, best, slope, se, x, y, event, -1.0)
    high = _profile_end(family, gamma, best, slope, se, x, y, event, +1.0)
    return AftFit(
        family=family,
        intercept=a0 / tau,
        slope=slope,
        sigma=1.0 / tau,
        slope_se=se,
        slope_low=low,
        slope_high=high,
        loglik=best,
        runs=int(x.size),
        events=int(event.sum()),
    )
