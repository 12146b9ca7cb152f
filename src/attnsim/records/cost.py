"""Honest resource requests for a chunk job, from its points' declared work (portable: mem_mb,
runtime).

A chunk's cost has one definition, `chunk_cost`, over per-point arrays (`PointCosts`): the planner
builds them from the grid's columns for thousands of chunks without making their points, and a
job from the spec it reads (`ChunkSpec.cost`). Every request below is a function of the
`ChunkCost` it returns.

The time model: each kind declares per trial what its kernel does, in the machine's units
(`attnsim.kinds.base.Counts`: normals, exps, flops, casts, bytes, calls; `Compute.counts`). A
CPU class's seconds per unit (one core) and one calibration factor per kind turn them into
CPU-seconds:

    seconds = factor[kind] x (trials x (own + shared once per stream)
                              + blocks x (own_block + shared_block once per stream)
                              + setup once per stream) . seconds_per_unit
              + POINT_SECONDS per point + ROW_SECONDS per trial row (table and Parquet file)

Both tables live in `calibration.json` beside this file, per CPU class (`attnsim.records.cpu`),
with a fallback class for a machine of another: how they are measured and refreshed is
benchmarks/calibrate.py (`python -m benchmarks.calibrate --write`), and each kind's error after
calibration is recorded there too (docs/scaling.md, "The cost model").
"""

from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from attnsim.kinds.base import MAX_BLOCK_TRIALS, TARGET_BLOCK_BYTES, Counts, Kind, Params

BASE_MB = 400  # python, numpy, pyarrow, threads' stacks
CALIBRATION = Path(__file__).with_name("calibration.json")
# Set to a class of calibration.json to plan for that class instead of this machine's (a cluster
# whose nodes are of another class than the login node; the tests, to be machine-independent).
CLASS_VARIABLE = "ATTNSIM_COST_CLASS"
# The class a located boundary's budget is priced in, whatever the machine or CLASS_VARIABLE: the
# budget fixes the boundary's design (the trials of each look, how many rounds) through this
# model, so pricing it on the machine's own class made the design, and with it the located
# interval and its verdict, depend on where it ran (the default run's n = 16 boundary: 171,000
# trials a look on the AVX-512 class, 129,000 on AVX2, and a verdict that differed). The class
# the shipped budgets were set on.
DESIGN_CLASS = "X86_V3-Haswell"
UNITS = tuple(f.name for f in fields(Counts))

# What a point costs besides its kernels (its blocks' Python calls): ~0.1 ms measured for the
# cheapest points (softmax entropy at n = 16: 1,000 points of 100 trials, 1 thread). It is what a
# sweep of cheap points costs.
POINT_SECONDS = 1e-4
# What a trial row costs once computed: the job's trials table and its Parquet file (~1.1 us per
# row measured on the AVX2 class: 1,000 points of 100 trials, 0.03 s table, 0.08 s write).
ROW_SECONDS = 1.1e-6
# Scheduling priorities (Snakemake starts the ready jobs of highest priority first) are each
# job's critical path in seconds: its own expected time plus the jobs that must follow it.
# Long chunks start first (longest-processing-time-first keeps every core busy to the end) and
# a short chunk whose experiment still needs its summary and figures starts before other
# experiments' figures, so no core waits on a last chain of summary -> figures at the end.
# measured, default sweep on this project's VMs
POSTPROCESS_SECONDS = {"figures": 3.5, "collect": 1.5, "judge": 0.5, "claims": 1.0}
PRIORITY = {
    "figures": POSTPROCESS_SECONDS["figures"],
    "collect": POSTPROCESS_SECONDS["collect"] + POSTPROCESS_SECONDS["figures"],
    # a kind's figures of verdicts wait for its judge
    "judge": POSTPROCESS_SECONDS["judge"] + POSTPROCESS_SECONDS["figures"],
    "claims": POSTPROCESS_SECONDS["claims"],
}
# A SLURM job's wall-time request is this many times its expected time (at least RUNTIME_MIN
# minutes): the model's error (calibration.json, "errors": within 2x per kind) times a node
# shared with other jobs, with room to spare, since a job past its request is killed.
RUNTIME_MARGIN = 10
RUNTIME_MIN = 5


@functools.cache
def calibration() -> dict[str, Any]:
    """calibration.json: per CPU class, seconds per unit and each kind's factor."""
    table: dict[str, Any] = json.loads(CALIBRATION.read_text())
    return table


@functools.cache
def cost_class() -> str:
    """The CPU class the model plans for: ATTNSIM_COST_CLASS if set, else this machine's if
    calibration.json has it, else its fallback."""
    table = calibration()
    chosen = os.environ.get(CLASS_VARIABLE)
    if chosen:
        if chosen not in table["classes"]:
            raise ValueError(
                f"{CLASS_VARIABLE}={chosen!r}: not a class of {CALIBRATION.name} "
                f"({', '.join(table['classes'])})"
            )
        return chosen
    from attnsim.records import cpu

    here = cpu.cpu_class()
    return here if here in table["classes"] else str(table["fallback"])


def unit_seconds(klass: str | None = None) -> Counts:
    """One core's seconds per unit of `Counts` on a CPU class (default `cost_class`)."""
    return _unit_seconds(klass or cost_class())


@functools.cache
def _unit_seconds(klass: str) -> Counts:
    seconds = calibration()["classes"][klass]["seconds"]
    return Counts(**{unit: float(seconds[unit]) for unit in UNITS})


def factor(kind: Kind, klass: str | None = None) -> float:
    """The kind's calibration factor on a class: measured CPU-seconds over the counted ones (1 for
    a kind the table does not know, e.g. a plugin's)."""
    return float(calibration()["classes"][klass or cost_class()]["factors"].get(kind.name, 1.0))


