"""A boundary's points in the store, and the boundaries of a run (docs/science.md §7.9).

`attnsim.claims.boundary.locate` places points along one axis of a per-point claim and asks for
the claim's statistic on ranges of their trials. This module gives it that statistic for a real
claim (`Points`: the claim's experiment with the axis at new values, the claim's own measure on
the summary `jobs.collect` writes, jackknife pseudo-values for the paired covariances) and keeps
the points in the store (`StoredPoints`): an experiment of role `locate` beside the declared
grid's, named `locate_<name>`, one chunk file per request, written by `jobs.simulate.run_chunk`
as any chunk is (a request for more trials of stored points is an ordinary top-up of their
chunk: only the missing blocks are computed). So its rows are bit-identical to a fresh run at
the same grid and trials, a rerun reads them instead of computing them, and a killed locate
resumes where it stopped. Claims never read them (`Settings.kinds` holds the grids alone).

A run's boundaries (`boundaries:` in the config) are located in rounds (`round_job`): each round
replays the method from the start on the stored points (it is a pure function of what it is
given, so the replay takes the same decisions), stops at the first request the store cannot
serve and writes it to a file for the next round, which computes it; the last round writes the
located boundary. `recompute` replays a recorded boundary from the store alone, for `verify`.
"""

from __future__ import annotations

import json
import textwrap
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnsim.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

EDGE_NAMES = ("upper", "lower", "bound")
GROUPS = 20  # jackknife groups per evaluation: 19 degrees of freedom for the paired covariances
DEFAULT_BUDGET = 0.05  # CPU-hours
TITLE_COLUMNS = 100  # a boundary's own figure: its title's lines at most this long


@dataclass(frozen=True)
class Ask:
    """What to locate, as `attnsim locate`'s options or a config's `boundaries:` entry give it:
    `at` as KEY=VALUE texts, `range` (LO, HI) or None for the experiment's own."""

    claim: str
    axis: str
    edge: str
    at: tuple[str, ...] = ()
    range: tuple[float, float] | None = None
    experiment: str | None = None


# --- what to locate ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    claim: str
    kind: Any  # attnsim.kinds.base.Kind
    spec: Any  # attnsim.claims.engine.ClaimSpec
    experiment: Any  # attnsim.records.experiment.Experiment
    axis: str
    edge: str
    edge_value: float
    fixed: dict[str, Any]
    lo: float
    hi: float


def declared(claim: str) -> tuple[Any, Any]:
    """The kind and the declaration of a claim, by id (one line if there is none)."""
    from attnsim.claims.engine import ClaimSpec
    from attnsim.kinds import all_kinds

    for kind in all_kinds().values():
        for spec in kind.submodule("claims").CLAIMS:
            if isinstance(spec, ClaimSpec) and spec.claim_id == claim:
                return kind, spec
    raise ConfigError(f"{claim}: no claim of that id is declared (`attnsim claims` lists them)")


def edge_value(spec: Any, edge: str) -> float:
    """The value of the named edge of a per-point claim's band."""
    from attnsim.claims.engine import Equivalence, OneSided, PerPoint

    if not isinstance(spec.rule, PerPoint):
        raise ConfigError(
            f"{spec.claim_id}: not judged point by point; locate needs a statistic per point"
        )
    rule = spec.rule.rule
    if isinstance(rule, Equivalence) and edge in ("upper", "lower"):
        sign = 1 if edge == "upper" else -1
        return float(rule.predicted + sign * rule.tolerance)
    if isinstance(rule, OneSided) and edge == "bound":
        return float(rule.bound)
    has = "upper, lower" if isinstance(rule, Equivalence) else "bound"
    raise ConfigError(f"{spec.claim_id}: its band has no {edge} edge (it has: {has})")


def resolve(settings: Any, args: Any) -> Target:
    """The claim, its experiment, the fixed values and the range, from the command line."""
    from attnsim.records.grid import canonical_column_value

    kind, spec = declared(args.claim)
    value = edge_value(spec, args.edge)
    mine = {  # the declared grids of its kind (a `locate` experiment holds located points)
        n: e for n, e in settings.experiments.items() if e.kind == kind.name and e.role == "grid"
    }
    if args.experiment is not None:
        if args.experiment not in mine:
            raise ConfigError(f"--experiment {args.experiment}: no experiment of kind {kind.name}")
        experiment = mine[args.experiment]
    elif len(mine) == 1:
        experiment = next(iter(mine.values()))
    else:
        found = ", ".join(sorted(mine)) or "none"
        raise ConfigError(
            f"{args.claim}: name one of the config's {kind.name} experiments with --experiment "
            f"({found})"
        )
    params = {p.name: p for p in kind.schema.params}
    if args.axis not in params or not _floating(params[args.axis]):
        raise ConfigError(f"--axis {args.axis}: not a real-valued parameter of {kind.name}")
    fixed: dict[str, Any] = {}
    for item in args.at:
        key, sep, text = item.partition("=")
        if not sep or key not in params or key == args.axis:
            raise ConfigError(
                f"--at {item}: expected KEY=VALUE for another parameter of {kind.name}"
            )
        fixed[key] = _at_value(item, params[key], text)
    grid = experiment.grid
    missing = []
    for name in kind.param_names:
        if name == args.axis or name in fixed:
            continue
        values = grid.get(name, [params[name].default])
        if len(values) == 1:
            fixed[name] = canonical_column_value(params[name], values[0])
        else:
            missing.append(name)
    if missing:
        raise ConfigError(
            f"give --at for {', '.join(missing)}: the experiment {experiment.name} has several "
            "values of each (one value, or a list [a, b, ...] the claim's statistic is taken "
            "over)"
        )
    if args.range is not None:
        lo, hi = (float(v) for v in args.range)
    else:
        lo, hi = float(min(grid[args.axis])), float(max(grid[args.axis]))
    if not lo < hi:
        raise ConfigError(f"--range {lo:g} {hi:g}: LO must be below HI")
    param = params[args.axis]
    low_bound = param.minimum if param.minimum is not None else param.exclusive_minimum
    if (low_bound is not None and lo < low_bound) or (
        param.maximum is not None and hi > param.maximum
    ):
        raise ConfigError(f"--range {lo:g} {hi:g}: outside {args.axis}'s bounds")
    ordered = {n: fixed[n] for n in kind.param_names if n in fixed}
    return Target(args.claim, kind, spec, experiment, args.axis, args.edge, value, ordered, lo, hi)


