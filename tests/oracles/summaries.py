"""A grid point's summary written plainly, one point at a time: the definition that the streaming
columnar `attnsim.jobs.collect.summarise_chunks` is tested against (bit for bit), and the summaries
of in-memory trials that some tests draw or judge.

`trials_by_point` gathers each point's trials from chunk tables; `summarise_points` makes one
summary row per point with `attnsim.stats.mean_ci` of each metric.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from attnsim.errors import StoreError
from attnsim.kinds import as_kind
from attnsim.kinds.base import Kind
from attnsim.records.grid import Point
from attnsim.stats import mean_ci
from attnsim.store import parquet as store


def trials_by_point(tables, metrics: list[str]) -> dict[str, dict[str, np.ndarray]]:
    """point id -> metric -> its trials, from chunk tables. A chunk holds each point's trials as
    one run of rows in trial order, so runs of equal ids are found without sorting millions of
    strings, and each table's columns are sliced in place. A point in two runs (stored twice, or
    rows out of order) would be miscounted: StoreError."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for table in tables:
        ids = table["point_id"].combine_chunks()
        runs = pc.run_end_encode(ids)
        ends = runs.run_ends.to_numpy()
        columns = {name: table[name].to_numpy() for name in metrics}
        for pid, lo, hi in zip(
            runs.values.to_pylist(), np.r_[0, ends[:-1]].tolist(), ends.tolist()
        ):
            if pid in out:
                raise StoreError(
                    f"point {pid} has rows in more than one place of the store (stored twice?); "
                    "move the experiment's folder away and rerun"
                )
            out[pid] = {name: values[lo:hi] for name, values in columns.items()}
    return out


def stop_reason(values: np.ndarray, target_se: float | None) -> str:
    if target_se is None:
        return "trials"
    return "target_se" if mean_ci(values)["se"] <= target_se else "max_trials"


def summarise_points(
    kind: Kind | str,
    experiment: str,
    trials: dict[str, dict[str, np.ndarray]],
    points: list[Point],
    target_se: float | None = None,
) -> pa.Table:
    """One summary row per point of `points`, in that order, from `trials_by_point` (other points
    are ignored)."""
    kind = as_kind(kind)
    schema = store.summary_schema(kind)
    missing = [p.id for p in points if p.id not in trials]
    if missing:
        raise StoreError(
            f"{experiment}: {len(missing)} grid point(s) have no trials in the store (first: "
            f"{missing[0]})"
        )
    rows = []
    for point in points:
        pid, params, metrics = point.id, dict(point.params), trials[point.id]
        row = {
            "point_id": pid,
            **params,
            "n_trials": len(metrics[kind.schema.main_metric]),
            "stop_reason": stop_reason(metrics[kind.schema.main_metric], target_se),
        }
        for name in kind.summary_metrics:
            values = metrics[name]
            # a diverged run's +inf/NaN: left out of the mean and counted
            if name in kind.summary.finite_metrics:
                values = values[np.isfinite(values)]
                row[f"{name}_finite"] = int(values.size)
            for suffix, value in mean_ci(values).items():
                row[f"{name}_{suffix}"] = value
        for name in kind.summary.extreme_metrics:
            row[f"{name}_min"], row[f"{name}_max"] = (
                float(np.min(metrics[name])),
                float(np.max(metrics[name])),
            )
        if kind.theory.point is not None:
            row.update(kind.theory.point(params))
        if kind.summary.extra:
            row.update(kind.summary.extra(metrics, params))
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=schema)
