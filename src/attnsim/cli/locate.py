"""`attnsim locate CLAIM --axis AXIS --edge upper|lower|bound [--range LO HI] [--at KEY=VALUE ...]
[--budget CPU-HOURS]`: where the expected statistic of a per-point claim crosses an edge of its
band along one axis, the other axes held at fixed values (docs/science.md §7.9).

The method is `attnsim.claims.boundary.locate`; this module gives it the claim's statistic at new
values of the axis and the cost model's price of them, and prints the bill first (as `plan`
does), then x* with its 95% interval, what it cost and, where the theory predicts the crossing
(`theory.delta_boundary`), the prediction with its tolerance and the verdict of the declared
equivalence claim it makes.

This version computes in its own process and writes nothing. A point's trials are the rows a
store would hold for it: the claim's experiment (its kind, seed and `trials` per round) with the
axis at the new value, each round's blocks drawn from the same generators as `jobs.simulate`
(`round_blocks`, block index round * blocks + j, `seeding.block_generator`), so trials [start,
stop) are bit-identical to those rows of a run with `max_trials = stop` (a test compares them).
The statistic is the claim's own measure on the summary `jobs.collect` would write for those
trials; its per-unit values, paired across points for the method's covariances, are
delete-a-group jackknife pseudo-values over `--groups` contiguous groups of the trials. Keeping
the points in the store (`role: locate`), the workspace's record and the workflow's rounds are
the integration described in `claims.boundary`'s docstring.
"""

from __future__ import annotations

import argparse
import resource
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attnsim.errors import ConfigError

if TYPE_CHECKING:  # numpy is imported where it is used: `attnsim` builds this parser before a job
    import numpy as np  # pins BLAS to one thread, which must come before numpy's import

EDGE_NAMES = ("upper", "lower", "bound")
GROUPS = 20  # jackknife groups per evaluation: 19 degrees of freedom for the paired covariances
DEFAULT_BUDGET = 0.05  # CPU-hours


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's own options (the sweep's --configfile and --set come from cli.main)."""
    p.add_argument("claim", metavar="CLAIM", help="a per-point claim, e.g. delta_method_gaussian")
    p.add_argument("--axis", required=True, help="the grid parameter to move, e.g. noise_scale")
    p.add_argument(
        "--edge",
        required=True,
        choices=EDGE_NAMES,
        help="the band's upper or lower edge (equivalence), or a one-sided claim's bound",
    )
    p.add_argument(
        "--range",
        nargs=2,
        type=float,
        metavar=("LO", "HI"),
        help="where to look (default: the experiment's smallest and largest value of the axis)",
    )
    p.add_argument(
        "--at",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="the other parameters' values (needed where the experiment's grid has several)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET,
        metavar="CPU-HOURS",
        help="the most it may cost, by the estimate `attnsim plan` bills (default %(default)s)",
    )
    p.add_argument(
        "--target",
        type=float,
        metavar="WIDTH",
        help="stop once the interval is predicted this narrow (default: spend the budget)",
    )
    p.add_argument(
        "--experiment",
        metavar="NAME",
        help="the experiment to extend, when several of the claim's kind are in the config",
    )
    p.add_argument("-n", "--dry-run", action="store_true", help="print the bill, run nothing")
    p.add_argument("--threads", type=int, default=1, help="threads for the trial blocks")


# --- what to locate ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    claim: str
    kind: Any  # attnsim.kinds.base.Kind
    spec: Any  # attnsim.claims.engine.ClaimSpec
    experiment: Any  # attnsim.records.experiment.Experiment
    axis: str
    edge: str
    edge_value: float
    fixed: dict[str, Any]
    lo: float
    hi: float


def declared(claim: str) -> tuple[Any, Any]:
    """The kind and the declaration of a claim, by id (one line if there is none)."""
    from attnsim.claims.engine import ClaimSpec
    from attnsim.kinds import all_kinds

    for kind in all_kinds().values():
        for spec in kind.submodule("claims").CLAIMS:
            if isinstance(spec, ClaimSpec) and spec.claim_id == claim:
                return kind, spec
    raise ConfigError(f"{claim}: no claim of that id is declared (`attnsim claims` lists them)")


def edge_value(spec: Any, edge: str) -> float:
    """The value of the named edge of a per-point claim's band."""
    from attnsim.claims.engine import Equivalence, OneSided, PerPoint

    if not isinstance(spec.rule, PerPoint):
        raise ConfigError(
            f"{spec.claim_id}: not judged point by point; locate needs a statistic per point"
        )
    rule = spec.rule.rule
    if isinstance(rule, Equivalence) and edge in ("upper", "lower"):
        sign = 1 if edge == "upper" else -1
        return float(rule.predicted + sign * rule.tolerance)
    if isinstance(rule, OneSided) and edge == "bound":
        return float(rule.bound)
    has = "upper, lower" if isinstance(rule, Equivalence) else "bound"
    raise ConfigError(f"{spec.claim_id}: its band has no {edge} edge (it has: {has})")


