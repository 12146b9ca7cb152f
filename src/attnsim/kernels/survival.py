"""Right-censored times (a training run's steps to a loss threshold, censored at its budget):
the Kaplan-Meier estimate, Greenwood's variance, log-log intervals, the median with its interval
(docs/science.md §9.2).

A time is `(time, event)`: `event` = 1 if the run reached the threshold at `time`, 0 if it was
still above it when it stopped at `time` (its budget, or its divergence). The estimate of the
survival function (the share of runs not yet escaped) at the distinct event times t_j is

    S(t_j) = prod_{i <= j} (1 - d_i / n_i)

with d_i events at t_i and n_i runs at risk just before t_i (a run censored at t_i is at risk at
t_i: events are taken before censorings at a tie). Greenwood: Var S = S^2 sum d_i / (n_i (n_i -
d_i)). The pointwise 95% interval is the log-log one, S^exp(+-z sqrt(v)) with v = sum d_i / (n_i
(n_i - d_i)) / (log S)^2: it stays inside [0, 1] and behaves at small counts. The median is the
first event time with S <= 1/2 (+inf if S never gets there: more than half censored), and its
interval is that of Brookmeyer and Crowley: from the first time the upper band is <= 1/2 to the
first time the lower band is (+inf if it never is).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnsim.stats import Z95, wilson  # noqa: F401  (wilson: re-exported for its users)

QUANTILES = (0.1, 0.25, 0.75, 0.9)  # escape-time quantiles a summary keeps besides the median


@dataclass(frozen=True)
class KaplanMeier:
    """The estimate at its distinct event times (increasing)."""

    times: np.ndarray  # distinct event times t_j
    at_risk: np.ndarray  # n_j
    events: np.ndarray  # d_j
    survival: np.ndarray  # S(t_j)
    greenwood: (
        np.ndarray
    )  # sum_{i <= j} d_i / (n_i (n_i - d_i)): Var S = S^2 * greenwood (inf once S = 0)
    low: np.ndarray  # log-log 95% band of S(t_j)
    high: np.ndarray
    runs: int

    def at(self, t: float) -> tuple[float, float, float]:
        """S(t) with its 95% band (a step function, right-continuous: S(t_j) counts the events at
        t_j)."""
        j = int(np.searchsorted(self.times, t, side="right")) - 1
        if j < 0:
            return 1.0, 1.0, 1.0
        return float(self.survival[j]), float(self.low[j]), float(self.high[j])

    def quantile(self, share: float = 0.5) -> tuple[float, float, float]:
        """The time by which `share` of the runs have escaped, S(t) <= 1 - share, with its 95%
        interval (Brookmeyer-Crowley on the log-log band); +inf where it is not reached."""
        level = 1.0 - share

        def first(values):
            hit = np.flatnonzero(values <= level + 1e-12)
            return float(self.times[hit[0]]) if hit.size else math.inf

        return first(self.survival), first(self.low), first(self.high)


def kaplan_meier(time, event, z: float = Z95) -> KaplanMeier:
    time = np.asarray(time, dtype=np.float64)
    event = np.asarray(event, dtype=np.float64)
    if time.shape != event.shape or time.ndim != 1:
        raise ValueError("time and event must be 1-d arrays of one length")
    if not np.all(np.isin(event, (0.0, 1.0))):
        raise ValueError("event must be 0 (censored) or 1 (escaped)")
    if np.any(~np.isfinite(time)):
        raise ValueError("times must be finite (a censored run's time is when it stopped)")
    times = np.unique(time[event == 1])
    at_risk = np.array([np.sum(time >= t) for t in times], dtype=np.float64)
    events = np.array([np.sum((time == t) & (event == 1)) for t in times], dtype=np.float64)
    survival = np.cumprod(1.0 - events / at_risk)
    with np.errstate(divide="ignore", invalid="ignore"):
        greenwood = np.cumsum(
            np.where(at_risk > events, events / (at_risk * (at_risk - events)), np.inf)
        )
        log_s = np.log(survival)
        se = np.sqrt(greenwood) / np.abs(log_s)
        low = np.where((survival > 0) & (survival < 1), survival ** np.exp(z * se), survival)
        high = np.where((survival > 0) & (survival < 1), survival ** np.exp(-z * se), survival)
    return KaplanMeier(times, at_risk, events, survival, greenwood, low, high, int(time.size))


def escaped_share(km: KaplanMeier, time, event, t: float) -> tuple[float, float, float]:
    """1 - S(t) with its 95% interval: from the log-log band where 0 < S(t) < 1; where S(t) is 0 or
    1
    (the band has no width there) the Wilson interval of the escaped count among the runs not
    censored before t (without censoring before t, Kaplan-Meier is that binomial share)."""
    s, low, high = km.at(t)
    if 0.0 < s < 1.0:
        return 1.0 - s, 1.0 - high, 1.0 - low
    time, event = np.asarray(time, dtype=np.float64), np.asarray(event, dtype=np.float64)
    known = int(np.sum((time >= t) | (event == 1)))
    escaped = int(np.sum((time <= t) & (event == 1)))
    w_low, w_high = wilson(escaped, known)
    return 1.0 - s, w_low, w_high


def escape_summary(time, event, checkpoints) -> dict[str, object]:
    """Per grid point: the median escape time with its 95% interval, the times by which 10%, 25%,
    75% and 90% have escaped (+inf if not reached), and the share escaped by each checkpoint step
    with its 95% interval (`escaped_share`)."""
    km = kaplan_meier(time, event)
    median, low, high = km.quantile(0.5)
    out: dict[str, object] = {
        "escape_median": median,
        "escape_median_ci_low": low,
        "escape_median_ci_high": high,
    }
    for share in QUANTILES:
        out[f"escape_q{round(100 * share)}"] = km.quantile(share)[0]
    for j, step in enumerate(checkpoints):
        share, s_low, s_high = escaped_share(km, time, event, step)
        out[f"escaped_ckpt_{j}"] = share
        out[f"escaped_ckpt_{j}_ci_low"] = s_low
        out[f"escaped_ckpt_{j}_ci_high"] = s_high
    return out
