"""Honest resource requests for a chunk job, from its points' sizes (portable: mem_mb, runtime)."""

from __future__ import annotations

import math

from attnsim.chunkspec import ChunkSpec

BASE_MB = 400  # python, numpy, pyarrow, threads' stacks
SECONDS_PER_BYTE = 2e-9  # measured order of magnitude: ~0.5 GB/s of working set per core


def chunk_mem_mb(spec: ChunkSpec, threads: int) -> int:
    kind, points = spec.kind, spec.points
    block_bytes = max(kind.block_trials(p.params) * kind.bytes_per_trial(p.params) for p in points)
    rows = len(points) * spec.trial_cap * (len(kind.metrics) + len(kind.params) + 4) * 8
    return int(BASE_MB + math.ceil((threads * block_bytes * 1.5 + 3 * rows) / 2**20))


def chunk_work_seconds(spec: ChunkSpec) -> float:
    """A pessimistic estimate of a chunk's CPU-seconds (the working set it streams through, per
    stream for the draws and per point for the rest): 15-50x the measured time, but it ranks
    chunks by cost, within and across kinds."""
    kind, points, trials = spec.kind, spec.points, spec.trial_cap
    streams = {p.stream: p for p in points}
    work = sum(kind.bytes_per_trial(p.params) * trials for p in streams.values()) * 3
    work += sum(kind.bytes_per_trial(p.params) * trials for p in points)
    return work * SECONDS_PER_BYTE


def chunk_runtime_min(spec: ChunkSpec, threads: int) -> int:
    """Generous wall-time request in minutes (at least 5, 4x the estimate)."""
    return int(max(5, math.ceil(4 * chunk_work_seconds(spec) / threads / 60)))


# Scheduling priorities (Snakemake starts the ready jobs of highest priority first) are each
# job's critical path in seconds: its own expected time plus the jobs that must follow it.
# Long chunks start first (longest-processing-time-first keeps every core busy to the end) and
# a short chunk whose experiment still needs its summary and figures starts before other
# experiments' figures, so no core waits on a last chain of summary -> figures at the end.
TYPICAL_OVERESTIMATE = 30  # chunk_work_seconds / measured seconds: median over the default sweep (10-63 by kind)
POSTPROCESS_SECONDS = {"figures": 3.5, "collect": 1.5, "claims": 1.0}  # measured, default sweep on this project's VMs
PRIORITY = {
    "figures": POSTPROCESS_SECONDS["figures"],
    "collect": POSTPROCESS_SECONDS["collect"] + POSTPROCESS_SECONDS["figures"],
    "claims": POSTPROCESS_SECONDS["claims"],
}


def chunk_priority(spec: ChunkSpec) -> float:
    """A chunk's critical path in seconds: its expected time, then its experiment's summary and figures."""
    return chunk_work_seconds(spec) / TYPICAL_OVERESTIMATE + PRIORITY["collect"]
