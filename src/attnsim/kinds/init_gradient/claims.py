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

from attnsim.claims.engine import Claim, select_regime


@dataclass(frozen=True)
class Thresholds:
    one_hot_entropy: float = 0.1  # nats: weights count as one-hot below this mean entropy ...
    # ... and the gradient as vanished below this fraction of its peak over the sweep's scales
    vanished_gradient: float = 0.01


THRESHOLDS = Thresholds()


def one_hot_vanishing_gradient(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "one_hot_vanishing_gradient",
        "Large logits at initialisation make the weights one-hot and the gradient vanish.",
        regime=f"init_gradient; one-hot: mean H < {t.one_hot_entropy} nats; vanished: mean grad_sq "
        f"< {t.vanished_gradient} x its peak "
        "over the scales swept (same n, d)",
        reason="docs/science.md §3.5, §3.6 (logit std scale^2: one-hot by construction at large "
        "scale)",
        role="sanity",
        statement="information",
        number="onset",
        compared_to="no prediction of the scale, only that an onset exists for every (n, d); "
        "measured: the largest onset scale, range over (n, d)",
        threshold="holds if for every (n, d), from some scale on, the mean entropy is below "
        f"{t.one_hot_entropy} nats (one-hot) and "
        f"the mean gradient below {t.vanished_gradient:.0%} of its peak (vanished) at every larger "
        "scale swept",
    )
    s = select_regime(claim, s, lambda s: s["n"] > 0, figure="gradient_vs_entropy")
    if s is None:
        return claim
    onset = {}
    for (n, d), series in s.groupby(["n", "d"]):
        series = series.sort_values("scale")
        both = (series["entropy_mean"] < t.one_hot_entropy) & (
            series["grad_sq_mean"] < t.vanished_gradient * series["grad_sq_mean"].max()
        )
        # smallest scale from which on both hold at every larger scale of the sweep
        tail = both[::-1].cumprod()[::-1].astype(bool)
        onset[(n, d)] = float(series.loc[tail, "scale"].min()) if tail.any() else math.inf
    found = [v for v in onset.values() if math.isfinite(v)]
    claim.measured = max(found) if found else math.nan
    claim.ci_low, claim.ci_high = (min(found), max(found)) if found else (math.nan, math.nan)
    claim.verdict = (
        "holds" if len(found) == len(onset) else ("outside regime" if not found else "fails")
    )
    claim.evidence = (
        "; ".join(f"n={n}, d={d}: from scale {v:g}" for (n, d), v in onset.items())
        + " (measured = the largest onset scale)"
    )
    return claim


CLAIMS = (one_hot_vanishing_gradient,)
