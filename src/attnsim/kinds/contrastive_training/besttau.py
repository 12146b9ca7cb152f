"""The best fixed temperature of each task and how tau = 1 compares with it, from a summary
(docs/science.md §10.3).

A *setting* is a task: every parameter but tau and tau_mode (`SETTING`). Among a setting's
fixed temperatures, the best tau maximises the mean of an accuracy over runs; its interval is
the range of temperatures whose mean is not below the best's by more than the 95% margin of
their difference, t_{0.975} sqrt(SE_best^2 + SE_tau^2) (the runs' spread, unpaired: the runs of
two temperatures share their draws, which makes the margin conservative). The sign of "tau = 1
against smaller tau" is the difference acc(1) - max over tau < 1 of acc(tau) with the same
margin.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnsim.kinds.contrastive_training import SETTING
from attnsim.stats import t_quantile

# The accuracy each kind of positives is judged by (fixed before the data): the class task's
# nearest-class-mean probe (the claim's original measure), and 5-NN for instance positives
# (the evaluation SimCLR-style representations are usually read with).
CLAIM_METRIC = {"class": "probe_accuracy", "instance": "knn_accuracy"}


def fixed(summary: pd.DataFrame) -> pd.DataFrame:
    return summary[summary["tau_mode"] == "fixed"] if "tau_mode" in summary else summary


def same_setting(frame: pd.DataFrame, setting) -> pd.DataFrame:
    """The rows of `frame` whose SETTING parameters equal those of `setting` (a row, a mapping)."""
    mask = pd.Series(True, index=frame.index)
    for k in SETTING:
        mask &= frame[k] == setting[k]
    return frame[mask]


def _margin(se_a, se_b, trials) -> np.ndarray:
    df = np.maximum(np.asarray(trials, dtype=float) - 1, 1)
    q = np.array([t_quantile(0.975, d) for d in np.atleast_1d(df)])
    return q * np.sqrt(np.asarray(se_a, dtype=float) ** 2 + np.asarray(se_b, dtype=float) ** 2)


def best_tau(summary: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per setting with at least two fixed temperatures: the setting's parameters,
    `best_tau`, `tau_low`, `tau_high` (the range tied with the best), `best_mean`, `best_ci_low`,
    `best_ci_high`, `temperatures`, and, where tau = 1 and a smaller tau were run, `one_mean`,
    `diff` = acc(1) - the best acc at tau < 1, `diff_low`, `diff_high` (95%), `smaller_tau`
    (the tau < 1 it was compared with)."""
    rows = []
    for key, g in fixed(summary).groupby(SETTING, sort=True):
        if g["tau"].nunique() < 2:
            continue
        mean, se = g[f"{metric}_mean"], g[f"{metric}_se"].fillna(math.inf)
        best = g.loc[mean.idxmax()]
        tied = mean >= best[f"{metric}_mean"] - _margin(
            best[f"{metric}_se"], se, np.minimum(best["n_trials"], g["n_trials"])
        )
        row = dict(zip(SETTING, key))
        row.update(
            best_tau=float(best["tau"]),
            tau_low=float(g.loc[tied, "tau"].min()),
            tau_high=float(g.loc[tied, "tau"].max()),
            best_mean=float(best[f"{metric}_mean"]),
            best_ci_low=float(best[f"{metric}_ci_low"]),
            best_ci_high=float(best[f"{metric}_ci_high"]),
            temperatures=int(g["tau"].nunique()),
            n_trials=int(g["n_trials"].sum()),
        )
        row.update(one_against_smaller(g, metric))
        rows.append(row)
    return pd.DataFrame(rows)


def one_against_smaller(g: pd.DataFrame, metric: str) -> dict:
    """acc(tau = 1) - max over tau < 1 of acc(tau) in one setting, with its 95% interval; {} when
    either is missing."""
    one, smaller = g[np.isclose(g["tau"], 1.0)], g[g["tau"] < 1.0 - 1e-9]
    if one.empty or smaller.empty:
        return {}
    one = one.iloc[0]
    best = smaller.loc[smaller[f"{metric}_mean"].idxmax()]
    diff = float(one[f"{metric}_mean"] - best[f"{metric}_mean"])
    margin = float(
        _margin(one[f"{metric}_se"], best[f"{metric}_se"], min(one["n_trials"], best["n_trials"]))[
            0
        ]
    )
    return {
        "one_mean": float(one[f"{metric}_mean"]),
        "smaller_tau": float(best["tau"]),
        "smaller_mean": float(best[f"{metric}_mean"]),
        "diff": diff,
        "diff_low": diff - margin,
        "diff_high": diff + margin,
    }


def flip_interval(table: pd.DataFrame) -> dict:
    """Where tau = 1 stops beating the smaller temperatures along the difficulty r = view_noise /
    instance_noise (docs/science.md §10.7), from `best_tau` rows of one task family (every setting
    parameter but the noises fixed): `low`, the largest r whose difference acc(1) - max_{tau<1} is
    above 0 at 95% and below which none is below 0; `high`, the smallest r above `low` whose
    difference is below 0 at 95%; `zero`, the r where the linear interpolation of the difference
    between neighbouring ratios first crosses 0 (NaN where it does not). `low` or `high` is NaN when
    no ratio qualifies (the flip lies outside the axis on that side)."""
    t = table.dropna(subset=["diff"]).assign(ratio=table["view_noise"] / table["instance_noise"])
    t = t.sort_values("ratio")
    r, d = t["ratio"].to_numpy(float), t["diff"].to_numpy(float)
    better, worse = (t["diff_low"] > 0).to_numpy(), (t["diff_high"] < 0).to_numpy()
    first_worse = int(np.argmax(worse)) if worse.any() else len(r)
    low_at = np.flatnonzero(better[:first_worse])
    low = float(r[low_at[-1]]) if low_at.size else math.nan
    high = float(r[first_worse]) if first_worse < len(r) else math.nan
    zero = math.nan
    for i in range(len(r) - 1):
        if d[i] > 0 >= d[i + 1]:
            zero = float(r[i] + (r[i + 1] - r[i]) * d[i] / (d[i] - d[i + 1]))
            break
    return {"low": low, "high": high, "zero": zero}
