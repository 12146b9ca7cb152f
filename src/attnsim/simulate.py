"""Run one chunk of grid points: trial blocks -> per-trial table -> the store.

Each point's trials are cut into fixed blocks (`Kind.block_trials`), each block
drawing from its own generator, and points that share a stream are computed
from the same draws. Blocks may run on several threads; the numbers do not
depend on the thread count, the chunk or the order of execution.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
from threadpoolctl import threadpool_limits

from attnsim import store
from attnsim.errors import ConfigError
from attnsim.grid import Point, chunk_id, make_point
from attnsim.kinds import get_kind
from attnsim.seeding import block_generator

log = logging.getLogger(__name__)


def chunk_spec(experiment: str, kind: str, seed: int, trials: int, points: list[Point]) -> str:
    """The job's complete input as compact JSON (it is a Snakemake param: a change means a rerun)."""
    names = get_kind(kind).param_names
    return json.dumps(
        {"experiment": experiment, "kind": kind, "seed": seed, "trials": trials, "params": list(names), "points": [[p.params[k] for k in names] for p in points]},
        separators=(",", ":"),
    )


def parse_spec(text: str) -> tuple[dict, list[Point]]:
    try:
        spec = json.loads(text)
        kind = get_kind(spec["kind"])
        if spec["params"] != list(kind.param_names):
            raise ValueError(f"parameters {spec['params']} do not match kind {kind.name}: {list(kind.param_names)}")
        points = [make_point(kind.name, dict(zip(spec["params"], values))) for values in spec["points"]]
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigError(f"chunk spec: {error}") from None
    return spec, points


def simulate_points(kind_name: str, seed: int, trials: int, points: list[Point], threads: int = 1) -> dict[str, dict[str, np.ndarray]]:
    """point id -> metric -> (trials,) array."""
    kind = get_kind(kind_name)
    groups: dict[str, list[Point]] = defaultdict(list)
    for point in points:
        groups[point.stream].append(point)
    tasks = []
    for stream, members in groups.items():
        size = kind.block_trials(members[0].params)
        for block in range(math.ceil(trials / size)):
            tasks.append((stream, members, block, min(size, trials - block * size)))

    def run(task):
        stream, members, block, count = task
        return kind.simulate_block(block_generator(seed, stream, block), count, [m.params for m in members])

    if threads > 1:
        with threadpool_limits(limits=1), ThreadPoolExecutor(threads) as pool:
            outputs = list(pool.map(run, tasks))
    else:
        outputs = [run(task) for task in tasks]

    pieces: dict[str, dict[str, list]] = {p.id: defaultdict(list) for p in points}
    for (stream, members, _, _), per_point in zip(tasks, outputs):
        for member, metrics in zip(members, per_point):
            for name, values in metrics.items():
                pieces[member.id][name].append(values)
    return {pid: {name: np.concatenate(parts) for name, parts in metrics.items()} for pid, metrics in pieces.items()}


def trials_table(experiment: str, kind_name: str, trials: int, points: list[Point], results: dict) -> pa.Table:
    kind = get_kind(kind_name)
    schema = store.trials_schema(kind_name)
    columns: dict[str, list] = {name: [] for name in schema.names}
    for point in points:
        columns["point_id"].append(np.full(trials, point.id, dtype=object))
        columns["trial"].append(np.arange(trials, dtype=np.int64))
        for name in kind.param_names:
            columns[name].append(np.full(trials, point.params[name], dtype=object if isinstance(point.params[name], str) else None))
        for metric in kind.metrics:
            columns[metric.name].append(results[point.id][metric.name])
    arrays = [pa.array(np.concatenate(columns[f.name]), type=f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def run_chunk(spec_text: str, output: Path, threads: int = 1) -> Path:
    """Simulate a chunk described by `spec_text` and write it atomically to `output`."""
    spec, points = parse_spec(spec_text)
    started = time.perf_counter()
    log.info("chunk %s: %d points x %d trials of %s/%s on %d thread(s)", chunk_id(points), len(points), spec["trials"], spec["kind"], spec["experiment"], threads)
    results = simulate_points(spec["kind"], spec["seed"], spec["trials"], points, threads)
    table = trials_table(spec["experiment"], spec["kind"], spec["trials"], points, results)
    meta = store.provenance(
        table="trials",
        experiment=spec["experiment"],
        kind=spec["kind"],
        chunk=chunk_id(points),
        results_key=store.results_key(spec["kind"], spec["trials"], spec["seed"]),
        seed=spec["seed"],
        trials=spec["trials"],
        algorithm_version=get_kind(spec["kind"]).algorithm_version,
        spec=spec_text,
    )
    store.write_atomic(table, output, meta)
    log.info("chunk %s: %d rows written to %s in %.2f s", meta["chunk"], table.num_rows, output, time.perf_counter() - started)
    return Path(output)
