"""Honest resource requests for a chunk job, from its points' sizes (portable: mem_mb, runtime).

A chunk's cost has one definition, `chunk_cost`, over per-point arrays (`PointCosts`): the planner
builds them from the grid's columns for thousands of chunks without making their points, and a
job from the spec it reads (`ChunkSpec.cost`). Every request below is a function of the
`ChunkCost` it returns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from attnsim.kinds.base import MAX_BLOCK_TRIALS, TARGET_BLOCK_BYTES, Kind

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
    # chunk_work_seconds: pessimistic CPU-seconds (TYPICAL_OVERESTIMATE x the measured time)
    work: float
    block_bytes: int  # the largest trial block's working set (block_trials x bytes_per_trial)
    row_columns: int  # columns of a stored row (metrics, parameters, id, trial and partitions)


@dataclass(frozen=True)
class PointCosts:
    """Per point: bytes per trial, passes over them per trial (None: one each), stream codes (any
    labelling), and the cost used to cut chunks (chunk_work_seconds units: a stream's draws, 3
    passes, charged to its first point; the point's own passes to each point)."""

    bytes_per_trial: np.ndarray
    passes: np.ndarray | None
    streams: np.ndarray
    point_work: np.ndarray


def point_costs(
    kind: Kind,
    bytes_per_trial: ArrayLike,
    streams: ArrayLike,
    trial_cap: int,
    passes: ArrayLike | None = None,
) -> PointCosts:
    """`PointCosts` of points in order, from each one's `kind.compute.bytes_per_trial`, stream
    code and `kind.compute.passes_per_trial` (None: one pass each). Few arrays of the points'
    length are made: each of a 10^7-point grid is 80 MB of fresh pages, ~0.2 s to fault in."""
    per_trial = np.asarray(bytes_per_trial, dtype=np.float64)
    streams = np.asarray(streams)
    passes = None if passes is None else np.asarray(passes, dtype=np.float64)
    first = np.ones(len(streams), dtype=bool)
    first[1:] = streams[1:] != streams[:-1]
    # work = per_trial * trial_cap * SECONDS_PER_BYTE * (own + 3 * first) + POINT_WORK, the same
    # operations in the same order, in place (own: passes, or 1 so that the factor is 1 or 4)
    work = per_trial * trial_cap
    work *= SECONDS_PER_BYTE
    if passes is None:
        np.multiply(work, 4.0, out=work, where=first)
    else:
        work *= passes + 3.0 * first
    work += POINT_WORK
    return PointCosts(per_trial, passes, streams, work)


def block_bytes(kind: Kind, bytes_per_trial: np.ndarray) -> np.ndarray:
    """Per point, its largest trial block's working set: `Kind.block_trials` x bytes per trial."""
    block_trials = np.minimum(
        MAX_BLOCK_TRIALS,
        np.maximum(
            1,
            (kind.compute.block_factor * TARGET_BLOCK_BYTES)
            // np.maximum(1, bytes_per_trial).astype(np.int64),
        ),
    )
    return np.asarray(block_trials * bytes_per_trial)


def chunk_cost(
    kind: Kind, costs: PointCosts, rows: np.ndarray | slice, trial_cap: int
) -> ChunkCost:
    """The cost of the chunk of the points at `rows` (positions into `costs`): each stream's draws
    once (at its last point's size) and each point's own work, for `trial_cap` trials."""
    per_trial = costs.bytes_per_trial[rows]
    own = per_trial if costs.passes is None else per_trial * costs.passes[rows]
    streams = costs.streams[rows]
    _, from_end = np.unique(streams[::-1], return_index=True)
    last = np.sort(len(streams) - 1 - from_end)  # summed in position order: labels do not matter
    work = (3 * per_trial[last].sum() + own.sum()) * trial_cap * SECONDS_PER_BYTE
    return ChunkCost(
        len(per_trial),
        trial_cap,
        float(work + POINT_WORK * len(per_trial)),
        int(block_bytes(kind, per_trial).max()),
        len(kind.schema.metrics) + len(kind.schema.params) + 4,
    )


def chunk_mem_mb(cost: ChunkCost, threads: int) -> int:
    rows = cost.points * cost.trial_cap * cost.row_columns * 8
    return int(BASE_MB + math.ceil((threads * cost.block_bytes * 1.5 + 3 * rows) / 2**20))


def chunk_work_seconds(cost: ChunkCost) -> float:
    """A pessimistic estimate of a chunk's CPU-seconds (the working set it streams through, per
    stream for the draws and per point for the rest, and each point's fixed cost): 15-50x the
    measured time, but it ranks chunks by cost, within and across kinds."""
    return cost.work


def expected_seconds(cost: ChunkCost) -> float:
    """The chunk's CPU-seconds as the cost model expects them to be measured."""
    return cost.work / TYPICAL_OVERESTIMATE


def chunk_runtime_min(cost: ChunkCost, threads: int) -> int:
    """Generous wall-time request in minutes (at least 5, 4x the estimate)."""
    return int(max(5, math.ceil(4 * cost.work / threads / 60)))


def chunk_priority(cost: ChunkCost) -> float:
    """A chunk's critical path in seconds: its expected time, then its experiment's summary and
    figures."""
    return expected_seconds(cost) + PRIORITY["collect"]


def spare_threads(pending_chunks: int, cores: int | None) -> int:
    """Threads per chunk job so that a run with fewer chunks than cores still uses them all:
    cores // chunks (at least 1). `cores` None (a cluster: each job gets its own CPUs) gives 1."""
    if not cores or pending_chunks <= 0:
        return 1
    return max(1, cores // pending_chunks)


# The figures and claims jobs, for the bill (they hold the run's last minutes and the store's lock
# as the chunks do). A figures job: the plotting stack's import, then each figure's layout and
# files, then its points: measured ~4 ms per point and figure for kinds that draw point by point
# (a kind of 3 such figures: 2,000 points in 24 CPU-s), so a kind's `figure_points` (what its
# figures draw at most, larger experiments from a sub-grid) costs about FIGURE_SECONDS_AT_CAPACITY
# per figure at that size (kinds that bin their points declare more points for the same time).
FIGURES_IMPORT_SECONDS = 2.5
FIGURE_SECONDS = 1.5
FIGURE_SECONDS_AT_CAPACITY = 40.0
# The claims job: imports and the figures it scales into claims.html (~0.15 s each), then its
# summaries' rows (10^6 points judged in ~1.6 s).
CLAIMS_SECONDS = 3.0
CLAIMS_SECONDS_PER_FIGURE = 0.15
CLAIMS_SECONDS_PER_POINT = 2e-6


def figures_seconds(kind: Kind, drawn: int, figures: int) -> float:
    """Expected CPU-seconds of the figures job of an experiment whose `figures` figures draw
    `drawn` points (its sub-grid's: `attnsim.records.grid.sub_grid`)."""
    per_point = FIGURE_SECONDS_AT_CAPACITY / kind.presentation.figure_points
    return FIGURES_IMPORT_SECONDS + figures * (FIGURE_SECONDS + per_point * drawn)


def claims_seconds(points: int, figures: int) -> float:
    """Expected CPU-seconds of the claims job over `points` summary rows and `figures` figures."""
    return CLAIMS_SECONDS + CLAIMS_SECONDS_PER_FIGURE * figures + CLAIMS_SECONDS_PER_POINT * points
