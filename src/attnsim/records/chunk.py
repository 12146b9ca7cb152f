"""The chunk: what one simulate job computes, planned by `attnsim.plan.sweep` and read by the job.

A chunk is an experiment's run of grid points with the settings their numbers depend on. It has
one serialisation, compact JSON written by `ChunkSpec.to_json` and read by `ChunkSpec.from_json`
(the job's spec file, and the provenance of the chunk's file, from which planning reads finished
chunks back). A job reads its spec file once (`read_spec_file`) into a `ChunkSpec` holding the
`Kind` object; resources, priority and the kernel driver all read that same object. The points
are held as rows of canonical values: `Point` objects are made only when a job asks for them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from attnsim.errors import AttnsimError, ConfigError
from attnsim.kinds import get_kind
from attnsim.kinds.base import Kind
from attnsim.records.cost import ChunkCost, chunk_cost, point_costs
from attnsim.records.experiment import results_key
from attnsim.records.grid import Point, canonical_rows, chunk_id, points_from_rows, row_ids
from attnsim.seeding import digest


@dataclass(frozen=True)
class ChunkSpec:
    experiment: str
    kind: Kind
    seed: int
    trials: int  # per round; one round unless adaptive
    rows: tuple[tuple[Any, ...], ...]  # the points: canonical values in the kind's parameter order
    target_se: float | None = None  # adaptive precision on the kind's main metric
    max_trials: int | None = None
    extends: str | None = None  # a top-up: the stored chunk (same folder) whose trials it reuses

    def __post_init__(self) -> None:
        if self.rows and isinstance(self.rows[0], Point):
            raise TypeError("ChunkSpec holds rows of parameter values, not Points")

    @cached_property
    def points(self) -> tuple[Point, ...]:
        return tuple(points_from_rows(self.kind, self.rows))

    @cached_property
    def id(self) -> str:
        base = chunk_id(row_ids(self.kind, self.rows))
        return (
            base
            if self.extends is None
            else topup_id(base, self.trials, self.target_se, self.max_trials)
        )

    @cached_property
    def cost(self) -> ChunkCost:
        """What its resource requests depend on (`attnsim.records.cost.chunk_cost`)."""
        kind, names = self.kind, self.kind.param_names
        params = [dict(zip(names, row)) for row in self.rows]
        per_trial = [kind.compute.bytes_per_trial(p) for p in params]
        passes = (
            None
            if kind.compute.passes_per_trial is None
            else [kind.compute.passes_per_trial(p) for p in params]
        )
        at = [names.index(n) for n in kind.schema.stream_params]
        codes: dict[tuple[Any, ...], int] = {}
        streams = [codes.setdefault(tuple(row[i] for i in at), len(codes)) for row in self.rows]
        costs = point_costs(kind, per_trial, streams, self.trial_cap, passes)
        return chunk_cost(kind, costs, slice(None), self.trial_cap)

    @property
    def trial_cap(self) -> int:
        """The most trials any point can get: what memory and time requests must allow for."""
        return self.max_trials or self.trials

    @property
    def results_key(self) -> str:
        """What its rows depend on besides their parameters
        (`attnsim.records.experiment.results_key`)."""
        return results_key(self.kind, self.trials, self.seed, self.target_se, self.max_trials)

    def to_json(self, threads: int | None = None) -> str:
        """The one serialisation (`threads`: what a spec file adds for its job)."""
        spec = {
            "experiment": self.experiment,
            "kind": self.kind.name,
            "seed": self.seed,
            "trials": self.trials,
            "params": list(self.kind.param_names),
            "points": self.rows,
        }
        if self.target_se is not None or self.max_trials is not None:
            spec |= {"target_se": self.target_se, "max_trials": self.max_trials}
        if self.extends is not None:
            spec["extends"] = self.extends
        if threads is not None:
            spec["threads"] = threads
        return json.dumps(spec, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> ChunkSpec:
        return _parse(text)[0]


def kind_rows(kind: Kind, params: list[str], points: list[Any]) -> list[Any]:
    """A spec's points (rows of values in the order `params`) in the kind's parameter order. A
    spec written before the kind gained a parameter declared `id_omits_default` lacks it: its
    points take the default, which is what they computed (and their ids are unchanged)."""
    names = list(kind.param_names)
    if params == names:
        return points
    added = [p for p in kind.schema.params if p.name not in params]
    if not set(params) <= set(names) or not all(p.id_omits_default for p in added):
        raise ValueError(f"parameters {params} do not match kind {kind.name}: {names}")
    defaults = {p.name: p.default for p in added}
    at = {name: i for i, name in enumerate(params)}
    return [tuple(row[at[n]] if n in at else defaults[n] for n in names) for row in points]


def _parse(text: str) -> tuple[ChunkSpec, dict[str, Any]]:
    """The spec in `text` and the JSON object it was read from (parsed once)."""
    try:
        spec = json.loads(text)
        kind = get_kind(spec["kind"])
        points = kind_rows(kind, spec["params"], spec["points"])
        chunk = ChunkSpec(
            spec["experiment"],
            kind,
            spec["seed"],
            spec["trials"],
            tuple(canonical_rows(kind, points)),
            spec.get("target_se"),
            spec.get("max_trials"),
            spec.get("extends"),
        )
        return chunk, spec
    except (ValueError, KeyError, TypeError, AttnsimError) as error:
        raise ConfigError(f"chunk spec: {error}") from None


@dataclass(frozen=True)
class SpecFile:
    spec: ChunkSpec
    threads: int


def read_spec_file(path: Path) -> SpecFile:
    """A job's spec file, read and parsed once: its chunk and the threads it was planned with."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise ConfigError(
            f"{path}: the chunk's spec file is missing ({error.strerror}); the submitting run "
            "writes it at its start"
        ) from None
    spec, data = _parse(text)
    return SpecFile(spec, int(data.get("threads", 1)))


def topup_id(base: str, trials: int, target_se: float | None, max_trials: int | None) -> str:
    """The id of a top-up chunk: its points' chunk id and the trial settings it computes to (a
    file name apart from the chunk it extends, which keeps the points' plain id)."""
    return digest(
        {"chunk": base, "trials": trials, "target_se": target_se, "max_trials": max_trials}
    )
