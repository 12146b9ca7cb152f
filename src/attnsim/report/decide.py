"""`attnsim decide [CLAIM ...] --budget CPU-HOURS`: top up the trials of the experiments that
inconclusive claims rest on, look by look, until each claim is decided or the budget would be
passed (docs/science.md §7.6), leaving the workspace's own config usable at every moment.

1. Targets: the named claims, or every inconclusive declared claim whose interval narrows with
   trials (`needed_unit` "trials per point"); the experiments they rest on. The config is the
   workspace's effective one (`attnsim.config.state`: the file <- recorded overrides <- top-ups).
2. The design (`LookDesign`, one object consulted at every look and recorded per claim in the
   workspace's state record): today a group-sequential design (`GroupSequential`, docs/science.md
   §7.6) whose looks are multiples of each experiment's trials per point up to the most the
   budget buys by the cost model (`attnsim plan`'s), geometric in between; a look whose critical
   value is infinite could never decide and is not planned. A claim whose design is spent is not
   looked at again; one whose design an interrupted decide left unfinished continues it.
3. Each look is one `attnsim run` of the effective config with the look's top-ups pending in the
   record's `operation` (its run token passed to the workflow): the store's trials are reused bit
   for bit, only the new rounds (`max_trials` in rounds of `trials`) are computed, and only the
   topped-up experiments' summaries are made (no figures). A look runs only if the CPU measured so
   far (this process and every process it starts; the simulate jobs' benchmarks on a cluster)
   plus its prediction (the cost model x the last look's calibration + the last look's measured
   overhead, and the final run's) stays within the budget.
4. After each look the open targets are judged with the design; the look's top-ups are then
   recorded (`topups`, each claim's design), the operation cleared last. A decide killed at any
   moment leaves the record at its last complete look: any later command recovers it
   (`attnsim.config.state.recover`), and the trials of the interrupted look stay on disk for the
   next decide.
5. After the last look, one run draws the figures and the claims of the topped-up workspace.
"""

from __future__ import annotations

import math
import os
import resource
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from attnsim.claims.engine import ClaimSpec, canonical_rows
from attnsim.claims.sequential import FIRST_ALPHA, ROUNDS, TOTAL_ALPHA, Design, judge_at
from attnsim.config import state as workspace_state
from attnsim.config import workspace as workspaces
from attnsim.config.load import load
from attnsim.errors import ConfigError
from attnsim.kinds import all_kinds
from attnsim.plan import bill as billing
from attnsim.plan.sweep import plan_all
from attnsim.records import cost
from attnsim.records.state import ClaimDesign, Look, Operation, TopUp, WorkspaceState
from attnsim.report import claims as io
from attnsim.report.runs import benchmark_cpu
from attnsim.store import parquet as store

MAX_FACTOR = 64  # at most 64x the trials per point at the first look: beyond, looks are too far
FACTORS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)  # the largest look's candidates, priced in turn
TRIALS = "trials per point"
METHOD = "group sequential"


# --- the design: one object, consulted at every look ---------------------------------------------


class LookDesign(Protocol):
    """What decide asks of a sequential design (the verdicts line replaces today's group-sequential
    one by an anytime-valid confidence sequence through this interface): its looks as multiples
    of the first look's trials per point, each claim's verdict at a look, and the record of the
    design for the workspace's state."""

    @property
    def method(self) -> str: ...

    @property
    def level(self) -> float:
        """The coverage its intervals keep over every look at once."""
        ...

    @property
    def factors(self) -> tuple[int, ...]:
        """The looks as multiples of the first look's trials per point (look 1, the run judged,
        is 1)."""
        ...

    def describe(self) -> str:
        """One line for the user: the method, its level, what fixes each look's interval."""
        ...

    def judge(self, spec: ClaimSpec, rows: Any, look: int) -> str:
        """The claim's verdict on `rows` at `look` (0-based: 0 is the run judged)."""
        ...

    def record(self, claim_id: str, first: Mapping[str, int], looks: int) -> ClaimDesign:
        """The design as the state record keeps it: the claim's experiments with their trials
        per point at look 1 (`first`), `looks` looks done."""
        ...


