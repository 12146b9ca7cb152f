"""The records a loaded config is made of: a sweep's settings and its experiments, and the key of
what an experiment's stored numbers depend on. Apart from `attnsim.config.load` (the schema and
its checks: jsonschema, YAML) so that a job that only reads an experiment's JSON (collect) does
not import those."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from attnsim.kinds import get_kind
from attnsim.kinds.base import Kind
from attnsim.seeding import digest

SAME, COVERS, TOPUP = "same", "covers", "top-up"  # how stored trial settings serve asked ones
# An experiment's role: `grid`, a declared grid the claims are judged on; `locate`, points a
# boundary's location placed (`attnsim.claims.boundary`), stored beside the grid's and reusable
# like them, but never read by a claim: a verdict rests on the declared grid at its declared
# trials, whatever a located point's trials say (`Settings.kinds`).
GRID, LOCATE = "grid", "locate"
ROLES = (GRID, LOCATE)


@dataclass(frozen=True)
class TrialSettings:
    """How a run draws each point's trials, one record from the config to the row (`Experiment`
    -> `records.chunk.ChunkSpec` -> `jobs.simulate.simulate_points`): the config's seed, the
    trials per round and, for an adaptive experiment, the standard error of the kind's main metric
    at which a point stops with the most trials it may get; `max_trials` alone gives every point
    the rounds that fit in it (a top-up `attnsim decide` recorded). With the kind's algorithm
    version they are what a stored point's numbers depend on besides its parameters
    (`results_key`)."""

    seed: int
    trials: int  # per round
    target_se: float | None = None
    max_trials: int | None = None

    def __post_init__(self) -> None:
        if self.target_se is not None and self.max_trials is None:
            raise ValueError("target_se needs max_trials (an adaptive experiment's ceiling)")

    @property
    def adaptive(self) -> bool:
        return self.target_se is not None

    @property
    def cap(self) -> int:
        """The most trials a point can get: what memory and time requests must allow for."""
        return self.max_trials or self.trials

    def per_point(self) -> tuple[int, int]:
        """(fewest, most) trials a point gets: the rounds that fit in max_trials without a
        target_se; with it, one round to the rounds that fit."""
        rounds = self.cap // self.trials * self.trials
        return (self.trials if self.adaptive else rounds), rounds

    def fields(self) -> dict[str, Any]:
        """Its entries in an experiment's or a chunk's JSON: seed and trials, and target_se and
        max_trials when either is set."""
        out: dict[str, Any] = {"seed": self.seed, "trials": self.trials}
        if self.target_se is not None or self.max_trials is not None:
            out |= {"target_se": self.target_se, "max_trials": self.max_trials}
        return out

    @classmethod
    def read(cls, spec: dict[str, Any]) -> TrialSettings:
        """The settings of a JSON object that holds them (`fields`)."""
        return cls(spec["seed"], spec["trials"], spec.get("target_se"), spec.get("max_trials"))

    def text(self) -> str:
        """Trials per point as a person reads them: `200`, `800 in rounds of 200`, `200 per round
        until the SE is at most 0.01, at most 1,600`."""
        if self.adaptive:
            return (
                f"{self.trials:,} per round until the SE is at most {self.target_se:g}, at most "
                f"{self.cap:,}"
            )
        if self.cap > self.trials:
            return f"{self.per_point()[1]:,} in rounds of {self.trials:,}"
        return f"{self.trials:,}"

    def relation(self, stored: TrialSettings) -> str | None:
        """How a chunk stored with `stored` serves these settings (same seed): SAME; COVERS when
        every point stored has at least the trials these would give it (a summary reads each
        point's first ones, `attnsim.jobs.collect`: the rows of a fresh run wherever the round
        sizes agree); TOPUP when these ask for more of the same rows (only the missing blocks
        are computed, `jobs.simulate`); None when neither (the rows would mix)."""
        if self.seed != stored.seed:
            return None
        if self == stored:
            return SAME
        low_old, high_old = stored.per_point()
        high_new = self.per_point()[1]
        se_new, se_old = self.target_se, stored.target_se
        same_rounds = self.trials == stored.trials
        if se_new is None:
            if high_new <= low_old:
                return COVERS  # a fixed count no larger than any point holds
            return TOPUP if se_old is None else None
        if same_rounds and high_new <= (high_old if se_old is not None else low_old):
            if se_old is None or se_new >= se_old:
                return COVERS  # the stopping rule replayed over stored rounds stops no later
        if same_rounds and (se_old is None or (se_new <= se_old and self.cap >= high_old)):
            return TOPUP  # more rounds of the same size: adaptive from fixed, lower SE, more
        return None

    def results_key(self, kind: Kind) -> str:
        """What a stored point's numbers depend on besides its parameters: these settings and the
        kind's algorithm version; a mismatch means stale rows."""
        key = {"kind": kind.name, "algorithm": kind.algorithm_version} | self.fields()
        return digest(key)


