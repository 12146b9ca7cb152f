"""What a run has to compute: the store's finished points against the config's grid.

Read at workflow start by the submitting process only (jobs read their chunk's spec file). Points
already in the store with the same results key are done; the rest are cut into chunks, one job
each, sized by cost (`chunk_limits`): about `job_minutes` of estimated CPU time each
(`attnsim.records.cost`'s model), at most MAX_CHUNK_ROWS trial rows, and at most `chunk_size`
points if the config sets one. Finished chunks stay targets under
their own ids, with the spec read back from their provenance, so Snakemake sees them as up to
date.

Planning is columnar (`grid.GridColumns`): point ids are hashed in one loop (`grid.point_ids`),
costs come from one call per combination of the parameters a cost depends on (and one
`cost.chunk_cost` per chunk), a `ChunkSpec` is made only for the chunk someone asks for and a
`Point` never. A million points plan in seconds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from attnsim import files
from attnsim.errors import AttnsimError, StoreError
from attnsim.kinds import get_kind
from attnsim.kinds.base import Kind
from attnsim.records.chunk import ChunkSpec, kind_rows, topup_id
from attnsim.records.cost import (
    DESIGN_CLASS,
    ChunkCost,
    PointCosts,
    chunk_cost,
    point_costs,
    point_seconds,
)
from attnsim.records.experiment import GRID, TOPUP, Experiment, Settings, TrialSettings
from attnsim.records.grid import (
    GridColumns,
    canonical_column_value,
    chunk_id,
    grid_columns,
    row_ids,
)
from attnsim.store import parquet
from attnsim.store.integrity import Meta

# A chunk ends once its cost reaches this many times the experiment's average chunk (its
# estimated cost over the whole grid, so that the budget does not depend on what is done,
# divided by its number of chunk_size chunks). Grids of uniform cost are never split further
# (a full chunk costs at most twice the average); grids whose cost sits in a few large-n points
# would otherwise give one long job that leaves the other cores idle at the end of a run.
MAX_CHUNK_COST_RATIO = 2.0
# At most this many trial rows per chunk: the job holds them in memory (3 x 8 bytes x columns
# each, see resources.chunk_mem_mb: ~1.3 GB for 13 columns) and they make one Parquet file.
MAX_CHUNK_ROWS = 2**22


@dataclass(frozen=True)
class Chunk:
    """One chunk of a plan, without its points: a pending chunk's rows of the grid, or a finished
    chunk's spec as its provenance recorded it."""

    id: str
    cost: ChunkCost | None  # None for finished chunks until asked (see ExperimentPlan.cost)
    rows: np.ndarray | None = None  # pending: indices into the experiment's grid
    spec_text: str | None = None  # finished: the spec from its provenance
    extends: str | None = None  # pending top-up: the stored chunk whose trials it reuses


@dataclass
class ExperimentPlan:
    experiment: Experiment
    grid: GridColumns
    # chunk id -> chunk, finished and pending
    chunk_by_id: dict[str, Chunk] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)  # chunk ids still to compute
    done_points: int = 0
    # stored chunks that top-ups replace (removed once they exist)
    replaced: list[Path] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.experiment.name

    @property
    def kind(self) -> str:
        return self.experiment.kind

    @property
    def trials(self) -> int:
        """Trials per round (per point, unless adaptive)."""
        return self.experiment.trial_settings.trials

    @property
    def n_points(self) -> int:
        return self.grid.size

    @property
    def chunks(self) -> list[str]:
        return sorted(self.chunk_by_id)

    def spec(self, chunk: str) -> ChunkSpec:
        """The chunk's spec: a finished chunk's as its provenance recorded it, a pending one's
        from the grid's columns (no point made)."""
        entry = self.chunk_by_id[chunk]
        if entry.spec_text is not None:
            return ChunkSpec.from_json(entry.spec_text)
        assert entry.rows is not None  # a pending chunk's points
        e = self.experiment
        rows = tuple(self.grid.rows(entry.rows))
        return ChunkSpec(e.name, get_kind(e.kind), e.trial_settings, rows, entry.extends)

    def cost(self, chunk: str) -> ChunkCost:
        entry = self.chunk_by_id[chunk]
        return entry.cost if entry.cost is not None else self.spec(chunk).cost