def _at_value(item: str, param: Any, text: str) -> Any:
    """The value of `--at KEY=VALUE`: one value of the parameter, or a list of two or more (a
    group: each located point is the grid points at every value of the list, for a claim whose
    statistic is taken over them, e.g. the best temperature of a setting; sorted, so the same
    group is the same question)."""
    import yaml

    from attnsim.records.grid import canonical_column_value

    try:
        value = yaml.safe_load(text)
        if not isinstance(value, list):
            return canonical_column_value(param, value)
        group = sorted({canonical_column_value(param, v) for v in value})
    except (ValueError, TypeError, yaml.YAMLError):
        raise ConfigError(f"--at {item}: not a value of {param.name}") from None
    if len(group) < 2:
        raise ConfigError(f"--at {item}: a list names two or more values of {param.name}")
    return tuple(group)


def grouped(target: Target) -> dict[str, tuple[Any, ...]]:
    """The parameters each located point takes several values of (`--at KEY=[a, b, ...]`)."""
    return {k: v for k, v in target.fixed.items() if isinstance(v, tuple)}


def _floating(param: Any) -> bool:
    """An axis x* can lie anywhere on (an integer axis, e.g. n, is not located here: its points
    would have to be integers)."""
    import pyarrow as pa

    return bool(pa.types.is_floating(param.type))


# --- the statistic at new values of the axis ---------------------------------------------------


class Points:
    """`evaluate(x, start, stop)` and `cost(x, start, stop)` of `claims.boundary` for a target."""

    def __init__(self, target: Target, groups: int = GROUPS, threads: int = 1) -> None:
        self.target, self.groups, self.threads = target, groups, threads
        self.quantum = int(target.experiment.trial_settings.trials)

    def grid(self, x: np.ndarray) -> Any:
        from attnsim.records.experiment import Experiment, TrialSettings
        from attnsim.records.grid import grid_columns

        t = self.target
        values = {name: list(v) if isinstance(v, tuple) else [v] for name, v in t.fixed.items()}
        values[t.axis] = [float(v) for v in x]
        experiment = Experiment(
            name=t.experiment.name,
            kind=t.kind.name,
            grid={n: values[n] for n in t.kind.param_names},
            trial_settings=TrialSettings(t.experiment.trial_settings.seed, self.quantum),
        )
        return grid_columns(experiment)

    def points(self, x: np.ndarray) -> tuple[Any, list[Any]]:
        from attnsim.records.grid import points_from_rows

        grid = self.grid(x)
        return grid, points_from_rows(self.target.kind, grid.rows())

    def trials(self, points: list[Any], start: int, stop: int) -> dict[str, dict[str, np.ndarray]]:
        """Point id -> metric -> trials [start, stop): rounds start/q .. stop/q - 1 of rounds of q
        = the experiment's trials, each block from the generator `jobs.simulate` gives it."""
        return simulate_rounds(
            self.target.kind,
            self.target.experiment.trial_settings.seed,
            self.quantum,
            points,
            start,
            stop,
            self.threads,
        )

    def evaluate(self, x: np.ndarray, start: int, stop: int) -> Any:
        """The statistic at `x` on trials [start, stop), as jackknife pseudo-values over `groups`
        runs of consecutive trials: the statistic on all of them (`statistic`) and with each
        group left out.

        The trials go into one table, point ids dictionary-encoded, and each leave-one-out
        table is slices of it (no copy): the same rows in the same order as `statistic` builds
        from the kept trials, so the same summary bit for bit (the summary reads the ids and the
        metrics, not the trial numbers; tests/report compares them). Building a table and
        encoding its ids per group was half of a final round's CPU outside its kernels."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from attnsim.claims.boundary import Evaluation
        from attnsim.jobs.simulate import trials_table

        kind = self.target.kind
        grid, points = self.points(x)
        results = self.trials(points, start, stop)
        count = stop - start
        if any(len(results[p.id][kind.schema.main_metric]) != count for p in points):
            raise ValueError(f"not {count} trials at every point")
        groups = max(2, min(self.groups, count))
        cuts = np.array_split(np.arange(count), groups)
        table = trials_table(kind, points, results)
        at = table.schema.get_field_index("point_id")
        table = table.set_column(at, "point_id", pc.dictionary_encode(table["point_id"]))
        whole = self.measured(grid, table, x)
        pseudo = np.empty((len(x), groups))
        for g, cut in enumerate(cuts):
            lo, hi = int(cut[0]), int(cut[-1]) + 1
            pieces = [
                table.slice(i * count + a, b - a)
                for i in range(len(points))
                for a, b in ((0, lo), (hi, count))
                if b > a
            ]
            kept = pa.concat_tables(pieces)
            pseudo[:, g] = groups * whole - (groups - 1) * self.measured(grid, kept, x)
        return Evaluation.of_values(pseudo)

    def statistic(
        self, grid: Any, points: list[Any], results: dict, keep: np.ndarray, x: np.ndarray
    ) -> np.ndarray:
        """The claim's per-point value on the kept trials, in the order of `x`: its measure on
        the summary `jobs.collect` writes for them."""
        from attnsim.jobs.simulate import trials_table

        kept = {pid: {m: v[keep] for m, v in metrics.items()} for pid, metrics in results.items()}
        return self.measured(grid, trials_table(self.target.kind, points, kept), x)

    def measured(self, grid: Any, table: Any, x: np.ndarray) -> np.ndarray:
        """The claim's per-point value on a table of trials, in the order of `x`."""
        import numpy as np

        from attnsim.jobs.collect import summarise_chunks

        t = self.target
        rows = summarise_chunks(t.kind, t.experiment.name, grid, [table]).to_pandas()
        estimate = t.spec.measure(rows)
        values = estimate.points["value"].to_numpy(dtype=np.float64)
        if values.size != len(x):
            raise ConfigError(
                f"{t.claim}: its measure gave {values.size} values for {len(x)} points"
            )
        # one value per located point: a row per point, or (a group) per the points' setting,
        # which the measure's own table names
        table = estimate.points if grouped(t) else rows
        position = {float(v): i for i, v in enumerate(table.get(t.axis, ()))}
        if len(position) != len(x) or any(float(v) not in position for v in x):
            raise ConfigError(f"{t.claim}: its measure does not give a value at each {t.axis}")
        return np.asarray(values[[position[float(v)] for v in x]])

    def cost(self, x: np.ndarray, start: int, stop: int) -> float:
        """The cost model's expected CPU-seconds of trials [start, stop) at the points `x` (the
        estimate `attnsim plan` bills: `records.cost`), priced on `cost.DESIGN_CLASS` on any
        machine: the budget this is spent against fixes the design, which must not depend on
        where it runs."""
        from attnsim.plan.sweep import grid_costs
        from attnsim.records import cost

        kind = self.target.kind
        trials = stop - start
        costs = grid_costs(kind, self.grid(x), trials, trials, cost.DESIGN_CLASS)
        return float(cost.expected_seconds(cost.chunk_cost(kind, costs, slice(None), trials)))


