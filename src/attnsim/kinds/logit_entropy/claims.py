"""Claims of statement 2 (entropy of the weights and the scale of the logits, docs/science.md §3) judged on `logit_entropy` summaries."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from attnsim.claims.engine import Claim, pooled


@dataclass(frozen=True)
class Thresholds:
    small_sigma: float = 0.3  # effective logit std up to which log n - sigma^2/2 is tested
    entropy_tolerance: float = 0.01  # nats, for the small-scale prediction: its finite-n bias ~ sigma^2 / (2n) is far below
    rem_max_x: float = 0.7  # the collapse onto 1 - x^2 is tested for x up to this, at the largest n
    rem_tolerance: float = 0.05  # allowed |H/log n - (1 - x^2)| on average there


THRESHOLDS = Thresholds()


def small_scale_entropy(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "small_scale_entropy",
        "For gaussian logits of small std sigma the entropy is log n - sigma^2/2.",
        f"logit_entropy, gaussian logits, 0 < sigma <= {t.small_sigma}, n >= 256",
        statement="information",
        number="mean (95% CI)",
        compared_to="log n - sigma^2/2; measured: H - (log n - sigma^2/2) in nats, pooled over points",
        threshold=f"holds if the 95% CI meets 0 ± {t.entropy_tolerance} nats; the finite-n bias sigma^2 / (2n) is far smaller",
    )
    if s is None:
        return claim
    rows = s[(s["logits"] == "gaussian") & (s["sigma_eff"] > 0) & (s["sigma_eff"] <= t.small_sigma) & (s["n"] >= 256)]
    if rows.empty:
        claim.verdict = "outside regime"
        return claim
    deviation = rows["entropy_mean"] - rows["entropy_small_scale"]
    worst = rows.loc[deviation.abs().idxmax()]
    return claim.based_on(rows, figure="entropy_vs_scale").judge(
        0.0,
        pooled(deviation),
        t.entropy_tolerance,
        f"H - (log n - sigma^2/2) in nats over {len(rows)} points; worst {deviation.abs().max():.4f} at n={worst['n']}, sigma={worst['sigma_eff']:g}",
    )


def rem_collapse(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "rem_collapse",
        "H / log n collapses onto 1 - x^2 with x = sigma / sqrt(2 log n) (random energy model).",
        f"logit_entropy, gaussian logits, largest n of the sweep, 0 < x <= {t.rem_max_x}",
        statement="information",
        number="mean (95% CI)",
        compared_to="the random energy model 1 - x^2; measured: H/log n - (1 - x^2), pooled over points",
        threshold=f"holds if the 95% CI meets 0 ± {t.rem_tolerance}: the n -> inf limit is approached slowly (log log n / log n), "
        f"so only x <= {t.rem_max_x}, away from the freezing at x = 1",
    )
    if s is None:
        return claim
    gaussian = s[s["logits"] == "gaussian"]
    rows = gaussian[(gaussian["n"] == gaussian["n"].max()) & (gaussian["rem_x"] > 0) & (gaussian["rem_x"] <= t.rem_max_x)]
    if rows.empty:
        claim.verdict = "outside regime"
        return claim
    deviation = rows["entropy_norm_mean"] - (1 - rows["rem_x"] ** 2)
    return claim.based_on(rows, figure="entropy_collapse").judge(
        0.0,
        pooled(deviation),
        t.rem_tolerance,
        f"H/log n - (1 - x^2) over {len(rows)} points at n = {rows['n'].iloc[0]}; largest |deviation| {deviation.abs().max():.3f}",
    )


CLAIMS = (small_scale_entropy, rem_collapse)
