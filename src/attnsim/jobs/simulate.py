"""Run one chunk of grid points: trial blocks -> per-trial table -> the store.

Each point's trials are cut into fixed blocks (`Kind.block_trials`), each block
drawing from its own generator, and points that share a stream are computed
from the same draws. Blocks may run on several threads (numpy releases the GIL in
samplers, ufuncs and matrix products); BLAS is pinned to one thread whatever the
thread count, so every matrix product is computed the same way. The numbers do not
depend on the thread count, the chunk or the order of execution.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import os
import resource
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np
import pyarrow as pa
from threadpoolctl import threadpool_limits

from attnsim.jobs import validate
from attnsim.kinds.base import Kind
from attnsim.models import assets
from attnsim.records import cpu
from attnsim.records.chunk import ChunkSpec
from attnsim.records.experiment import TrialSettings
from attnsim.records.grid import Point
from attnsim.seeding import block_generator
from attnsim.store import arrays, lock, parquet

log = logging.getLogger(__name__)


def round_blocks(kind: Kind, params, trials: int) -> list[int]:
    """Sizes of the blocks of one round of `trials` trials: an even split into blocks of at most
    `kind.block_trials`. Every round has the same layout, so a point's first k rounds are the
    same numbers however many rounds it finally gets."""
    count = math.ceil(trials / kind.block_trials(params))
    size = math.ceil(trials / count)
    return [size] * (count - 1) + [trials - size * (count - 1)]


def standard_error(values: np.ndarray) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(values.size)) if values.size > 1 else math.inf


def stored_blocks(kind: Kind, params, trials: int, rows: int) -> set[tuple[int, int, int]]:
    """(block index, first trial, trials) of the blocks a point's first `rows` stored trials came
    from, drawn in rounds of `trials` (`simulate_points`): what a top-up may reuse."""
    sizes = round_blocks(kind, params, trials)
    blocks, offset = set(), 0
    for round_ in range(rows // trials):
        for j, count in enumerate(sizes):
            blocks.add((round_ * len(sizes) + j, offset, count))
            offset += count
    return blocks


def reusable_rounds(kind: Kind, params, trials: int, blocks: set[tuple[int, int, int]]) -> int:
    """How many whole rounds of `trials` a point's stored blocks (`stored_blocks`) hold, as this
    round size lays them out: those a top-up reads instead of computing."""
    sizes = round_blocks(kind, params, trials)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rounds = 0
    while all(
        (rounds * len(sizes) + j, rounds * trials + int(starts[j]), count) in blocks
        for j, count in enumerate(sizes)
    ):
        rounds += 1
    return rounds


def stored_trials(spec: ChunkSpec, path: Path) -> tuple[dict, ChunkSpec]:
    """The stored trials of `spec`'s points in chunk file `path` as `simulate_points`' `known`,
    and that chunk's spec."""
    old = ChunkSpec.from_json(parquet.read_meta(path)["spec"])
    metrics = [m.name for m in spec.kind.schema.metrics]
    # the ids dictionary-encoded: neither they nor their checksum are decoded row by row (as
    # Python strings they were a third of a boundary round's reads, profiled)
    table = parquet.read_table(path, ["point_id", *metrics], dictionary=["point_id"])
    ids, codes = _id_codes(table.column("point_id"))
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])[: len(codes)]
    ends = np.r_[starts[1:], len(codes)]
    where = {ids[codes[s]]: (int(s), int(e)) for s, e in zip(starts, ends)}
    columns = {m: arrays.to_numpy(table.column(m)) for m in metrics}
    known = {}
    for point in spec.points:
        if point.id in where:
            s, e = where[point.id]
            known[point.id] = (
                {m: columns[m][s:e] for m in metrics},
                stored_blocks(spec.kind, point.params, old.trial_settings.trials, e - s),
            )
    return known, old


