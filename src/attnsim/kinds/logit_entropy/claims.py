"""Claims of statement 2 (entropy of the weights and the scale of the logits, docs/science.md §3)
judged on `logit_entropy` summaries. Both predictions apply to each grid point, so each point is
judged on its own (docs/science.md §7.4)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from attnsim.claims.engine import Claim, select_regime


@dataclass(frozen=True)
class Thresholds:
    small_sigma: float = 0.3  # the claim is about small logit std: sigma up to this
    deficit_tolerance: float = (
        0.05  # the measured deficit log n - H may differ from sigma^2/2 by this fraction
    )
    # The finite-n bias of §3.3 relative to sigma^2/2 is at most this at a judged point: half the
    # tolerance.
    bias_max: float = 0.025
    rem_max_x: float = (
        0.7  # the collapse onto 1 - x^2 is tested for x up to this, at the largest n ...
    )
    rem_tolerance: float = (
        0.05  # ... within this of 1 - x^2 at every point (n -> inf is approached slowly, §3.4)
    )


THRESHOLDS = Thresholds()


def small_scale_bias(n, sigma) -> np.ndarray:
    """The leading finite-n bias of H (§3.3), (sigma^2 e^{sigma^2} - (e^{sigma^2} - 1)/2) / n,
    relative
    to the predicted deficit sigma^2/2: about 1/n for small sigma, large once e^{sigma^2} ~ n."""
    n, s2 = np.asarray(n, float), np.asarray(sigma, float) ** 2
    return (s2 * np.exp(s2) - np.expm1(s2) / 2) / n / (s2 / 2)


def _point(row) -> str:
    return f"(n={row['n']}, σ={row['sigma_eff']:g})"


def small_scale_entropy(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "small_scale_entropy",
        "For gaussian logits of small std sigma the entropy is log n - sigma^2/2: the deficit log "
        "n - H is sigma^2/2.",
        regime=f"logit_entropy, gaussian logits, 0 < sigma <= {t.small_sigma}, points whose "
        "predicted finite-n bias "
        f"(sigma^2 e^(sigma^2) - (e^(sigma^2) - 1)/2)/n is at most {t.bias_max} of sigma^2/2",
        reason="docs/science.md §3.3",
        statement="information",
        number="range over points",
        tolerance=t.deficit_tolerance,
        compared_to="measured deficit (log n - H) / (sigma^2/2) per point; the null H = log n "
        "gives 0",
        threshold=f"every point's 95% interval inside 1 ± {t.deficit_tolerance} (equivalence): a "
        "relative band, so the smallest sigma "
        "tests the prediction as sharply as the largest and the null H = log n fails",
    )

    def regime(s):
        sigma = s["sigma_eff"].astype(float)
        small = (s["logits"] == "gaussian") & (sigma > 0) & (sigma <= t.small_sigma)
        return small & (small_scale_bias(s["n"], sigma.where(small, 1.0)) <= t.bias_max)

    rows = select_regime(claim, s, regime, figure="entropy_vs_scale")
    if rows is None:
        return claim
    half = rows["sigma_eff"].astype(float) ** 2 / 2
    ratio = (rows["log_n"] - rows["entropy_mean"]) / half
    low, high = (
        (rows["log_n"] - rows["entropy_ci_high"]) / half,
        (rows["log_n"] - rows["entropy_ci_low"]) / half,
    )
    claim.per_point(rows, ratio, low, high, 1.0, describe=_point)
    claim.evidence += (
        f"; n from {rows['n'].min()} to {rows['n'].max()}, "
        f"sigma from {rows['sigma_eff'].min():g} to {rows['sigma_eff'].max():g}"
    )
    return claim


def rem_collapse(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "rem_collapse",
        "H / log n collapses onto 1 - x^2 with x = sigma / sqrt(2 log n) (random energy model).",
        regime=f"logit_entropy, gaussian logits, largest n of the sweep, 0 < x <= {t.rem_max_x} "
        "(away from the freezing at x = 1)",
        reason="docs/science.md §3.4",
        statement="information",
        number="range over points",
        tolerance=t.rem_tolerance,
        compared_to="measured H/log n - (1 - x^2) per point",
        threshold=f"every point's 95% interval inside 0 ± {t.rem_tolerance} (equivalence): the n "
        "-> inf limit is approached slowly (log log n / log n)",
    )

    def regime(s):
        gaussian = s["logits"] == "gaussian"
        largest = s["n"] == s.loc[gaussian, "n"].max() if gaussian.any() else False
        return gaussian & largest & (s["rem_x"] > 0) & (s["rem_x"] <= t.rem_max_x)

    rows = select_regime(claim, s, regime, figure="entropy_collapse")
    if rows is None:
        return claim
    limit = 1 - rows["rem_x"] ** 2
    claim.per_point(
        rows,
        rows["entropy_norm_mean"] - limit,
        rows["entropy_norm_ci_low"] - limit,
        rows["entropy_norm_ci_high"] - limit,
        0.0,
        describe=lambda r: f"(n={r['n']}, x={r['rem_x']:.3g})",
    )
    claim.evidence += (
        f"; n = {rows['n'].iloc[0]}, x from {rows['rem_x'].min():.3g} to {rows['rem_x'].max():.3g}"
    )
    return claim


CLAIMS = (small_scale_entropy, rem_collapse)