@dataclass(frozen=True)
class GroupSequential:
    """The group-sequential design of docs/science.md §7.6 (`attnsim.claims.sequential`): looks at
    `factors` times the first look's trials, Lan-DeMets O'Brien-Fleming spending of a further
    2.5% per side after the run's own 95% look, so each one-sided test keeps 5% (a 90% level)."""

    factors: tuple[int, ...]
    design: Design = field(compare=False)
    method: str = METHOD
    level: float = 1 - 2 * TOTAL_ALPHA

    @classmethod
    def plan(cls, factors: Sequence[int]) -> GroupSequential:
        """The design for looks at `factors` (1 first), less every look whose critical value is
        infinite (it spends nothing: no interval there could decide), recomputed until none is."""
        kept = [1, *sorted(f for f in set(factors) if f > 1)]
        while True:
            design = Design.for_counts(kept)
            dead = [k for k in range(1, len(kept)) if not decisive(design.critical[k])]
            if not dead:
                return cls(tuple(kept), design)
            kept = [f for k, f in enumerate(kept) if k not in dead]

    @classmethod
    def from_record(cls, record: ClaimDesign) -> GroupSequential:
        factors = tuple(int(f) for f in record.parameters["factors"])
        return cls(factors, Design.for_counts(list(factors)))

    @staticmethod
    def first_trials(record: ClaimDesign) -> dict[str, int]:
        """Trials per point at look 1 of a recorded design, per experiment."""
        return {str(k): int(v) for k, v in dict(record.parameters["first_trials"]).items()}

    def judge(self, spec: ClaimSpec, rows: Any, look: int) -> str:
        return judge_at(spec, rows, self.design, look)

    def describe(self) -> str:
        critical = ", ".join(f"{c:.3f}" for c in self.design.critical)
        return (
            f"{self.method}, {self.level:.0%} level (docs/science.md §7.6): critical values "
            f"{critical} (look 1 is the run judged)"
        )

    def record(self, claim_id: str, first: Mapping[str, int], looks: int) -> ClaimDesign:
        from attnsim import __version__

        lead = first[min(first)]
        return ClaimDesign(
            claim_id=claim_id,
            method=self.method,
            level=self.level,
            parameters={
                "factors": list(self.factors),
                "critical": [round(c, 6) for c in self.design.critical],
                "first_alpha": FIRST_ALPHA,
                "total_alpha": TOTAL_ALPHA,
                "first_trials": dict(sorted(first.items())),
            },
            looks=tuple(Look(k + 1, self.factors[k] * lead) for k in range(looks)),
            planned_looks=len(self.factors),
            experiments=tuple(sorted(first)),
            declared=f"attnsim {__version__}",
        )


def decisive(critical: float) -> bool:
    """A critical value an interval can meet: finite, and its one-sided level below 1 in floating
    point (a t quantile of level 1 is infinite)."""
    from statistics import NormalDist

    return math.isfinite(critical) and NormalDist().cdf(critical) < 1


# --- targets ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    claim_id: str
    kind: str
    spec: ClaimSpec
    experiments: tuple[str, ...]


def declared_specs() -> dict[str, tuple[str, ClaimSpec]]:
    """claim id -> (kind, its declaration), for the claims kinds declare as ClaimSpecs."""
    return {
        entry.claim_id: (name, entry)
        for name, kind in all_kinds().items()
        for entry in kind.submodule("claims").CLAIMS
        if isinstance(entry, ClaimSpec)
    }


def choose_targets(
    names: list[str], settings, root: Path, designs: Mapping[str, ClaimDesign] | None = None
) -> tuple[list[Target], list[str]]:
    """The claims to decide, and one note per claim that trials cannot decide (or whose design is
    spent, or decided it: a sequential design stops at its decision)."""
    experiments = settings.kinds()
    summaries = io.load_summaries(root, experiments)
    results = {r.claim_id: r for r in io.evaluate(summaries, experiments)}
    specs = declared_specs()
    designs = {
        claim_id: design
        for claim_id, design in (designs or {}).items()
        if claim_id in specs and design.method == METHOD and design.looks
    }
    for claim_id, design in designs.items():
        kind, spec = specs[claim_id]
        rows = canonical_rows(
            [f for n, f in summaries.items() if experiments[n] == kind],
            all_kinds()[kind].param_names,
        )
        verdict = GroupSequential.from_record(design).judge(spec, rows, len(design.looks) - 1)
        if verdict != "inconclusive" and not design.spent:  # stopped at its decision
            designs[claim_id] = replace(design, planned_looks=len(design.looks))
            if claim_id in names:
                names = [n for n in names if n != claim_id]
                print(f"decide: {claim_id}: {verdict} at look {len(design.looks)} of its design")
    unknown = [n for n in names if n not in results]
    if unknown:
        raise ConfigError(f"decide: no claim {unknown[0]!r} (attnsim claims lists them)")
    chosen = names or [
        r.claim_id
        for r in results.values()
        if (r.verdict == "inconclusive" and r.needed_unit == TRIALS and r.needed > 0)
        or (r.claim_id in designs and not designs[r.claim_id].spent)
    ]
    targets, notes = [], []
    for claim_id in chosen:
        why = _not_decidable(results[claim_id], claim_id in specs, settings, designs.get(claim_id))
        if why:
            notes.append(f"{claim_id}: {why}")
            continue
        rested = tuple(
            sorted(n.strip() for n in results[claim_id].experiments.split(",") if n.strip())
        )
        targets.append(Target(claim_id, specs[claim_id][0], specs[claim_id][1], rested))
    return targets, notes


