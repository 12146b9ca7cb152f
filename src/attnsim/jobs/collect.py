"""Per-point summary of an experiment: mean, standard error and 95% interval of each metric,
beside theory."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from attnsim.errors import StoreError
from attnsim.kinds import get_kind
from attnsim.kinds.base import Kind
from attnsim.records.experiment import Experiment, TrialSettings
from attnsim.records.grid import GridColumns, grid_columns
from attnsim.seeding import digest
from attnsim.stats import CONFIDENCE, mean_ci, t_quantile
from attnsim.store import arrays, integrity, parquet

log = logging.getLogger(__name__)


STATS = ("mean", "se", "ci_low", "ci_high")


def mean_ci_rows(x: np.ndarray) -> dict[str, np.ndarray]:
    """`stats.mean_ci` of each row of `x` (points x trials), the same numbers bit for bit: numpy
    reduces each contiguous row with the same pairwise sums as it does a 1-d array. `np.mean` and
    `np.std` spelled out as numpy computes them (the row sums divided by the count; the squared
    deviations from that mean summed and divided by count - 1), so that the sums are taken once:
    a row of a finite sum is finite, the others are checked value by value."""
    count = x.shape[1]
    with np.errstate(invalid="ignore", over="ignore"):
        mean = np.add.reduce(x, axis=1) / count
        finite = np.isfinite(mean)
        if not finite.all():
            odd = np.flatnonzero(~finite)
            finite[odd] = np.isfinite(x[odd]).all(axis=1)
        if count > 1:
            deviation = x - mean[:, None]
            np.multiply(deviation, deviation, out=deviation)
            se = np.sqrt(np.add.reduce(deviation, axis=1) / (count - 1)) / math.sqrt(count)
            del deviation
            half = t_quantile(0.5 + CONFIDENCE / 2, count - 1) * se
        else:
            se = np.full(len(x), math.inf)
            half = math.inf
        low, high = mean - half, mean + half
    se[~finite], low[~finite], high[~finite] = math.inf, mean[~finite], mean[~finite]
    return {"mean": mean, "se": se, "ci_low": low, "ci_high": high}


class FirstTrials:
    """How many of a point's stored trials its summary reads, when the store holds more than the
    config asks for (a rollback to an earlier look of `attnsim decide`, a config lowered): the
    first ones, as a fresh run of the config would draw them. Fixed settings read the rounds that
    fit (`max_trials`, else one round of `trials`); adaptive ones replay their stopping rule over
    the stored rounds (`attnsim.jobs.simulate.simulate_points`): the same rows wherever the round
    sizes agree, and each point's first trials of an independent run otherwise."""

    def __init__(self, settings: TrialSettings) -> None:
        self.trials, self.target_se = settings.trials, settings.target_se
        self.limit = settings.per_point()[1]

    def lengths(self, lengths: np.ndarray, starts: np.ndarray, main: np.ndarray) -> np.ndarray:
        """Per run of rows (`starts`, `lengths`; `main` the kind's main metric), its first
        trials' count."""
        if self.target_se is None:
            return np.minimum(lengths, self.limit)
        from attnsim.jobs.simulate import standard_error

        out = np.minimum(lengths, self.limit)
        for i in np.flatnonzero(lengths > self.trials):
            start, most = int(starts[i]), int(out[i])
            reach = self.trials
            while reach < most and standard_error(main[start : start + reach]) > self.target_se:
                reach += self.trials
            out[i] = min(reach, most)
        return out


def summarise_chunks(
    kind: Kind,
    experiment: str,
    grid: GridColumns,
    tables: Iterable[pa.Table | tuple[pa.Table, bool]],
    target_se: float | None = None,
    digests: dict[str, str] | None = None,
    first: FirstTrials | None = None,
) -> pa.Table:
    """The summary of `grid`'s points (in enumeration order) from chunk tables, one table at a
    time, or from (table, last) pieces of them (`store.read_pieces`: a point's rows may go on
    into the next piece of its file). See `PointSummaries`; `first`: read each point's first
    trials only (`FirstTrials`)."""
    summaries = PointSummaries(kind, experiment, grid, target_se, digests, first)
    for item in tables:
        table, last = item if isinstance(item, tuple) else (item, True)
        summaries.add(table, last)
    return summaries.table()


