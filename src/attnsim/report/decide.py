"""`attnsim decide [CLAIM ...] --budget CPU-HOURS`: top up the trials of the experiments that
inconclusive claims rest on, look by look, until each claim is decided or the budget would be
passed (docs/science.md §7.8), leaving the workspace's own config usable at every moment.

1. Targets: the named claims, or every inconclusive declared claim whose interval narrows with
   trials (`needed_unit` "trials per point"), each judged as the table judges it (under its
   recorded design); the experiments they rest on. The config is the workspace's effective one
   (`attnsim.config.state`: the file <- recorded overrides <- top-ups). Refused with the reason: a
   claim declared heavy-tailed (`confidence_sequence.refusal`), a check the data available cannot
   decide (its interval narrows with heads, not trials), one resting on an adaptive experiment.
2. The design (`Sequences`, docs/science.md §7.8): looks at multiples of each experiment's
   trials per point now, up to the most the budget buys by the cost model (`attnsim plan`'s),
   geometric in between; each claim judged with its own anytime-valid confidence sequence. A
   claim the workspace's state record holds a sequence for continues it (the same boundary and
   error budget, however many decide calls); any other gets one planned now. The sequence is
   valid at every look, so it is never spent and a later decide may look again.
3. Each look is one `attnsim run` of the effective config with the look's top-ups pending in the
   record's `operation` (its run token passed to the workflow): the store's trials are reused bit
   for bit, only the new rounds (`max_trials` in rounds of `trials`) are computed, and only the
   topped-up experiments' summaries are made (no figures). A look runs only if the CPU measured so
   far (this process and every process it starts; the simulate jobs' benchmarks on a cluster)
   plus its prediction (the cost model x the last look's calibration + the last look's measured
   overhead, and the final run's) stays within the budget.
4. After each look the open targets are judged with their sequences; the look's top-ups are
   then recorded (`topups`) with the look in the design of every declared claim whose rows it
   changed, targeted or not (the table judges each of them under it: `report.designs`), the
   operation cleared last. A decide killed at any
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
from typing import Any

from attnsim.claims import confidence_sequence as cs
from attnsim.claims.confidence_sequence import ConfidenceSequence
from attnsim.claims.engine import ClaimSpec, canonical_rows, decide_with
from attnsim.claims.sequential import ROUNDS
from attnsim.config import state as workspace_state
from attnsim.config import workspace as workspaces
from attnsim.config.load import load
from attnsim.errors import ConfigError
from attnsim.kinds import all_kinds
from attnsim.plan import bill as billing
from attnsim.plan.sweep import plan_all
from attnsim.records import cost
from attnsim.records.state import ClaimDesign, Operation, TopUp, WorkspaceState
from attnsim.report import claims as io
from attnsim.report.runs import benchmark_cpu
from attnsim.store import parquet as store

MAX_FACTOR = 64  # at most 64x the trials per point at the first look: beyond, looks are too far
FACTORS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)  # the largest look's candidates, priced in turn
TRIALS = "trials per point"


# --- the design: each claim's confidence sequence, continued across calls -----------------------


@dataclass(frozen=True)
class Sequences:
    """The design of a decide call (docs/science.md §7.8): looks at `factors` times each
    experiment's trials per point when the call started (`base`), each claim judged with its own
    anytime-valid confidence sequence (`claims.confidence_sequence`) at its lead experiment's
    trials. A claim the state record holds a sequence for continues it (the same ρ and error
    budget: `continue_design`); any other is planned now, tuned to the last look this call can
    afford. Every claim whose rows a look changes gets the look recorded, targeted or not."""

    factors: tuple[int, ...]  # the top-ups of this call, as multiples of `base` (all > 1)
    base: Mapping[str, int]  # experiment -> trials per point when the call started
    recorded: Mapping[str, ClaimDesign]  # the state record's designs when the call started
    declared: str = ""  # when and by which code a new design is declared

    def counts(self, look: int) -> dict[str, int]:
        """Trials per point of each experiment at this call's `look` (0-based)."""
        return {n: self.factors[look] * t for n, t in self.base.items()}

    def sequence(self, claim_id: str, lead: str) -> ConfidenceSequence:
        """The claim's sequence: its recorded one, else planned at its lead experiment's
        trials now, tuned to this call's last look."""
        design = self.recorded.get(claim_id)
        parameters = design.parameters if design and design.method == cs.METHOD else None
        first = self.base[lead]
        return cs.continue_design(parameters, first, self.factors[-1] * first)

    def looks_before(self, claim_id: str, lead: str) -> list[int]:
        """The claim's looks before this call (trials per point of its lead experiment)."""
        design = self.recorded.get(claim_id)
        if design and design.method == cs.METHOD and design.looks:
            return [look.trials for look in design.looks]
        return [self.base[lead]]

    def judge(self, spec: ClaimSpec, rows: Any, lead: str, trials: int) -> str:
        sequence = self.sequence(spec.claim_id, lead)
        return decide_with(spec, rows, lambda low, high, n: sequence.widen(low, high, trials, n))

    def record(self, claim_id: str, experiments: Sequence[str], look: int) -> ClaimDesign:
        """The claim's design after this call's `look` (0-based) as the state record keeps it:
        its looks before the call and this call's so far, its lead experiment's trials."""
        lead = lead_experiment(experiments, self.base)
        looks = self.looks_before(claim_id, lead)
        looks += [self.factors[k] * self.base[lead] for k in range(look + 1)]
        fields = cs.record(self.sequence(claim_id, lead), looks, experiments)
        previous = self.recorded.get(claim_id)
        kept = previous is not None and previous.method == cs.METHOD
        planned = len(self.looks_before(claim_id, lead)) + len(self.factors)
        declared = previous.declared if kept and previous is not None else self.declared
        fields |= {"planned_looks": planned, "declared": declared}
        return ClaimDesign.from_fields(claim_id, fields)

    def describe(self, claims: Sequence[str], lead: Mapping[str, str]) -> str:
        """One line per distinct sequence: its level, ρ and critical values at this call's
        looks, and whether it is continued."""
        lines = []
        for claim_id in claims:
            sequence = self.sequence(claim_id, lead[claim_id])
            base = self.base[lead[claim_id]]
            critical = ", ".join(f"{sequence.critical(f * base):.3f}" for f in self.factors)
            continued = (
                "continued from the state record (no new error budget)"
                if claim_id in self.recorded and self.recorded[claim_id].method == cs.METHOD
                else f"new, tuned to {sequence.planned_trials:,} trials per point"
            )
            lines.append(
                f"{claim_id}: {cs.METHOD}, level {sequence.level:.2f} over all looks; "
                f"critical values {critical} at this call's looks; {continued}"
            )
        return "\n    ".join(lines)


