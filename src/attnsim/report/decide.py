"""`attnsim decide [CLAIM ...] --budget CPU-HOURS`: top up the trials of the experiments that
inconclusive claims rest on, in rounds fixed before the first one, until each claim is decided
or the budget is spent (docs/science.md §7.6).

1. Targets: the named claims, or every inconclusive declared claim whose interval narrows with
   trials (`needed_unit` "trials per point"); the experiments they rest on.
2. The design: the most trials per point the budget buys (the largest multiple of the run's
   trials up to `MAX_FACTOR` whose plan costs at most the budget, by the same cost model as
   `attnsim plan`), looks at geometric multiples in between (`sequential.Design`). The bill of
   the largest look is printed before anything runs.
3. Each round is a Snakemake run of the config with those experiments made adaptive (rounds of
   their `trials`, `max_trials` the look's count, a target SE nothing reaches): the store's
   trials are reused bit for bit, only the extra rounds are computed, and the rows are those of
   a fresh run of the same config. Under a cluster profile it runs the same way (pass the
   profile after `--`).
4. After each round every remaining target is judged with the design's widened intervals
   (`sequential.judge_at`); a decided claim leaves the loop, its experiments keep their trials.

The round configs are written to <workspace>/decide/look-<k>.yaml (a fresh run of the last one
reproduces the store), each run's summary to look-<k>.log. Every round runs in the original run's
workspace (`--workspace` given explicitly: a look config's own name would give it another).
"""

from __future__ import annotations

import copy
import math
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from attnsim import files
from attnsim.claims.engine import ClaimSpec, canonical_rows
from attnsim.claims.sequential import ROUNDS, Design, judge_at
from attnsim.config import workspace as workspaces
from attnsim.config import yamlfile
from attnsim.config.load import load
from attnsim.errors import ConfigError
from attnsim.kinds import all_kinds
from attnsim.plan import bill as billing
from attnsim.plan.sweep import plan_all
from attnsim.report import claims as io
from attnsim.store import parquet as store

MAX_FACTOR = 64  # at most 64x the run's trials per point: beyond, rounds are too far apart
FACTORS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)  # the largest look's candidates, priced in turn
NEVER_REACHED = 1e-300  # the target SE of the topped-up experiments: rounds until max_trials
TRIALS = "trials per point"


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


def choose_targets(names: list[str], raw: dict, root: Path) -> tuple[list[Target], list[str]]:
    """The claims to decide, and one note per named claim that trials cannot decide."""
    settings = load(raw)
    experiments = {n: e.kind for n, e in settings.experiments.items()}
    results = {
        r.claim_id: r for r in io.evaluate(io.load_summaries(root, experiments), experiments)
    }
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
        result = results[claim_id]
        why = _not_decidable(result, claim_id in specs, settings)
        if why:
            notes.append(f"{claim_id}: {why}")
            continue
        rested = tuple(sorted(n.strip() for n in result.experiments.split(",") if n.strip()))
        targets.append(Target(claim_id, specs[claim_id][0], specs[claim_id][1], rested))
    return targets, notes


def _not_decidable(result, declared: bool, settings) -> str:
    if result.verdict != "inconclusive":
        return f"already {result.verdict}"
    if not declared:
        return "not yet a declared claim (ClaimSpec) of its kind: decide cannot judge its looks"
    if result.needed_unit != TRIALS:
        return f"more trials do not narrow it ({result.to_decide or 'no interval'})"
    rested = [n.strip() for n in result.experiments.split(",") if n.strip()]
    adaptive = [n for n in rested if settings.experiments[n].trial_settings.adaptive]
    if adaptive:
        return f"rests on the adaptive experiment {adaptive[0]}: raise its max_trials instead"
    return ""


def topped_up(raw: dict, trials: dict[str, int]) -> dict:
    """The config with each experiment of `trials` (name -> trials per point) made adaptive:
    rounds of its own `trials` until exactly that many (a target SE nothing reaches)."""
    out = copy.deepcopy(raw)
    for name, count in trials.items():
        spec = out["experiments"][name]
        spec["target_se"], spec["max_trials"] = NEVER_REACHED, int(count)
    return out


def cost_hours(raw: dict, root: Path) -> tuple[float, str]:
    """The plan's estimated CPU-hours of what the store lacks for `raw`, and the bill's text."""
    settings = load(raw)
    bill = billing.bill(settings, plan_all(settings, root), root)
    return bill.cpu_hours, billing.render(bill, settings)


def largest_factor(raw: dict, base: dict[str, int], root: Path, budget: float) -> int:
    """The largest multiple of the run's trials (<= MAX_FACTOR) the budget buys; 1: none."""
    best = 1
    for factor in FACTORS:
        hours, _ = cost_hours(topped_up(raw, {n: factor * t for n, t in base.items()}), root)
        if hours > budget:
            break
        best = factor
    return best


def look_factors(factor: int, rounds: int = ROUNDS) -> list[int]:
    """Multiples of the run's trials at each top-up: geometric to `factor`, distinct integers."""
    found = sorted({max(2, round(factor ** (k / rounds))) for k in range(1, rounds + 1)})
    return [f for f in found if f <= factor][:rounds] if factor >= 2 else []


