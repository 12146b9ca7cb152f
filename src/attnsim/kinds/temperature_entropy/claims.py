"""Claims of statement 3 (temperature bounds the entropy, docs/science.md §4) judged on
`temperature_entropy` summaries.

All three are sanity checks, not evidence: cosines lie in [-1, 1], so at tau = 1 no configuration
can have a gap log n - H above g(1) (§4.2-§4.3) and none above the exact finite-n worst case
(§4.4); they fail only through a bug. That a smaller tau widens the range is near-certain by
construction too: at tau = 0.05 the logits span [-20, 20] and random directions already give gaps
of tens of nats. What the data can test about temperature is how large the gap is (the real
embeddings' `real_gap_variance_prediction`) and what it does to learning (`tau_one_worse_probe`).
"""

from __future__ import annotations

from attnsim.claims.engine import ClaimSpec, Regime, Sanity
from attnsim.kinds.gap_claims import (
    G1,
    at_tau_one,
    describe_excess,
    describe_widening,
    every_point,
    largest_excess,
    largest_gap,
    smallest_tau_below_one,
)

FIGURE = "temperature_gap"
REASON_BOUND = "docs/science.md §4.2, §4.3 (cosines in [-1, 1]: a bound on every configuration)"
REASON_EXACT = (
    "docs/science.md §4.4 (the exact finite-n worst case, "
    "float64 rounding 1e-12 (1 + log n + 2/tau))"
)
REASON_WIDENS = (
    "docs/science.md §4.3 (g(tau) grows like 2/tau: near-certain by construction at small tau)"
)

TAU_ONE_GAP = ClaimSpec(
    claim_id="tau_one_gap",
    statement="temperature",
    text=f"At tau = 1 cosine logits keep the entropy within {G1:.4f} nats of log n.",
    role="sanity",
    regime=Regime("temperature_entropy, tau = 1, every trial", REASON_BOUND, at_tau_one),
    rule=Sanity(G1, "below", "g(1), a bound, so no tolerance"),
    measure=largest_gap,
    compared_to="g(1), the largest gap log n - H any cosines allow at tau = 1; measured: the "
    "largest gap of any trial, smallest = the smallest mean gap",
    figure=FIGURE,
    describe=lambda e: (
        f"largest gap over {e.n:,} trials ({e.facts['points']} points); "
        "range = smallest mean gap to largest trial gap"
    ),
)

EXACT_GAP_BOUND = ClaimSpec(
    claim_id="exact_gap_bound",
    statement="temperature",
    text="No trial's gap log n - H exceeds the exact finite-n worst case.",
    role="sanity",
    regime=Regime("temperature_entropy, every point and trial", REASON_EXACT, every_point),
    rule=Sanity(0.0, "below", "float64 rounding of 1e-12 (1 + log n + 2/tau) nats allowed"),
    measure=largest_excess,
    compared_to="0; measured: the largest trial gap minus the exact worst case minus the "
    "rounding slack, largest over points; range: gap_max - gap_exact over points",
    figure=FIGURE,
    describe=describe_excess,
)

SMALLER_TAU_WIDENS = ClaimSpec(
    claim_id="smaller_tau_widens",
    axis="tau",
    statement="temperature",
    text="Smaller tau widens the range of entropies beyond what tau = 1 allows.",
    role="sanity",
    regime=Regime(
        "temperature_entropy, the smallest tau < 1 of the sweep",
        REASON_WIDENS,
        smallest_tau_below_one,
    ),
    rule=Sanity(G1, "above", "g(1), the most tau = 1 allows"),
    measure=largest_gap,
    compared_to=f"g(1) = {G1:.4f} (to exceed); measured: the largest gap of any trial there, "
    "smallest = the smallest mean gap",
    figure=FIGURE,
    describe=describe_widening,
)

CLAIMS = (TAU_ONE_GAP, EXACT_GAP_BOUND, SMALLER_TAU_WIDENS)
