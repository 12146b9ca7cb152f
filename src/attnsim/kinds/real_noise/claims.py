"""Claims of statement 1 (robustness to i.i.d. logit noise, docs/science.md §2, §5.6) judged on the
trained heads of all-MiniLM-L6-v2 (`real_noise` summaries)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attnsim.claims.engine import Claim, pooled
from attnsim.stats import t_quantile


@dataclass(frozen=True)
class Thresholds:
    delta_kappa_p2: float = 0.01  # kappa * mean sum p^2 below this: the delta method's regime ("<< 1"), as for noisy_attention
    ratio_tolerance: float = 0.05  # measured/predicted error may differ from 1 by this much in every layer
    slope_tolerance: float = 0.05  # fitted log-log slope of rel_err on n_eff may differ from -1/2 by this much
    min_points: int = 3  # a slope needs at least this many points (and two distinct n_eff)
    breakdown_slope: float = -0.25  # with kappa = inf the error must fall slower than n_eff^-1/4 ("does not fall")
    breakdown_min_sigma: float = 0.25  # heavy tails show within n <= 512 only once sigma is not small (docs/science.md §2.7)


THRESHOLDS = Thresholds()
FIGURE_MAP, FIGURE_RATE = "real_noise_map", "real_noise_rate"


def delta_rows(s: pd.DataFrame) -> pd.DataFrame:
    t = THRESHOLDS
    return s[s["kappa_finite"] & (s["kappa"] > 0) & (s["kappa_sum_p2"] < t.delta_kappa_p2) & s["err_ratio"].notna()]


def n_eff_of(s: pd.DataFrame) -> np.ndarray:
    """1 / mean(sum p^2) of each point (from kappa_sum_p2 = kappa * mean sum p^2 where kappa is finite, else from n_eff)."""
    finite = s["kappa_finite"].to_numpy(bool) & (s["kappa"].to_numpy(float) > 0)
    harmonic = np.where(finite, s["kappa"].to_numpy(float) / np.where(finite, s["kappa_sum_p2"].to_numpy(float), 1.0), s["n_eff_mean"].to_numpy(float))
    return harmonic


def fitted_slope(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> dict:
    """Weighted least-squares slope of y on x with a residual-based 95% interval (the points differ
    for real, not only by their trials' noise)."""
    xm = np.sum(w * x) / np.sum(w)
    sxx = np.sum(w * (x - xm) ** 2)
    slope = np.sum(w * (x - xm) * y) / sxx
    intercept = np.sum(w * y) / np.sum(w) - slope * xm
    residual = np.sum(w * (y - intercept - slope * x) ** 2) / max(len(x) - 2, 1)
    se = math.sqrt(residual / sxx)
    half = t_quantile(0.975, max(len(x) - 2, 1)) * se
    return {"mean": float(slope), "se": se, "ci_low": float(slope - half), "ci_high": float(slope + half)}


def _rate_fit(rows: pd.DataFrame) -> dict | None:
    """Slope of log rel_err on log n_eff over points, each setting (noise, scale, K) with its own intercept."""
    xs, ys, ws = [], [], []
    for _, part in rows.groupby(["noise", "noise_scale", "noise_draws"]):
        x = np.log(n_eff_of(part))
        y = np.log(part["rel_err_mean"].to_numpy(float))
        w = (part["rel_err_mean"] / part["rel_err_se"]).to_numpy(float) ** 2
        xs.append(x - np.sum(w * x) / np.sum(w))
        ys.append(y - np.sum(w * y) / np.sum(w))
        ws.append(w)
    if not xs:
        return None
    x, y, w = np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)
    if len(x) < THRESHOLDS.min_points or np.ptp(x) == 0:
        return None
    return fitted_slope(x, y, w)


def delta_method(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_delta_method",
        "On the trained heads of all-MiniLM-L6-v2 the mean squared change of the output under logit noise equals kappa * sum p^2 ||v - o||^2 (delta method), in every layer.",
        f"real_noise, kappa finite, 0 < kappa * sum p^2 < {t.delta_kappa_p2}; pooled over the heads of each layer",
        statement="robustness",
        number="mean (95% CI)",
        compared_to="1: measured / predicted mean squared error, the layer farthest from 1",
        threshold=f"every layer's interval meets 1 ± {t.ratio_tolerance} (the tolerance of noisy_attention's delta-method claims)",
    )
    if s is None:
        return claim
    rows = delta_rows(s)
    if rows.empty:
        claim.verdict = "outside regime"
        return claim
    claim.based_on(rows, figure=FIGURE_MAP)
    layers = {layer: pooled(part["err_ratio"]) for layer, part in rows.groupby("layer")}
    worst = max(layers, key=lambda k: abs(layers[k]["mean"] - 1))
    inside = all(v["ci_low"] <= 1 + t.ratio_tolerance and v["ci_high"] >= 1 - t.ratio_tolerance for v in layers.values())
    claim.judge(
        1.0,
        layers[worst],
        t.ratio_tolerance,
        f"{len(rows)} points (layer x head x noise); per layer: " + ", ".join(f"L{k} {v['mean']:.3f}" for k, v in layers.items()) + f"; shown: layer {worst}",
    )
    claim.verdict = "holds" if inside else "fails"
    return claim


def error_rate(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_error_rate_sqrt_n_eff",
        "On trained heads the relative error falls like 1/sqrt(n_eff): log-log slope -1/2 of rel_err against n_eff = 1/sum p^2 across heads.",
        f"real_noise, kappa finite, kappa * sum p^2 < {t.delta_kappa_p2}; one intercept per noise setting",
        statement="robustness",
        number="fitted slope (95% CI)",
        compared_to="-1/2, the exponent of sqrt(kappa / n_eff)",
        threshold=f"the slope's interval meets -1/2 ± {t.slope_tolerance} (as error_rate_sqrt_n)",
    )
    if s is None:
        return claim
    rows = delta_rows(s)
    fit = _rate_fit(rows) if len(rows) else None
    if fit is None:
        claim.verdict = "outside regime"
        return claim
    claim.based_on(rows, figure=FIGURE_RATE)
    return claim.judge(
        -0.5, fit, t.slope_tolerance, f"weighted fit over {len(rows)} points, n_eff from {n_eff_of(rows).min():.2f} to {n_eff_of(rows).max():.1f}"
    )


def breakdown(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_heavy_tail_breakdown",
        "On trained heads, heavy-tailed logit noise (kappa = inf) gives an error that does not fall with n_eff.",
        f"real_noise, kappa = inf, noise_scale >= {t.breakdown_min_sigma}; one intercept per noise setting",
        statement="robustness",
        number="fitted slope (95% CI)",
        compared_to="0 (no fall); -1/2 would be the finite-kappa rate",
        threshold=f"'does not fall' = the fitted slope is above {t.breakdown_slope}",
    )
    if s is None:
        return claim
    rows = s[~s["kappa_finite"] & (s["noise_scale"] >= t.breakdown_min_sigma)]
    fit = _rate_fit(rows) if len(rows) else None
    if fit is None:
        claim.verdict = "outside regime"
        return claim
    claim.based_on(rows, figure=FIGURE_RATE)
    claim.predicted, claim.measured, claim.ci_low, claim.ci_high = 0.0, fit["mean"], fit["ci_low"], fit["ci_high"]
    claim.verdict = "holds" if fit["mean"] > t.breakdown_slope else "fails"
    claim.evidence = f"weighted fit over {len(rows)} points ({', '.join(sorted(rows['noise'].unique()))})"
    return claim


CLAIMS = (delta_method, error_rate, breakdown)