def _id_codes(column: pa.ChunkedArray) -> tuple[list[str], np.ndarray]:
    """A dictionary-encoded id column as (distinct ids, each row's index among them): the row
    groups' dictionaries merged, each looked up once."""
    index: dict[str, int] = {}
    parts = []
    for chunk in column.chunks:
        lookup = np.array(
            [index.setdefault(pid, len(index)) for pid in chunk.dictionary.to_pylist()],
            dtype=np.int64,
        )
        parts.append(lookup[arrays.to_numpy(chunk.indices)] if len(lookup) else lookup)
    return list(index), np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def simulate_points(
    kind: Kind,
    settings: TrialSettings,
    points: list[Point],
    threads: int = 1,
    known: dict | None = None,
    stats: dict | None = None,
) -> dict[str, dict[str, np.ndarray]]:
    """point id -> metric -> (trials,) array.

    Trials come in rounds of `settings.trials`, drawn from `settings.seed`. With a
    `settings.target_se`, a point gets more rounds until the standard error of its kind's main
    metric is at most `target_se` or another round would pass `settings.max_trials`: cheap points
    stop early, hard ones get more trials. With `max_trials` alone, every point gets the rounds
    that fit in it (a top-up `attnsim decide` recorded).

    `known`: point id -> (metric -> stored trials, `stored_blocks` of them), rows computed before
    with other settings (a top-up of trials). A block whose every member has it stored (same
    index, first trial and size, hence the same numbers) is read, not computed: the result is
    bit-identical to computing everything. `stats["reused_trials"]` counts the trials read. A
    point keeps at least the rounds it has stored (read, not computed): a top-up never holds
    fewer trials than the chunk it replaces, and a summary reads each point's first rounds as
    its settings ask (`attnsim.jobs.collect`).
    """
    known = known or {}
    seed, trials, target_se = settings.seed, settings.trials, settings.target_se
    max_trials = settings.max_trials
    by_id = {p.id: p for p in points}
    stored = {
        pid: reusable_rounds(kind, by_id[pid].params, trials, blocks) * trials
        for pid, (_, blocks) in known.items()
        if pid in by_id
    }
    limit = max([settings.cap, *stored.values()])
    active: dict[str, list[Point]] = defaultdict(list)
    for point in points:
        active[point.stream].append(point)
    pieces: dict[str, dict[str, list]] = {p.id: defaultdict(list) for p in points}
    reused = [0]

    def run(task):
        stream, members, block, count, offset = task
        if all(m.id in known and (block, offset, count) in known[m.id][1] for m in members):
            reused[0] += count * len(members)
            return [
                {name: values[offset : offset + count] for name, values in known[m.id][0].items()}
                for m in members
            ]
        params = [m.params for m in members]
        output = kind.compute.simulate_block(block_generator(seed, stream, block), count, params)
        validate.check_block(kind, members, count, output)  # shape, dtype, NaN as the kind declares
        return output

    with threadpool_limits(limits=1), ThreadPoolExecutor(threads) as pool:
        for round_ in itertools.count():
            tasks = []
            for stream, members in active.items():
                sizes = round_blocks(kind, members[0].params, trials)
                starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]) + round_ * trials
                tasks += [
                    (stream, members, round_ * len(sizes) + j, count, int(starts[j]))
                    for j, count in enumerate(sizes)
                ]
            for (_, members, _, _, _), per_point in zip(tasks, pool.map(run, tasks)):
                for member, metrics in zip(members, per_point):
                    for name, values in metrics.items():
                        pieces[member.id][name].append(values)
            if (round_ + 2) * trials > limit:
                break
            reach = (round_ + 2) * trials
            active = {
                stream: need
                for stream, members in active.items()
                if (
                    need := [
                        m
                        for m in members
                        if stored.get(m.id, 0) >= reach
                        or (max_trials is not None and reach <= max_trials and target_se is None)
                        or (
                            target_se is not None
                            and reach <= (max_trials or trials)
                            and standard_error(
                                np.concatenate(pieces[m.id][kind.schema.main_metric])
                            )
                            > target_se
                        )
                    ]
                )
            }
            if not active:
                break
    if stats is not None:
        stats["reused_trials"] = reused[0]
    return {
        pid: {name: np.concatenate(parts) for name, parts in metrics.items()}
        for pid, metrics in pieces.items()
    }