def resolve(settings: Any, args: Any) -> Target:
    """The claim, its experiment, the fixed values and the range, from the command line."""
    import yaml

    from attnsim.records.grid import canonical_column_value

    kind, spec = declared(args.claim)
    value = edge_value(spec, args.edge)
    mine = {n: e for n, e in settings.experiments.items() if e.kind == kind.name}
    if args.experiment is not None:
        if args.experiment not in mine:
            raise ConfigError(f"--experiment {args.experiment}: no experiment of kind {kind.name}")
        experiment = mine[args.experiment]
    elif len(mine) == 1:
        experiment = next(iter(mine.values()))
    else:
        found = ", ".join(sorted(mine)) or "none"
        raise ConfigError(
            f"{args.claim}: name one of the config's {kind.name} experiments with --experiment "
            f"({found})"
        )
    params = {p.name: p for p in kind.schema.params}
    if args.axis not in params or not _floating(params[args.axis]):
        raise ConfigError(f"--axis {args.axis}: not a real-valued parameter of {kind.name}")
    fixed: dict[str, Any] = {}
    for item in args.at:
        key, sep, text = item.partition("=")
        if not sep or key not in params or key == args.axis:
            raise ConfigError(
                f"--at {item}: expected KEY=VALUE for another parameter of {kind.name}"
            )
        try:
            fixed[key] = canonical_column_value(params[key], yaml.safe_load(text))
        except (ValueError, TypeError, yaml.YAMLError):
            raise ConfigError(f"--at {item}: not a value of {key}") from None
    grid = experiment.grid
    missing = []
    for name in kind.param_names:
        if name == args.axis or name in fixed:
            continue
        values = grid.get(name, [params[name].default])
        if len(values) == 1:
            fixed[name] = canonical_column_value(params[name], values[0])
        else:
            missing.append(name)
    if missing:
        raise ConfigError(
            f"give --at for {', '.join(missing)}: the experiment {experiment.name} has several "
            "values of each"
        )
    if args.range is not None:
        lo, hi = (float(v) for v in args.range)
    else:
        lo, hi = float(min(grid[args.axis])), float(max(grid[args.axis]))
    if not lo < hi:
        raise ConfigError(f"--range {lo:g} {hi:g}: LO must be below HI")
    param = params[args.axis]
    low_bound = param.minimum if param.minimum is not None else param.exclusive_minimum
    if (low_bound is not None and lo < low_bound) or (
        param.maximum is not None and hi > param.maximum
    ):
        raise ConfigError(f"--range {lo:g} {hi:g}: outside {args.axis}'s bounds")
    ordered = {n: fixed[n] for n in kind.param_names if n in fixed}
    return Target(args.claim, kind, spec, experiment, args.axis, args.edge, value, ordered, lo, hi)


def _floating(param: Any) -> bool:
    """An axis x* can lie anywhere on (an integer axis, e.g. n, is not located here: its points
    would have to be integers)."""
    import pyarrow as pa

    return bool(pa.types.is_floating(param.type))


# --- the statistic at new values of the axis ---------------------------------------------------