def simulate_rounds(
    kind: Any,
    seed: int,
    quantum: int,
    points: list[Any],
    start: int,
    stop: int,
    threads: int = 1,
) -> dict[str, dict[str, np.ndarray]]:
    """Trials [start, stop) of each point in rounds of `quantum` (start and stop multiples of it):
    the blocks `jobs.simulate.simulate_points` draws for those rounds, and only those."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    from threadpoolctl import threadpool_limits

    from attnsim.jobs import validate
    from attnsim.jobs.simulate import round_blocks
    from attnsim.seeding import block_generator

    if start % quantum or stop % quantum or not 0 <= start < stop:
        raise ValueError(f"trials [{start}, {stop}) are not whole rounds of {quantum}")
    streams: dict[str, list[Any]] = defaultdict(list)
    for point in points:
        streams[point.stream].append(point)
    tasks = []
    for stream, members in streams.items():
        sizes = round_blocks(kind, members[0].params, quantum)
        for r in range(start // quantum, stop // quantum):
            tasks += [(stream, members, r * len(sizes) + j, count) for j, count in enumerate(sizes)]

    def block(task: tuple) -> list:
        stream, members, index, count = task
        params = [m.params for m in members]
        output = kind.compute.simulate_block(block_generator(seed, stream, index), count, params)
        validate.check_block(kind, members, count, output)
        return list(output)

    pieces: dict[str, dict[str, list[np.ndarray]]] = {p.id: defaultdict(list) for p in points}
    with threadpool_limits(limits=1), ThreadPoolExecutor(threads) as pool:
        for task, output in zip(tasks, pool.map(block, tasks)):
            for member, metrics in zip(task[1], output):
                for name, values in metrics.items():
                    pieces[member.id][name].append(values)
    return {
        pid: {name: np.concatenate(parts) for name, parts in metrics.items()}
        for pid, metrics in pieces.items()
    }


# --- the theory's prediction -------------------------------------------------------------------
# What a kind knows of where its claims' boundaries lie is its science: its claims module may
# declare `boundary_theory(claim, axis, fixed, edge)` (a `theory.delta_boundary.Prediction`-like
# record: x, tolerance, record()) and `boundary_exact(claim, axis, fixed, edge, lo, hi)` (the
# crossing of a statistic whose expectation is known exactly: a dict with x, by (a word for how:
# "quadrature"), method and reason).


def prediction(target: Target) -> Any:
    """The theory's crossing where the claim's kind declares one (`boundary_theory` of its
    claims module), as a declared equivalence claim's prediction; None elsewhere."""
    hook = getattr(target.kind.submodule("claims"), "boundary_theory", None)
    if hook is None or grouped(target):  # a kind's theory is of a single point's statistic
        return None
    return hook(target.claim, target.axis, target.fixed, target.edge_value)