@dataclass
class Decide:
    """The state of a decide: the original config, its workspace (relative to `workdir` unless
    absolute), the targets still open."""

    raw: dict
    workdir: Path
    extra: list[str]
    targets: list[Target]
    workspace: Path = workspaces.ROOT

    @property
    def root(self) -> Path:
        return self.workdir / self.workspace / "store"

    def base_trials(self) -> dict[str, int]:
        names = sorted({n for t in self.targets for n in t.experiments})
        return {n: int(self.raw["experiments"][n]["trials"]) for n in names}

    def run_round(self, look: int, trials: dict[str, int]) -> Path:
        """One Snakemake run at this look's trials; its config file."""
        path = self.workdir / self.workspace / "decide" / f"look-{look}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        files.write_text(path, yaml.safe_dump(topped_up(self.raw, trials), sort_keys=False))
        # the original run's workspace, given explicitly: the look config's own name would give
        # the run a workspace of its own (results/look-<k>/), empty of the store's trials
        command = [sys.executable, "-m", "attnsim.cli.main", "run", "--configfile", str(path)]
        command += ["--workspace", str(self.workspace)]
        # the topped-up summaries are rebuilt even where Snakemake keeps no record of the last
        # run (a copied results/), which would otherwise see them as up to date
        settings = load(topped_up(self.raw, trials))
        forced = [
            str(store.summary_path(self.workspace / "store", settings.experiments[n].kind, n))
            for n in sorted(trials)
        ]
        command += ["--forcerun", *forced]
        log = path.with_suffix(".log")  # the run's summary; its progress goes to stderr
        with open(log, "w") as out:
            done = subprocess.run([*command, *self.extra], cwd=self.workdir, stdout=out)
        if done.returncode != 0:
            raise ConfigError(f"decide: the run of look {look} failed: see {log}")
        return path

    def judge(self, trials: dict[str, int], design: Design, look: int) -> dict[str, str]:
        """Each open target's verdict at this look, on the store's summaries now."""
        settings = load(topped_up(self.raw, trials))
        experiments = {n: e.kind for n, e in settings.experiments.items()}
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
            out[target.claim_id] = judge_at(target.spec, rows, design, look)
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
    """The whole loop; prints the bill, each look's verdicts and the outcome. Exit 0 when every
    target was decided, 1 when the budget ran out first."""
    raw = yamlfile.load(workdir / config if not config.is_absolute() else config)
    state = Decide(raw, workdir, extra, [], workspaces.locate([config], workspace, workdir))
    state.targets, notes = choose_targets(names, raw, state.root)
    for note in notes:
        print(f"decide: {note}")
    if not state.targets:
        print("decide: nothing to decide by more trials")
        return 0
    base = state.base_trials()
    factor = largest_factor(raw, base, state.root, budget)
    factors = look_factors(factor)
    if not factors:
        first, _ = cost_hours(topped_up(raw, {n: 2 * t for n, t in base.items()}), state.root)
        raise ConfigError(
            f"decide: --budget {budget:g} CPU-hours buys less than one round (doubling the trials "
            f"of {', '.join(base)} costs about {first:.3g} CPU-hours)"
        )
    design = Design.for_counts([1, *factors])
    _, bill_text = cost_hours(topped_up(raw, {n: factor * t for n, t in base.items()}), state.root)
    print(_design_text(state, base, factors, design, budget))
    print(bill_text)
    if dry_run:
        return 0
    return _loop(state, base, factors, design)


def _design_text(state, base, factors, design, budget) -> str:
    counts = ", ".join(
        f"{n}: " + " -> ".join(str(f * t) for f in [1, *factors]) for n, t in base.items()
    )
    critical = ", ".join("inf" if math.isinf(c) else f"{c:.3f}" for c in design.critical)
    claims = ", ".join(t.claim_id for t in state.targets)
    return (
        f"decide: {claims}\n"
        f"  looks (trials per point): {counts}; within --budget {budget:g} CPU-hours\n"
        f"  design (docs/science.md §7.6): critical values {critical} (look 1 is the run judged)"
    )


def _loop(state: Decide, base: dict[str, int], factors: list[int], design: Design) -> int:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    trials = dict(base)
    decided: dict[str, str] = {}
    for look, factor in enumerate(factors, start=1):
        for target in state.targets:
            for name in target.experiments:
                trials[name] = factor * base[name]
        state.run_round(look + 1, trials)
        verdicts = state.judge(trials, design, look)
        print(
            f"decide: look {look + 1} ({factor}x the trials): "
            + ", ".join(f"{c} {v}" for c, v in verdicts.items())
        )
        decided |= {c: v for c, v in verdicts.items() if v != "inconclusive"}
        state.targets = [t for t in state.targets if t.claim_id not in decided]
        if not state.targets:
            break
    spent = resource.getrusage(resource.RUSAGE_CHILDREN)
    hours = (spent.ru_utime + spent.ru_stime - used.ru_utime - used.ru_stime) / 3600
    for claim_id, verdict in decided.items():
        print(f"decide: {claim_id}: {verdict}")
    for target in state.targets:
        print(f"decide: {target.claim_id}: still inconclusive, the budget is spent")
    print(f"decide: {hours * 60:.2f} CPU-minutes spent")
    return 0 if not state.targets else 1