class Points:
    """`evaluate(x, start, stop)` and `cost(x, start, stop)` of `claims.boundary` for a target."""

    def __init__(self, target: Target, groups: int = GROUPS, threads: int = 1) -> None:
        self.target, self.groups, self.threads = target, groups, threads
        self.quantum = int(target.experiment.trial_settings.trials)

    def grid(self, x: np.ndarray) -> Any:
        from attnsim.records.experiment import Experiment, TrialSettings
        from attnsim.records.grid import grid_columns

        t = self.target
        values = {name: [v] for name, v in t.fixed.items()}
        values[t.axis] = [float(v) for v in x]
        experiment = Experiment(
            name=t.experiment.name,
            kind=t.kind.name,
            grid={n: values[n] for n in t.kind.param_names},
            trial_settings=TrialSettings(t.experiment.trial_settings.seed, self.quantum),
        )
        return grid_columns(experiment)

    def points(self, x: np.ndarray) -> tuple[Any, list[Any]]:
        from attnsim.records.grid import points_from_rows

        grid = self.grid(x)
        return grid, points_from_rows(self.target.kind, grid.rows())

    def trials(self, points: list[Any], start: int, stop: int) -> dict[str, dict[str, np.ndarray]]:
        """Point id -> metric -> trials [start, stop): rounds start/q .. stop/q - 1 of rounds of q
        = the experiment's trials, each block from the generator `jobs.simulate` gives it."""
        return simulate_rounds(
            self.target.kind,
            self.target.experiment.trial_settings.seed,
            self.quantum,
            points,
            start,
            stop,
            self.threads,
        )

    def evaluate(self, x: np.ndarray, start: int, stop: int) -> Any:
        import numpy as np

        from attnsim.claims.boundary import Evaluation

        grid, points = self.points(x)
        results = self.trials(points, start, stop)
        count = stop - start
        groups = max(2, min(self.groups, count))
        cuts = np.array_split(np.arange(count), groups)
        whole = self.statistic(grid, points, results, np.ones(count, dtype=bool), x)
        pseudo = np.empty((len(x), groups))
        for g, cut in enumerate(cuts):
            keep = np.ones(count, dtype=bool)
            keep[cut] = False
            pseudo[:, g] = groups * whole - (groups - 1) * self.statistic(
                grid, points, results, keep, x
            )
        return Evaluation.of_values(pseudo)

    def statistic(
        self, grid: Any, points: list[Any], results: dict, keep: np.ndarray, x: np.ndarray
    ) -> np.ndarray:
        """The claim's per-point value on the kept trials, in the order of `x`: its measure on
        the summary `jobs.collect` writes for them."""
        import numpy as np

        from attnsim.jobs.collect import summarise_chunks
        from attnsim.jobs.simulate import trials_table

        t = self.target
        kept = {pid: {m: v[keep] for m, v in metrics.items()} for pid, metrics in results.items()}
        table = trials_table(t.kind, points, kept)
        rows = summarise_chunks(t.kind, t.experiment.name, grid, [table]).to_pandas()
        estimate = t.spec.measure(rows)
        values = estimate.points["value"].to_numpy(dtype=np.float64)
        if values.size != len(x):
            raise ConfigError(
                f"{t.claim}: its measure gave {values.size} values for {len(x)} points"
            )
        position = {float(v): i for i, v in enumerate(rows[t.axis])}
        return np.asarray(values[[position[float(v)] for v in x]])

    def cost(self, x: np.ndarray, start: int, stop: int) -> float:
        """The cost model's expected CPU-seconds of trials [start, stop) at the points `x` (the
        estimate `attnsim plan` bills: `records.cost`)."""
        from attnsim.plan.sweep import grid_costs
        from attnsim.records import cost

        kind = self.target.kind
        trials = stop - start
        costs = grid_costs(kind, self.grid(x), trials, trials)
        return float(cost.expected_seconds(cost.chunk_cost(kind, costs, slice(None), trials)))


