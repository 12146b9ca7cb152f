"""What a sweep will cost before it runs (`attnsim plan`, `attnsim run -n`): points, trials, jobs
per rule, estimated CPU-hours and the largest job's memory, and the refusal of a sweep that needs
more jobs than `max_jobs` allows (one line, before anything is submitted)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from attnsim.errors import ConfigError
from attnsim.kinds import get_kind
from attnsim.plan.sweep import ExperimentPlan
from attnsim.records import cost
from attnsim.records.experiment import Settings
from attnsim.records.grid import sub_grid
from attnsim.store import parquet


@dataclass(frozen=True)
class Bill:
    experiments: int
    points: int
    points_to_run: int
    trials_to_run: int  # the most trials the pending points can get (max_trials for adaptive ones)
    jobs: dict[str, int]  # rule -> jobs to run
    cpu_hours: float  # the cost model's expected CPU time of the simulate jobs
    largest_job_hours: float
    peak_mem_mb: int  # the largest simulate job's request
    threads: int
    # the figures and claims jobs' expected CPU time (records.cost), the largest figures job's
    figures_hours: float = 0.0
    largest_figures_hours: float = 0.0
    claims_hours: float = 0.0
    # experiments whose figures are drawn from a sub-grid: name -> (its points, the points drawn)
    sub_grids: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # the config's boundaries (`boundaries:`) and the sum of their budgets: the most their
    # rounds may cost by the same cost model (a located boundary is not located again)
    boundaries: int = 0
    boundary_hours: float = 0.0

    @property
    def total_jobs(self) -> int:
        return sum(self.jobs.values())


def bill(
    settings: Settings, plans: Mapping[str, ExperimentPlan], root: Path, threads: int = 1
) -> Bill:
    points = to_run = trials = 0
    cpu = largest = drawing = largest_drawing = 0.0
    mem = 0
    sub_grids: dict[str, tuple[int, int]] = {}
    simulate = stale = 0
    stale_kinds = set()
    for name, plan in plans.items():
        points += plan.n_points
        for chunk in plan.pending:
            c = plan.cost(chunk)
            to_run += c.points
            trials += c.points * c.trial_cap
            seconds = cost.expected_seconds(c)
            cpu += seconds
            largest = max(largest, seconds)
            mem = max(mem, cost.chunk_mem_mb(c, threads))
        simulate += len(plan.pending)
        if plan.pending or not parquet.summary_path(root, plan.kind, name).exists():
            stale += 1
            stale_kinds.add(plan.kind)
            seconds, drawn = _figures(plan)
            drawing += seconds
            largest_drawing = max(largest_drawing, seconds)
            if drawn < plan.n_points:
                sub_grids[name] = (plan.n_points, drawn)
    jobs = {
        "simulate": simulate,
        "collect": stale,
        "judge": len(stale_kinds),  # one per kind with an experiment whose summary is rebuilt
        "figures": stale,  # one figures job per experiment whose summary is rebuilt
        "claims": 1 if stale else 0,
    }
    judging = cost.claims_seconds(points, sum(_figure_count(p) for p in plans.values()))
    return Bill(
        len(plans),
        points,
        to_run,
        trials,
        jobs,
        cpu / 3600,
        largest / 3600,
        mem,
        threads,
        figures_hours=drawing / 3600,
        largest_figures_hours=largest_drawing / 3600,
        claims_hours=judging / 3600 if stale else 0.0,
        sub_grids=sub_grids,
        boundaries=len(settings.boundaries),
        boundary_hours=sum(float(e["budget"]) for e in settings.boundaries.values()),
    )


def _figure_count(plan: ExperimentPlan) -> int:
    return len(get_kind(plan.kind).figures_for(plan.grid.values))


def _figures(plan: ExperimentPlan) -> tuple[float, int]:
    """(expected CPU-seconds, points drawn) of an experiment's figures job: a large experiment's
    figures draw a sub-grid (`attnsim.report.figure_data`)."""
    kind = get_kind(plan.kind)
    kept = sub_grid(plan.grid.values, kind.presentation.figure_points)
    drawn = math.prod(len(v) for v in kept.values())
    return cost.figures_seconds(kind, drawn, _figure_count(plan)), drawn


def _hours(hours: float) -> str:
    return f"{hours:,.2f} CPU-hours" if hours >= 0.1 else f"{hours * 60:,.1f} CPU-minutes"


def render(b: Bill, settings: Settings, at_once: int | None = None) -> str:
    """A few lines; under a cluster profile (`max_jobs` set) the job count against the limit."""
    jobs = ", ".join(f"{rule} {count:,}" for rule, count in b.jobs.items())
    lines = [
        f"plan: {b.experiments} experiment{'s' * (b.experiments != 1)}, {b.points:,} points "
        f"({b.points_to_run:,} to run, up "
        f"to {b.trials_to_run:,} trials)",
        f"  jobs to run: {jobs} (total {b.total_jobs:,})",
        f"  simulate: about {_hours(b.cpu_hours)} estimated (largest job "
        f"{_hours(b.largest_job_hours)}), "
        f"peak memory per job {b.peak_mem_mb:,} MB at {b.threads} "
        f"thread{'s' if b.threads > 1 else ''}",
    ]
    sizing = f"jobs sized by cost: job_minutes = {settings.job_minutes:g}" + (
        f", chunk_size = {settings.chunk_size:,}" if settings.chunk_size else ""
    )
    limit = (
        f"{b.jobs['simulate']:,} simulate jobs of max_jobs = {settings.max_jobs:,}"
        if settings.max_jobs
        else "no max_jobs set"
    )
    lines.append(
        f"  {sizing}; {limit}" + (f"; at most {at_once:,} at once (--jobs)" if at_once else "")
    )
    if b.jobs["figures"] or b.jobs["claims"]:
        lines.append(
            f"  figures: about {_hours(b.figures_hours)} estimated (largest job "
            f"{_hours(b.largest_figures_hours)}); claims: about {_hours(b.claims_hours)}"
        )
    if b.boundaries:
        lines.append(
            f"  boundaries: {b.boundaries} located in rounds, at most {_hours(b.boundary_hours)} "
            "by their budgets (a located boundary is not located again)"
        )
    for name, (total, drawn) in sorted(b.sub_grids.items()):
        lines.append(
            f"  {name}: {total:,} points; its figures draw a sub-grid of {drawn:,} of them "
            "(each parameter's values spread over its range)"
        )
    return "\n".join(lines)


def check_budget(value: float, where: str = "--budget") -> float:
    """A budget of CPU-hours as given on a command line (`decide --budget`, `locate`): a finite
    number, 0 or more, else one line. NaN compared false with every cost (it meant no limit at
    all) and inf is no limit either."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
        raise ConfigError(
            f"{where} {value:g}: give a finite number of CPU-hours, 0 or more (e.g. {where} 2)"
        )
    return float(value)


def check_limit(b: Bill, settings: Settings) -> None:
    """One line when the sweep needs more simulate jobs than `max_jobs`: nothing may be
    submitted."""
    if settings.max_jobs is not None and b.jobs["simulate"] > settings.max_jobs:
        raise ConfigError(
            f"max_jobs: the sweep needs {b.jobs['simulate']:,} simulate jobs, over max_jobs = "
            f"{settings.max_jobs:,}; "
            f"raise job_minutes (now {settings.job_minutes:g}) for fewer, larger jobs"
            + (", or raise or remove chunk_size" if settings.chunk_size else "")
            + ", or raise max_jobs if the cluster allows it; nothing was submitted"
        )