@dataclass(frozen=True)
class Experiment:
    """One experiment of a sweep with its trial settings (the sweep's seed among them): the record
    its numbers depend on."""

    name: str
    kind: str
    grid: dict[str, list[Any]]
    trial_settings: TrialSettings
    description: str = ""
    role: str = GRID

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"experiment {self.name}: role must be one of {ROLES}")

    @property
    def results_key(self) -> str:
        """What its rows depend on besides their parameters (`TrialSettings.results_key`)."""
        return self.trial_settings.results_key(get_kind(self.kind))

    def config(self) -> dict[str, Any]:
        """The settings its summary and figures depend on (not the description): what `to_json`
        writes and the summary's `experiment_hash` digests."""
        role = {"role": self.role} if self.role != GRID else {}  # a grid's hash as before
        return {"experiment": self.name, "kind": self.kind, "grid": self.grid} | (
            self.trial_settings.fields() | role
        )

    def to_json(self) -> str:
        """Its one JSON form (`config`), the file its collect job reads."""
        return json.dumps(self.config(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Experiment:
        spec = json.loads(text)
        return cls(
            spec["experiment"],
            spec["kind"],
            spec["grid"],
            TrialSettings.read(spec),
            role=spec.get("role", GRID),
        )


@dataclass(frozen=True)
class Settings:
    seed: int
    chunk_size: int | None  # an optional upper bound on a chunk's points (chunks are sized by cost)
    memory_budget_mb: int
    experiments: dict[str, Experiment]
    config_hash: str  # of the science (seed and experiments), not of runtime knobs
    # asset name -> local copy to use instead of downloading
    assets: dict[str, str] = field(default_factory=dict)
    # estimated CPU-minutes a chunk job aims at (a runtime knob, like chunk_size)
    job_minutes: float = 2.0
    max_jobs: int | None = None  # refuse a sweep that needs more simulate jobs (a cluster's limit)
    # name -> a boundary to locate (the config's `boundaries:` entries as the schema checked
    # them: claim, axis, edge, at, range, experiment, budget, target; `report.boundaries`)
    boundaries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def kinds(self) -> dict[str, str]:
        """Experiment name -> kind of the declared grids (role `grid`): the one map the claims
        job, `decide` and `attnsim claims` read. Experiments of role `locate` are left out, so
        a located point never moves a verdict (`located` lists them)."""
        return {name: e.kind for name, e in self.experiments.items() if e.role == GRID}

    def located(self) -> dict[str, str]:
        """Experiment name -> kind of the experiments of role `locate` (`kinds` has the rest)."""
        return {name: e.kind for name, e in self.experiments.items() if e.role == LOCATE}


def trial_settings_text(trials: int, target_se: float | None, max_trials: int | None) -> str:
    """Trials per point as a person reads them: `200`, `800 in rounds of 200`, `200 per round
    until the SE is at most 0.01, at most 1,600`."""
    if target_se is not None:
        return (
            f"{trials:,} per round until the SE is at most {target_se:g}, at most "
            f"{max_trials or trials:,}"
        )
    if max_trials is not None and max_trials > trials:
        return f"{max_trials // trials * trials:,} in rounds of {trials:,}"
    return f"{trials:,}"