def _old_settings(meta: Meta) -> str:
    spec = json.loads(meta.get("spec", "{}"))
    trials = TrialSettings.read({**spec, "seed": meta.get("seed")}).text()
    return (
        f"{trials} trials per point, seed {meta.get('seed')}, algorithm version "
        f"{meta.get('algorithm_version')}"
    )


def grid_costs(
    kind: Kind, grid: GridColumns, trial_cap: int, round_trials: int, klass: str | None = None
) -> PointCosts:
    """`attnsim.records.cost.PointCosts` of every grid point, from the columns: one
    `kind.compute.bytes_per_trial` and one `point_seconds` call (own and shared seconds at once)
    per combination of the parameters they read. `klass`: the CPU class priced (default
    `cost_class`, the machine's)."""
    deps, seconds = grid.distinct(lambda p: point_seconds(kind, p, round_trials, trial_cap, klass))
    return point_costs(
        grid.evaluate(kind.compute.bytes_per_trial),
        grid.stream_codes(),
        grid.spread(deps, np.asarray([own for own, _ in seconds])),
        grid.spread(deps, np.asarray([shared for _, shared in seconds])),
        trial_cap,
    )


def chunk_bounds(costs: np.ndarray, size: int, budget: float = math.inf) -> list[tuple[int, int]]:
    """(start, end) of consecutive runs that end once they hold `size` points or their cost
    reaches `budget` (tests/oracles/points.py `chunk`, on an array). One binary search per chunk
    over the running sum."""
    total = np.cumsum(costs, dtype=np.float64)
    bounds, start, count = [], 0, len(costs)
    while start < count:
        base = total[start - 1] if start else 0.0
        reach = (
            int(np.searchsorted(total, base + budget, side="left")) + 1
            if math.isfinite(budget)
            else count
        )
        end = min(reach, start + size, count)
        bounds.append((start, end))
        start = end
    return bounds


def _grid_rows(kind: Kind, grid: GridColumns, points: list[tuple[Any, ...]]) -> np.ndarray:
    """The grid index of each of `points` (raw values in the kind's parameter order), -1 for a
    point outside the grid. Matched on canonical values, which is what ids hash; each column's
    distinct values are looked up once."""
    if not points:
        return np.zeros(0, dtype=np.int64)
    positions = []
    for param, column in zip(kind.schema.params, zip(*points, strict=True)):
        where = {v: i for i, v in enumerate(grid.values[param.name])}
        raw = np.array(column)  # int64, float64 or str for the specs planning writes
        if raw.dtype.kind in "iufU":
            distinct, inverse = np.unique(raw, return_inverse=True)
        else:  # anything else (mixed types, huge ints): one dict lookup per value
            distinct, inverse = _unique_unordered(column)
        found = np.array(
            [where.get(canonical_column_value(param, v), -1) for v in distinct.tolist()],
            dtype=np.int64,
        )
        positions.append(found[inverse.ravel()])
    inside = np.logical_and.reduce([p >= 0 for p in positions])
    flat = np.full(len(points), -1, dtype=np.int64)
    if inside.any():
        flat[inside] = np.ravel_multi_index(
            [p[inside] for p in positions], tuple(len(grid.values[n]) for n in kind.param_names)
        )
    return flat


def _unique_unordered(column: Any) -> tuple[np.ndarray, np.ndarray]:
    seen: dict[Any, int] = {}
    inverse = np.array([seen.setdefault((type(v), v), len(seen)) for v in column], dtype=np.int64)
    distinct = np.empty(len(seen), dtype=object)
    distinct[:] = [v for _, v in seen]
    return distinct, inverse


