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


def load_trials(paths: list[Path], point_ids: list[str] | None = None) -> pa.Table:
    """Concatenate chunk files (checked), keeping only `point_ids` when given."""
    if not paths:
        raise StoreError("no finished chunks for this experiment yet")
    table = pa.concat_tables([store.read_table(p) for p in paths])
    if point_ids is not None:
        table = table.filter(pc.is_in(table["point_id"], value_set=pa.array(point_ids)))
    return table


def stop_reason(values: np.ndarray, target_se: float | None) -> str:
    if target_se is None:
        return "trials"
    return "target_se" if mean_ci(values)["se"] <= target_se else "max_trials"


def summarise_points(kind_name: str, experiment: str, table: pa.Table, point_order: list[str], target_se: float | None = None) -> pa.Table:
    kind = get_kind(kind_name)
    schema = store.summary_schema(kind_name)
    table = table.sort_by([("point_id", "ascending"), ("trial", "ascending")])
    ids = table["point_id"].to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    bounds = dict(zip(ids[starts], zip(starts, np.r_[starts[1:], len(ids)])))
    missing = [pid for pid in point_order if pid not in bounds]
    if missing:
        raise StoreError(f"{experiment}: {len(missing)} grid point(s) have no trials in the store (first: {missing[0]})")
    columns = {name: table[name].to_numpy(zero_copy_only=False) for name in (*kind.param_names, *(m.name for m in kind.metrics))}
    rows = []
    for pid in point_order:
        lo, hi = bounds[pid]
        params = {name: columns[name][lo].item() if hasattr(columns[name][lo], "item") else columns[name][lo] for name in kind.param_names}
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
    table = load_trials([Path(p) for p in chunk_paths], order)
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