def counted_seconds(counts: Counts, seconds: Counts) -> float:
    """The seconds of `counts` at `seconds` per unit: their dot product."""
    return float(sum(c * s for c, s in zip(counts.values(), seconds.values())))


def point_seconds(
    kind: Kind,
    params: Params,
    round_trials: int,
    trials: int,
    klass: str | None = None,
    per_unit: Counts | None = None,
) -> tuple[float, float]:
    """(own, shared) calibrated CPU-seconds of `trials` trials of the point `params`: its own work,
    and its stream's draws and setup (charged once per stream of a chunk). Blocks are counted as
    `jobs.simulate.round_blocks` cuts them: rounds of `round_trials` trials, each in blocks of at
    most `Kind.block_trials`. `per_unit`: seconds per unit measured elsewhere, uncalibrated
    (factor 1: what benchmarks/calibrate.py fits the factors on)."""
    work = kind.compute.work(params)
    seconds = unit_seconds(klass) if per_unit is None else per_unit
    round_trials = max(1, round_trials)
    blocks = math.ceil(round_trials / kind.block_trials(params)) / round_trials  # per trial
    own = counted_seconds(work.own + work.own_block * blocks, seconds) * trials
    shared = counted_seconds(work.shared + work.shared_block * blocks, seconds) * trials
    scale = factor(kind, klass) if per_unit is None else 1.0
    return scale * own, scale * (shared + counted_seconds(work.setup, seconds))


@dataclass(frozen=True)
class ChunkCost:
    """What a chunk's requests depend on."""

    points: int
    trial_cap: int  # the most trials any point can get
    work: float  # the cost model's CPU-seconds of the chunk (on one core)
    block_bytes: int  # the largest trial block's working set (block_trials x bytes_per_trial)
    row_columns: int  # columns of a stored row (metrics, parameters, id, trial and partitions)


@dataclass(frozen=True)
class PointCosts:
    """Per point: bytes per trial, stream codes (any labelling), the calibrated seconds of its
    stream's draws and setup (`point_seconds`; float32: they only sum into chunk costs), and its
    cost as chunks are cut (CPU-seconds: its own work, its stream's draws at the first point of
    each run of one stream, POINT_SECONDS and its rows' ROW_SECONDS)."""

    bytes_per_trial: np.ndarray
    streams: np.ndarray
    shared: np.ndarray
    point_work: np.ndarray


def point_costs(
    bytes_per_trial: ArrayLike,
    streams: ArrayLike,
    own: ArrayLike,
    shared: ArrayLike,
    trial_cap: int,
) -> PointCosts:
    """`PointCosts` of points in order, from each one's `kind.compute.bytes_per_trial`, stream code
    and `point_seconds` (own and shared, for `trial_cap` trials). Few arrays of the points' length
    are made: each of a 10^7-point grid is 80 MB of fresh pages, ~0.2 s to fault in."""
    # float32 (exact below 16 MiB per trial, 6e-8 relative above) and `shared` too: a 10^7-point
    # plan holds no more than it did before the shared draws had an array of their own
    per_trial = np.asarray(bytes_per_trial, dtype=np.float32)
    streams = np.asarray(streams)
    first = np.ones(len(streams), dtype=bool)
    first[1:] = streams[1:] != streams[:-1]
    shared = np.asarray(shared, dtype=np.float32)
    work = np.array(own, dtype=np.float64)  # own + shared at a stream's first, the point's fixed
    np.add(work, shared, out=work, where=first)  # cost and its rows'
    work += POINT_SECONDS + ROW_SECONDS * trial_cap
    return PointCosts(per_trial, streams, shared, work)


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
    """The cost of the chunk of the points at `rows` (positions into `costs`, made for `trial_cap`
    trials): each point's own work and each stream's draws once (at its last point's cost)."""
    per_trial = costs.bytes_per_trial[rows]
    work = costs.point_work[rows]
    shared = costs.shared[rows].astype(np.float64)
    streams = costs.streams[rows]
    # the draws point_work charged at the first point of each run of one stream, taken back...
    if isinstance(rows, slice):
        positions = np.arange(*rows.indices(len(costs.streams)))
    else:
        positions = np.asarray(rows)
    previous = costs.streams[np.maximum(positions - 1, 0)]
    charged = (positions == 0) | (previous != streams)
    # ... and charged once per stream of the chunk, in position order (labels do not matter)
    _, from_end = np.unique(streams[::-1], return_index=True)
    last = np.sort(len(streams) - 1 - from_end)
    total = work.sum() + shared[last].sum() - shared[charged].sum()
    return ChunkCost(
        len(per_trial),
        trial_cap,
        float(total),
        int(block_bytes(kind, per_trial).max()),
        len(kind.schema.metrics) + len(kind.schema.params) + 4,
    )


def chunk_mem_mb(cost: ChunkCost, threads: int) -> int:
    rows = cost.points * cost.trial_cap * cost.row_columns * 8
    return int(BASE_MB + math.ceil((threads * cost.block_bytes * 1.5 + 3 * rows) / 2**20))


def expected_seconds(cost: ChunkCost) -> float:
    """The chunk's CPU-seconds as the cost model expects them to be measured (its kernels on one
    core; the calibrated model, see the module docstring)."""
    return cost.work


def chunk_runtime_min(cost: ChunkCost, threads: int) -> int:
    """Generous wall-time request in minutes (RUNTIME_MARGIN x the estimate, at least
    RUNTIME_MIN)."""
    return int(max(RUNTIME_MIN, math.ceil(RUNTIME_MARGIN * cost.work / threads / 60)))


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