def plan_experiment(settings: Settings, name: str, root: Path) -> ExperimentPlan:
    experiment = settings.experiments[name]
    kind = get_kind(experiment.kind)
    grid = grid_columns(experiment)
    plan = ExperimentPlan(experiment, grid)
    for other in sorted(Path(root, "trials").glob(f"kind=*/experiment={name}")):
        if (
            other.name
            and other.parent.name != f"kind={experiment.kind}"
            and any(other.glob("*.parquet"))
        ):
            raise StoreError(
                f"{other}: experiment {name!r} was stored as {other.parent.name}, the config now "
                f"says kind={experiment.kind}; rename the experiment or move that folder away"
            )
    done = np.zeros(grid.size, dtype=bool)
    extendable = []  # stored chunks with fewer trials than the config asks for: topped up below
    usable: list[tuple[int, int, Path, Meta, np.ndarray]] = []
    # through the inventory: a second copy of a chunk is named, never counted
    for path, meta in parquet.experiment_inventory(root, experiment.kind, name):
        spec = json.loads(meta["spec"])
        if spec.get("params") != list(kind.param_names) or not meta.get("chunk"):
            ChunkSpec.from_json(meta["spec"])  # the one-line error of a damaged spec
        relation = _stored_settings(path, meta, spec, settings, experiment, kind)
        rows = _grid_rows(kind, grid, kind_rows(kind, spec["params"], spec["points"]))
        rows = rows[rows >= 0]
        if relation == TOPUP:
            extendable.append((path, meta["chunk"], rows))
        elif len(rows):
            most = TrialSettings.read({**spec, "seed": meta.get("seed")}).per_point()[1]
            usable.append((-most, len(usable), path, meta, rows))
    _serve(plan, usable, done)
    trial_cap = experiment.trial_settings.cap
    costs = grid_costs(kind, grid, trial_cap, experiment.trial_settings.trials)
    size, budget = chunk_limits(settings, grid.size, float(costs.point_work.sum()), trial_cap)
    for path, old, rows in extendable:  # a top-up per stored chunk: its points, more trials
        rows = rows[~done[rows]]
        if len(rows):
            ids = grid.ids(rows)
            for start, end in chunk_bounds(costs.point_work[rows], size, budget):
                chunk = topup_id(chunk_id(ids[start:end]), experiment.trial_settings)
                plan.chunk_by_id[chunk] = Chunk(
                    chunk,
                    chunk_cost(kind, costs, rows[start:end], trial_cap),
                    rows=rows[start:end],
                    extends=old,
                )
                plan.pending.append(chunk)
            done[rows] = True
        plan.replaced.append(path)
    plan.done_points = int(done.sum()) - sum(plan.cost(c).points for c in plan.pending)
    todo = np.flatnonzero(~done)
    # nothing done (a new sweep): the costs themselves, not an 80 MB copy of 10^7 of them
    work = costs.point_work if len(todo) == grid.size else costs.point_work[todo]
    for start, end in chunk_bounds(work, size, budget):
        rows = todo[start:end]
        # ids chunk by chunk: 10^7 points' ids at once were ~1 GB of Python strings
        chunk = chunk_id(grid.ids(rows))
        plan.chunk_by_id[chunk] = Chunk(chunk, chunk_cost(kind, costs, rows, trial_cap), rows=rows)
        plan.pending.append(chunk)
    return plan