class PointSummaries:
    """The summary of a grid's points, accumulated piece by piece of the store.

    Memory holds one piece's trials and the summary's columns, never every trial. Each point's
    trials are one run of rows of one chunk; points of equal trial counts are reduced together as
    the rows of a matrix. The same numbers, bit for bit, as the summary's definition point by
    point (tests/oracles/summaries.py; tests compare them).

    Given `digests` (a dict), the theory columns and the content digest of the summary's point_id
    column (put into `digests`, for `store.write_atomic`) are computed in a second thread while
    the pieces are summarised.
    """

    def __init__(
        self,
        kind: Kind,
        experiment: str,
        grid: GridColumns,
        target_se: float | None = None,
        digests: dict[str, str] | None = None,
        first: FirstTrials | None = None,
    ) -> None:
        self.first = first
        self.kind = kind
        self.experiment, self.grid = experiment, grid
        self.target_se, self.digests = target_se, digests
        self.grid_ids = grid.id_array()
        self.index = _GridIndex(self.grid_ids)
        self.helper = ThreadPoolExecutor(1) if digests is not None else None
        self.theory = self.helper.submit(theory_columns, kind, grid) if self.helper else None
        self.ids_digest = (
            self.helper.submit(integrity.column_digest, self.grid_ids) if self.helper else None
        )
        size = len(self.grid_ids)
        self.metrics = [m.name for m in kind.schema.metrics]
        self.finite = [m for m in kind.summary_metrics if m in kind.summary.finite_metrics]
        # Per point: each metric's statistics, extremes and finite count, filled run by run.
        columns = {f"{m}_{s}": np.full(size, math.nan) for m in kind.summary_metrics for s in STATS}
        extremes = ("min", "max")
        columns |= {
            f"{m}_{s}": np.full(size, math.nan)
            for m in kind.summary.extreme_metrics
            for s in extremes
        }
        columns |= {f"{m}_finite": np.zeros(size, dtype=np.int64) for m in self.finite}
        self.columns: dict[str, np.ndarray] = columns
        self.main_se = np.full(size, math.inf)
        self.n_trials = np.zeros(size, dtype=np.int64)
        self.seen = np.zeros(size, dtype=bool)
        self.extra: list | None = [None] * size if kind.summary.extra else None
        self.foreign: dict[str, int] = {}  # ids outside the grid: negative codes of their own
        self.seen_foreign: set[int] = set()  # of the current file
        # A file's last run so far, (codes, values): the next piece may go on with it.
        self.held: tuple[np.ndarray, dict[str, np.ndarray]] | None = None

    def add(self, table: pa.Table, last: bool = True) -> None:
        """Summarise a piece of a chunk file; `last` when it ends its file (else the piece's last
        run is held back, as the next piece may go on with it)."""
        for codes, values in self._whole_runs(table, last):
            self._add_runs(codes, values)
        if last:
            self.seen_foreign.clear()
            # The file's decoding buffers: back to the system at the end of each file (the
            # allocator would keep them and grow; after every piece, the faults of fetching the
            # memory again cost ~1 CPU-s in 10^8 rows).
            pa.default_memory_pool().release_unused()

    def _whole_runs(
        self, table: pa.Table, last: bool
    ) -> list[tuple[np.ndarray, dict[str, np.ndarray]]]:
        """The piece's rows as batches of whole runs of points, the held run in front."""
        codes = _grid_codes(table["point_id"], self.index, self.foreign)
        values = {}
        for name in self.metrics:  # each column as an array, its Arrow copy let go at once
            values[name] = arrays.to_numpy(table[name])
            table = table.drop_columns([name])
        del table
        batches = []
        held, self.held = self.held, None
        if held is not None:  # the held run, with the rows of this piece that go on with it
            going_on = np.flatnonzero(codes != held[0][0])
            k = int(going_on[0]) if len(going_on) else len(codes)
            head = (
                np.concatenate([held[0], codes[:k]]),
                {name: np.concatenate([held[1][name], v[:k]]) for name, v in values.items()},
            )
            codes, values = codes[k:], {name: v[k:] for name, v in values.items()}
            if len(codes) or last:
                batches.append(head)
            else:
                self.held = head
        if len(codes) and not last:  # the piece's last run may go on in the next piece
            cut = int(np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])[-1])
            self.held = codes[cut:].copy(), {name: v[cut:].copy() for name, v in values.items()}
            codes, values = codes[:cut], {name: v[:cut] for name, v in values.items()}
        if len(codes):
            batches.append((codes, values))
        return batches

    def _add_runs(self, codes: np.ndarray, values: dict[str, np.ndarray]) -> None:
        """Rows `codes`, `values`: whole runs of points, each point's trials all here."""
        starts = np.r_[0, np.flatnonzero(codes[1:] != codes[:-1]) + 1]
        ends = np.r_[starts[1:], len(codes)]
        if self.first is not None and len(codes):
            keep = self.first.lengths(ends - starts, starts, values[self.kind.schema.main_metric])
            if (keep < ends - starts).any():
                position = np.arange(len(codes)) - np.repeat(starts, ends - starts)
                kept = position < np.repeat(keep, ends - starts)
                codes, values = codes[kept], {name: v[kept] for name, v in values.items()}
                starts = np.r_[0, np.cumsum(keep)[:-1]].astype(starts.dtype)
                ends = starts + keep
        where = codes[starts]
        self._mark_seen(where)
        self._add_equal_lengths(where, starts, ends - starts, values)
        bounds = zip(where.tolist(), starts.tolist(), ends.tolist())
        runs = [(i, lo, hi) for i, lo, hi in bounds if i >= 0]
        self._add_finite(runs, values)
        if self.extra is not None:
            self._add_extra(runs, values)

    def _mark_seen(self, where: np.ndarray) -> None:
        """Refuse a point met twice (in this batch, before, or foreign in this file)."""
        ours = where[where >= 0]
        theirs = set(where[where < 0].tolist())
        if (
            self.seen[ours].any()
            or len(np.unique(where)) < len(where)
            or not theirs.isdisjoint(self.seen_foreign)
        ):
            raise StoreError(
                "a point has rows in more than one place of the store (stored twice?); move the "
                "experiment's folder away and rerun"
            )
        self.seen[ours] = True
        self.seen_foreign.update(theirs)

    def _add_equal_lengths(
        self,
        where: np.ndarray,
        starts: np.ndarray,
        lengths: np.ndarray,
        values: dict[str, np.ndarray],
    ) -> None:
        """The runs of each length as one matrix: mean, SE, interval and extremes per row."""
        kind, columns = self.kind, self.columns
        for length in np.unique(lengths[where >= 0]):
            chosen = (lengths == length) & (where >= 0)
            at = where[chosen]
            # Every run this long: the column is the matrix, no copy; else gather the runs' rows.
            rows = None if chosen.all() else starts[chosen][:, None] + np.arange(length)
            self.n_trials[at] = length
            main = mean_ci_rows(_runs(values[kind.schema.main_metric], rows, length))
            self.main_se[at] = main["se"]
            for name in kind.summary_metrics:
                if name in self.finite:
                    continue  # over each point's finite trials: `_add_finite`
                stats = (
                    main
                    if name == kind.schema.main_metric
                    else mean_ci_rows(_runs(values[name], rows, length))
                )
                for suffix in STATS:
                    columns[f"{name}_{suffix}"][at] = stats[suffix]
            for name in kind.summary.extreme_metrics:
                block = _runs(values[name], rows, length)
                columns[f"{name}_min"][at] = block.min(axis=1)
                columns[f"{name}_max"][at] = block.max(axis=1)

    def _add_finite(self, runs: list[tuple[int, int, int]], values: dict[str, np.ndarray]) -> None:
        """A diverged run's +inf/NaN: left out of the mean and counted (as summarise_points)."""
        for name in self.finite:
            for i, lo, hi in runs:
                kept = values[name][lo:hi]
                kept = kept[np.isfinite(kept)]
                self.columns[f"{name}_finite"][i] = kept.size
                for suffix, value in mean_ci(kept).items():
                    self.columns[f"{name}_{suffix}"][i] = value

    def _add_extra(self, runs: list[tuple[int, int, int]], values: dict[str, np.ndarray]) -> None:
        """The kind's own summary columns, point by point."""
        assert self.extra is not None and self.kind.summary.extra is not None
        for i, lo, hi in runs:
            params = dict(zip(self.kind.param_names, self.grid.rows(np.array([i]))[0]))
            self.extra[i] = self.kind.summary.extra(
                {name: v[lo:hi] for name, v in values.items()}, params
            )

    def table(self) -> pa.Table:
        """The summary table; every grid point must have had its trials."""
        kind, grid, size = self.kind, self.grid, len(self.grid_ids)
        if not self.seen.all():
            missing = np.flatnonzero(~self.seen)
            raise StoreError(
                f"{self.experiment}: {len(missing)} grid point(s) have no trials in the store "
                f"(first: {self.grid_ids[int(missing[0])].as_py()})"
            )
        schema = parquet.summary_schema(kind)
        summary: dict[str, object] = {"point_id": self.grid_ids, "n_trials": self.n_trials}
        summary |= {
            name: grid.arrow_column(name, schema.field(name).type) for name in kind.param_names
        }
        summary["stop_reason"] = stop_reasons(self.main_se, self.target_se)
        summary |= self.columns
        summary |= self.theory.result() if self.theory else theory_columns(kind, grid)
        if self.helper:
            assert self.digests is not None and self.ids_digest is not None
            self.digests["point_id"] = self.ids_digest.result()
            self.helper.shutdown()
        if self.extra is not None:
            for column in kind.summary.extra_columns:
                summary[column.name] = [e.get(column.name) for e in self.extra]
        for name in schema.names:  # a kind's extra column its summary does not fill stays null
            summary.setdefault(name, [None] * size)
        return pa.Table.from_arrays(
            [arrays.from_values(summary[f.name], f.type) for f in schema], schema=schema
        )


