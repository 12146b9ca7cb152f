"""Does peeking cheat? `attnsim decide`'s group-sequential design against naive repeated looks,
simulated at the band edge (docs/science.md §7.6).

Each simulated claim is the mean of i.i.d. normal trials (sd 1) judged by equivalence against a
band [-tolerance, +tolerance] (or a one-sided bound at 0) whose true value lies exactly on the
edge, so every `holds` is false. `decide` looks at the run's trials (look 1, its 95% t interval)
and then after each of `ROUNDS` geometric top-ups, with the design's widened intervals, and stops
at the first holds or fails. Beside it: the naive loop, the same trials judged at 95% after every
top-up ("rerun until it holds"), at decide's looks and after every `first` trials. Rates come with
their Monte Carlo 95% interval; fixed seeds. Run: `python -m benchmarks.peeking`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnsim.claims.engine import equivalence_verdict, one_sided_verdict
from attnsim.claims.sequential import Design
from attnsim.stats import t_quantile

SEQUENCES = 4000
FIRST, LAST = 10, 160  # trials per point at look 1 and the most the budget buys


@dataclass(frozen=True)
class Rate:
    hits: int
    sequences: int

    @property
    def value(self) -> float:
        return self.hits / self.sequences

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson 95% interval of the rate (exact enough at these counts, never below 0)."""
        z, n, p = 1.959963984540054, self.sequences, self.value
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return centre - half, centre + half

    def __str__(self) -> str:
        low, high = self.interval
        return f"{self.value:.4f} [{low:.4f}, {high:.4f}] ({self.hits}/{self.sequences})"


def _looks(draws: np.ndarray, counts) -> tuple[np.ndarray, np.ndarray]:
    """Mean and SE of each sequence's first n trials, for each n in `counts`: (sequences, looks)."""
    counts = np.asarray(counts)
    sums = np.cumsum(draws, axis=1)[:, counts - 1]
    squares = np.cumsum(draws**2, axis=1)[:, counts - 1]
    mean = sums / counts
    var = (squares - counts * mean**2) / (counts - 1)
    return mean, np.sqrt(np.maximum(var, 0) / counts)


def _judge(low, high, rule: tuple) -> np.ndarray:
    if rule[0] == "equivalence":
        _, predicted, tolerance = rule
        verdict = np.vectorize(lambda lo, hi: equivalence_verdict(lo, hi, predicted, tolerance))
    else:
        _, bound, side = rule
        verdict = np.vectorize(lambda lo, hi: one_sided_verdict(lo, hi, bound, side))
    return verdict(low, high)


def first_decision(draws, counts, critical, rule) -> np.ndarray:
    """Each sequence's verdict at its first decisive look (holds/fails), else inconclusive."""
    mean, se = _looks(draws, counts)
    half = se * np.asarray(critical)[None, :]
    verdicts = _judge(mean - half, mean + half, rule)
    decided = verdicts != "inconclusive"
    first = np.where(decided.any(axis=1), decided.argmax(axis=1), -1)
    out = np.full(len(draws), "inconclusive", dtype=object)
    rows = first >= 0
    out[rows] = verdicts[rows, first[rows]]
    return out


def false_holds(rule: tuple, truth: float, seed: int, sequences: int = SEQUENCES) -> dict:
    """Rate of `holds` for decide's design and the naive loops, all on the same draws."""
    design = Design.plan(FIRST, LAST)
    rng = np.random.default_rng(seed)
    draws = truth + rng.standard_normal((sequences, LAST))
    fixed = [t_quantile(0.975, n - 1) for n in design.trials]
    every = list(range(FIRST, LAST + 1, FIRST))
    runs = {
        "decide (group-sequential)": (design.trials, design_critical(design)),
        "naive, at decide's looks": (design.trials, fixed),
        f"naive, after every {FIRST} trials": (every, [t_quantile(0.975, n - 1) for n in every]),
        f"one look at {LAST} trials": ([LAST], [t_quantile(0.975, LAST - 1)]),
    }
    return {
        name: Rate(int(np.sum(first_decision(draws, counts, crit, rule) == "holds")), sequences)
        for name, (counts, crit) in runs.items()
    }


def design_critical(design: Design) -> list[float]:
    return [design.t_critical(k, n - 1) for k, n in enumerate(design.trials)]


SCENARIOS = {  # name: (rule, true value, seed)
    "equivalence +-0.25, power-limited at look 1, truth on the upper edge": (
        ("equivalence", 0.0, 0.25),
        0.25,
        20261203,
    ),
    "equivalence +-1, decidable at look 1, truth on the upper edge": (
        ("equivalence", 0.0, 1.0),
        1.0,
        20261204,
    ),
    "one-sided below 0, truth on the bound": (("one-sided", 0.0, "below"), 0.0, 20261205),
}


def main() -> int:
    design = Design.plan(FIRST, LAST)
    print(f"looks (trials): {design.trials}; normal critical values: {design.critical}")
    for name, (rule, truth, seed) in SCENARIOS.items():
        print(f"\n{name} ({SEQUENCES} sequences, seed {seed}): false-holds rate [MC 95% interval]")
        for label, rate in false_holds(rule, truth, seed).items():
            print(f"  {label:<32} {rate}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