def _serve(
    plan: ExperimentPlan, usable: list[tuple[int, int, Path, Meta, np.ndarray]], done: np.ndarray
) -> None:
    """Which stored chunks serve the plan's points (marked in `done`). The chunk holding the most
    trials of a point serves it, so that after a rollback to fewer trials (a decide interrupted
    or reset) a finished top-up is read, not recomputed: the chunk it extends is then replaced
    once all of its points are served by its top-ups. Where only some are (the top-up was
    interrupted), the chunk itself serves its points and the finished top-ups wait on disk,
    unread, for the run that asks for their trials again."""
    owner = np.full(len(done), -1, dtype=np.int64)
    chosen: dict[int, tuple[Path, Meta, np.ndarray]] = {}
    waiting = []
    for index, (_, _, path, meta, rows) in enumerate(sorted(usable, key=lambda u: (u[0], u[1]))):
        taken = owner[rows] >= 0
        if not taken.any():
            chosen[index], owner[rows] = (path, meta, rows), index
        elif taken.all():
            plan.replaced.append(path)
        else:
            waiting.append((index, path, meta, rows))
    for index, path, meta, rows in waiting:  # whole chunks before parts of their top-ups
        for other in set(owner[rows].tolist()) - {-1}:
            owner[chosen.pop(other)[2]] = -1
        if (owner[rows] < 0).all():
            chosen[index], owner[rows] = (path, meta, rows), index
    for _, meta, rows in chosen.values():
        chunk = meta.get("chunk") or ChunkSpec.from_json(meta["spec"]).id
        plan.chunk_by_id[chunk] = Chunk(chunk, None, spec_text=meta["spec"])
        done[rows] = True


def _stored_settings(
    path: Path,
    meta: Meta,
    spec: dict[str, Any],
    settings: Settings,
    experiment: Experiment,
    kind: Kind,
) -> str:
    """How a stored chunk (same seed and algorithm version) serves the config's trial settings
    (`TrialSettings.relation`): SAME, COVERS (more trials stored than asked: read, never
    dropped) or TOPUP (more asked: only the missing blocks computed,
    `attnsim.jobs.simulate.simulate_points`); otherwise the rows would mix: one line, nothing
    runs."""
    asked = experiment.trial_settings
    stored = TrialSettings.read({**spec, "seed": meta.get("seed")})
    same_algorithm = meta.get("algorithm_version") == kind.algorithm_version
    relation = asked.relation(stored) if same_algorithm else None
    if relation is not None:
        return relation
    raise StoreError(
        f"{path.parent}: stored with {_old_settings(meta)}; the config asks for {asked.text()} "
        f"trials per point, seed {settings.seed}, algorithm version {kind.algorithm_version}: the "
        "rows would mix. Keep the stored settings, or give the experiment another name (or move "
        "that folder away) and rerun"
    )


