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

import numpy as np
import pandas as pd

from attnsim.claims.engine import Claim, select_regime
from attnsim.kinds.gap_claims import gap_at_most, widens_beyond, within_exact_bound
from attnsim.theory.entropy import asymptotic_gap

REASON_BOUND = "docs/science.md §4.2, §4.3 (cosines in [-1, 1]: a bound on every configuration)"
REASON_EXACT = (
    "docs/science.md §4.4 (the exact finite-n worst case, "
    "float64 rounding 1e-12 (1 + log n + 2/tau))"
)
REASON_WIDENS = (
    "docs/science.md §4.3 (g(tau) grows like 2/tau: near-certain by construction at small tau)"
)


def tau_one_bound(s: pd.DataFrame | None) -> Claim:
    g1 = float(asymptotic_gap(1.0))
    claim = Claim(
        "tau_one_gap",
        f"At tau = 1 cosine logits keep the entropy within {g1:.4f} nats of log n.",
        regime="temperature_entropy, tau = 1, every trial",
        reason=REASON_BOUND,
        role="sanity",
        statement="temperature",
        number="extreme over trials",
        compared_to="g(1), the largest gap log n - H any cosines allow at tau = 1; measured: the "
        "largest gap of any trial, smallest = the smallest mean gap",
        threshold=f"holds if no trial's gap exceeds g(1) = {g1:.4f} nats: a bound, so no tolerance",
    )
    rows = select_regime(claim, s, lambda s: np.isclose(s["tau"], 1.0), figure="temperature_gap")
    if rows is None:
        return claim
    evidence = (
        f"largest gap over {int(rows['n_trials'].sum()):,} trials ({len(rows)} points); "
        "interval = smallest mean gap to largest trial gap"
    )
    return gap_at_most(claim, rows, g1, evidence)


def exact_bound(s: pd.DataFrame | None) -> Claim:
    claim = Claim(
        "exact_gap_bound",
        "No trial's gap log n - H exceeds the exact finite-n worst case.",
        regime="temperature_entropy, every point and trial",
        reason=REASON_EXACT,
        role="sanity",
        statement="temperature",
        number="extreme over trials",
        compared_to="the exact finite-n worst case, an excess of 0; measured: largest trial gap "
        "minus the exact worst case, largest over points, <= 0 within",
        threshold="holds if at every point the largest trial gap is within the exact bound, up to "
        "float64 rounding of 1e-12 (1 + log n + 2/tau) nats",
    )
    rows = select_regime(claim, s, lambda s: s["n"] > 0, figure="temperature_gap")
    return claim if rows is None else within_exact_bound(claim, rows)


def smaller_tau_widens(s: pd.DataFrame | None) -> Claim:
    g1 = float(asymptotic_gap(1.0))
    claim = Claim(
        "smaller_tau_widens",
        "Smaller tau widens the range of entropies beyond what tau = 1 allows.",
        regime="temperature_entropy, the smallest tau < 1 of the sweep",
        reason=REASON_WIDENS,
        role="sanity",
        statement="temperature",
        number="extreme over trials",
        compared_to=f"g(1) = {g1:.4f} (to exceed); measured: the largest gap of any trial there, "
        "smallest = the smallest mean gap",
        threshold=f"holds if the largest trial gap exceeds g(1) = {g1:.4f} nats, the most tau = 1 "
        "allows",
    )
    return widens_beyond(
        claim,
        s,
        "temperature_gap",
        lambda rows, tau, g1: (
            f"largest gap at tau = {tau:g} vs g(1) = {g1:.4f}; the widest possible there is "
            f"g({tau:g}) = {float(asymptotic_gap(tau)):.4g}"
        ),
    )


CLAIMS = (tau_one_bound, exact_bound, smaller_tau_widens)