def job_startup_seconds() -> tuple[float, float] | None:
    """Seconds since the start of the Snakemake process that runs this job on its node: the
    outermost `snakemake --mode remote|subprocess` among this process's ancestors or, in a SLURM
    job, among the processes of the same job (the plugin's `--mode remote` process starts the
    job step with srun, so it is not an ancestor). From /proc; None for a job of a local run (no
    such process) or where /proc is unavailable. Also when this process started, in seconds
    after that one."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])

        def stat(pid) -> list[str]:
            with open(f"/proc/{pid}/stat") as f:
                text = f.read()
            return text[text.rindex(")") + 2 :].split()

        def is_job_snakemake(pid) -> bool:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
            return any(b"snakemake" in part for part in cmdline[:3]) and b"--mode" in cmdline

        candidates, pid = [], os.getppid()
        while pid > 1:
            fields = stat(pid)
            if is_job_snakemake(pid):
                candidates.append(pid)
            pid = int(fields[1])
        job = os.environ.get("SLURM_JOB_ID")
        if job:
            marker = f"SLURM_JOB_ID={job}".encode()
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/environ", "rb") as environ:
                        if marker in environ.read().split(b"\0") and is_job_snakemake(entry):
                            candidates.append(int(entry))
                except OSError:
                    continue  # ended, or not ours to read
        if not candidates:
            return None
        start = min(int(stat(pid)[19]) for pid in candidates) / ticks  # starttime, field 22 of stat
        return uptime - start, int(stat(os.getpid())[19]) / ticks - start
    except (OSError, ValueError, IndexError):
        return None


JOB_START_NOTE = "the first `snakemake --mode remote|subprocess` process of this job on its node"


def trials_table(kind: Kind, points: list[Point], results: dict) -> pa.Table:
    schema = parquet.trials_schema(kind)
    counts = [len(results[point.id][kind.schema.main_metric]) for point in points]
    columns = {
        "point_id": arrays.repeated([p.id for p in points], counts, schema.field("point_id").type)
    }
    columns["trial"] = arrays.from_numpy(
        np.concatenate([np.arange(c, dtype=np.int64) for c in counts]), pa.int64()
    )
    for name in kind.param_names:
        columns[name] = arrays.repeated(
            [p.params[name] for p in points], counts, schema.field(name).type
        )
    for metric in kind.schema.metrics:
        columns[metric.name] = arrays.from_numpy(
            np.concatenate([results[p.id][metric.name] for p in points]),
            schema.field(metric.name).type,
        )
    return pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema)


def _process_cpu_seconds() -> float:
    """user + sys CPU of this process so far, every thread and the imports included (for the
    benchmarks)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_chunk(
    spec: ChunkSpec,
    output: Path,
    threads: int = 1,
    resources: Path | None = None,
    run: str | None = None,
) -> Path:
    """Simulate the chunk `spec` and write it atomically to `output`. `resources`: where the kind's
    assets are (`attnsim.models.assets.path`); the provenance gets the kind's own fields
    (`Kind.assets.provenance`). `run`: the token of the run whose job this is (its spec file's):
    the file enters the store only while that run holds it (`attnsim.store.lock.commit`), so a
    job that outlived its run never writes into a store a later run is changing."""
    started = time.perf_counter()
    started_cpu = _process_cpu_seconds()
    guard: Callable[[], AbstractContextManager[object]] | None = None
    if run is not None:  # a job of a run that has ended computes nothing
        store_root = Path(output).parents[3]  # <store>/trials/kind=<k>/experiment=<e>/<file>
        lock.check_run(store_root, run, Path(output))
        guard = functools.partial(lock.commit, store_root, run, Path(output))
    if resources is not None:
        assets.set_resources(resources)
    points = list(spec.points)
    log.info(
        "chunk %s: %d points x %d trials of %s/%s on %d thread(s)",
        spec.id,
        len(points),
        spec.trial_settings.trials,
        spec.kind.name,
        spec.experiment,
        threads,
    )
    since = job_startup_seconds()
    if since is not None:
        log.info(
            "chunk %s: first kernel call %.2f s after the job's process started (%s); this process "
            "started at %.2f s",
            spec.id,
            since[0],
            JOB_START_NOTE,
            since[1],
        )
    source: Path | None = None
    known: dict[tuple[int, int, int], dict[str, np.ndarray]] = {}
    topped_up: dict[str, object] = {}
    if spec.extends is not None:  # a top-up: reuse the stored chunk's trial blocks
        source = Path(output).parent / f"chunk-{spec.extends}.parquet"
        known, old_spec = stored_trials(spec, source)
        old = old_spec.trial_settings
        topped_up = {
            "trials": old.trials,
            "target_se": old.target_se,
            "max_trials": old.max_trials,
            "chunk": spec.extends,
        }
    stats: dict = {}
    results = simulate_points(
        spec.kind, spec.trial_settings, points, threads, known=known, stats=stats
    )
    if source is not None:
        topped_up["reused_trials"] = stats["reused_trials"]
        log.info(
            "chunk %s: tops up chunk %s: %d stored trials reused",
            spec.id,
            spec.extends,
            stats["reused_trials"],
        )
    # the kernels' CPU (every thread): what a run's non-kernel share is measured against
    log.info(
        "chunk %s: kernels ran in %.3f s, %.3f CPU-s",
        spec.id,
        time.perf_counter() - started,
        _process_cpu_seconds() - started_cpu,
    )
    table = trials_table(spec.kind, points, results)
    meta = parquet.provenance(
        table="trials",
        experiment=spec.experiment,
        kind=spec.kind.name,
        chunk=spec.id,
        results_key=spec.results_key,
        seed=spec.trial_settings.seed,
        trials=spec.trial_settings.trials,
        algorithm_version=spec.kind.algorithm_version,
        spec=spec.to_json(),
        # the CPU class that computed these rows (docs/usage.md, Reproducibility)
        cpu=cpu.provenance(),
        # the chunk it replaces, its settings, the trials reused
        **({"topped_up": topped_up} if topped_up else {}),
        **(spec.kind.assets.provenance() if spec.kind.assets.provenance else {}),
    )
    parquet.write_atomic(table, output, meta, guard=guard)
    log.info(
        "chunk %s: %d rows written to %s in %.2f s; process CPU %.2f s",
        spec.id,
        table.num_rows,
        output,
        time.perf_counter() - started,
        _process_cpu_seconds(),
    )
    return Path(output)
