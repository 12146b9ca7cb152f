"""A reference AFT fit written with scipy (test-only): the negative log-likelihood from
scipy.stats' minimum-Gumbel and normal laws, minimised by scipy.optimize, and the slope's
profile-likelihood interval by root finding on the deviance. Independent of the package's
Newton iterations in (a/sigma, b/sigma, 1/sigma)."""

from __future__ import annotations

import numpy as np
from scipy import optimize, stats

LAWS = {"weibull": stats.gumbel_l, "lognormal": stats.norm}


def negative_loglik(params, x, time, event, family):
    """-log L of (a, b, log sigma): densities of T for escapes, survival for censored runs."""
    a, b, log_sigma = params
    sigma = np.exp(log_sigma)
    y = np.log(time)
    z = (y - a - b * x) / sigma
    law = LAWS[family]
    density = law.logpdf(z) - log_sigma - y
    return -float(np.sum(np.where(event == 1, density, law.logsf(z))))


def _minimise(fun, start):
    result = optimize.minimize(
        fun, start, method="Nelder-Mead", options={"xatol": 1e-11, "fatol": 1e-13, "maxiter": 40000}
    )
    return optimize.minimize(fun, result.x, method="BFGS", options={"gtol": 1e-9})


def reference_fit(x, time, event, family="weibull") -> dict:
    x, time, event = (np.asarray(v, dtype=float) for v in (x, time, event))
    y = np.log(time)
    start = [float(np.mean(y)), 0.0, float(np.log(np.std(y) + 0.1))]
    best = _minimise(lambda p: negative_loglik(p, x, time, event, family), start)
    a, b, log_sigma = best.x

    def excess(b_fixed):
        profile = _minimise(
            lambda p: negative_loglik([p[0], b_fixed, p[1]], x, time, event, family),
            [a + (b - b_fixed) * float(np.mean(x)), log_sigma],
        )
        return 2 * (profile.fun - best.fun) - stats.chi2.ppf(0.95, 1)

    width = 0.5 + abs(b)
    low = optimize.brentq(excess, b - width, b, xtol=1e-10)
    high = optimize.brentq(excess, b, b + width, xtol=1e-10)
    return {
        "intercept": a,
        "slope": b,
        "sigma": float(np.exp(log_sigma)),
        "loglik": -best.fun,
        "slope_low": low,
        "slope_high": high,
    }