def stop_reasons(main_se: np.ndarray, target_se: float | None) -> pa.Array:
    """Per point why it has its trial count: 'trials' (fixed), else 'target_se' where the main
    metric's SE reached the target and 'max_trials' where the cap came first."""
    if target_se is None:
        return arrays.repeated(["trials"], [len(main_se)], pa.string())
    capped = ~(main_se <= target_se)  # a NaN SE never reached the target
    return arrays.strings(["target_se", "max_trials"]).take(
        arrays.from_numpy(capped.astype(np.int8), pa.int8())
    )


def _runs(column: np.ndarray, rows: np.ndarray | None, length: int) -> np.ndarray:
    return column.reshape(-1, length) if rows is None else column[rows]


def _grid_codes(
    ids: pa.ChunkedArray, index: _GridIndex, foreign: dict[str, int] | None = None
) -> np.ndarray:
    """Per row, the grid index of its point id; ids outside the grid get negative codes of their
    own (in `foreign`, kept across calls). Read as a dictionary column, each distinct dictionary's
    ids are looked up once: the batches of one Parquet row group share its dictionary (a million
    rows, a few thousand ids). A dictionary that is a run of the grid's ids in order (as a chunk's
    points are) is matched in one comparison."""
    foreign = {} if foreign is None else foreign
    parts = []
    dictionary = None
    lookup: np.ndarray = np.zeros(0, dtype=np.int64)
    for piece in ids.chunks:
        if not pa.types.is_dictionary(piece.type):
            piece = pc.dictionary_encode(piece)
        if dictionary is None or not piece.dictionary.equals(dictionary):
            dictionary = piece.dictionary
            run = index.run(dictionary)
            if run is not None:
                lookup = run
            else:
                position = index.position()
                lookup = np.array(
                    [
                        position[pid]
                        if pid in position
                        else foreign.setdefault(pid, -1 - len(foreign))
                        for pid in dictionary.to_pylist()
                    ],
                    dtype=np.int64,
                )
        parts.append(
            lookup[arrays.to_numpy(piece.indices)] if len(lookup) else np.zeros(0, dtype=np.int64)
        )
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