def exact_crossing(target: Target) -> dict[str, Any] | None:
    """The crossing of the claim's expected statistic where its kind knows it exactly, with no
    sampling and no expansion (`boundary_exact` of its claims module): a check beside the located
    boundary (it holds if the kernels and the locating method are right), never a verdict; None
    elsewhere, or where it does not cross in the range."""
    hook = getattr(target.kind.submodule("claims"), "boundary_exact", None)
    if hook is None or grouped(target):
        return None
    return hook(target.claim, target.axis, target.fixed, target.edge_value, target.lo, target.hi)


# --- the points in the store -------------------------------------------------------------------

LOCATE_PREFIX = "locate_"


def experiment_name(name: str) -> str:
    """The store's experiment of role `locate` that holds a boundary's points."""
    return f"{LOCATE_PREFIX}{name}"


class Pending(Exception):
    """A request the store cannot serve and this evaluator may not compute (a round's replay
    reached the next round's points)."""

    def __init__(self, x: Any, start: int, stop: int) -> None:
        super().__init__(f"trials [{start}, {stop}) of {len(x)} points are not stored yet")
        self.x, self.start, self.stop = [float(v) for v in x], int(start), int(stop)


class StoredPoints(Points):
    """`Points` whose trials live in the store, in the experiment `name` of role `locate`: a
    request the store holds is read, one it does not is computed by `jobs.simulate.run_chunk`
    into a chunk file of that experiment (at most `computable` requests; None: any number, else
    `Pending`), as a top-up of the stored chunk holding most of its points.

    The price of a request (`cost`) depends only on the requests made before it in this
    evaluator, never on the store: a point's trials below the most it was asked for are free,
    the rest cost what `attnsim plan` would bill (a new point from trial 0: the store keeps a
    point's rows from its first trial). So a replay on a full store takes the same decisions as
    the run that filled it, and the bill is what a fresh store pays."""

    def __init__(
        self,
        target: Target,
        store: Path,
        name: str,
        groups: int = GROUPS,
        threads: int = 1,
        computable: int | None = None,
    ) -> None:
        super().__init__(target, groups, threads)
        self.store, self.name = Path(store), experiment_name(name)
        self.computable = computable
        self.asked: dict[float, int] = {}  # x -> the most trials asked for so far
        self.computed: list[tuple[list[float], int, int]] = []  # requests computed here
        # (x, start, stop) -> the pseudo-values an earlier round computed from these same rows
        self.known: dict[tuple[tuple[float, ...], int, int], list[list[float]]] = {}
        self.evaluated: list[dict[str, Any]] = []  # every request's, for the next round
        self.listed: dict[Path, frozenset[str]] = {}  # chunk file -> the points it lists

    def evaluate(self, x: np.ndarray, start: int, stop: int) -> Any:
        from attnsim.claims.boundary import Evaluation

        key = (tuple(float(v) for v in x), int(start), int(stop))
        if key in self.known:  # exactly the numbers computed then (JSON keeps floats exactly)
            out = Evaluation.of_values(self.known[key])
        else:
            out = super().evaluate(x, start, stop)
        values = out.values.tolist() if out.values is not None else []
        self.evaluated.append({"x": list(key[0]), "trials": [key[1], key[2]], "values": values})
        for v in x:
            self.asked[float(v)] = max(self.asked.get(float(v), 0), int(stop))
        return out

    def cost(self, x: np.ndarray, start: int, stop: int) -> float:
        import numpy as np

        by_start: dict[int, list[float]] = defaultdict(list)
        for v in x:
            begin = self.asked.get(float(v), 0)
            if begin < stop:
                by_start[begin].append(float(v))
        return sum(
            super(StoredPoints, self).cost(np.array(values), begin, stop)
            for begin, values in sorted(by_start.items())
        )

    def trials(self, points: list[Any], start: int, stop: int) -> dict[str, dict[str, np.ndarray]]:
        if start % self.quantum or stop % self.quantum or not 0 <= start < stop:
            raise ValueError(f"trials [{start}, {stop}) are not whole rounds of {self.quantum}")
        held = self.stored(points)
        main = self.target.kind.schema.main_metric
        short = [p for p in points if p.id not in held or held[p.id][0][main].size < stop]
        if short:
            if self.computable is not None and len(self.computed) >= self.computable:
                x = sorted({float(p.params[self.target.axis]) for p in points})
                raise Pending(x, start, stop)
            self.write(points, stop, held)
            held = self.stored(points)
        return {p.id: {m: v[start:stop] for m, v in held[p.id][0].items()} for p in points}

    def settings(self, stop: int) -> Any:
        from attnsim.records.experiment import TrialSettings

        seed = self.target.experiment.trial_settings.seed
        return TrialSettings(seed, self.quantum, max_trials=stop if stop > self.quantum else None)

    def rows(self, points: list[Any]) -> tuple[tuple[Any, ...], ...]:
        names = self.target.kind.param_names
        return tuple(tuple(p.params[n] for n in names) for p in points)

    def stored(self, points: list[Any]) -> dict[str, tuple[dict[str, np.ndarray], str]]:
        """Point id -> (metric -> its stored trials, the chunk id holding them): of each point,
        the chunk with the most rows, among the chunks drawn with this experiment's seed, round
        size and the kind's algorithm version (others would not be the same numbers).

        A chunk holds the points its spec lists (`run_chunk` writes those): a file whose spec
        lists none of `points` is not read (its provenance alone, once). So a round reads the
        chunks of its own request's points, neither the earlier rounds' chunks nor, to find the
        next request `Pending`, any: all were read per request (profiled: a third of a small
        round's CPU)."""
        from attnsim.jobs.simulate import stored_trials
        from attnsim.records.chunk import ChunkSpec
        from attnsim.store import parquet

        kind = self.target.kind
        wanted = {p.id for p in points}
        held: dict[str, tuple[dict[str, np.ndarray], str]] = {}
        main = kind.schema.main_metric
        for path in parquet.experiment_chunks(self.store, kind.name, self.name):
            if wanted.isdisjoint(self._listed(path)):
                continue
            probe = ChunkSpec(self.name, kind, self.settings(self.quantum), self.rows(points))
            known, _ = stored_trials(probe, path)
            chunk = path.stem.removeprefix("chunk-")
            for pid, (metrics, _blocks) in known.items():
                if pid not in held or metrics[main].size > held[pid][0][main].size:
                    held[pid] = (metrics, chunk)
        return held

    def _listed(self, path: Path) -> frozenset[str]:
        """The ids of the points a chunk file's spec lists; none for a chunk drawn with other
        trial settings or algorithm version. Its provenance alone is read, once."""
        from attnsim.records.chunk import ChunkSpec
        from attnsim.store import parquet

        if path not in self.listed:
            kind = self.target.kind
            meta = parquet.read_meta(path)
            seed = self.target.experiment.trial_settings.seed
            same = (meta.get("seed"), meta.get("trials"), meta.get("algorithm_version")) == (
                seed,
                self.quantum,
                kind.algorithm_version,
            )
            spec = ChunkSpec.from_json(meta["spec"]) if same else None
            self.listed[path] = frozenset(p.id for p in spec.points) if spec else frozenset()
        return self.listed[path]

    def write(self, points: list[Any], stop: int, held: dict) -> None:
        """Trials [0, stop) of `points` into a chunk of the experiment, computed as any chunk is
        (`run_chunk`), topping up the stored chunk that holds most of them."""
        from collections import Counter

        from attnsim.jobs.simulate import run_chunk
        from attnsim.records.chunk import ChunkSpec
        from attnsim.records.grid import canonical_rows
        from attnsim.store import parquet

        kind = self.target.kind
        sources = Counter(held[p.id][1] for p in points if p.id in held)
        extends = sources.most_common(1)[0][0] if sources else None
        rows = tuple(canonical_rows(kind, list(self.rows(points))))
        spec = ChunkSpec(self.name, kind, self.settings(stop), rows, extends)
        path = parquet.chunk_path(self.store, kind.name, self.name, spec.id)
        run_chunk(spec, path, threads=self.threads)
        self.listed.pop(path, None)
        self.computed.append(
            (sorted({float(p.params[self.target.axis]) for p in points}), 0, int(stop))
        )


