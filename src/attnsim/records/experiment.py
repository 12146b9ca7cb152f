"""The records a loaded config is made of: a sweep's settings and its experiments, and the key of
what an experiment's stored numbers depend on. Apart from `attnsim.config.load` (the schema and
its checks: jsonschema, YAML) so that a job that only reads an experiment's JSON (collect) does
not import those."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from attnsim.kinds import as_kind
from attnsim.kinds.base import Kind
from attnsim.seeding import digest


def results_key(
    kind: Kind | str,
    trials: int,
    seed: int,
    target_se: float | None = None,
    max_trials: int | None = None,
) -> str:
    """What a stored point's numbers depend on besides its parameters; a mismatch means stale
    rows."""
    kind = as_kind(kind)
    key = {"kind": kind.name, "trials": trials, "seed": seed, "algorithm": kind.algorithm_version}
    if target_se is not None or max_trials is not None:
        key |= {"target_se": target_se, "max_trials": max_trials}
    return digest(key)


@dataclass(frozen=True)
class Experiment:
    """One experiment of a sweep with the sweep's seed: the record its numbers depend on."""

    name: str
    kind: str
    trials: int
    grid: dict[str, list[Any]]
    seed: int
    description: str = ""
    target_se: float | None = None  # adaptive precision on the kind's main metric
    max_trials: int | None = None  # without target_se: this many, in rounds of `trials`

    @property
    def results_key(self) -> str:
        """What its rows depend on besides their parameters (`results_key`)."""
        return results_key(self.kind, self.trials, self.seed, self.target_se, self.max_trials)

    def config(self) -> dict[str, Any]:
        """The settings its summary and figures depend on (not the description): what `to_json`
        writes and the summary's `config_hash` digests."""
        spec = {
            "experiment": self.name,
            "kind": self.kind,
            "trials": self.trials,
            "seed": self.seed,
            "grid": self.grid,
        }
        if self.target_se is not None or self.max_trials is not None:
            spec |= {"target_se": self.target_se, "max_trials": self.max_trials}
        return spec

    def to_json(self) -> str:
        """Its one JSON form (`config`), the file its collect job reads."""
        return json.dumps(self.config(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Experiment:
        spec = json.loads(text)
        return cls(
            name=spec["experiment"],
            kind=spec["kind"],
            trials=spec["trials"],
            grid=spec["grid"],
            seed=spec["seed"],
            target_se=spec.get("target_se"),
            max_trials=spec.get("max_trials"),
        )


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
