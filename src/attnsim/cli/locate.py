"""`attnsim locate CLAIM --axis AXIS --edge upper|lower|bound [--range LO HI] [--at KEY=VALUE ...]
[--budget CPU-HOURS]`: where the expected statistic of a per-point claim crosses an edge of its
band along one axis, the other axes held at fixed values (docs/science.md §7.9).

The method is `attnsim.claims.boundary.locate`; this module gives it the claim's statistic at new
values of the axis and the cost model's price of them, and prints the bill first (as `plan`
does), then x* with its 95% interval, what it cost and, where the theory predicts the crossing
(`theory.delta_boundary`), the prediction with its tolerance and the verdict of the declared
equivalence claim it makes; where the statistic's expectation is known exactly (`exact_crossing`),
that crossing and its side of the located interval (a check).

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
from pathlib import Path
from typing import Any

from attnsim.errors import ConfigError

# the engine is `attnsim.report.boundaries` (verify and the workflow's rounds use it too); its
# names are this command's (numpy is imported where it is used: `attnsim` builds this parser
# before a job pins BLAS to one thread, which must come before numpy's import)
from attnsim.report.boundaries import (  # noqa: F401
    DEFAULT_BUDGET,
    EDGE_NAMES,
    GROUPS,
    Points,
    StoredPoints,
    Target,
    at_text,
    command_name,
    declared,
    edge_value,
    exact_crossing,
    prediction,
    record_located,
    resolve,
    simulate_rounds,
)


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
        help="the other parameters' values (needed where the experiment's grid has several); "
        "KEY=[a, b, ...] for a claim whose statistic is taken over several (each located point "
        "is then the grid points at all of them)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET,
        metavar="CPU-HOURS",
        help="the most it may cost, by the estimate `attnsim plan` bills, priced on the AVX2 "
        "class on any machine: it fixes the design (default %(default)s)",
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


# --- the command -------------------------------------------------------------------------------


def bill(target: Target, points: Points, budget_hours: float) -> str:
    from attnsim.claims import boundary
    from attnsim.records import cost

    seconds = budget_hours * 3600
    plan = boundary.plan(target.lo, target.hi, seconds, quantum=points.quantum, cost=points.cost)
    fixed = at_text(target.fixed)
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
    lines.append(
        f"  at most {_hours(budget_hours)} estimated (the estimate `attnsim plan` bills, priced on"
        f" {cost.DESIGN_CLASS}, as every boundary's budget: the design is the same on any machine)"
    )
    return "\n".join(lines)


def _hours(hours: float) -> str:
    return f"{hours:,.2f} CPU-hours" if hours >= 0.1 else f"{hours * 60:.3g} CPU-minutes"


def run(settings: Any, args: Any, workspace: Path | None = None) -> int:
    """Print the bill, locate (unless a dry run), print the answer beside the theory's. With a
    `workspace`, the points go to its store (an experiment of role `locate`: a rerun reads them,
    a killed locate resumes) and the answer to its state record (`verify` replays it)."""
    from attnsim.claims import boundary
    from attnsim.claims.engine import equivalence_verdict

    if not args.budget > 0:
        raise ConfigError(f"--budget {args.budget:g}: must be positive (CPU-hours)")
    if args.target is not None and not args.target > 0:
        raise ConfigError(f"--target {args.target:g}: must be positive")
    target = resolve(settings, args)
    name = command_name(target)
    if workspace is None:
        points: Points = Points(target, threads=args.threads)
    else:
        points = StoredPoints(target, Path(workspace) / "store", name, threads=args.threads)
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
    exact = exact_crossing(target)
    if exact is not None:
        text = f"  exact, by {exact['method']}: {target.axis}* = {exact['x']:.4g}"
        crossing = found.crossing
        if crossing is not None and found.status == boundary.LOCATED:
            side = "inside" if crossing.low <= exact["x"] <= crossing.high else "outside"
            text += f"; {side} the located interval (a check, not a verdict)"
        print(text)
    if workspace is not None:
        entry = {"budget": args.budget, "target": args.target}
        recorded = record_located(workspace, name, target, found, entry)
        print(f"  recorded in {Path(workspace) / 'state.yaml'} as boundary {recorded}")
    return 0  # "not located within budget" is an answer too


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