# --- a run's boundaries ------------------------------------------------------------------------


def ask_of(entry: Any) -> Ask:
    """The Ask of a config's `boundaries:` entry (claim, axis, edge, at, range, experiment)."""
    at = tuple(f"{k}={_text(v)}" for k, v in (entry.get("at") or {}).items())
    span = entry.get("range")
    return Ask(
        claim=str(entry["claim"]),
        axis=str(entry["axis"]),
        edge=str(entry["edge"]),
        at=at,
        range=(float(span[0]), float(span[1])) if span is not None else None,
        experiment=entry.get("experiment"),
    )


def _text(value: Any) -> str:
    import yaml

    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def target_of(settings: Any, name: str, entry: Any) -> Target:
    """The boundary `name` of the config resolved against its claims and experiments; a problem
    is one line naming the entry."""
    try:
        return resolve(settings, ask_of(entry))
    except ConfigError as error:
        text = str(error)
        for option in ("--at", "--range", "--experiment", "--axis"):  # the config's keys
            text = text.replace(option, option[2:])
        raise ConfigError(f"boundaries.{name}: {text}") from None


def check(settings: Any) -> None:
    """Every boundary of the config names a per-point claim, an experiment of its kind, a real
    axis, an edge its band has, fixed values and a range within the axis's bounds (one line for
    the first that does not). The schema checked the types; this needs the kinds' claims, so it
    runs in a command, never in the workflow's DAG build."""
    for name, entry in settings.boundaries.items():
        if experiment_name(name) in settings.experiments:
            raise ConfigError(
                f"boundaries.{name}: its points go to the experiment {experiment_name(name)}, "
                "which the config names too; rename one"
            )
        target_of(settings, name, entry)