def simulate_rounds(
    kind: Any,
    seed: int,
    quantum: int,
    points: list[Any],
    start: int,
    stop: int,
    threads: int = 1,
) -> dict[str, dict[str, np.ndarray]]:
    """Trials [start, stop) of each point in rounds of `quantum` (start and stop multiples of it):
    the blocks `jobs.simulate.simulate_points` draws for those rounds, and only those."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    from threadpoolctl import threadpool_limits

    from attnsim.jobs import validate
    from attnsim.jobs.simulate import round_blocks
    from attnsim.seeding import block_generator

    if start % quantum or stop % quantum or not 0 <= start < stop:
        raise ValueError(f"trials [{start}, {stop}) are not whole rounds of {quantum}")
    streams: dict[str, list[Any]] = defaultdict(list)
    for point in points:
        streams[point.stream].append(point)
    tasks = []
    for stream, members in streams.items():
        sizes = round_blocks(kind, members[0].params, quantum)
        for r in range(start // quantum, stop // quantum):
            tasks += [(stream, members, r * len(sizes) + j, count) for j, count in enumerate(sizes)]

    def block(task: tuple) -> list:
        stream, members, index, count = task
        params = [m.params for m in members]
        output = kind.compute.simulate_block(block_generator(seed, stream, index), count, params)
        validate.check_block(kind, members, count, output)
        return list(output)

    pieces: dict[str, dict[str, list[np.ndarray]]] = {p.id: defaultdict(list) for p in points}
    with threadpool_limits(limits=1), ThreadPoolExecutor(threads) as pool:
        for task, output in zip(tasks, pool.map(block, tasks)):
            for member, metrics in zip(task[1], output):
                for name, values in metrics.items():
                    pieces[member.id][name].append(values)
    return {
        pid: {name: np.concatenate(parts) for name, parts in metrics.items()}
        for pid, metrics in pieces.items()
    }


# --- the theory's prediction -------------------------------------------------------------------


def prediction(target: Target) -> Any:
    """The theory's crossing where one exists: the delta method's ratio along the noise scale
    for noise with every exponential moment (`theory.delta_boundary`); None elsewhere."""
    from attnsim.theory import delta_boundary

    family = target.fixed.get("noise")
    if not (
        target.claim.startswith("delta_method_")
        and target.axis == "noise_scale"
        and family in delta_boundary.FAMILIES
    ):
        return None
    return delta_boundary.predicted_crossing(
        family, int(target.fixed["n"]), float(target.fixed["logit_scale"]), target.edge_value
    )


# --- the command -------------------------------------------------------------------------------


def bill(target: Target, points: Points, budget_hours: float) -> str:
    from attnsim.claims import boundary

    seconds = budget_hours * 3600
    plan = boundary.plan(target.lo, target.hi, seconds, quantum=points.quantum, cost=points.cost)
    fixed = ", ".join(f"{k}={v}" for k, v in target.fixed.items())
    lines = [
        f"attnsim locate: {target.claim} ({target.kind.name}, experiment "
        f"{target.experiment.name}), {target.axis} in [{target.lo:g}, {target.hi:g}] at {fixed}, "
        f"where its statistic crosses the {target.edge} edge {target.edge_value:g}",
    ]
    if plan.scan_trials == 0:
        lines.append(
            f"  the budget ({budget_hours:g} CPU-hours) buys less than the first look: "
            f"{plan.scan_points} points x {points.quantum} trials"
        )
        return "\n".join(lines)
    lines.append(
        f"  first look: {plan.scan_points} points x {plan.scan_trials} trials; then at most "
        f"{plan.rounds} rounds of 2 points x {plan.scan_trials}; then 2 points x at least "
        f"{plan.final_trials} fresh trials per crossing"
    )
    lines.append(f"  at most {_hours(budget_hours)} estimated (the estimate `attnsim plan` bills)")
    return "\n".join(lines)


def _hours(hours: float) -> str:
    return f"{hours:,.2f} CPU-hours" if hours >= 0.1 else f"{hours * 60:.3g} CPU-minutes"


def run(settings: Any, args: Any) -> int:
    """Print the bill, locate (unless a dry run), print the answer beside the theory's."""
    from attnsim.claims import boundary
    from attnsim.claims.engine import equivalence_verdict

    if not args.budget > 0:
        raise ConfigError(f"--budget {args.budget:g}: must be positive (CPU-hours)")
    if args.target is not None and not args.target > 0:
        raise ConfigError(f"--target {args.target:g}: must be positive")
    target = resolve(settings, args)
    points = Points(target, threads=args.threads)
    print(bill(target, points, args.budget), flush=True)
    theory = prediction(target)
    if args.dry_run:
        return 0
    started = _cpu_seconds()
    try:
        found = boundary.locate(
            points.evaluate,
            target.edge_value,
            target.lo,
            target.hi,
            args.budget * 3600,
            quantum=points.quantum,
            cost=points.cost,
            target=args.target,
        )
    except ValueError as error:
        raise ConfigError(str(error)) from None
    print(boundary.summary(found).rsplit("; cost ", 1)[0])
    print(
        f"  cost: {found.cost / 60:.3g} CPU-minutes estimated of {args.budget * 60:.3g}; "
        f"{(_cpu_seconds() - started) / 60:.3g} CPU-minutes measured"
    )
    if theory is not None:
        line = (
            f"  theory (next order, docs/science.md §2.8): {target.axis}* = {theory.x:.4g} "
            f"+- {theory.tolerance:.2g}"
        )
        crossing = found.crossing
        if crossing is not None and found.status == boundary.LOCATED:
            verdict = equivalence_verdict(crossing.low, crossing.high, theory.x, theory.tolerance)
            line += f"; the located interval against it: {verdict}"
        print(line)
    return 0  # "not located within budget" is an answer too


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
