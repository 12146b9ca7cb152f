"""recall_training's `divergence` figure on a small simulated sweep: it draws plain softmax and a
remedy on the same seeds, one column per learning rate, and declines a sweep without a remedy."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from attnsim.figures.common import NotApplicable
from attnsim.kinds.recall_training import figures, kernel

BASE = dict(n=4, d=4, batch=8, scale=1.0, optimiser="sgd", steps=20, values="trainable")
POINTS = [
    BASE | dict(lr=lr, logits=logits, normaliser=normaliser)
    for lr in (2.0, 400.0)
    for logits, normaliser in (("dot", "softmax"), ("qk_norm", "softmax"), ("dot", "softcap30"))
]


@pytest.fixture(scope="module")
def sweep() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The summary rows the figure reads and every run's trial columns, from one block."""
    results = kernel.simulate(np.random.default_rng(np.random.SeedSequence(4)), 6, POINTS)
    summary, trials = [], []
    for i, (point, metrics) in enumerate(zip(POINTS, results)):
        summary.append(point | dict(point_id=f"p{i}", stop="never", log_n=math.log(4)))
        runs = pd.DataFrame({c: metrics[c] for c in figures.DIVERGENCE_COLUMNS if c != "trial"})
        trials.append(runs.assign(point_id=f"p{i}", trial=np.arange(6)))
    return pd.DataFrame(summary), pd.concat(trials, ignore_index=True)


def test_divergence_draws_each_variant_per_learning_rate(sweep):
    summary, trials = sweep
    assert np.isfinite(trials.loc[trials["point_id"] == "p3", "diverged_step"]).any()
    fig = figures.divergence(summary, trials)
    top = fig.axes[:2]
    assert [ax.get_title()[:12] for ax in top] == ["(a) sgd lr 2", "(b) sgd lr 4"]
    middle = fig.axes[2:4]  # the loss panels carry the per-variant legend
    labels = [t.get_text() for t in middle[1].get_legend().get_texts()]
    assert labels[0].startswith("plain softmax") and len(labels) == 3, labels
    plt.close(fig)


def test_divergence_needs_a_remedy(sweep):
    summary, trials = sweep
    plain = summary[(summary["logits"] == "dot") & (summary["normaliser"] == "softmax")]
    with pytest.raises(NotApplicable):
        figures.divergence(plain, trials)