def _not_decidable(result, declared: bool, settings, design: ClaimDesign | None) -> str:
    if design is not None and design.spent:
        return (
            f"its {design.method} design used its {design.planned_looks} looks (the error it "
            "controls is spent); a new look would need a new error budget"
        )
    if design is None and result.verdict != "inconclusive":
        return f"already {result.verdict}"
    if not declared:
        return "not yet a declared claim (ClaimSpec) of its kind: decide cannot judge its looks"
    if design is None and result.needed_unit != TRIALS:
        return f"more trials do not narrow it ({result.to_decide or 'no interval'})"
    rested = [n.strip() for n in result.experiments.split(",") if n.strip()]
    adaptive = [n for n in rested if settings.experiments[n].trial_settings.adaptive]
    if adaptive:
        return f"rests on the adaptive experiment {adaptive[0]}: raise its max_trials instead"
    return ""


def topped_up(raw: dict, trials: Mapping[str, int], look: int = 2) -> dict:
    """The config with each experiment of `trials` (name -> trials per point) raised to that many,
    in rounds of its own `trials` (how the state record applies a top-up)."""
    topups = {name: TopUp(int(count), look) for name, count in trials.items()}
    return workspace_state.apply_topups(raw, topups)


def cost_hours(raw: dict, root: Path) -> tuple[float, str]:
    """The plan's estimated CPU-hours of what the store lacks for `raw`, and the bill's text."""
    settings = load(raw)
    bill = billing.bill(settings, plan_all(settings, root), root)
    return bill.cpu_hours, billing.render(bill, settings)


def largest_factor(raw: dict, base: dict[str, int], root: Path, budget: float) -> int:
    """The largest multiple of the first look's trials (<= MAX_FACTOR) the budget buys; 1: none."""
    best = 1
    for factor in FACTORS:
        hours, _ = cost_hours(topped_up(raw, {n: factor * t for n, t in base.items()}), root)
        if hours > budget:
            break
        best = factor
    return best


def look_factors(factor: int, rounds: int = ROUNDS) -> list[int]:
    """Multiples of the first look's trials at each top-up: geometric to `factor`, distinct."""
    found = sorted({max(2, round(factor ** (k / rounds))) for k in range(1, rounds + 1)})
    return [f for f in found if f <= factor][:rounds] if factor >= 2 else []


# --- what decide measures --------------------------------------------------------------------