def chunk_limits(
    settings: Settings, points: int, total_work: float, trial_cap: int
) -> tuple[int, float]:
    """(most points, cost budget) of an experiment's chunks. Jobs are sized by cost: the whole
    grid's estimated work (done or not, so the cut does not depend on progress) in ceil(work / job)
    chunks of even cost, a job being `job_minutes` of estimated CPU time; a chunk also holds at most
    MAX_CHUNK_ROWS trial rows. `chunk_size`, if set, is one more upper bound on points, and then a
    chunk also stays under MAX_CHUNK_COST_RATIO times its experiment's average chunk."""
    job = settings.job_minutes * 60
    budget = total_work / max(1, math.ceil(total_work / job)) if total_work > 0 else math.inf
    size = max(1, MAX_CHUNK_ROWS // trial_cap)
    if settings.chunk_size:
        size = min(size, settings.chunk_size)
        budget = min(
            budget, MAX_CHUNK_COST_RATIO * total_work / math.ceil(points / settings.chunk_size)
        )
    return size, budget


def plan_all(settings: Settings, root: Path) -> dict[str, ExperimentPlan]:
    """Read-only: planning never writes (dry runs, `attnsim show`); the run writes the pending
    chunks' spec files (`write_specs`) and sweeps dead writers' temp files."""
    return {name: plan_experiment(settings, name, root) for name in settings.experiments}


def pending_chunks(plans: Mapping[str, ExperimentPlan]) -> int:
    return sum(len(p.pending) for p in plans.values())


# --- spec files: how a job learns its chunk without planning the sweep ---------------------------


def spec_path(results: Path, experiment: str, chunk: str) -> Path:
    return Path(results) / "plan" / experiment / f"chunk-{chunk}.json"


def experiment_spec_path(results: Path, experiment: str) -> Path:
    """The experiment's settings (`experiment_json`), for its collect job (not on a command
    line)."""
    return Path(results) / "plan" / experiment / "experiment.json"


def experiments_spec_path(results: Path) -> Path:
    """Experiment name -> kind of the sweep, for the claims job."""
    return Path(results) / "plan" / "experiments.json"


def run_spec_path(results: Path) -> Path:
    """The run's config hash and seed (`run_json`), for the claims job's provenance (run.json
    beside it is the progress file)."""
    return Path(results) / "plan" / "provenance.json"


def boundaries_spec_path(results: Path) -> Path:
    """The sweep's boundaries with the experiments they extend, for the locate rounds' jobs."""
    return Path(results) / "plan" / "boundaries.json"


def boundaries_json(settings: Settings) -> str:
    """The config's `boundaries:` entries and every experiment's settings (`Experiment.config`):
    all a locate round needs (`report.boundaries.plan_settings` reads it back), and the CPU class
    its budgets are priced on (`DESIGN_CLASS`): the workflow's rounds take this text as a param,
    so a change of any of it reruns them (a workspace located before the class was fixed
    included; on the class itself the rerun reads its stored points and computes nothing)."""
    experiments = {name: e.config() for name, e in settings.experiments.items()}
    data = {
        "seed": settings.seed,
        "experiments": experiments,
        "boundaries": settings.boundaries,
        "priced_on": DESIGN_CLASS,
    }
    return json.dumps(data, sort_keys=True)


def drawn_boundaries(settings: Settings) -> dict[str, list[str]]:
    """Experiment -> the config's boundaries (by name) a figure of it draws: the figure its
    claim's kind names for the claim (`Kind.presentation.boundary_figures`), where the boundary's
    experiment (its entry's, else the kind's one declared grid, as `attnsim locate` resolves it)
    draws that figure. Its figures job then waits for those boundaries; every other starts after
    its summary. From the kinds' records alone: the DAG build imports no claims code."""
    from attnsim.kinds import all_kinds

    shown = {
        claim: (kind.name, figure)
        for kind in all_kinds().values()
        for claim, figure in kind.presentation.boundary_figures.items()
    }
    drawn: dict[str, list[str]] = {}
    for name, entry in sorted(settings.boundaries.items()):
        if entry.get("claim") not in shown:
            continue
        kind, figure = shown[entry["claim"]]
        grids = [n for n, e in settings.experiments.items() if e.kind == kind and e.role == GRID]
        experiment = entry.get("experiment") or (grids[0] if len(grids) == 1 else None)
        if experiment not in grids:  # none, or not one of the kind's grids: the rounds say so
            continue
        columns = grid_columns(settings.experiments[experiment]).values
        if figure in get_kind(kind).figures_for(columns):
            drawn.setdefault(experiment, []).append(name)
    return drawn


def run_json(settings: Settings) -> str:
    return json.dumps({"config_hash": settings.config_hash, "seed": settings.seed}, sort_keys=True)


def write_experiment_specs(settings: Settings, results: Path) -> None:
    """Each experiment's settings, the sweep's name -> kind map and the run's config hash, as
    files for the jobs that need them (at a run's start; a file that already says the same is
    left alone)."""
    texts = {
        experiment_spec_path(results, name): experiment_json(settings, name)
        for name in settings.experiments
    }
    texts[experiments_spec_path(results)] = experiments_json(settings)
    texts[run_spec_path(results)] = run_json(settings)
    if settings.boundaries:
        texts[boundaries_spec_path(results)] = boundaries_json(settings)
    for path, text in texts.items():
        try:
            if path.read_text() == text:
                continue
        except OSError:
            pass
        files.write_text(path, text, fsync=False)


def write_specs(
    plans: Mapping[str, ExperimentPlan],
    results: Path,
    threads: int = 1,
    run: str | None = None,
    rerun: Collection[tuple[str, str]] = (),
) -> int:
    """Write each pending chunk's spec (the threads its job was planned with and `run`, the token
    of the run that writes it: `attnsim.store.lock`) to its spec file, atomically; a file that
    already says the same is left alone. `rerun`: (experiment, chunk) of finished chunks the run
    computes again all the same (Snakemake's `--rerun-incomplete`), whose spec files must name
    this run too. Returns how many were written."""
    written = 0
    for plan in plans.values():
        again = sorted(c for e, c in rerun if e == plan.name and c in plan.chunk_by_id)
        for chunk in dict.fromkeys([*plan.pending, *again]):
            path = spec_path(results, plan.name, chunk)
            text = plan.spec(chunk).to_json(threads=threads, run=run)
            try:
                if path.read_text() == text:
                    continue
            except OSError:
                pass
            files.write_text(path, text, fsync=False)  # atomic: a job never reads half a spec
            written += 1
    return written


def experiments_json(settings: Settings) -> str:
    """The sweep's experiment name -> kind map as JSON (`Settings.kinds`), the claims job's file."""
    return json.dumps(settings.kinds(), sort_keys=True)


def experiment_json(settings: Settings, name: str) -> str:
    """The experiment's own settings as JSON (`Experiment.to_json`)."""
    return settings.experiments[name].to_json()


def remove_replaced(
    plans: Mapping[str, ExperimentPlan], root: Path, rerun: Collection[Path] = ()
) -> list[Path]:
    """Delete the stored chunks that top-ups replaced, each only once it is proved superseded:
    every one of its points is held by a top-up of it (its provenance's `topped_up`) that is in
    the plan, whole (every byte checked: `parquet.verify_file`) and not about to be computed
    again (`rerun`: chunk files Snakemake will replace in this run). Called at a run's start, for
    an interrupted run's leftovers, and at its end. A chunk not proved superseded stays (queries
    read only one of the two, `integrity.current_chunks`): a rerun never deletes computed trials
    whose replacement a dead run's job, or Snakemake's `--rerun-incomplete`, may yet take away.
    Returns the files removed."""
    removed = []
    for plan in plans.values():
        if not plan.replaced:
            continue
        tops = _top_ups(plan, root, {Path(p) for p in rerun})
        for path in plan.replaced:
            if _superseded(path, tops.get(path.stem.removeprefix("chunk-"), [])):
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def _top_ups(plan: ExperimentPlan, root: Path, rerun: set[Path]) -> dict[str, list[Path]]:
    """Replaced chunk id -> the files of the plan's chunks that top it up, as stored now (those
    about to be computed again left out)."""
    out: dict[str, list[Path]] = {}
    folder = parquet.experiment_dir(root, "trials", plan.kind, plan.name)
    for chunk in plan.chunk_by_id:
        path = folder / f"chunk-{chunk}.parquet"
        if path in rerun or not path.exists():
            continue
        try:
            meta = parquet.read_meta(path)
        except StoreError:
            continue
        old = (meta.get("topped_up") or {}).get("chunk")
        if old is not None and meta.get("chunk") == chunk:
            out.setdefault(old, []).append(path)
    return out


def _superseded(path: Path, tops: list[Path]) -> bool:
    """Whether every point of the chunk file `path` is in one of `tops`, each whole."""
    try:
        old = ChunkSpec.from_json(parquet.read_meta(path)["spec"])
        need = set(row_ids(old.kind, old.rows))
        for top in tops:
            spec = ChunkSpec.from_json(parquet.read_meta(top)["spec"])
            held = need.intersection(row_ids(spec.kind, spec.rows))
            if held:
                parquet.verify_file(top)
                need -= held
    except (AttnsimError, KeyError):  # unreadable either side: nothing is proved
        return False
    return not need
