"""Parameters, stored columns and summaries shared by the kinds whose trial is one training run
(docs/science.md §6, §9, §10): the learning rate and step budget, the monitor losses at the
checkpoints and after training, and their quartiles over all runs (a diverged run's +inf loss
ranks last). The training loop and optimisers are `attnsim.kernels.training`."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from attnsim.kernels.training import CHECKPOINTS, quantiles
from attnsim.kinds.base import Column, Param
from attnsim.kinds.columns import F64, I64

LOSSES = (*(f"loss_ckpt_{j}" for j in range(CHECKPOINTS)), "final_loss")
LR = Param("lr", F64, "learning rate", exclusive_minimum=0, maximum=1e6)
_QUARTILES = (("q25", "lower quartile"), ("median", "median"), ("q75", "upper quartile"))


def steps_param(doc: str) -> Param:
    """The run's budget of optimiser steps."""
    return Param("steps", I64, doc, minimum=1, maximum=100000)


LOSS_QUARTILES = tuple(
    Column(f"{m}_{q}", F64, f"{label} over all trials of {m} (+inf, a diverged run, ranks last)")
    for m in LOSSES
    for q, label in _QUARTILES
)


def loss_quartiles(metrics: Mapping[str, np.ndarray]) -> dict[str, object]:
    """The LOSS_QUARTILES of one point from its runs' losses."""
    out: dict[str, object] = {}
    for name in LOSSES:
        out[f"{name}_q25"], out[f"{name}_median"], out[f"{name}_q75"] = quantiles(metrics[name])
    return out


# --- issue 49's re-declarations (the claims of both training kinds) -----------------------------

BASELINE = "9b9a604"  # the commit whose default run judged the claims re-declared in issue 49


def redeclared(verdict: str, regime: str) -> str:
    """A re-declared claim's `redeclared_from`: its verdict and regime as judged at BASELINE."""
    return f"was {verdict}; regime {regime}; judged at {BASELINE}"


def binomial_sd(*shares: float) -> float:
    """The per-run SD sqrt(p (1 - p)) of a share, the largest over `shares` (the alternative and
    the rule's bound: at an alternative of 0 or 1 the binomial SD vanishes while the interval at
    the bound does not, so the bound's SD keeps the design SE conservative)."""
    return max(float(np.sqrt(p * (1.0 - p))) for p in shares)
