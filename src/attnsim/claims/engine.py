"""The claims engine: the `Claim` record, how a measurement is judged against a prediction, pooling
over points, and the run of every kind's claims over the store's summaries.

Each kind's claims live in its package (`<kind>/claims.py`: `CLAIMS`, functions of the kind's
summaries, and `THRESHOLDS`, the numbers that turn measurements into verdicts, each with its
reason). Nothing is typed in: a verdict changes only through data. Reading the store is
`attnsim.claims.io`, rendering `attnsim.claims.render`.

Verdicts: `holds` (the 95% interval of the measurement meets the prediction's tolerance band),
`fails` (it does not), `outside regime` (the sweep measured the kind but no point lies in the
claim's regime), `not measured` (the config has no experiment of the kind).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attnsim.kinds import all_kinds
from attnsim.stats import mean_ci

VERDICTS = ("holds", "fails", "outside regime", "not measured")
ENTROPY_ROUNDING = 1e-12  # relative slack on H <= log n for floating-point rounding


# The essay's three statements, in the project's words; every claim belongs to one of them (its
# `statement` is a key). The tables group claims under them, in this order, with these titles.
STATEMENTS = {
    "robustness": "Softmax attention barely moves when i.i.d. noise is added to its logits: the mean squared change of the "
    "output is what the delta method predicts, kappa * sum p^2 ||v - o||^2, so the relative error shrinks like "
    "1/sqrt(n_eff), as long as the noise has the exponential moments the argument needs; heavy-tailed noise breaks it.",
    "information": "The entropy of the attention weights lies between 0 (one-hot) and log n (uniform) and falls as the "
    "logits grow, first as log n - sigma^2/2, then along the random energy model; large logits at initialisation make "
    "the weights one-hot, and the gradient through the softmax vanishes with the entropy, so training stalls.",
    "temperature": "With cosine logits at temperature tau = 1 the entropy cannot fall more than g(1) = 0.4745 nats below "
    "log n, so the weights stay close to uniform and carry little information; a smaller temperature widens the range, "
    "which is why contrastive learning uses one.",
}
STATEMENT_TITLES = {
    "robustness": "Robustness to noise on the logits",
    "information": "Entropy of the weights and the gradient at initialisation",
    "temperature": "Temperature bounds the entropy of cosine attention",
}

# What a claim's `measured` number is (each rendering labels it so).
NUMBER_KINDS = (
    "mean (95% CI)",  # a mean over points or trials with its 95% interval
    "fitted slope (95% CI)",  # a fitted exponent with its 95% interval
    "range over points",  # measured = the value that decides, interval = smallest to largest over points
    "extreme over trials",  # the smallest/largest single trial
    "onset",  # a parameter value from which on something holds
    "share of points",  # a fraction of the points in the regime
    "rank correlation (95% CI)",
)


@dataclass
class Claim:
    claim_id: str
    claim: str
    condition: str
    statement: str = ""  # key of STATEMENTS
    number: str = ""  # what `measured` is: one of NUMBER_KINDS
    compared_to: str = ""  # what `predicted` is, or what the measurement is compared with when nothing is predicted
    threshold: str = ""  # the tolerance or threshold that decided the verdict, and why (one short sentence)
    figure: str = ""  # the figure that shows it: "<experiment>/<figure>"
    experiments: str = ""  # the experiments it rests on, comma-separated
    points: int = 0  # grid points it rests on
    trials: int = 0  # trials it rests on
    predicted: float = math.nan
    measured: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    rel_deviation: float = math.nan
    verdict: str = "not measured"
    evidence: str = ""

    def based_on(self, rows: pd.DataFrame, figure: str | None = None) -> Claim:
        """Record the summary rows (points) the claim rests on: experiments, points, trials, and its figure."""
        experiments = sorted(rows["experiment"].unique()) if "experiment" in rows else []
        self.experiments = ", ".join(experiments)
        self.points = len(rows)
        self.trials = int(rows["n_trials"].sum()) if "n_trials" in rows else 0
        if figure and experiments:
            self.figure = f"{experiments[0]}/{figure}"
        return self

    def judge(self, predicted: float, stats: dict, tolerance: float, evidence: str) -> Claim:
        """holds when the measurement's 95% interval meets [predicted - tolerance, predicted + tolerance]."""
        self.predicted, self.measured = predicted, stats["mean"]
        self.ci_low, self.ci_high = stats["ci_low"], stats["ci_high"]
        self.rel_deviation = (self.measured - predicted) / abs(predicted) if predicted else math.nan
        meets = self.ci_low <= predicted + tolerance and self.ci_high >= predicted - tolerance
        self.verdict = "holds" if meets else "fails"
        self.evidence = evidence
        return self


