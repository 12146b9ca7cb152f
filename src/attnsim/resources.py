"""Honest resource requests for a chunk job, from its points' sizes (portable: mem_mb, runtime)."""

from __future__ import annotations

import math

from attnsim.kinds import get_kind
from attnsim.simulate import parse_spec

BASE_MB = 400  # python, numpy, pyarrow, threads' stacks
SECONDS_PER_BYTE = 2e-9  # measured order of magnitude: ~0.5 GB/s of working set per core


def chunk_mem_mb(spec_text: str, threads: int) -> int:
    spec, points = parse_spec(spec_text)
    kind = get_kind(spec["kind"])
    trials = spec.get("max_trials") or spec["trials"]
    block_bytes = max(kind.block_trials(p.params) * kind.bytes_per_trial(p.params) for p in points)
    rows = len(points) * trials * (len(kind.metrics) + len(kind.params) + 4) * 8
    return int(BASE_MB + math.ceil((threads * block_bytes * 1.5 + 3 * rows) / 2**20))


def chunk_runtime_min(spec_text: str, threads: int) -> int:
    """Generous wall-time request in minutes (at least 5, 4x the estimate)."""
    spec, points = parse_spec(spec_text)
    kind = get_kind(spec["kind"])
    trials = spec.get("max_trials") or spec["trials"]
    streams = {p.stream: p for p in points}
    work = sum(kind.bytes_per_trial(p.params) * trials for p in streams.values()) * 3
    work += sum(kind.bytes_per_trial(p.params) * trials for p in points)
    return int(max(5, math.ceil(4 * work * SECONDS_PER_BYTE / threads / 60)))
