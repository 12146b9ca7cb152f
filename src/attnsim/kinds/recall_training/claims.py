"""Claims of statement 2 (one-hot starts do not train, docs/science.md §6.3) judged on `recall_training` summaries."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from statistics import NormalDist

import numpy as np
import pandas as pd

from attnsim.claims.engine import Claim
from attnsim.kernels.training import OPTIMISERS


@dataclass(frozen=True)
class Thresholds:
    one_hot_entropy: float = 0.1  # nats: a start is one-hot below this mean initial entropy (as in init_gradient)
    near_uniform_gap: float = 0.5  # nats: a start is near-uniform if its mean initial entropy is within this of log n
    stalled_share: float = 0.1  # "cannot be trained": at most this share of one-hot runs reaches the loss threshold ...
    trained_share: float = 0.9  # ... while a near-uniform start reaches it in at least this share
    min_points: int = 4  # the rank correlation needs at least this many points (its Fisher interval uses points - 3)


THRESHOLDS = Thresholds()


def one_hot_start_untrainable(s: pd.DataFrame | None, optimiser: str) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        f"one_hot_start_untrainable_{optimiser}",
        f"With one-hot initial weights (large initial logits) training by {optimiser} cannot start: the runs do not learn, while a near-uniform start does.",
        f"recall_training, {optimiser}; one-hot start: mean initial entropy < {t.one_hot_entropy} nats; near-uniform: within "
        f"{t.near_uniform_gap} nats of log n; learnt: loss / chance <= the threshold within the run's steps",
        statement="information",
        number="mean (95% CI)",
        compared_to=f"at most {t.stalled_share:.0%} of runs, against at least {t.trained_share:.0%} from the best near-uniform start; "
        "measured: share of runs that learnt at the one-hot start where most did (95% Wilson interval)",
        threshold=f"holds if every one-hot point has a share <= {t.stalled_share:.0%}, the best near-uniform point >= {t.trained_share:.0%}, "
        "and their 95% Wilson intervals do not overlap (the contrast is not noise)",
    )
    if s is None:
        return claim
    rows = s[s["optimiser"] == optimiser]
    one_hot = rows[rows["init_entropy_mean"] < t.one_hot_entropy]
    uniform = rows[rows["init_entropy_mean"] >= rows["log_n"] - t.near_uniform_gap]
    if one_hot.empty or uniform.empty:
        claim.verdict = "outside regime"
        return claim
    claim.based_on(pd.concat([one_hot, uniform]), figure="trainability")
    worst = one_hot.loc[one_hot["reached_share"].idxmax()]
    best = uniform.loc[uniform["reached_share"].idxmax()]
    claim.measured, claim.ci_low, claim.ci_high = float(worst["reached_share"]), float(worst["reached_ci_low"]), float(worst["reached_ci_high"])
    holds = worst["reached_share"] <= t.stalled_share and best["reached_share"] >= t.trained_share and worst["reached_ci_high"] < best["reached_ci_low"]
    claim.verdict = "holds" if holds else "fails"
    slow = uniform.loc[uniform["reached_share"].idxmin()]
    claim.evidence = (
        f"one-hot starts (scale {', '.join(f'{v:g}' for v in sorted(one_hot['scale']))}): at most {worst['reached_share']:.0%} of runs learnt "
        f"(scale {worst['scale']:g}, lr {worst['lr']:g}, median final loss/chance {worst['final_loss_median']:.3g}); "
        f"best near-uniform start: scale {best['scale']:g}, {best['reached_share']:.0%} "
        f"[{best['reached_ci_low']:.0%}, {best['reached_ci_high']:.0%}], median final loss/chance {best['final_loss_median']:.3g}; "
        f"slowest near-uniform start: scale {slow['scale']:g}, {slow['reached_share']:.0%}"
    )
    return claim


def spearman(x, y) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    rx, ry = pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy()
    if np.std(rx) == 0 or np.std(ry) == 0:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def fisher_interval(rho: float, count: int, confidence: float = 0.95) -> tuple[float, float]:
    """Fisher-z interval of a Spearman correlation over `count` points, with the Bonett-Wright variance (1 + rho^2 / 2) / (count - 3)."""
    if count <= 3 or not math.isfinite(rho):
        return math.nan, math.nan
    z = math.atanh(max(-0.999999, min(0.999999, rho)))
    half = NormalDist().inv_cdf(0.5 + confidence / 2) * math.sqrt((1 + rho * rho / 2) / (count - 3))
    return math.tanh(z - half), math.tanh(z + half)


def entropy_predicts_final_loss(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "entropy_predicts_final_loss",
        "The lower the entropy of the weights at initialisation, the worse training ends: initial entropy and final loss are negatively rank-correlated.",
        f"recall_training, every point (initial scale x optimiser x learning rate), at least {t.min_points} points",
        statement="information",
        number="rank correlation (95% CI)",
        compared_to="a negative correlation; measured: Spearman correlation over points of the mean initial entropy and the median final loss / chance",
        threshold="holds if the whole 95% interval (Fisher z, Bonett-Wright variance, over points) is below 0: the direction is established; its size is reported",
    )
    if s is None:
        return claim
    if len(s) < t.min_points:
        claim.verdict = "outside regime"
        return claim
    claim.based_on(s, figure="trainability")
    rho = spearman(s["init_entropy_mean"], s["final_loss_median"])
    claim.measured = rho
    claim.ci_low, claim.ci_high = fisher_interval(rho, len(s))
    claim.verdict = "holds" if claim.ci_high < 0 else "fails"
    per = [f"{o} lr {lr:g}: {spearman(g['init_entropy_mean'], g['final_loss_median']):.2f} ({len(g)} points)" for (o, lr), g in s.groupby(["optimiser", "lr"])]
    claim.evidence = f"Spearman over {len(s)} points; per optimiser: {'; '.join(per)}"
    return claim


CLAIMS = (*(partial(one_hot_start_untrainable, optimiser=o) for o in OPTIMISERS), entropy_predicts_final_loss)