def pooled(values) -> dict:
    """Mean over points with a between-point standard error (points differ for real, not only by noise)."""
    values = np.asarray(values, dtype=float)
    if values.size == 1:
        return {"mean": float(values[0]), "se": math.nan, "ci_low": float(values[0]), "ci_high": float(values[0])}
    return mean_ci(values)


def entropy_bounds(summaries: dict[str, pd.DataFrame], experiments: dict[str, str] | None = None) -> Claim:
    """0 <= H <= log n on every trial of every experiment whose summary keeps the entropy's extremes
    (`experiments`, name -> kind, picks the experiment whose figure shows it)."""
    claim = Claim(
        "entropy_in_bounds",
        "The entropy of the attention weights lies in [0, log n] for every trial.",
        "every trial of every kind, all parameters",
        statement="information",
        number="extreme over trials",
        compared_to="the bound H / log n <= 1, with H >= 0; measured: the largest H / log n of any trial, smallest = the smallest H (nats) of any trial",
        threshold=f"holds if no trial has H < 0 or H / log n > 1 + {ENTROPY_ROUNDING:g} (slack for float64 rounding): a bound, so no statistical tolerance",
    )
    frames = [s for s in summaries.values() if {"entropy_min", "entropy_max", "n"} <= set(s.columns)]
    if not frames:
        return claim
    columns = ["experiment", "entropy_min", "entropy_max", "n", "n_trials"]
    rows = pd.concat([s[[c for c in columns if c in s]] for s in frames], ignore_index=True)
    claim.based_on(rows)
    kinds = all_kinds()  # the first experiment whose kind has a figure of H between 0 and log n shows it
    shown = sorted((name, kinds[k].entropy_figure) for name, k in (experiments or {}).items() if k in kinds and kinds[k].entropy_figure and name in summaries)
    claim.figure = f"{shown[0][0]}/{shown[0][1]}" if shown else ""
    low = float(rows["entropy_min"].min())
    high = float((rows["entropy_max"] / np.log(rows["n"].to_numpy(float))).max())
    count = int(rows["n_trials"].sum())
    inside = low >= 0 and high <= 1 + ENTROPY_ROUNDING
    claim.predicted, claim.measured, claim.ci_low, claim.ci_high = 1.0, high, low, high
    claim.verdict = "holds" if inside else "fails"
    claim.evidence = f"{count:,} trials; smallest H = {low:.3g} nats, largest H / log n = {high:.15g}"
    return claim


def evaluate(summaries: dict[str, pd.DataFrame], experiments: dict[str, str]) -> list[Claim]:
    """Every registered kind's claims (name -> summary of the config's experiments of that kind, if any),
    then the claims that hold for every kind."""
    by_kind: dict[str, list[pd.DataFrame]] = {}
    for name, kind in experiments.items():
        if name in summaries:
            by_kind.setdefault(kind, []).append(summaries[name])
    claims = []
    for name, kind in all_kinds().items():
        frames = by_kind.get(name)
        frame = pd.concat(frames, ignore_index=True) if frames else None
        claims += [judge(frame) for judge in kind.submodule("claims").CLAIMS]
    claims.append(entropy_bounds(summaries, experiments))
    return claims
