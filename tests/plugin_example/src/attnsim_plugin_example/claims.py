"""Claim of statement 1 judged on `shifted_logits` summaries: a common shift changes nothing."""

from __future__ import annotations

from attnsim.claims.engine import Claim


def shift_invariance(s) -> Claim:
    claim = Claim(
        "shift_invariance",
        "Adding one constant to every logit leaves the attention weights, hence their entropy, "
        "unchanged.",
        "shifted_logits, every point",
        statement="robustness",
        number="extreme over trials",
        compared_to="float64 rounding: 1e-12 (1 + log n + |c|)",
        threshold="every point's mean deviation below its rounding bound",
    )
    if s is None:
        return claim
    claim.based_on(s, figure="shift_deviation")
    worst = (s["shift_deviation_mean"] / s["rounding_bound"]).max()
    claim.predicted, claim.measured = 0.0, float(s["shift_deviation_mean"].max())
    claim.verdict = "holds" if worst <= 1 else "fails"
    claim.evidence = f"{len(s)} points; largest mean deviation / rounding bound = {worst:.2g}"
    return claim


CLAIMS = (shift_invariance,)
