"""What a run has to compute: the store's finished points against the config's grid.

Read at workflow start (and again on a cluster node). Points already in the
store with the same results key are done; the rest are cut into chunks, one
job each, of at most `chunk_size` points and about MAX_CHUNK_COST_RATIO average chunks of
cost. Finished chunks stay targets under their own ids, with the spec
read back from their provenance, so Snakemake sees them as up to date.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from attnsim import store
from attnsim.chunkspec import ChunkSpec
from attnsim.config import Settings
from attnsim.errors import StoreError
from attnsim.grid import Point, chunk, expand
from attnsim.kinds import get_kind

# A chunk ends once its cost reaches this many times the experiment's average chunk (its
# estimated cost over the whole grid, so that the budget does not depend on what is done,
# divided by its number of chunk_size chunks). Grids of uniform cost are never split further
# (a full chunk costs at most twice the average); grids whose cost sits in a few large-n points
# would otherwise give one long job that leaves the other cores idle at the end of a run.
MAX_CHUNK_COST_RATIO = 2.0


@dataclass
class ExperimentPlan:
    name: str
    kind: str
    points: list[Point]
    specs: dict[str, ChunkSpec] = field(default_factory=dict)  # chunk id -> spec, finished and pending
    pending: list[str] = field(default_factory=list)  # chunk ids still to compute
    done_points: int = 0

    @property
    def chunks(self) -> list[str]:
        return sorted(self.specs)


def _old_settings(meta: dict) -> str:
    spec = json.loads(meta.get("spec", "{}"))
    adaptive = f", target_se={spec['target_se']}, max_trials={spec['max_trials']}" if "target_se" in spec else ""
    return f"trials={meta.get('trials')}, seed={meta.get('seed')}{adaptive}, algorithm version {meta.get('algorithm_version')}"


def plan_experiment(settings: Settings, name: str, root: Path) -> ExperimentPlan:
    experiment = settings.experiments[name]
    kind = get_kind(experiment.kind)
    points = expand(experiment)
    plan = ExperimentPlan(name=name, kind=experiment.kind, points=points)
    key = experiment.results_key(settings.seed)
    wanted = {p.id for p in points}
    done: set[str] = set()
    for other in sorted(Path(root, "trials").glob(f"kind=*/experiment={name}")):
        if other.name and other.parent.name != f"kind={experiment.kind}" and any(other.glob("*.parquet")):
            raise StoreError(
                f"{other}: experiment {name!r} was stored as {other.parent.name}, the config now says kind={experiment.kind}; rename the experiment or move that folder away"
            )
    for path in store.experiment_chunks(root, experiment.kind, name):
        meta = store.read_meta(path)
        if meta.get("results_key") != key:
            raise StoreError(
                f"{path.parent}: stored with {_old_settings(meta)}, the config now asks for trials={experiment.trials}, "
                f"seed={settings.seed}"
                + (f", target_se={experiment.target_se}, max_trials={experiment.max_trials}" if experiment.target_se else "")
                + f", algorithm version {kind.algorithm_version}; the rows would mix. Move that folder away (or rename the experiment) and rerun"
            )
        finished = ChunkSpec.from_json(meta["spec"])
        ids = {p.id for p in finished.points}
        if ids & wanted:
            plan.specs[finished.id] = finished
            done |= ids
    plan.done_points = len(wanted & done)
    todo = [p for p in points if p.id not in done]
    cost = kind.bytes_per_trial  # relative cost of a point's trial
    budget = MAX_CHUNK_COST_RATIO * sum(cost(p.params) for p in points) / math.ceil(len(points) / settings.chunk_size)
    for members in chunk(todo, settings.chunk_size, [cost(p.params) for p in todo], budget):
        spec = ChunkSpec(name, kind, settings.seed, experiment.trials, tuple(members), experiment.target_se, experiment.max_trials)
        plan.specs[spec.id] = spec
        plan.pending.append(spec.id)
    return plan


def plan_all(settings: Settings, root: Path) -> dict[str, ExperimentPlan]:
    """Read-only: planning never writes (dry runs, `attnsim show`); the run sweeps dead writers' temp files."""
    return {name: plan_experiment(settings, name, root) for name in settings.experiments}


def experiment_json(settings: Settings, name: str) -> str:
    """The experiment's own settings as JSON: what its summary and figures depend on."""
    e = settings.experiments[name]
    spec = {"experiment": name, "kind": e.kind, "trials": e.trials, "seed": settings.seed, "grid": e.grid}
    if e.target_se is not None:
        spec |= {"target_se": e.target_se, "max_trials": e.max_trials}
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))