def cpu_seconds() -> float:
    """CPU-seconds of this process and of every process it started and waited for (their own
    children included: Snakemake's jobs on this machine)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def benchmark_seconds(folder: Path, plans: Mapping[str, Any]) -> float:
    """The CPU-seconds the simulate jobs of `plans`' pending chunks measured (their Snakemake
    benchmark files): what a look's jobs cost where they ran, on this machine or a cluster's (a
    chunk already stored, or a job that left no benchmark, counts nothing)."""
    return sum(
        benchmark_cpu(folder / "benchmarks" / "simulate" / name / f"{plan.kind}-{chunk}.tsv") or 0.0
        for name, plan in plans.items()
        for chunk in plan.pending
    )


@dataclass
class Meter:
    """The budget as a ceiling: CPU measured so far, and the next look's prediction from the last
    look's calibration (measured simulate CPU / the cost model's estimate) and overhead (the rest
    of the look's measured CPU: Snakemake, collect, this process)."""

    budget_seconds: float
    remote: bool  # jobs run elsewhere (a cluster): their benchmarks count, rusage cannot
    started: float = field(default_factory=cpu_seconds)
    remote_seconds: float = 0.0
    calibration: float = 1.0
    overhead: float = 0.0

    @property
    def spent(self) -> float:
        return cpu_seconds() - self.started + self.remote_seconds

    def predict(self, estimate_seconds: float) -> float:
        return estimate_seconds * self.calibration + self.overhead

    def learn(self, estimate_seconds: float, look_seconds: float, simulate_seconds: float) -> None:
        """After a look: `look_seconds` measured here, `simulate_seconds` by the jobs'
        benchmarks."""
        if self.remote:
            self.remote_seconds += simulate_seconds
            self.overhead = look_seconds
        else:
            self.overhead = max(0.0, look_seconds - simulate_seconds)
        if estimate_seconds > 0 and simulate_seconds > 0:
            self.calibration = simulate_seconds / estimate_seconds


def final_reserve(folder: Path, experiments: Sequence[str]) -> float:
    """CPU-seconds the run after the last look needs besides its start (the overhead): the
    topped-up experiments' figures and the claims, as their last jobs' benchmarks measured them
    (`attnsim.records.cost`'s typical times where a job left none)."""
    post, bench = cost.POSTPROCESS_SECONDS, folder / "benchmarks"
    figures = sum(
        benchmark_cpu(bench / "figures" / f"{n}.tsv") or post["figures"] for n in experiments
    )
    return figures + (benchmark_cpu(bench / "claims.tsv") or post["claims"])


# --- the loop --------------------------------------------------------------------------------


@dataclass
class Decide:
    """A decide in one workspace: its config file, effective data, the targets still open."""

    config: Path  # as given, relative to workdir unless absolute
    workdir: Path
    workspace: Path  # relative to workdir unless absolute
    extra: list[str]
    data: dict  # the effective config at the last complete look
    state: WorkspaceState
    targets: list[Target] = field(default_factory=list)
    token: str = ""

    @property
    def folder(self) -> Path:
        return self.workdir / self.workspace

    @property
    def root(self) -> Path:
        return self.folder / "store"

    def experiments(self) -> list[str]:
        return sorted({n for t in self.targets for n in t.experiments})

    def run(self, targets: Sequence[str], log: Path) -> None:
        """One `attnsim run` of the effective config in this workspace (the look's top-ups come
        from the record, under this decide's token); its summary to `log`, its progress to
        stderr."""
        command = [sys.executable, "-m", "attnsim.cli.main", "run", "--configfile"]
        command += [str(self.config), "--workspace", str(self.workspace), *self.extra, *targets]
        env = {**os.environ, workspace_state.TOKEN_ENV: self.token}
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as out:
            done = subprocess.run(command, cwd=self.workdir, stdout=out, env=env)
        if done.returncode != 0:
            raise ConfigError(f"decide: the run failed: see {log}")

    def judge(self, design: LookDesign, look: int, trials: Mapping[str, int]) -> dict[str, str]:
        """Each open target's verdict at this look, on the store's summaries now."""
        settings = load(topped_up(self.data, trials, look + 1))
        experiments = settings.kinds()
        summaries = io.load_summaries(self.root, experiments)
        for name, count in trials.items():
            if name in summaries and summaries[name]["n_trials"].min() < count:
                raise ConfigError(
                    f"decide: after look {look + 1} experiment {name} has "
                    f"{summaries[name]['n_trials'].min()} trials per point, not {count}: the run "
                    f"did not top it up (see {self.workspace / 'decide'}/look-*.log)"
                )
        out = {}
        for target in self.targets:
            frames = [
                summaries[n] for n, k in experiments.items() if k == target.kind and n in summaries
            ]
            rows = canonical_rows(frames, all_kinds()[target.kind].param_names)
            out[target.claim_id] = design.judge(target.spec, rows, look)
        return out


def decide(
    names: list[str],
    budget: float,
    config: Path,
    workdir: Path,
    extra: list[str],
    dry_run: bool = False,
    workspace: Path | None = None,
) -> int:
    """The whole loop; prints the design, the bill, each look's verdicts, what it did and where
    to see it. Exit 0 when every target was decided, 1 when the budget ran out first."""
    if not (math.isfinite(budget) and budget > 0):
        raise ConfigError(f"decide: --budget {budget:g}: give a positive number of CPU-hours")
    meter = Meter(budget * 3600, remote=_remote(extra, workdir))
    relative = workspaces.locate([config], workspace, workdir)
    path = config if config.is_absolute() else workdir / config
    state = workspace_state.current(workdir / relative)
    if state.operation is not None:
        raise ConfigError(
            f"decide: `attnsim {state.operation.command}` (pid {state.operation.pid}) is working "
            f"in {relative}; wait for it to finish or stop it"
        )
    data = workspace_state.effective_data(workspace_state.load_data(path), state)
    run = Decide(config, workdir, relative, extra, data, state)
    settings = load(data)
    run.targets, notes = choose_targets(names, settings, run.root, state.designs)
    for note in notes:
        print(f"decide: {note}")
    if not run.targets:
        print("decide: nothing to decide by more trials")
        return 0
    design, first, done = _design(run, settings, budget)
    print(_design_text(run, first, design, done, budget))
    last = {n: design.factors[-1] * t for n, t in first.items()}
    print(cost_hours(topped_up(data, last), run.root)[1])
    if dry_run:
        return 0
    meter.overhead = meter.spent + cost.POSTPROCESS_SECONDS["collect"] * len(first)
    return _loop(run, first, design, done, meter)


def _design(run: Decide, settings, budget: float) -> tuple[GroupSequential, dict[str, int], int]:
    """The design the targets are judged under, the trials per point of its first look per
    experiment, and the looks it has done: a design an earlier decide left unfinished is
    continued (for the targets that share it; the others wait for a later call), else a new one
    within the budget."""
    recorded = [
        run.state.designs[t.claim_id] for t in run.targets if t.claim_id in run.state.designs
    ]
    if recorded:
        kept = recorded[0]
        same = [
            t
            for t in run.targets
            if t.claim_id in run.state.designs
            and run.state.designs[t.claim_id].parameters == kept.parameters
            and run.state.designs[t.claim_id].looks == kept.looks
        ]
        for target in run.targets:
            if target not in same:
                print(
                    f"decide: {target.claim_id}: waits for the design of "
                    f"{same[0].claim_id} to finish (attnsim decide {target.claim_id} after)"
                )
        run.targets = same
        design = GroupSequential.from_record(kept)
        return design, GroupSequential.first_trials(kept), len(kept.looks)
    first = {}
    for name in run.experiments():
        first[name] = settings.experiments[name].trial_settings.per_point()[1]
    factor = largest_factor(run.data, first, run.root, budget)
    factors = look_factors(factor)
    if not factors:
        doubled = cost_hours(topped_up(run.data, {n: 2 * t for n, t in first.items()}), run.root)
        raise ConfigError(
            f"decide: --budget {budget:g} CPU-hours buys less than one look (doubling the trials "
            f"of {', '.join(first)} costs about {doubled[0]:.3g} CPU-hours by the cost model)"
        )
    return GroupSequential.plan(factors), first, 1


def _design_text(run: Decide, first, design: LookDesign, done: int, budget: float) -> str:
    counts = ", ".join(
        f"{n}: " + " -> ".join(f"{f * t:,}" for f in design.factors) for n, t in first.items()
    )
    claims = ", ".join(t.claim_id for t in run.targets)
    resumed = f"; looks 1-{done} done, continued" if done > 1 else ""
    return (
        f"decide: {claims}\n"
        f"  looks (trials per point): {counts}{resumed}; within --budget {budget:g} CPU-hours "
        "(measured, a ceiling)\n"
        f"  design: {design.describe()}"
    )


def _loop(
    run: Decide, first: dict[str, int], design: GroupSequential, done: int, meter: Meter
) -> int:
    run.token = f"decide-{uuid.uuid4().hex}"  # text, never read as a number by Snakemake
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    operation = Operation("decide", run.token, os.getpid(), socket.gethostname(), started)
    workspace_state.update(run.folder, lambda s: replace(s, operation=operation))
    decided: dict[str, str] = {}
    looks_run: list[int] = []
    try:
        for look in range(done, len(design.factors)):
            counts = {n: design.factors[look] * first[n] for n in run.experiments()}
            if not _affordable(run, meter, look, counts):
                break
            verdicts = _one_look(run, design, meter, look, counts, first)
            looks_run.append(look + 1)
            decided |= {c: v for c, v in verdicts.items() if v != "inconclusive"}
            run.targets = [t for t in run.targets if t.claim_id not in decided]
            if not run.targets:
                break
    finally:
        workspace_state.update(
            run.folder,
            lambda s: (
                replace(s, operation=None)
                if s.operation is not None and s.operation.token == run.token
                else s
            ),
        )
    if looks_run:  # the figures and claims of the topped-up workspace, drawn once
        run.run([], run.folder / "decide" / "final.log")
    return _report(run, decided, looks_run, meter)


def _affordable(run: Decide, meter: Meter, look: int, counts: Mapping[str, int]) -> bool:
    """Whether this look (and the final run after it) fits in what is left of the budget."""
    estimate = cost_hours(topped_up(run.data, counts, look + 1), run.root)[0] * 3600
    need = meter.predict(estimate) + meter.overhead + final_reserve(run.folder, list(counts))
    if meter.spent + need <= meter.budget_seconds:
        return True
    print(
        f"decide: look {look + 1} not run: it and the final run would cost about "
        f"{need / 60:.2f} CPU-minutes (the cost model's {estimate / 60:.2f} x calibration "
        f"{meter.calibration:.2g}, plus measured overhead), with {meter.spent / 60:.2f} of the "
        f"budget's {meter.budget_seconds / 60:.2f} spent"
    )
    return False


def _one_look(
    run: Decide,
    design: GroupSequential,
    meter: Meter,
    look: int,
    counts: dict[str, int],
    first: dict[str, int],
) -> dict[str, str]:
    """Run a look (its top-ups pending in the record), judge the open targets, record it."""
    pending = {n: TopUp(c, look + 1) for n, c in counts.items()}
    workspace_state.update(
        run.folder,
        lambda s: (
            replace(s, operation=replace(s.operation, pending_topups=pending))
            if s.operation is not None
            else s
        ),
    )
    data = topped_up(run.data, counts, look + 1)
    settings = load(data)
    plans = plan_all(settings, run.root)
    estimate = billing.bill(settings, plans, run.root).cpu_hours * 3600
    summaries = [
        str(store.summary_path(run.workspace / "store", settings.experiments[n].kind, n))
        for n in sorted(counts)
    ]
    before = cpu_seconds()
    # only the topped-up summaries (no figures, no claims), forced: without Snakemake's records
    # (a copied results/) a summary that exists would be taken as done, its new chunks unmade
    run.run([*summaries, "--forcerun", *summaries], run.folder / "decide" / f"look-{look + 1}.log")
    meter.learn(estimate, cpu_seconds() - before, benchmark_seconds(run.folder, plans))
    verdicts = run.judge(design, look, counts)
    factor = design.factors[look]
    print(
        f"decide: look {look + 1} ({factor}x the trials): "
        + ", ".join(f"{c} {v}" for c, v in verdicts.items())
    )
    targets = list(run.targets)

    def complete(s: WorkspaceState) -> WorkspaceState:
        designs = dict(s.designs)
        for target in targets:
            mine = {n: first[n] for n in target.experiments if n in first}
            designs[target.claim_id] = design.record(target.claim_id, mine, look + 1)
        operation = s.operation and replace(s.operation, pending_topups={})
        return replace(s, topups={**s.topups, **pending}, designs=designs, operation=operation)

    run.state = workspace_state.update(run.folder, complete)
    run.data = data
    return verdicts


def _report(run: Decide, decided: dict[str, str], looks: list[int], meter: Meter) -> int:
    for claim_id, verdict in decided.items():
        print(f"decide: {claim_id}: {verdict}")
    for target in run.targets:
        print(f"decide: {target.claim_id}: still inconclusive (the budget would be passed)")
    ran = (
        f"looks {looks[0]}-{looks[-1]}"
        if len(looks) > 1
        else f"look {looks[0]}"
        if looks
        else "no look"
    )
    print(
        f"decide: ran {ran}; {meter.spent / 60:.2f} CPU-minutes spent of "
        f"{meter.budget_seconds / 60:.2f} (measured)"
    )
    if looks:
        topups = workspace_state.describe_topups(run.state.topups)
        options = _options(run)
        print(
            f"decide: {run.workspace} now holds {topups}, recorded in "
            f"{run.workspace / 'state.yaml'}: every command sees it (attnsim show{options}); "
            f"the claims and figures are redrawn: attnsim claims{options}"
        )
    return 0 if not run.targets else 1


def _options(run: Decide) -> str:
    """The options that name this workspace, as the user would type them."""
    out = ""
    if run.config != workspaces.DEFAULT_CONFIG:
        out += f" --configfile {run.config}"
    if run.workspace != workspaces.locate([run.config], None, run.workdir):
        out += f" --workspace {run.workspace}"
    return out


def _remote(extra: Sequence[str], workdir: Path) -> bool:
    """Whether the runs' jobs execute elsewhere (a cluster executor, directly or by a profile):
    then their CPU is their benchmarks', which this process's usage cannot see."""
    from attnsim.plan import profiles

    return profiles.remote_executor(list(extra), workdir)
