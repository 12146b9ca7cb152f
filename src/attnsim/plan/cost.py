"""Honest resource requests for a chunk job, from its points' sizes (portable: mem_mb, runtime).

Every function takes a chunk's `ChunkCost` (or a `ChunkSpec`, whose `.cost` it is): the planner
computes costs from the grid's columns for thousands of chunks without making their points, and
a job computes the same from the spec it reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

BASE_MB = 400  # python, numpy, pyarrow, threads' stacks
SECONDS_PER_BYTE = 2e-9  # measured order of magnitude: ~0.5 GB/s of working set per core

# Scheduling priorities (Snakemake starts the ready jobs of highest priority first) are each
# job's critical path in seconds: its own expected time plus the jobs that must follow it.
# Long chunks start first (longest-processing-time-first keeps every core busy to the end) and
# a short chunk whose experiment still needs its summary and figures starts before other
# experiments' figures, so no core waits on a last chain of summary -> figures at the end.
TYPICAL_OVERESTIMATE = (
    30  # chunk_work_seconds / measured seconds: median over the default sweep (10-63 by kind)
)
# What a point costs besides its kernels (its blocks' Python calls, its rows in the table and the
# Parquet file): ~0.1 ms measured for the cheapest points (softmax entropy at n = 16: 1,000 points
# of 100 trials, 1 thread),
# in chunk_work_seconds units (x TYPICAL_OVERESTIMATE). It is what a sweep of cheap points costs.
POINT_SECONDS = 1e-4
POINT_WORK = POINT_SECONDS * TYPICAL_OVERESTIMATE
POSTPROCESS_SECONDS = {
    "figures": 3.5,
    "collect": 1.5,
    "claims": 1.0,
}  # measured, default sweep on this project's VMs
PRIORITY = {
    "figures": POSTPROCESS_SECONDS["figures"],
    "collect": POSTPROCESS_SECONDS["collect"] + POSTPROCESS_SECONDS["figures"],
    "claims": POSTPROCESS_SECONDS["claims"],
}


@dataclass(frozen=True)
class ChunkCost:
    """What a chunk's requests depend on."""

    points: int
    trial_cap: int  # the most trials any point can get
    work: float  # chunk_work_seconds: pessimistic CPU-seconds (TYPICAL_OVERESTIMATE x the measured time)
    block_bytes: int  # the largest trial block's working set (block_trials x bytes_per_trial)
    row_columns: int  # columns of a stored row (metrics, parameters, id, trial and partitions)


def _cost(spec) -> ChunkCost:
    return spec if isinstance(spec, ChunkCost) else spec.cost


def chunk_mem_mb(spec, threads: int) -> int:
    cost = _cost(spec)
    rows = cost.points * cost.trial_cap * cost.row_columns * 8
    return int(BASE_MB + math.ceil((threads * cost.block_bytes * 1.5 + 3 * rows) / 2**20))


def chunk_work_seconds(spec) -> float:
    """A pessimistic estimate of a chunk's CPU-seconds (the working set it streams through, per
    stream for the draws and per point for the rest, and each point's fixed cost): 15-50x the
    measured time, but it ranks chunks by cost, within and across kinds."""
    return _cost(spec).work


def expected_seconds(spec) -> float:
    """The chunk's CPU-seconds as the cost model expects them to be measured."""
    return chunk_work_seconds(spec) / TYPICAL_OVERESTIMATE


def chunk_runtime_min(spec, threads: int) -> int:
    """Generous wall-time request in minutes (at least 5, 4x the estimate)."""
    return int(max(5, math.ceil(4 * chunk_work_seconds(spec) / threads / 60)))


def chunk_priority(spec) -> float:
    """A chunk's critical path in seconds: its expected time, then its experiment's summary and figures."""
    return expected_seconds(spec) + PRIORITY["collect"]


def spare_threads(pending_chunks: int, cores: int | None) -> int:
    """Threads per chunk job so that a run with fewer chunks than cores still uses them all:
    cores // chunks (at least 1). `cores` None (a cluster: each job gets its own CPUs) gives 1."""
    if not cores or pending_chunks <= 0:
        return 1
    return max(1, cores // pending_chunks)
