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


@dataclass(frozen=True)
class TrialSettings:
    """How a run draws each point's trials, one record from the config to the row (`Experiment`
    -> `records.chunk.ChunkSpec` -> `jobs.simulate.simulate_points`): the config's seed, the
    trials per round and, for an adaptive experiment, the standard error of the kind's main metric
    at which a point stops and the most trials it may get (both or neither). With the kind's
    algorithm version they are what a stored point's numbers depend on besides its parameters
    (`results_key`)."""

    seed: int
    trials: int  # per round; one round unless adaptive
    target_se: float | None = None
    max_trials: int | None = None

    def __post_init__(self) -> None:
        if (self.target_se is None) != (self.max_trials is None):
            raise ValueError("target_se and max_trials go together (an adaptive experiment)")

    @property
    def adaptive(self) -> bool:
        return self.target_se is not None

    @property
    def cap(self) -> int:
        """The most trials a point can get: what memory and time requests must allow for."""
        return self.max_trials or self.trials

    def fields(self) -> dict[str, Any]:
        """Its entries in an experiment's or a chunk's JSON: seed and trials, and target_se and
        max_trials when adaptive."""
        out: dict[str, Any] = {"seed": self.seed, "trials": self.trials}
        if self.adaptive:
            out |= {"target_se": self.target_se, "max_trials": self.max_trials}
        return out

    @classmethod
    def read(cls, spec: dict[str, Any]) -> TrialSettings:
        """The settings of a JSON object that holds them (`fields`)."""
        return cls(spec["seed"], spec["trials"], spec.get("target_se"), spec.get("max_trials"))

    def text(self) -> str:
        """As a message names them: trials=.. (, target_se=.., max_trials=..)."""
        adaptive = f", target_se={self.target_se}, max_trials={self.max_trials}"
        return f"trials={self.trials}" + (adaptive if self.adaptive else "")

    def tops_up(self, stored: TrialSettings) -> bool:
        """Whether these settings compute every trial of `stored` and more, from the same seed: more
        trials of a fixed run, or more rounds of the same size (adaptive where it was fixed, a
        lower target_se, a higher max_trials). The stored trials are then the first of these
        settings' run, so only the missing blocks are computed (`jobs.simulate`)."""
        if self.seed != stored.seed:
            return False
        if not (self.adaptive or stored.adaptive):
            return self.trials > stored.trials
        return (
            self.trials == stored.trials
            and self.target_se is not None
            and self.max_trials is not None
            and (
                stored.target_se is None
                or stored.max_trials is None
                or (self.target_se <= stored.target_se and self.max_trials >= stored.max_trials)
            )
        )

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

    @property
    def results_key(self) -> str:
        """What its rows depend on besides their parameters (`TrialSettings.results_key`)."""
        return self.trial_settings.results_key(get_kind(self.kind))

    def config(self) -> dict[str, Any]:
        """The settings its summary and figures depend on (not the description): what `to_json`
        writes and the summary's `experiment_hash` digests."""
        return {"experiment": self.name, "kind": self.kind, "grid": self.grid} | (
            self.trial_settings.fields()
        )

    def to_json(self) -> str:
        """Its one JSON form (`config`), the file its collect job reads."""
        return json.dumps(self.config(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Experiment:
        spec = json.loads(text)
        return cls(spec["experiment"], spec["kind"], spec["grid"], TrialSettings.read(spec))


@dataclass(frozen=True)
class Settings:
    seed: int
    chunk_size: int | None  # an optional upper bound on a chunk's points (chunks are sized by cost)
    memory_budget_mb: int
    experiments: dict[str, Experiment]
    config_hash: str  # of the science (seed and experiments), not of runtime knobs
    assets: dict[str, str] = field(
        default_factory=dict
    )  # asset name -> local copy to use instead of downloading
    job_minutes: float = (
        2.0  # estimated CPU-minutes a chunk job aims at (a runtime knob, like chunk_size)
    )
    max_jobs: int | None = None  # refuse a sweep that needs more simulate jobs (a cluster's limit)

    def kinds(self) -> dict[str, str]:
        """Experiment name -> kind: the one map the claims job, the store's staleness check and
        `attnsim claims` read."""
        return {name: e.kind for name, e in self.experiments.items()}