def lead_experiment(experiments: Sequence[str], base: Mapping[str, int]) -> str:
    """The experiment whose trials per point measure a claim's information: the first (by
    name) of its experiments this call tops up (all of them grow by the same factor)."""
    topped = sorted(n for n in experiments if n in base)
    if not topped:
        raise ValueError(f"no experiment of {list(experiments)} is topped up")
    return topped[0]


def declared_now() -> str:
    """When and by which code a design is declared: the date, attnsim's version and commit."""
    from attnsim import __version__
    from attnsim.report.provenance import git_commit

    commit = git_commit()[:12]
    date = time.strftime("%Y-%m-%d", time.gmtime())
    return f"{date}, attnsim {__version__}" + (f" at {commit}" if commit else "")


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


def rests_on(result) -> tuple[str, ...]:
    return tuple(sorted(n.strip() for n in result.experiments.split(",") if n.strip()))


def choose_targets(
    names: list[str], settings, root: Path, designs: Mapping[str, ClaimDesign] | None = None
) -> tuple[list[Target], list[str], dict[str, tuple[str, ...]]]:
    """The claims to decide, one note per claim that trials cannot decide (or that decide
    refuses), and every declared claim's experiments (for recording the looks of the claims a
    top-up changes). Each claim is judged as the table judges it: under its recorded design."""
    experiments = settings.kinds()
    summaries = io.load_summaries(root, experiments)
    results = {r.claim_id: r for r in io.evaluate(summaries, experiments, designs)}
    specs = declared_specs()
    unknown = [n for n in names if n not in results]
    if unknown:
        raise ConfigError(f"decide: no claim {unknown[0]!r} (attnsim claims lists them)")
    chosen = names or [
        r.claim_id
        for r in results.values()
        if r.verdict == "inconclusive" and r.needed_unit == TRIALS and r.needed > 0
    ]
    targets, notes = [], []
    for claim_id in chosen:
        spec = specs[claim_id][1] if claim_id in specs else None
        why = _not_decidable(results[claim_id], spec, settings, (designs or {}).get(claim_id))
        if why:
            notes.append(f"{claim_id}: {why}")
            continue
        assert spec is not None
        targets.append(Target(claim_id, specs[claim_id][0], spec, rests_on(results[claim_id])))
    resting = {cid: rests_on(results[cid]) for cid in specs if cid in results}
    return targets, notes, resting


