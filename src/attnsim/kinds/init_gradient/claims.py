"""Claim of statement 2 (large initial logits: one-hot weights, vanishing gradient, docs/science.md
§3.6)
judged on `init_gradient` summaries.

A sanity check, not evidence: the logit std is scale^2 (§3.5), so at the sweep's large scales (50,
100: std 2 500 and 10 000) the weights are one-hot and the gradient vanishes by construction (the
softmax of logits that far apart is a unit vector to float64 precision). It fails only through a
bug; the onset scale it reports has no prediction to test."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from attnsim.claims.engine import ClaimSpec, Estimate, Regime, Sanity


@dataclass(frozen=True)
class Thresholds:
    one_hot_entropy: float = 0.1  # nats: weights count as one-hot below this mean entropy ...
    # ... and the gradient as vanished below this fraction of its peak over the sweep's scales
    vanished_gradient: float = 0.01


THRESHOLDS = Thresholds()


def onsets(rows: pd.DataFrame) -> Estimate:
    """Per (n, d), the smallest scale from which on, at every larger scale swept, the mean
    entropy is one-hot and the mean gradient vanished (inf: no onset). The statistic is the
    share of (n, d) with an onset; the range, the smallest and largest onset scale."""
    t = THRESHOLDS
    onset = {}
    for (n, d), series in rows.groupby(["n", "d"]):
        series = series.sort_values("scale")
        both = (series["entropy_mean"] < t.one_hot_entropy) & (
            series["grad_sq_mean"] < t.vanished_gradient * series["grad_sq_mean"].max()
        )
        tail = both[::-1].cumprod()[::-1].astype(bool)
        onset[(int(n), int(d))] = float(series.loc[tail, "scale"].min()) if tail.any() else math.inf
    found = [v for v in onset.values() if math.isfinite(v)]
    return Estimate(
        value=len(found) / len(onset),
        number="share of points",
        n=len(onset),
        unit="(n, d) series",
        range_min=min(found) if found else math.nan,
        range_max=max(found) if found else math.nan,
        facts={"onset": onset},
    )


ONE_HOT_VANISHING_GRADIENT = ClaimSpec(
    claim_id="one_hot_vanishing_gradient",
    statement="information",
    text="Large logits at initialisation make the weights one-hot and the gradient vanish.",
    role="sanity",
    regime=Regime(
        f"init_gradient; one-hot: mean H < {THRESHOLDS.one_hot_entropy} nats; vanished: mean "
        f"grad_sq < {THRESHOLDS.vanished_gradient} x its peak over the scales swept (same n, d)",
        "docs/science.md §3.5, §3.6 (logit std scale^2: one-hot by construction at large scale)",
        lambda rows: rows["n"] > 0,
    ),
    rule=Sanity(
        1.0,
        "above",
        "every (n, d) has an onset: from some scale on, the mean entropy is below "
        f"{THRESHOLDS.one_hot_entropy} nats and the mean gradient below "
        f"{THRESHOLDS.vanished_gradient:.0%} of its peak at every larger scale swept",
    ),
    measure=onsets,
    compared_to="no prediction of the scale, only that an onset exists for every (n, d); "
    "measured: the share of (n, d) with an onset, range: the smallest and largest onset scale",
    figure="gradient_vs_entropy",
    describe=lambda e: "; ".join(
        f"n={n}, d={d}: from scale {v:g}" for (n, d), v in e.facts["onset"].items()
    ),
)

CLAIMS = (ONE_HOT_VANISHING_GRADIENT,)
