"""Censored regression of escape times on a log-scale predictor (docs/science.md §9.4): the
accelerated-failure-time (AFT) model fitted by maximum likelihood on every run, right-censored
runs included, with the slope's 95% interval by profile likelihood.

Model: log T = a + b x + sigma W, with x the log of the predictor (the initial logit std) and W
a standard error law of one of two families:
- `weibull`: W standard minimum-Gumbel, f(w) = exp(w - e^w), S(w) = exp(-e^w): T is Weibull with
  shape 1/sigma and log-scale a + b x (proportional hazards as well as AFT);
- `lognormal`: W standard normal: T is log-normal.

A run escaped at t (event = 1) contributes the density of T at t, a run censored at t (event = 0:
still on the plateau when its budget ran out, or when it diverged) contributes S(t) = P(T > t),
so a censored run says "later than t" and is neither dropped nor counted as an escape at t.

Numerics. With y = log t, gamma = (a/sigma, b/sigma, 1/sigma) and z = y/sigma - a/sigma - x b/sigma
(linear in gamma), both log-likelihoods are concave in gamma (Burridge 1981; the log-normal one as
for the Tobit model, Olsen 1978), so Newton's method with a halving line search on the analytic
gradient and Hessian finds the maximum whenever it exists. It exists unless the escaped runs sit
at fewer than two distinct x (then b is not identified: `NotIdentified`). The profile likelihood
of b fixes b and maximises over (a, sigma): the intercept-only model of y - b x, concave in the
same way. Its 95% interval is where the deviance 2 (l_max - l_profile(b)) stays below
chi^2_1(0.95) = Z95^2, found by bracketing and bisection on each side. The slope's standard error
is the delta method on the inverse observed information (a Wald SE, for reporting).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnsim.stats import Z95

FAMILIES = ("weibull", "lognormal")
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


def _check(x, time, event) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def _start(y, event) -> np.ndarray:
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
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    x, time, event = _check(x, time, event)
    y = np.log(time)
    design = np.column_stack([np.ones_like(x), x])
    gamma, best, hess = _maximise(family, design, y, event, _start(y, event))
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
