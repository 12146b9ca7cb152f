"""The chunk: what one simulate job computes, planned by `attnsim.plan.sweep` and read by the job.

A chunk is an experiment's run of grid points with the settings their numbers depend on. It
has one serialisation, compact JSON (the job's only input, and stored in the provenance of
the chunk's file so that planning can read finished chunks back). The job parses it once into
a `ChunkSpec` holding the `Kind` object; resources, priority and the kernel driver all read that
same object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property

from attnsim.config.grid import Point, chunk_id, points_from_rows
from attnsim.errors import AttnsimError, ConfigError
from attnsim.kinds import get_kind
from attnsim.kinds.base import Kind
from attnsim.seeding import digest


@dataclass(frozen=True)
class ChunkSpec:
    experiment: str
    kind: Kind
    seed: int
    trials: int  # per round; one round unless adaptive
    points: tuple[Point, ...]
    target_se: float | None = None  # adaptive precision on the kind's main metric
    max_trials: int | None = None
    extends: str | None = None  # a top-up: the stored chunk (same folder) whose trials it reuses

    @cached_property
    def id(self) -> str:
        base = chunk_id(list(self.points))
        return (
            base
            if self.extends is None
            else topup_id(base, self.trials, self.target_se, self.max_trials)
        )

    @cached_property
    def cost(self):
        """What its resource requests depend on (`attnsim.plan.cost`)."""
        from attnsim.plan.cost import POINT_WORK, SECONDS_PER_BYTE, ChunkCost

        kind, points, trials = self.kind, self.points, self.trial_cap
        per_point = [kind.bytes_per_trial(p.params) for p in points]
        streams = {p.stream: b for p, b in zip(points, per_point)}
        work = (
            3 * sum(streams.values()) + sum(per_point)
        ) * trials * SECONDS_PER_BYTE + POINT_WORK * len(points)
        block = max(kind.block_trials(p.params) * b for p, b in zip(points, per_point))
        return ChunkCost(len(points), trials, work, block, len(kind.metrics) + len(kind.params) + 4)

    @property
    def trial_cap(self) -> int:
        """The most trials any point can get: what memory and time requests must allow for."""
        return self.max_trials or self.trials

    def to_json(self) -> str:
        names = self.kind.param_names
        spec = {
            "experiment": self.experiment,
            "kind": self.kind.name,
            "seed": self.seed,
            "trials": self.trials,
            "params": list(names),
            "points": [[p.params[k] for k in names] for p in self.points],
        }
        if self.target_se is not None:
            spec |= {"target_se": self.target_se, "max_trials": self.max_trials}
        if self.extends is not None:
            spec["extends"] = self.extends
        return json.dumps(spec, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> ChunkSpec:
        try:
            spec = json.loads(text)
            kind = get_kind(spec["kind"])
            if spec["params"] != list(kind.param_names):
                raise ValueError(
                    f"parameters {spec['params']} do not match kind {kind.name}: "
                    f"{list(kind.param_names)}"
                )
            points = tuple(points_from_rows(kind, spec["points"]))
            return cls(
                spec["experiment"],
                kind,
                spec["seed"],
                spec["trials"],
                points,
                spec.get("target_se"),
                spec.get("max_trials"),
                spec.get("extends"),
            )
        except (ValueError, KeyError, TypeError, AttnsimError) as error:
            raise ConfigError(f"chunk spec: {error}") from None


def topup_id(base: str, trials: int, target_se: float | None, max_trials: int | None) -> str:
    """The id of a top-up chunk: its points' chunk id and the trial settings it computes to (a
    file name apart from the chunk it extends, which keeps the points' plain id)."""
    return digest(
        {"chunk": base, "trials": trials, "target_se": target_se, "max_trials": max_trials}
    )