def locate_stored(
    settings: Any,
    name: str,
    entry: Any,
    store: Path,
    computable: int | None = None,
    known: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> tuple[Any, StoredPoints, Target]:
    """The boundary `name` located on the store's points (computing at most `computable`
    requests; `known`: the evaluations an earlier round made, `StoredPoints.evaluated`): the
    `Located`, or the `Pending` request the next round computes."""
    from attnsim.claims import boundary

    target = target_of(settings, name, entry)
    points = StoredPoints(target, store, name, computable=computable)
    for item in known:
        key = (tuple(float(v) for v in item["x"]), int(item["trials"][0]), int(item["trials"][1]))
        points.known[key] = item["values"]
    try:
        found: Any = boundary.locate(
            points.evaluate,
            target.edge_value,
            target.lo,
            target.hi,
            float(entry["budget"]) * 3600,
            quantum=points.quantum,
            cost=points.cost,
            target=entry.get("target"),
        )
    except Pending as pending:
        found = pending
    except ValueError as error:
        raise ConfigError(f"boundaries.{name}: {error}") from None
    return found, points, target


def record(name: str, target: Target, found: Any, entry: Any) -> dict[str, Any]:
    """The workspace's record of a located boundary (`claims.boundary.Located.record`), with
    what it was asked and the theory's declared equivalence claim where there is one."""
    from attnsim.claims.engine import equivalence_verdict

    theory = prediction(target)
    context: dict[str, Any] = {
        "name": name,
        "claim": target.claim,
        "axis": target.axis,
        "edge": target.edge,
        "at": {k: _plain(v) for k, v in target.fixed.items()},
        "experiment": target.experiment.name,
        "store_experiment": experiment_name(name),
        "budget_hours": float(entry["budget"]),
    }
    located = found.crossing if found.status == "located" else None
    if theory is not None:
        context["theory"] = theory.record()
        context["theory"]["verdict"] = (
            equivalence_verdict(located.low, located.high, theory.x, theory.tolerance)
            if located is not None
            else "inconclusive"
        )
    exact = exact_crossing(target)
    if exact is not None:
        inside = located is not None and located.low <= exact["x"] <= located.high
        context["exact"] = exact | {"inside": inside}
    return json.loads(json.dumps(found.record(**context), default=_plain))


def _plain(value: Any) -> Any:
    """A YAML-safe value (numpy scalars as Python numbers)."""
    if hasattr(value, "item"):
        return value.item()
    return value


def round_job(
    settings: Any, name: str, store: Path, round_: int, output: Path, previous: Path | None = None
) -> dict:
    """The workflow's round of boundary `name`: the replay computes the one request the last
    round left pending (round 0: the first look), then stops at the next one and writes it to
    `output` for the next round (`status: pending`), or writes the located boundary (`status:
    done`, its record). The file is what the workflow's DAG reads: no claims code there. It
    carries every evaluation so far (`previous`: the last round's file), so a round computes
    the statistic of its own request only; `recompute` computes them all from the store."""
    from attnsim import files

    entry = settings.boundaries[name]
    known = []
    if previous is not None:
        known = json.loads(Path(previous).read_text()).get("evaluations", [])
    found, points, target = locate_stored(settings, name, entry, store, 1, known)
    out: dict[str, Any] = {"boundary": name, "round": round_}
    if isinstance(found, Pending):
        out |= {"status": "pending", "next": {"x": found.x, "trials": [found.start, found.stop]}}
    else:
        out |= {"status": "done", "record": record(name, target, found, entry)}
    out["computed"] = [{"x": x, "trials": [a, b]} for x, a, b in points.computed]
    out["evaluations"] = points.evaluated
    files.write_text(output, json.dumps(out, indent=1, sort_keys=True) + "\n")
    return out


def recompute(settings: Any, name: str, recorded: Any, store: Path) -> list[str]:
    """What no longer follows of a recorded boundary (empty: the store's points give it again,
    bit for bit): replayed from the store alone, nothing computed (`recomputed`)."""
    again = recomputed(settings, name, store)
    return [again] if isinstance(again, str) else differences(name, recorded, again)


def recomputed(settings: Any, name: str, store: Path) -> dict[str, Any] | str:
    """The record of boundary `name` replayed from the store alone, or why it cannot be."""
    entry = settings.boundaries.get(name)
    if entry is None:
        return f"boundary {name}: recorded, but the config no longer declares it"
    try:
        found, _points, target = locate_stored(settings, name, entry, store, computable=0)
    except ConfigError as error:
        return str(error)
    if isinstance(found, Pending):
        return f"boundary {name}: its points are missing from the store ({found})"
    return record(name, target, found, entry)


# Fields a later attnsim adds to a boundary's record from its code alone, never from the store: a
# record written before them (a workspace from an older version) is compared without them.
ADDED_FIELDS = ("exact",)


def differences(name: str, recorded: Any, again: dict[str, Any]) -> list[str]:
    """One line when the recorded boundary is not the recomputed one, naming what changed."""
    again = {k: v for k, v in again.items() if k in recorded or k not in ADDED_FIELDS}
    if again == dict(recorded):
        return []
    keys = sorted(k for k in set(again) | set(recorded) if again.get(k) != recorded.get(k))
    return [f"boundary {name}: no longer follows from the store ({', '.join(keys)} changed)"]


def at_text(at: dict[str, Any]) -> str:
    """Fixed values as `key=value, ...`, a group as `key=[a, b, ...]`."""
    return ", ".join(
        f"{k}=[{', '.join(str(x) for x in v)}]" if isinstance(v, (list, tuple)) else f"{k}={v}"
        for k, v in at.items()
    )


def line(rec: Any) -> str:
    """One line of a recorded boundary, as `attnsim claims`, the report, `verify` and `cite`
    show it beside its claim."""
    at = at_text({k: v for k, v in rec["at"].items() if k != rec["axis"]})
    head = f"boundary {rec['axis']}* ({rec['edge']} edge {rec['edge_value']:.4g}; {at})"
    crossings = rec.get("crossings") or []
    if rec["status"] == "located" and len(crossings) == 1:
        c = crossings[0]
        text = f"{head}: {c['estimate']:.4g} [{c['low']:.4g}, {c['high']:.4g}]"
    else:
        text = f"{head}: {rec['status']}"
    theory = rec.get("theory")
    if theory:
        text += (
            f"; theory {theory['predicted']:.4g} +- {theory['tolerance']:.2g}: {theory['verdict']}"
        )
    exact = rec.get("exact")
    if exact:
        where = "inside" if exact["inside"] else "outside"
        text += f"; exact {exact['x']:.4g} ({exact['by']}), {where} the interval"
    return text


# --- the workflow's files ----------------------------------------------------------------------


@dataclass(frozen=True)
class PlanSettings:
    """What a locate round reads of the sweep (`plan.sweep.boundaries_json`): its experiments and
    boundaries, as `Settings` has them."""

    seed: int
    experiments: dict[str, Any]
    boundaries: dict[str, dict[str, Any]]


def plan_settings(path: Path) -> PlanSettings:
    from attnsim.records.experiment import Experiment

    data = json.loads(Path(path).read_text())
    experiments = {
        name: Experiment.from_json(json.dumps(spec)) for name, spec in data["experiments"].items()
    }
    return PlanSettings(int(data["seed"]), experiments, dict(data["boundaries"]))


def record_rounds(
    workspace: Path, rounds: list[Path], output: Path, drawn: Collection[str] = ()
) -> dict[str, Any]:
    """The workflow's last step of the boundaries: each boundary's last round (`status: done`)
    recorded in the workspace's state record (`WorkspaceState.boundaries`, keyed by name) and
    in `output` (name -> record), which the claims job reads beside the claims. The boundaries
    named in `drawn` are drawn (`draw`) as boundaries/<name>.png beside `output`: those whose
    claim no figure of the run shows (`plan.sweep.drawn_boundaries`); the others are drawn in
    their claim's figure, once."""
    from dataclasses import replace

    from attnsim import files
    from attnsim.records import state

    records = {}
    for path in rounds:
        data = last_round(path)
        records[data["boundary"]] = data["record"]
        if data["boundary"] in drawn:
            figure = Path(output).parent / "boundaries" / f"{data['boundary']}.png"
            draw(data["record"], data.get("evaluations", []), figure)
    current = state.read(workspace)
    state.write(workspace, replace(current, boundaries={**current.boundaries, **records}))
    files.write_text(output, json.dumps(records, indent=1, sort_keys=True) + "\n")
    return records


def last_round(path: Path) -> dict[str, Any]:
    """A boundary's last round's file (`round_job`, `status: done`), as the workflow's located
    file copies it; one line if `path` is not one."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path}: not a located boundary's file ({error})") from None
    if not isinstance(data, dict) or data.get("status") != "done" or "record" not in data:
        raise ConfigError(f"{path}: not a located boundary's last round")
    return data


def located_record(path: Path) -> dict[str, Any]:
    """The record of the boundary a located file holds (`last_round`), for the figure that
    shows its claim (`report.figures.shown_boundaries`)."""
    return dict(last_round(path)["record"])


def recorded(workspace: Path | None) -> dict[str, Any]:
    """The workspace's recorded boundaries, name -> record (none without a workspace)."""
    if workspace is None:
        return {}
    from attnsim.records import state

    return dict(state.read(workspace).boundaries)


def beside(records: Any, claim: str) -> list[str]:
    """The lines of a claim's located boundaries (`line`), to show beside it."""
    return [line(r) for _name, r in sorted(records.items()) if r.get("claim") == claim]


def verify_lines(root: Path) -> list[str]:
    """`verify`'s lines for the workspace's recorded boundaries (the store at `root`, the
    workspace above it): each replayed from the store alone (`recompute`); empty when every one
    still follows."""
    workspace = Path(root).parent
    records = recorded(workspace)
    if not records:
        return []
    plan = workspace / "plan" / "boundaries.json"
    if not plan.is_file():
        return [f"boundaries: recorded in state.yaml, but {plan} (their config) is missing"]
    settings = plan_settings(plan)
    lines = []
    for name, rec in sorted(records.items()):
        if "entry" in rec and name not in settings.boundaries:  # found by `attnsim locate`
            own = PlanSettings(settings.seed, settings.experiments, {name: dict(rec["entry"])})
            kept = {k: v for k, v in rec.items() if k != "entry"}
            lines += recompute(own, name, kept, root)
        else:
            lines += recompute(settings, name, rec, root)
    return lines


def markdown_section(records: Any) -> str:
    """The located boundaries, each under its claim's id, for claims.md and `attnsim claims`."""
    if not records:
        return ""
    lines = ["## Boundaries", "", "Where a per-point claim stops holding (docs/science.md §7.9):"]
    lines.append("")
    for _name, rec in sorted(records.items(), key=lambda item: (item[1]["claim"], item[0])):
        lines.append(f"- **{rec['claim']}**: {line(rec)}")
    return "\n".join(lines) + "\n"


def html_section(records: Any) -> str:
    """The same as `markdown_section`, as an HTML block for claims.html."""
    import html

    if not records:
        return ""
    items = "".join(
        f"<li><b>{html.escape(rec['claim'])}</b>: {html.escape(line(rec))}</li>"
        for _name, rec in sorted(records.items(), key=lambda item: (item[1]["claim"], item[0]))
    )
    return (
        '<section id="boundaries"><h2>Boundaries</h2><p>Where a per-point claim stops holding '
        f"(docs/science.md §7.9):</p><ul>{items}</ul></section>"
    )


# --- `attnsim locate`'s boundaries -------------------------------------------------------------


def command_name(target: Target) -> str:
    """The name of a boundary `attnsim locate` asked for: its claim and a digest of what it was
    asked (axis, edge, fixed values, range), so the same question reuses the same points."""
    from attnsim.seeding import digest

    asked = {
        "claim": target.claim,
        "axis": target.axis,
        "edge": target.edge,
        "at": {k: _plain(v) for k, v in target.fixed.items()},
        "range": [target.lo, target.hi],
        "experiment": target.experiment.name,
    }
    return f"{target.claim[:24]}_{digest(asked)[:12]}"


def record_located(workspace: Path, name: str, target: Target, found: Any, entry: Any) -> str:
    """Record a boundary `attnsim locate` found in the workspace's state record; its name."""
    from dataclasses import replace

    from attnsim.records import state

    current = state.read(workspace)
    rec = record(name, target, found, entry)
    rec["entry"] = entry_of(rec, entry)  # what `verify` replays it from (no config declares it)
    state.write(workspace, replace(current, boundaries={**current.boundaries, name: rec}))
    return name


def entry_of(rec: Any, asked: Any) -> dict[str, Any]:
    """The `boundaries:` entry that asks for a recorded boundary again."""
    at = {k: v for k, v in rec["at"].items() if k != rec["axis"]}
    entry = {"claim": rec["claim"], "axis": rec["axis"], "edge": rec["edge"], "at": at}
    entry |= {"range": list(rec["range"]), "experiment": rec["experiment"]}
    entry |= {"budget": float(asked["budget"])}
    if asked.get("target") is not None:
        entry["target"] = float(asked["target"])
    return entry


# --- the boundary's figure ---------------------------------------------------------------------


def _window(rec: Any, left: float, right: float) -> tuple[float, float]:
    """The x window [left, right] kept within the searched range (a wide interval would
    otherwise show values of the axis that were never looked at, e.g. negative noise), but
    wide enough for the theory's and the exact crossing's marks."""
    lo, hi = rec["range"]
    pad = 0.03 * (hi - lo)
    marks = [lo - pad, hi + pad]
    if rec.get("theory"):
        t = rec["theory"]
        marks += [t["predicted"] - t["tolerance"], t["predicted"] + t["tolerance"]]
    if rec.get("exact"):
        marks.append(rec["exact"]["x"])
    return max(left, min(marks)), min(right, max(marks))


def draw(rec: Any, evaluations: list[dict[str, Any]], png: Path) -> list[Path]:
    """The boundary's figure (`png` and its PDF): the statistic at every located point with its
    95% interval (the first look and placement in grey, the final pair's fresh trials in
    colour), the band's edge, the located boundary with its interval and, where the theory
    predicts it, the prediction with its tolerance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from attnsim.claims.boundary import Evaluation
    from attnsim.figures import style

    final = {tuple(c["final_trials"]) for c in rec.get("crossings") or []}
    with style.theme():
        fig, ax = plt.subplots(figsize=(6.0, 3.6))
        for item in evaluations:
            ev = Evaluation.of_values(item["values"])
            fresh = tuple(item["trials"]) in final
            ax.errorbar(
                item["x"],
                ev.mean,
                yerr=1.96 * ev.se,
                fmt="o" if fresh else ".",
                color="C0" if fresh else "0.55",
                ms=5 if fresh else 4,
                lw=1,
            )
        ax.axhline(rec["edge_value"], color="0.2", lw=0.8, ls=":", label=f"{rec['edge']} edge")
        crossings = rec.get("crossings") or []
        for c in crossings:
            ax.axvspan(c["low"], c["high"], color="C0", alpha=0.2, lw=0)
            ax.axvline(c["estimate"], color="C0", lw=1.2, label="located, 95% interval")
        theory = rec.get("theory")
        if theory:
            x, tol = theory["predicted"], theory["tolerance"]
            ax.axvspan(x - tol, x + tol, color="C3", alpha=0.12, lw=0)
            ax.axvline(x, color="C3", lw=1.2, ls="--", label="theory +- its tolerance")
        exact = rec.get("exact")
        if exact:
            ax.axvline(exact["x"], color="C2", lw=1.2, ls="-.", label=f"exact ({exact['by']})")
        if crossings:
            c = crossings[0]
            half = max(4 * (c["high"] - c["low"]), 0.05 * (rec["range"][1] - rec["range"][0]))
            if theory:
                half = max(
                    half, 1.5 * abs(theory["predicted"] - c["estimate"]) + theory["tolerance"]
                )
            if exact:
                half = max(half, 1.5 * abs(exact["x"] - c["estimate"]))
            left, right = _window(rec, c["estimate"] - half, c["estimate"] + half)
            ax.set_xlim(left, right)
            shown = [
                np.asarray(Evaluation.of_values(e["values"]).mean)[
                    (np.asarray(e["x"]) >= left) & (np.asarray(e["x"]) <= right)
                ]
                for e in evaluations
            ]
            values = np.concatenate([*shown, [rec["edge_value"]]])
            pad = 0.2 * (values.max() - values.min()) + 1e-3
            ax.set_ylim(values.min() - pad, values.max() + pad)
        ax.set_xlabel(rec["axis"])
        ax.set_ylabel(f"{rec['claim']} (per point)")
        # wrapped: a boundary of a kind with many parameters lists them all
        ax.set_title(textwrap.fill(line(rec).split(": ", 1)[0], TITLE_COLUMNS), fontsize=8)
        ax.legend(fontsize=7, loc="best")
        style.lay_out(fig)
        written = style.save(fig, png)
        plt.close(fig)
    return written
