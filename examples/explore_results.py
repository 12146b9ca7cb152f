# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Exploring a run's results
#
# After `attnsim run` (the default sweep, about a minute), everything is in `results/`: the store
# (typed Parquet), the figures and the claims table. This notebook reads the store, recomputes one
# claim of the essay from the summary, and redraws one figure in a style of your own.
#
# It is a [jupytext](https://jupytext.readthedocs.io) notebook: open it in Jupyter with jupytext
# installed (or `jupytext --to notebook examples/explore_results.py`), or run it as a script from
# the repository's root: `python examples/explore_results.py`. `ATTNSIM_RESULTS` names another
# results folder.

# %%
import os
from pathlib import Path

import duckdb
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnsim.kinds import get_kind
from attnsim.theory.entropy import asymptotic_gap

RESULTS = Path(os.environ.get("ATTNSIM_RESULTS", "results"))
STORE = RESULTS / "store"

# %% [markdown]
# ## 1. The store
#
# One row per grid point in `summary/`, one per trial in `trials/`, partitioned by kind and
# experiment. pandas reads a kind's summaries directly; DuckDB runs SQL over all of them.

# %%
summary = pd.read_parquet(STORE / "summary/kind=temperature_entropy")
columns = [
    "experiment",
    "n",
    "d",
    "tau",
    "gap_mean",
    "gap_ci_low",
    "gap_ci_high",
    "gap_max",
    "n_trials",
]
print(summary[columns].sort_values(["d", "n", "tau"]).head(8).to_string(index=False))

points = duckdb.sql(f"""
    SELECT kind, count(*) AS points, CAST(sum(n_trials) AS BIGINT) AS trials
    FROM read_parquet('{STORE}/summary/**/*.parquet',
                      hive_partitioning = true, union_by_name = true)
    GROUP BY kind ORDER BY kind
""").df()
print(points.to_string(index=False))

# %% [markdown]
# ## 2. One claim, recomputed
#
# Statement 3 of the essay: with cosine logits at temperature τ = 1 the entropy cannot fall more
# than g(1) = 0.4745 nats below log n (docs/science.md §4). The summary keeps each point's largest
# gap over its trials (`gap_max`): the claim holds if none at τ = 1 exceeds g(1).

# %%
g1 = float(asymptotic_gap(1.0))
at_one = summary[np.isclose(summary["tau"], 1.0)]
largest = float(at_one["gap_max"].max())
verdict = "holds" if largest <= g1 else "fails"
print(
    f"tau = 1: the largest gap over {int(at_one['n_trials'].sum()):,} trials is {largest:.4f} nats;"
    f" g(1) = {g1:.4f}: {verdict}"
)

claims = pd.read_parquet(RESULTS / "claims.parquet").set_index("claim_id")
pipeline = claims.loc["tau_one_gap"]
print(f"the pipeline says: {pipeline['verdict']} (measured {pipeline['measured']:.4f})")
assert pipeline["verdict"] == verdict and np.isclose(
    pipeline["measured"], largest, rtol=0, atol=1e-12
)

# %% [markdown]
# ## 3. A figure in your own style
#
# Every figure function takes the summary and returns a matplotlib figure. `style=None` draws it
# with your current settings (here a `plt.style.context`), `style="ggplot"` with a named
# matplotlib style; attnsim's own theme applies only when neither is asked for, and never outside
# the call. The figure lays itself out, so a plain `savefig` keeps its legend.

# %%
figures = get_kind("temperature_entropy").submodule("figures")
mine = {
    "font.family": "serif",
    "font.size": 12,
    "axes.facecolor": "#f6f1e7",
    "axes.grid": True,
    "grid.color": "white",
}
with plt.style.context(mine):
    fig = figures.temperature_gap(summary, style=None)
out = RESULTS / "examples"
out.mkdir(parents=True, exist_ok=True)
fig.savefig(out / "temperature_gap_mine.png", dpi=110)
print(
    f"wrote {out / 'temperature_gap_mine.png'}"
    f" ({fig.get_figwidth():.1f} x {fig.get_figheight():.1f} in)"
)
