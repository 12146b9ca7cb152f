"""Claims of statement 1 (robustness to i.i.d. logit noise, docs/science.md §2) judged on `noisy_attention` summaries."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from attnsim.claims.engine import Claim, pooled


@dataclass(frozen=True)
class Thresholds:
    delta_kappa_p2: float = 0.01  # kappa * sum p^2 below this: the delta method's regime ("<< 1")
    ratio_tolerance: float = 0.05  # measured/predicted error may differ from 1 by this much
    rate_kappa_over_n: float = 0.1  # a series tests the n^-1/2 rate if kappa/n stays below this at its smallest n
    slope_tolerance: float = 0.05  # fitted log-log slope may differ from -1/2 by this much
    breakdown_slope: float = -0.25  # with kappa = inf the error must fall slower than n^-1/4 ("does not fall")
    breakdown_min_sigma: float = 0.25  # heavy tails show within n <= 1e4 once sigma n^(1/3) >> 1; smaller sigma needs far larger n


THRESHOLDS = Thresholds()
FAMILIES = ("gaussian", "uniform", "laplace", "gumbel")  # the families whose kappa can be finite


def _slope(frame: pd.DataFrame, y: str, se: str) -> tuple[float, float]:
    """Weighted least-squares slope of log y on log n, and its standard error (weights from the SE of log y)."""
    x = np.log(frame["n"].to_numpy(float))
    logy = np.log(frame[y].to_numpy(float))
    w = (frame[y] / frame[se]).to_numpy(float) ** 2  # 1 / Var(log y) ~ (y / se)^2
    xm = np.sum(w * x) / np.sum(w)
    sxx = np.sum(w * (x - xm) ** 2)
    slope = np.sum(w * (x - xm) * logy) / sxx
    return float(slope), float(1 / math.sqrt(sxx))


SERIES = ["noise", "noise_scale", "d", "noise_draws"]  # a curve of rel_err against n


def _series_slopes(s: pd.DataFrame) -> dict[tuple, float]:
    """Series key -> fitted slope of log rel_err on log n, for series with >= 3 values of n."""
    return {key: _slope(series, "rel_err_mean", "rel_err_se")[0] for key, series in s.groupby(SERIES) if series["n"].nunique() >= 3}


def delta_method(s: pd.DataFrame | None, family: str) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        f"delta_method_{family}",
        f"With {family} logit noise the mean squared change of the output equals kappa * sum p^2 ||v - o||^2 (delta method).",
        f"{family} noise, kappa finite, 0 < kappa * sum p^2 < {t.delta_kappa_p2}",
        statement="robustness",
        number="mean (95% CI)",
        compared_to="the delta method; measured: ratio of measured to predicted mean squared change of the output, pooled over points",
        threshold=f"holds if the 95% CI meets 1 ± {t.ratio_tolerance}: a first-order argument, tested only where kappa * sum p^2 < {t.delta_kappa_p2} (<< 1)",
    )
    if s is None:
        return claim
    rows = s[(s["noise"] == family) & s["kappa_finite"] & (s["kappa"] > 0) & (s["kappa_sum_p2"] < t.delta_kappa_p2) & s["err_ratio"].notna()]
    if rows.empty:
        claim.verdict = "outside regime"
        return claim
    claim.based_on(rows, figure="collapse")
    worst = rows.loc[(rows["err_ratio"] - 1).abs().idxmax()]
    return claim.judge(
        1.0,
        pooled(rows["err_ratio"]),
        t.ratio_tolerance,
        f"ratio measured/predicted over {len(rows)} points; worst {worst['err_ratio']:.3f} at n={worst['n']}, sigma={worst['noise_scale']:g}, kappa={worst['kappa']:.3g}",
    )


def error_rate(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "error_rate_sqrt_n",
        "The relative error falls like 1/sqrt(n_eff): log-log slope -1/2 in n at uniform weights.",
        f"logit_scale = 0, kappa finite, kappa / n < {t.rate_kappa_over_n} at the smallest n, >= 3 values of n",
        statement="robustness",
        number="fitted slope (95% CI)",
        compared_to="the rate 1/sqrt(n); measured: log-log slope of the relative error in n, mean over series",
        threshold=f"holds if the 95% CI meets -1/2 ± {t.slope_tolerance}, which tells n^-1/2 from slower decay; "
        f"series with kappa / n < {t.rate_kappa_over_n}, where the rate is already asymptotic",
    )
    if s is None:
        return claim
    finite = s[(s["logit_scale"] == 0) & s["kappa_finite"] & (s["kappa"] > 0)]
    worst = (finite["kappa"] / finite["n"]).groupby([finite[k] for k in SERIES]).transform("max")  # kappa / n at the series' smallest n
    finite = finite[worst < t.rate_kappa_over_n]
    slopes = list(_series_slopes(finite).values())
    if not slopes:
        claim.verdict = "outside regime"
        return claim
    claim.based_on(finite, figure="rel_err_vs_n")
    return claim.judge(
        -0.5,
        pooled(slopes),
        t.slope_tolerance,
        f"mean of {len(slopes)} fitted slopes (one per noise family and scale); range {min(slopes):.3f} to {max(slopes):.3f}",
    )


def breakdown(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "heavy_tail_breakdown",
        "With heavy-tailed noise (kappa = inf: student_t, laplace and gumbel beyond their thresholds) the error does not fall with n.",
        f"kappa = inf, noise_scale >= {t.breakdown_min_sigma}, logit_scale = 0, >= 3 values of n; 'does not fall' = every slope above {t.breakdown_slope}",
        statement="robustness",
        number="range over points",
        compared_to="an error that does not fall; measured: the flattest series' log-log slope, range over every series",
        threshold=f"holds if every slope, the steepest too, is above {t.breakdown_slope}: slower than n^-1/4, half the finite-kappa rate; "
        f"only noise_scale >= {t.breakdown_min_sigma}, where heavy tails show within n <= 1e4",
    )
    if s is None:
        return claim
    heavy = s[(s["logit_scale"] == 0) & ~s["kappa_finite"] & (s["noise_scale"] >= t.breakdown_min_sigma)]
    slopes = _series_slopes(heavy)
    if not slopes:
        claim.verdict = "outside regime"
        return claim
    values = np.array(list(slopes.values()))
    steepest = min(slopes, key=slopes.get)
    claim.based_on(heavy, figure="rel_err_vs_n")
    claim.predicted, claim.measured = 0.0, float(values.max())
    claim.ci_low, claim.ci_high = float(values.min()), float(values.max())
    claim.verdict = "holds" if values.min() > t.breakdown_slope else "fails"
    claim.evidence = (
        f"{len(values)} series; measured = flattest slope, interval = range of slopes; steepest {slopes[steepest]:.3f} "
        f"({steepest[0]}, sigma={steepest[1]:g}) vs {-0.5} for finite kappa"
    )
    return claim


# --- claim 2: information content ------------------------------------------------------------


CLAIMS = (
    *(partial(delta_method, family=family) for family in FAMILIES),
    error_rate,
    breakdown,
)
