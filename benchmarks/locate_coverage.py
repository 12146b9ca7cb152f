"""Does a located boundary's interval survive the adaptivity? The coverage study of
`attnsim.claims.boundary.locate` (docs/science.md §7.9) on constructed problems with a known
crossing x*, beside a fixed grid of equal cost and a naive bisection on point estimates.

Each problem is a curve mu(x) on [0, 1], an edge, per-trial noise and a budget in point-trials:

- `steep`: a logistic of width 0.03 crossing 0.8 (x* = 0.5 + 0.03 ln 4), normal noise sd 0.5;
- `shallow`: 0.025 tanh((x - 0.6) / 0.35) crossing 0 (x* = 0.6): the edge difference is at most
  0.02 over most of the range, as near the contrastive flip; noise sd 0.05, 8,000 trials;
- `shared draws`: 1 - 0.3 x^2 falling through 0.95 (x* = sqrt(1/6)), every point's trial t the
  same two normal draws (Z1 cos x + Z2 sin x): the means of nearby points move together, as
  points that differ only in the noise scale do (common random numbers);
- `heavy tails`: 0.5 + (x - 0.3) + 0.5 (x - 0.3)^2 through 0.5 (x* = 0.3), noise Student t with
  3 degrees of freedom (infinite fourth moment), sd 1;
- `skewed tails`: 2 - 1.5 sqrt(x) falling through 1 (x* = 4/9) on [0.05, 1], centred lognormal
  noise (skewness 6.2), sd 1: the shape of a squared error's trials.

Per run and method the interval is judged: covered when it contains x*, and its width. The
methods, at the same cost:

- `locate`: the method (placement, then a final pair on fresh trials);
- `grid G`: G evenly spaced points with the budget split evenly, the same confidence set
  (`crossing_set`) over the piecewise-linear interpolant, with the true curvature bound of each
  segment (an oracle the method does not have: the grid's most favourable case), G = 5, 9, 17;
- `naive bisection`: 8 halvings of the range, each on the midpoint's point estimate with an
  eighth of the budget; its last bracket is its "interval" (what reading a refined grid by eye
  gives).

Targets (issue 53, fixed before the study): coverage >= 0.939 (0.95 - 1.645 Monte Carlo SE at
1,000 runs) for `locate` on every problem, and its median width no wider than the narrowest
median width of the grids. Run: `python -m benchmarks.locate_coverage [--runs N]`; the rows of
`python -m benchmarks` come from `rows`.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnsim.claims.boundary import Evaluation, Located, crossing_set, locate

RUNS = 1000
QUICK_RUNS = 3  # quick mode (CI): every problem and method runs; values not compared
# Run numbers (each a seed of its own): the method's constants were set on runs 0-999 (the
# development runs); the study reads runs 1000-1999, untouched until the constants were fixed;
# the test in CI reads its own, from 5000.
FIRST = 1000
CI_FIRST = 5000
GRIDS = (5, 9, 17)
HALVINGS = 8
SEED = 20270101
TARGET_COVERAGE = 0.939  # 0.95 - 1.645 * sqrt(0.95 * 0.05 / 1000)


@dataclass(frozen=True)
class Problem:
    """A constructed claim: mu on [lo, hi], its edge and true crossing, the per-trial noise
    (`normal`, `t3`, `lognormal`, each with standard deviation `sd`), whether points share their
    draws, the budget in point-trials and the trials of one round (`quantum`)."""

    name: str
    mu: Callable[[np.ndarray], np.ndarray]
    edge: float
    truth: float
    noise: str
    sd: float
    shared: bool
    budget: int
    quantum: int
    lo: float = 0.0
    hi: float = 1.0

    def curvature(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """max |mu''| over each [a_i, b_i], by second differences on a fine grid (the oracle)."""
        out = np.empty(len(a))
        for i, (left, right) in enumerate(zip(a, b)):
            u = np.linspace(left, right, 201)
            h = 1e-4
            second = (self.mu(u + h) - 2 * self.mu(u) + self.mu(u - h)) / (h * h)
            out[i] = float(np.max(np.abs(second)))
        return out


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


PROBLEMS = {
    p.name: p
    for p in (
        Problem(
            "steep",
            lambda x: _logistic((x - 0.5) / 0.03),
            0.8,
            0.5 + 0.03 * math.log(4),
            "normal",
            0.5,
            False,
            20_000,
            50,
        ),
        Problem(
            "shallow",
            lambda x: 0.025 * np.tanh((x - 0.6) / 0.35),
            0.0,
            0.6,
            "normal",
            0.05,
            False,
            8_000,
            20,
        ),
        Problem(
            "shared draws",
            lambda x: 1 - 0.3 * x * x,
            0.95,
            math.sqrt(1 / 6),
            "normal",
            0.3,
            True,
            20_000,
            50,
        ),
        Problem(
            "heavy tails",
            lambda x: 0.5 + (x - 0.3) + 0.5 * (x - 0.3) ** 2,
            0.5,
            0.3,
            "t3",
            1.0,
            False,
            20_000,
            50,
        ),
        Problem(
            "skewed tails",
            lambda x: 2 - 1.5 * np.sqrt(x),
            1.0,
            4 / 9,
            "lognormal",
            1.0,
            False,
            20_000,
            50,
            lo=0.05,
        ),
    )
}


def _noise(rng: np.random.Generator, law: str, shape: tuple[int, ...]) -> np.ndarray:
    """Unit-variance, mean-zero draws of the law."""
    if law == "normal":
        return rng.standard_normal(shape)
    if law == "t3":
        return rng.standard_t(3, shape) / math.sqrt(3)
    if law == "lognormal":
        return (np.exp(rng.standard_normal(shape)) - math.exp(0.5)) / math.sqrt(
            (math.e - 1) * math.e
        )
    raise ValueError(law)


def evaluator(problem: Problem, run: int) -> Callable[[np.ndarray, int, int], Evaluation]:
    """The problem's per-trial values at x on trials [start, stop) of run `run`: one generator per
    (run, point, range) for independent points (the study never reads overlapping ranges of one
    point but identical ones), per (run, range) for shared draws, so a range's trials are the
    same numbers whenever it is read."""

    def evaluate(x: np.ndarray, start: int, stop: int) -> Evaluation:
        count = stop - start
        mean = problem.mu(np.asarray(x, dtype=np.float64))
        if problem.shared:
            rng = np.random.default_rng([SEED, run, start, stop])
            z = _noise(rng, problem.noise, (2, count))
            angle = np.asarray(x)[:, None]
            values = mean[:, None] + problem.sd * (z[0] * np.cos(angle) + z[1] * np.sin(angle))
        else:
            values = np.empty((len(x), count))
            for i, point in enumerate(x):
                key = int(round(float(point) * 2**40))
                rng = np.random.default_rng([SEED, run, key, start, stop])
                values[i] = mean[i] + problem.sd * _noise(rng, problem.noise, (count,))
        return Evaluation.of_values(values)

    return evaluate


@dataclass(frozen=True)
class Outcome:
    covered: bool
    width: float
    located: bool


def run_locate(problem: Problem, run: int) -> tuple[Outcome, Located]:
    located = locate(
        evaluator(problem, run),
        problem.edge,
        problem.lo,
        problem.hi,
        problem.budget,
        quantum=problem.quantum,
    )
    crossing = _nearest(located, problem.truth)
    if crossing is None:
        return Outcome(False, problem.hi - problem.lo, False), located
    return (
        Outcome(crossing.covers(problem.truth), crossing.width, crossing.status == "located"),
        located,
    )


def _nearest(located: Located, truth: float):
    """The crossing the study judges: the one whose interval is nearest x* (a problem has one
    crossing; a second is a false alarm, counted by `false_crossings`)."""
    if not located.crossings:
        return None
    return min(located.crossings, key=lambda c: max(c.low - truth, truth - c.high, 0.0))


def run_grid(problem: Problem, run: int, points: int) -> Outcome:
    x = np.linspace(problem.lo, problem.hi, points)
    trials = problem.budget // points
    got = evaluator(problem, run + 10_000_000 * points)(x, 0, trials)
    bound = problem.curvature(x[:-1], x[1:])
    found = crossing_set(x, got, problem.edge, bound, problem.lo, problem.hi)
    if found.empty:
        return Outcome(False, 0.0, False)
    low, high = found.hull
    return Outcome(found.covers(problem.truth), high - low, True)


def run_naive(problem: Problem, run: int) -> Outcome:
    evaluate = evaluator(problem, run + 90_000_000)
    a, b = problem.lo, problem.hi
    rising = problem.mu(np.asarray([b]))[0] > problem.mu(np.asarray([a]))[0]
    trials = problem.budget // HALVINGS
    for _ in range(HALVINGS):
        middle = (a + b) / 2
        above = evaluate(np.asarray([middle]), 0, trials).mean[0] > problem.edge
        if above == rising:
            b = middle
        else:
            a = middle
    return Outcome(a <= problem.truth <= b, b - a, True)


@dataclass(frozen=True)
class Summary:
    method: str
    coverage: float
    coverage_se: float
    median_width: float
    located: float
    runs: int

    @property
    def text(self) -> str:
        return (
            f"{self.method:16} coverage {self.coverage:.3f} (MC SE {self.coverage_se:.3f}), "
            f"median width {self.median_width:.4g}, located {self.located:.3f}"
        )


def summarise(method: str, outcomes: list[Outcome]) -> Summary:
    covered = np.asarray([o.covered for o in outcomes], dtype=float)
    width = np.asarray([o.width for o in outcomes])
    located = np.asarray([o.located for o in outcomes], dtype=float)
    share = float(covered.mean())
    se = math.sqrt(max(share * (1 - share), 0.05 * 0.95) / len(outcomes))
    return Summary(method, share, se, float(np.median(width)), float(located.mean()), len(outcomes))


def study(problem: Problem, runs: int, first: int = FIRST) -> dict[str, Summary]:
    """Every method on `runs` runs of `problem` (runs numbered from `first`)."""
    located = []
    extra = 0
    for r in range(first, first + runs):
        outcome, answer = run_locate(problem, r)
        located.append(outcome)
        extra += max(len(answer.crossings) - 1, 0)
    out = {"locate": summarise("locate", located)}
    for points in GRIDS:
        name = f"grid {points}"
        out[name] = summarise(
            name, [run_grid(problem, r, points) for r in range(first, first + runs)]
        )
    out["naive bisection"] = summarise(
        "naive bisection", [run_naive(problem, r) for r in range(first, first + runs)]
    )
    return out


def narrowest_grid(results: dict[str, Summary]) -> Summary:
    return min((results[f"grid {g}"] for g in GRIDS), key=lambda s: s.median_width)


def rows(quick: bool = False) -> list:
    """The rows of `python -m benchmarks`: per problem the method's coverage (target >= 0.939 at
    1,000 runs) and its median width against the narrowest grid's (target <= 1)."""
    from benchmarks.table import Row

    runs = QUICK_RUNS if quick else RUNS
    out = []
    for problem in PROBLEMS.values():
        results = study(problem, runs)
        mine, grid = results["locate"], narrowest_grid(results)
        naive = results["naive bisection"]
        out.append(
            Row(
                f"locate: coverage of x*, {problem.name}",
                mine.coverage,
                "share",
                f">= {TARGET_COVERAGE}" if not quick else None,
                f"{runs} runs, MC SE {mine.coverage_se:.3f}; naive bisection "
                f"{naive.coverage:.3f}; {grid.method} {grid.coverage:.3f}",
            )
        )
        out.append(
            Row(
                f"locate: median width / narrowest grid's, {problem.name}",
                mine.median_width / grid.median_width,
                "ratio",
                "<= 1" if not quick else None,
                f"{mine.median_width:.4g} against {grid.method} {grid.median_width:.4g} at "
                f"equal cost ({problem.budget} point-trials)",
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.locate_coverage")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--problem", choices=list(PROBLEMS), action="append")
    parser.add_argument(
        "--first", type=int, default=FIRST, help=f"the first run's number (default {FIRST})"
    )
    args = parser.parse_args(argv)
    for name in args.problem or list(PROBLEMS):
        started = time.process_time()
        results = study(PROBLEMS[name], args.runs, args.first)
        print(
            f"{name} (x* = {PROBLEMS[name].truth:.6g}, {time.process_time() - started:.0f} CPU-s)"
        )
        for summary in results.values():
            print("  " + summary.text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
