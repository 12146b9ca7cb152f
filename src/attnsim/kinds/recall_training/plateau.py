"""The plateau law (docs/science.md §9.4-§9.5): how the median escape time grows with a
predictor measured at initialisation, fitted per run setting to the Kaplan-Meier medians with
their intervals, and the out-of-sample comparison of predictors. Used by the claims, the
figures and the headline of `recall_training`.

Fit: log10(median) = a + b log10(x) by weighted least squares (`attnsim.stats.weighted_slope`:
where the points scatter more than their intervals allow, chi^2 / dof > 1, the slope's variance is
inflated by that factor; its 95% interval uses Student t with m - 2 degrees of freedom), each point
weighted by 1/se^2 with se = the half-width of its 95% interval in log10 / 1.96 (one-sided where
the upper end is +inf); points whose median is censored (+inf) are left out and counted.

Out of sample: leave one point (one initial scale) out, fit on the others, predict it; the
root-mean-square error of log10(median) over the left-out points, per predictor.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from attnsim.stats import Z95, weighted_slope

if TYPE_CHECKING:  # the simulate jobs import this module and fit nothing: no pandas there
    import pandas as pd

# the law's regime: initial logit std >= 4, where the top gap of n = 16 logits is many times the
# unit scale on which e^-gap varies and the gradient law of §9.3 applies (claims and figures)
LAW_LOGIT_STD = 4.0
# one law per run setting
SETTING = ["optimiser", "lr", "values", "logits", "n", "d", "batch", "steps"]


def setting_text(row) -> str:
    """A run setting in words: the optimiser and learning rate, W_v = I, QK-norm."""
    text = f"{row['optimiser']} lr {row['lr']:g}"
    text += ", W_v = I" if row["values"] == "identity" else ""
    return text + (", QK-norm" if row["logits"] == "qk_norm" else "")


PREDICTORS = {
    "logit_std": ("init_logit_std_mean", "initial logit std"),
    "entropy": ("init_entropy_mean", "initial entropy H0 (nats)"),
    "gradient": ("init_grad_qk_mean", "initial gradient norm ||dL/dW_q,k||"),
}


def log_medians(rows: pd.DataFrame) -> pd.DataFrame:
    """Per point: y = log10(median escape time) and its se; only points with a finite median and
    a finite, positive lower end."""
    med, lo, hi = (
        rows[c].astype(float)
        for c in ("escape_median", "escape_median_ci_low", "escape_median_ci_high")
    )
    ok = np.isfinite(med) & (lo > 0)
    y = np.log10(med.where(ok))
    half_low = y - np.log10(lo.where(ok))
    half_high = np.log10(hi.where(ok & np.isfinite(hi))) - y
    half = np.fmax(half_low, half_high.fillna(half_low))
    se = np.maximum(half / Z95, 0.02)  # a floor: the evaluation grid (~7% = 0.03 in log10)
    import pandas as pd

    return pd.DataFrame({"y": y, "se": se}, index=rows.index)[ok]


def fit(x: np.ndarray, y: np.ndarray, se: np.ndarray) -> dict[str, float]:
    """The weighted line of y on log10(x), weights 1/se^2 (`attnsim.stats.weighted_slope`)."""
    return weighted_slope(np.log10(np.asarray(x, dtype=float)), y, 1.0 / np.asarray(se) ** 2)


def fit_setting(rows: pd.DataFrame, predictor: str = "logit_std") -> dict | None:
    """The law of one run setting's points against `predictor` (a key of PREDICTORS); None with
    fewer than 3 points with a finite median."""
    column = PREDICTORS[predictor][0]
    data = log_medians(rows)
    x = rows.loc[data.index, column].astype(float)
    good = np.isfinite(x) & (x > 0)
    data, x = data[good], x[good]
    if len(data) < 3:
        return None
    out = fit(x.to_numpy(), data["y"].to_numpy(), data["se"].to_numpy())
    out["censored"] = int(len(rows) - len(data))
    out["x"], out["y"], out["se"] = x.to_numpy(), data["y"].to_numpy(), data["se"].to_numpy()
    return out


def out_of_sample(rows: pd.DataFrame) -> dict[str, float]:
    """Per predictor: leave-one-point-out RMSE of log10(median) over the points of every run
    setting with at least 4 finite medians (the left-out point predicted from a fit on >= 3)."""
    errors: dict[str, list[float]] = {k: [] for k in PREDICTORS}
    for _, group in rows.groupby(SETTING):
        data = log_medians(group)
        if len(data) < 4:
            continue
        for name, (column, _) in PREDICTORS.items():
            x = group.loc[data.index, column].astype(float).to_numpy()
            if not np.all(np.isfinite(x) & (x > 0)):
                continue
            for i in range(len(data)):
                keep = np.arange(len(data)) != i
                f = fit(x[keep], data["y"].to_numpy()[keep], data["se"].to_numpy()[keep])
                guess = f["intercept"] + f["slope"] * math.log10(x[i])
                errors[name].append(guess - data["y"].to_numpy()[i])
    return {
        name: (math.sqrt(np.mean(np.square(e))) if e else math.nan) for name, e in errors.items()
    } | {"points": max(len(e) for e in errors.values())}


def near_tie_density(n: int) -> float:
    """kappa_n = n (n - 1) * integral of phi(z)^2 Phi(z)^(n-2) dz: sigma times the density at 0 of
    the top gap of n i.i.d. N(0, sigma^2) logits (docs/science.md §9.3; kappa_16 = 1.766).
    Trapezoid rule on [-12, 12] (the integrand is below 1e-30 outside)."""
    z = np.linspace(-12.0, 12.0, 24001)
    phi = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1.0 + np.array([math.erf(v / math.sqrt(2)) for v in z]))
    f = phi * phi * cdf ** (n - 2)
    return float(n * (n - 1) * np.sum((f[1:] + f[:-1]) * np.diff(z)) / 2)


def refined_exponent(sigmas, batch: int, n: int) -> float:
    """The exponent §9.8's refinement predicts a fit over `sigmas` to find for a size-free step
    (Adam, normgd): the least-squares slope of log tau on log sigma for
    tau ∝ sigma^(1/2) max(1, sqrt(sigma / (batch kappa_n))) (docs/science.md §9.10)."""
    x = np.log(np.asarray(sigmas, dtype=float))
    crossover = batch * near_tie_density(n)
    y = 0.5 * x + 0.5 * np.maximum(0.0, x - math.log(crossover))
    return float(np.polyfit(x, y, 1)[0]) if np.ptp(x) > 0 else math.nan