def _not_decidable(result, spec: ClaimSpec | None, settings, design: ClaimDesign | None) -> str:
    if design is not None and design.spent:
        return (
            f"its {design.method} design used its {design.planned_looks} looks (the error it "
            "controls is spent); a new look would need a new error budget"
        )
    if result.verdict != "inconclusive":
        return f"already {result.verdict}"
    if spec is None:
        return "not yet a declared claim (ClaimSpec) of its kind: decide cannot judge its looks"
    refused = cs.refusal(spec.claim_id, spec.tails)
    if refused:
        return "refused: " + refused.removeprefix(f"{spec.claim_id}: ")
    if result.needed_unit != TRIALS:
        if spec.role == "check":
            return f"cannot be decided with the data available: {check_reason(result, spec)}"
        return f"more trials do not narrow it ({result.to_decide or 'no interval'})"
    rested = [n.strip() for n in result.experiments.split(",") if n.strip()]
    adaptive = [n for n in rested if settings.experiments[n].trial_settings.adaptive]
    if adaptive:
        return f"rests on the adaptive experiment {adaptive[0]}: raise its max_trials instead"
    return ""


def check_reason(result, spec: ClaimSpec) -> str:
    """Why a claim declared a check cannot be decided: its declared reason (the result's role
    text, else its alternative's or regime's reason), and the sample its interval narrows with."""
    reason = result.role_text or (spec.alternative.reason if spec.alternative else "")
    reason = reason or spec.regime.reason
    unit = f"its interval narrows only with more {result.needed_unit}, not trials"
    return f"{reason} ({unit})" if reason else unit


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
    start: int = 1  # the workspace's last complete look when this call started (1: the run)

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

    def judge(self, design: Sequences, look: int, trials: Mapping[str, int]) -> dict[str, str]:
        """Each open target's verdict at this look, on the store's summaries now, with its
        confidence sequence at its lead experiment's trials."""
        settings = load(topped_up(self.data, trials, self.look_number(look)))
        experiments = settings.kinds()
        summaries = io.load_summaries(self.root, experiments)
        for name, count in trials.items():
            if name in summaries and summaries[name]["n_trials"].min() < count:
                raise ConfigError(
                    f"decide: after look {self.look_number(look)} experiment {name} has "
                    f"{summaries[name]['n_trials'].min()} trials per point, not {count}: the run "
                    f"did not top it up (see {self.workspace / 'decide'}/look-*.log)"
                )
        out = {}
        for target in self.targets:
            frames = [
                summaries[n] for n, k in experiments.items() if k == target.kind and n in summaries
            ]
            rows = canonical_rows(frames, all_kinds()[target.kind].param_names)
            lead = lead_experiment(target.experiments, design.base)
            out[target.claim_id] = design.judge(target.spec, rows, lead, trials[lead])
        return out

    def look_number(self, look: int) -> int:
        """The workspace's look number of this call's `look` (0-based): looks of earlier calls
        count on (look 1 is the first run judged)."""
        return self.start + look + 1


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
    run.start = max((t.look for t in state.topups.values()), default=1)
    settings = load(data)
    run.targets, notes, resting = choose_targets(names, settings, run.root, state.designs)
    for note in notes:
        print(f"decide: {note}")
    if not run.targets:
        print("decide: nothing to decide by more trials")
        return 0
    design = _design(run, settings, budget, resting)
    print(_design_text(run, design, budget))
    print(cost_hours(topped_up(data, design.counts(-1)), run.root)[1])
    if dry_run:
        return 0
    meter.overhead = meter.spent + cost.POSTPROCESS_SECONDS["collect"] * len(design.base)
    return _loop(run, design, resting, meter)


def _design(
    run: Decide, settings, budget: float, resting: Mapping[str, tuple[str, ...]]
) -> Sequences:
    """This call's looks within the budget (multiples of each experiment's trials per point
    now) and the claims' sequences: recorded ones continued, others planned now. A recorded
    look beyond the workspace's trials (its top-ups reset, its designs kept) is one line."""
    base = {}
    for name in run.experiments():
        base[name] = settings.experiments[name].trial_settings.per_point()[1]
    for claim_id, rested in changed_claims(resting, base).items():
        recorded = run.state.designs.get(claim_id)
        if recorded is None or recorded.method != cs.METHOD or not recorded.looks:
            continue
        lead = lead_experiment(rested, base)
        if recorded.looks[-1].trials > base[lead]:
            raise ConfigError(
                f"decide: {run.workspace / 'state.yaml'} records look "
                f"{recorded.looks[-1].look} of {claim_id} at "
                f"{recorded.looks[-1].trials:,} trials per point of {lead}, but the workspace "
                f"has {base[lead]:,}: restore its top-ups (attnsim show) before deciding again"
            )
    factor = largest_factor(run.data, base, run.root, budget)
    factors = look_factors(factor)
    if not factors:
        doubled = cost_hours(topped_up(run.data, {n: 2 * t for n, t in base.items()}), run.root)
        raise ConfigError(
            f"decide: --budget {budget:g} CPU-hours buys less than one look (doubling the trials "
            f"of {', '.join(base)} costs about {doubled[0]:.3g} CPU-hours by the cost model)"
        )
    return Sequences(tuple(factors), base, dict(run.state.designs), declared_now())


