"""Per-point summary of an experiment: mean, standard error and 95% interval of each metric, beside theory."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from attnsim import store
from attnsim.errors import StoreError
from attnsim.grid import expand
from attnsim.kinds import get_kind
from attnsim.seeding import digest
from attnsim.stats import mean_ci

log = logging.getLogger(__name__)


def load_trials(paths: list[Path], columns: list[str] | None = None) -> pa.Table:
    """Concatenate chunk files (each checked), reading only `columns` when given."""
    if not paths:
        raise StoreError("no finished chunks for this experiment yet")
    return pa.concat_tables([store.read_table(p, columns) for p in paths])


def point_rows(ids: pa.ChunkedArray) -> dict[str, tuple[int, int]]:
    """point id -> (first row, end row): chunk files hold each point's trials as one run of rows
    (in trial order), so runs of equal ids are found without sorting millions of strings. A point
    in two runs (stored twice, or rows out of order) would be miscounted: StoreError."""
    bounds: dict[str, tuple[int, int]] = {}
    offset = 0
    for piece in ids.chunks:
        runs = pc.run_end_encode(piece)
        ends = runs.run_ends.to_numpy() + offset
        starts = np.r_[offset, ends[:-1]]
        for pid, lo, hi in zip(runs.values.to_pylist(), starts.tolist(), ends.tolist()):
            if pid in bounds and bounds[pid][1] == lo:  # the run continues across a row group
                lo = bounds[pid][0]
            elif pid in bounds:
                raise StoreError(f"point {pid} has rows in more than one place of the store (stored twice?); move the experiment's folder away and rerun")
            bounds[pid] = (lo, hi)
        offset += len(piece)
    return bounds


def stop_reason(values: np.ndarray, target_se: float | None) -> str:
    if target_se is None:
        return "trials"
    return "target_se" if mean_ci(values)["se"] <= target_se else "max_trials"


def summarise_points(kind_name: str, experiment: str, table: pa.Table, point_order: list[str], target_se: float | None = None) -> pa.Table:
    """One summary row per point of `point_order` from its trials in `table` (other points' rows are ignored)."""
    kind = get_kind(kind_name)
    schema = store.summary_schema(kind_name)
    bounds = point_rows(table["point_id"])
    missing = [pid for pid in point_order if pid not in bounds]
    if missing:
        raise StoreError(f"{experiment}: {len(missing)} grid point(s) have no trials in the store (first: {missing[0]})")
    columns = {m.name: table[m.name].to_numpy() for m in kind.metrics}
    rows = []
    for pid in point_order:
        lo, hi = bounds[pid]
        params = {name: table[name][lo].as_py() for name in kind.param_names}
        metrics = {m.name: columns[m.name][lo:hi] for m in kind.metrics}
        row = {"point_id": pid, **params, "n_trials": int(hi - lo), "stop_reason": stop_reason(metrics[kind.main_metric], target_se)}
        for name in kind.summary_metrics:
            for suffix, value in mean_ci(metrics[name]).items():
                row[f"{name}_{suffix}"] = value
        row.update(kind.theory(params))
        if kind.extra_summary:
            row.update(kind.extra_summary(metrics, params))
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=schema)


def collect(experiment_json: str, chunk_paths: list[Path], output: Path) -> Path:
    """Summarise the experiment's current grid from its chunk files into `output` (atomic)."""
    started = time.perf_counter()
    spec = json.loads(experiment_json)
    points = expand(SimpleNamespace(kind=spec["kind"], grid=spec["grid"]))
    order = [p.id for p in points]
    kind = get_kind(spec["kind"])
    table = load_trials([Path(p) for p in chunk_paths], ["point_id", *kind.param_names, *(m.name for m in kind.metrics)])
    summary = summarise_points(spec["kind"], spec["experiment"], table, order, spec.get("target_se"))
    meta = store.provenance(
        table="summary",
        experiment=spec["experiment"],
        kind=spec["kind"],
        seed=spec["seed"],
        trials=spec["trials"],
        config_hash=digest(spec),
        results_key=store.results_key(spec["kind"], spec["trials"], spec["seed"], spec.get("target_se"), spec.get("max_trials")),
        algorithm_version=get_kind(spec["kind"]).algorithm_version,
        experiment_config=experiment_json,
    )
    store.write_atomic(summary, output, meta)
    log.info("%s: %d points summarised from %d chunk files in %.2f s", spec["experiment"], summary.num_rows, len(chunk_paths), time.perf_counter() - started)
    return Path(output)