class _GridIndex:
    """Grid indices of point ids. A run of the grid's ids in order (a chunk's row group) is found
    where the last run ended, or by one scan, and checked by one comparison; a dict of every id
    is built only when ids come in another order."""

    def __init__(self, ids: pa.Array) -> None:
        self.ids = ids
        self.next = 0
        self._position: dict[str, int] | None = None

    def position(self) -> dict[str, int]:
        if self._position is None:
            self._position = {pid: i for i, pid in enumerate(self.ids.to_pylist())}
        return self._position

    def run(self, dictionary: pa.Array) -> np.ndarray | None:
        """The grid indices of `dictionary`'s ids when they are grid ids i, i + 1, ... in order
        (each one compared); else None."""
        if not len(dictionary) or dictionary.null_count:
            return None
        first = dictionary[0].as_py()
        size = len(self.ids)
        # a row group's first point often goes on from the last one of the row group before
        start = next(
            (
                g
                for g in (self.next - 1, self.next)
                if 0 <= g < size and self.ids[g].as_py() == first
            ),
            None,
        )
        if start is None and self._position is not None:
            start = self._position.get(first)
        elif start is None:
            hits = np.flatnonzero(arrays.to_numpy(pc.equal(self.ids, dictionary[0])))
            start = int(hits[0]) if len(hits) else None
        if start is None or start + len(dictionary) > size:
            return None
        if not self.ids.slice(start, len(dictionary)).equals(dictionary.cast(self.ids.type)):
            return None
        self.next = start + len(dictionary)
        return np.arange(start, self.next, dtype=np.int64)