def _design_text(run: Decide, design: Sequences, budget: float) -> str:
    counts = ", ".join(
        f"{n}: " + " -> ".join(f"{f * t:,}" for f in (1, *design.factors))
        for n, t in design.base.items()
    )
    claims = [t.claim_id for t in run.targets]
    lead = {t.claim_id: lead_experiment(t.experiments, design.base) for t in run.targets}
    return (
        f"decide: {', '.join(claims)}\n"
        f"  looks (trials per point): {counts}; within --budget {budget:g} CPU-hours "
        "(measured, a ceiling)\n"
        f"  design (docs/science.md §7.8): {design.describe(claims, lead)}"
    )


def _loop(
    run: Decide, design: Sequences, resting: Mapping[str, tuple[str, ...]], meter: Meter
) -> int:
    run.token = f"decide-{uuid.uuid4().hex}"  # text, never read as a number by Snakemake
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    operation = Operation("decide", run.token, os.getpid(), socket.gethostname(), started)
    workspace_state.update(run.folder, lambda s: replace(s, operation=operation))
    decided: dict[str, str] = {}
    looks_run: list[int] = []
    try:
        for look in range(len(design.factors)):
            counts = design.counts(look)
            if not _affordable(run, meter, look, counts):
                break
            number = run.look_number(look)
            verdicts = _one_look(run, design, resting, meter, look, counts)
            looks_run.append(number)
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
    number = run.look_number(look)
    estimate = cost_hours(topped_up(run.data, counts, number), run.root)[0] * 3600
    need = meter.predict(estimate) + meter.overhead + final_reserve(run.folder, list(counts))
    if meter.spent + need <= meter.budget_seconds:
        return True
    print(
        f"decide: look {number} not run: it and the final run would cost about "
        f"{need / 60:.2f} CPU-minutes (the cost model's {estimate / 60:.2f} x calibration "
        f"{meter.calibration:.2g}, plus measured overhead), with {meter.spent / 60:.2f} of the "
        f"budget's {meter.budget_seconds / 60:.2f} spent"
    )
    return False


def changed_claims(
    resting: Mapping[str, tuple[str, ...]], topped: Mapping[str, int]
) -> dict[str, tuple[str, ...]]:
    """The declared claims whose rows a top-up of the experiments `topped` changes (they rest on
    one of them), targeted or not, with the experiments they rest on."""
    return {cid: rested for cid, rested in resting.items() if set(rested) & set(topped)}


def _one_look(
    run: Decide,
    design: Sequences,
    resting: Mapping[str, tuple[str, ...]],
    meter: Meter,
    look: int,
    counts: dict[str, int],
) -> dict[str, str]:
    """Run a look (its top-ups pending in the record), judge the open targets, record the look
    in the design of every claim whose rows it changed."""
    number = run.look_number(look)
    pending = {n: TopUp(c, number) for n, c in counts.items()}
    workspace_state.update(
        run.folder,
        lambda s: (
            replace(s, operation=replace(s.operation, pending_topups=pending))
            if s.operation is not None
            else s
        ),
    )
    data = topped_up(run.data, counts, number)
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
    run.run([*summaries, "--forcerun", *summaries], run.folder / "decide" / f"look-{number}.log")
    meter.learn(estimate, cpu_seconds() - before, benchmark_seconds(run.folder, plans))
    verdicts = run.judge(design, look, counts)
    factor = design.factors[look]
    print(
        f"decide: look {number} ({factor}x the trials): "
        + ", ".join(f"{c} {v}" for c, v in verdicts.items())
    )
    changed = changed_claims(resting, counts)

    def complete(s: WorkspaceState) -> WorkspaceState:
        designs = dict(s.designs)
        for claim_id, rested in changed.items():
            designs[claim_id] = design.record(claim_id, rested, look)
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
