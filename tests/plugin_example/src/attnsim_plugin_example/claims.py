"""Claim of statement 1 judged on `shifted_logits` summaries: a common shift changes nothing.

A sanity check, not evidence: softmax's shift invariance is an identity (docs/science.md §2.2),
so a deviation beyond float64 rounding can come only from a bug, and no alternative competes."""

from __future__ import annotations

import pandas as pd

from attnsim.claims.engine import ClaimSpec, Estimate, Regime, Sanity

REASON = "docs/science.md §2.2 (the cancellation argument: only the noise law's shape matters)"


def every_point(rows: pd.DataFrame) -> pd.Series:
    return pd.Series(True, index=rows.index)


def deviation_over_rounding(rows: pd.DataFrame) -> Estimate:
    """Each point's mean |H(s + c) - H(s)| over its rounding bound; the headline the largest."""
    ratio = rows["shift_deviation_mean"] / rows["rounding_bound"]
    return Estimate(
        value=float(ratio.max()),
        number="range over points",
        range_min=float(ratio.min()),
        range_max=float(ratio.max()),
        n=len(rows),
        unit="points",
        facts={"largest_deviation": float(rows["shift_deviation_mean"].max())},
    )


SHIFT_INVARIANCE = ClaimSpec(
    claim_id="shift_invariance",
    statement="robustness",
    text="Adding one constant to every logit leaves the attention weights, hence their entropy, "
    "unchanged.",
    role="sanity",
    regime=Regime("shifted_logits, every point", REASON, every_point),
    rule=Sanity(1.0, "below", "an identity: float64 rounding, 1e-12 (1 + log n + |c|), allowed"),
    measure=deviation_over_rounding,
    compared_to="float64 rounding: 1e-12 (1 + log n + |c|); measured: the largest point's mean "
    "deviation / its rounding bound",
    figure="shift_deviation",
    describe=lambda e: (
        f"{e.n} points; largest mean deviation / rounding bound = {e.value:.2g} (largest mean "
        f"deviation {e.facts['largest_deviation']:.2g} nats)"
    ),
)

CLAIMS = (SHIFT_INVARIANCE,)