def theory_columns(kind: Kind, grid: GridColumns) -> dict[str, Any]:
    """The kind's theory for every grid point, column by column: its `theory_table` over the
    distinct combinations of the parameters it reads, or `theory` once per such combination."""
    names = [c.name for c in kind.theory.columns]
    if not names or kind.theory.point is None:
        return {}
    if kind.theory.table is not None:
        table = kind.theory.table(  # each parameter's distinct values taken by the grid's index
            {
                name: np.asarray(
                    grid.values[name],
                    dtype=object if isinstance(grid.values[name][0], str) else None,
                )[grid.index[name]]
                for name in kind.param_names
            }
        )
        out = {name: np.asarray(table[name]) for name in names}
        # numbers stay arrays (as lists of floats they would cost 32 bytes a value)
        return {n: v if v.dtype == np.float64 else v.tolist() for n, v in out.items()}
    deps, theory = grid.distinct(kind.theory.point)
    codes = grid.codes(deps)[0]
    by_point: dict[str, list[Any]] = {}
    for name in names:
        by_point[name] = np.asarray([t.get(name) for t in theory], dtype=object)[codes].tolist()
    del theory
    return by_point


def first_trials(experiment: Experiment, chunk_paths: list[Path]) -> FirstTrials | None:
    """`FirstTrials` of the experiment's settings when a chunk was stored with other ones (more
    trials than asked: planning's COVERS), else None (every row is read, as it always was)."""
    asked = experiment.trial_settings
    for path in chunk_paths:
        meta = parquet.read_meta(path)
        spec = json.loads(meta.get("spec") or "{}")
        if TrialSettings.read({**spec, "seed": asked.seed}) != asked:
            return FirstTrials(asked)
    return None


def collect(experiment_json: str, chunk_paths: list[Path], output: Path, threads: int = 1) -> Path:
    """Summarise the experiment's current grid from its chunk files into `output` (atomic),
    streaming: a few row groups in memory at a time; with `threads` > 1 the next row group is
    read and checked in a second thread while the current one is summarised."""
    started = time.perf_counter()
    experiment = Experiment.from_json(experiment_json)
    grid = grid_columns(experiment)
    if not chunk_paths:
        raise StoreError("no finished chunks for this experiment yet")
    kind = get_kind(experiment.kind)
    metrics = [m.name for m in kind.schema.metrics]
    # copies of a chunk named, CPU classes counted, before anything is summarised
    inputs = parquet.inputs_provenance(chunk_paths, experiment.name)
    # every column read and checked (`trial` and the parameters too: a flipped bit in a column
    # the summary does not use passed the run), only the point ids and metrics kept
    texts = [p.name for p in kind.schema.params if pa.types.is_string(p.type)]
    tables = parquet.read_pieces(
        chunk_paths,
        ["point_id", *metrics],
        dictionary=["point_id", *texts],
        threads=threads,
        check_all=True,
    )
    digests: dict[str, str] = {}  # of the summary's columns, computed along the way
    summary = summarise_chunks(
        kind,
        experiment.name,
        grid,
        tables,
        experiment.trial_settings.target_se,
        digests=digests if threads > 1 else None,
        first=first_trials(experiment, chunk_paths),
    )
    meta = parquet.provenance(
        table="summary",
        experiment=experiment.name,
        kind=experiment.kind,
        seed=experiment.trial_settings.seed,
        trials=experiment.trial_settings.trials,
        # of the experiment's settings (the run's config_hash is the whole config's, on claims)
        experiment_hash=digest(experiment.config()),
        results_key=experiment.results_key,
        algorithm_version=kind.algorithm_version,
        experiment_config=experiment.to_json(),
        **inputs,  # the chunks' content digests and CPU classes
        **(kind.assets.provenance() if kind.assets.provenance else {}),
    )
    parquet.write_atomic(summary, output, meta, digests=digests)
    log.info(
        "%s: %d points summarised from %d chunk files in %.2f s",
        experiment.name,
        summary.num_rows,
        len(chunk_paths),
        time.perf_counter() - started,
    )
    return Path(output)
