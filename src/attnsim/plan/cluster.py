"""Will every cluster job fit on some node of its partition? Checked before anything is submitted.

SLURM accepts a job that asks for more CPUs, memory or time than any node of its partition
offers, and leaves it PENDING (reason PartitionConfig, or Resources) for ever; Snakemake's SLURM
plugin then waits without a word. `check_jobs` compares each job's request -- what the plugin
will pass to sbatch: --cpus-per-task (the `cpus_per_task` resource, else the job's threads),
--mem (mem_mb, or mem_mb_per_cpu x CPUs), --time (runtime, minutes) -- with the largest node of
the job's partition (`sinfo -N`: CPUs and memory per node; the partition's time limit) and
raises `ClusterFitError` with one line naming the first request that cannot be met.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from attnsim.errors import AttnsimError

# one line per (node, partition)
SINFO = ["sinfo", "--noheader", "--Node", "--format", "%P|%c|%m|%l"]
PROFILE = "workflow/profiles/slurm/config.yaml"


class ClusterFitError(AttnsimError):
    """A job asks for more than any node of its partition has: it would wait in the queue for
    ever."""


@dataclass(frozen=True)
class Partition:
    name: str
    cpus: int  # of its largest node
    mem_mb: int  # of its largest node
    time_limit_min: float | None  # None: no limit
    default: bool = False


@dataclass(frozen=True)
class Request:
    rule: str
    cpus: int
    mem_mb: int | None
    runtime_min: float | None
    partition: str | None  # None: the cluster's default partition


def parse_time_limit(text: str) -> float | None:
    """SLURM's time formats (sinfo %l) in minutes: "infinite", "30:00" (min:s), "2:00:00",
    "1-00:00:00", "1-12", "45" (minutes). None for no limit."""
    text = text.strip()
    if text.lower() in ("infinite", "unlimited", "n/a", "none", ""):
        return None
    days, _, rest = text.rpartition("-")
    fields = [int(f) for f in rest.split(":")]
    if days:  # days-hours[:minutes[:seconds]]
        fields += [0] * (3 - len(fields))
        hours, minutes, seconds = fields
        return int(days) * 1440 + hours * 60 + minutes + seconds / 60
    if len(fields) == 1:
        return float(fields[0])
    if len(fields) == 2:
        return fields[0] + fields[1] / 60
    return fields[0] * 60 + fields[1] + fields[2] / 60


def parse_sinfo(text: str) -> dict[str, Partition]:
    """Partitions from `sinfo --noheader --Node --format '%P|%c|%m|%l'` (the default one marked with
    *)."""
    partitions: dict[str, Partition] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, cpus, mem, limit = (f.strip() for f in line.split("|"))
        default = name.endswith("*")
        name = name.rstrip("*")
        cpus_n, mem_n = int(re.sub(r"\D.*", "", cpus) or 0), int(re.sub(r"\D.*", "", mem) or 0)
        old = partitions.get(name)
        if old is not None:
            cpus_n, mem_n = max(cpus_n, old.cpus), max(mem_n, old.mem_mb)
        partitions[name] = Partition(
            name,
            cpus_n,
            mem_n,
            parse_time_limit(limit),
            default or (old is not None and old.default),
        )
    return partitions


def sinfo() -> str | None:
    """sinfo's node list, or None if it cannot be had (then the plugin reports the problem
    itself)."""
    try:
        result = subprocess.run(SINFO, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout if result.returncode == 0 else None


def check(requests: Iterable[Request], partitions: dict[str, Partition]) -> None:
    """Raise ClusterFitError for the first request no node of its partition can meet."""
    default = next((p for p in partitions.values() if p.default), None)
    for r in requests:
        part = partitions.get(r.partition) if r.partition else default
        if part is None:
            if r.partition:
                raise ClusterFitError(
                    f"{r.rule} asks for partition {r.partition}, which sinfo does not list "
                    f"(partitions: {', '.join(sorted(partitions))}); fix slurm_partition"
                )
            continue  # no default partition: sbatch will say so
        if r.cpus > part.cpus:
            raise ClusterFitError(
                f"{r.rule} asks for {r.cpus} CPUs per task, partition {part.name}'s largest node "
                f"has {part.cpus}; lower set-threads in {PROFILE}"
            )
        if r.mem_mb is not None and part.mem_mb and r.mem_mb > part.mem_mb:
            raise ClusterFitError(
                f"{r.rule} asks for {r.mem_mb} MB of memory (mem_mb), partition {part.name}'s "
                f"largest node has {part.mem_mb} MB; "
                "lower chunk_size or set-threads, or choose a partition with bigger nodes "
                f"(slurm_partition in {PROFILE})"
            )
        if (
            r.runtime_min is not None
            and part.time_limit_min is not None
            and r.runtime_min > part.time_limit_min
        ):
            raise ClusterFitError(
                f"{r.rule} asks for {r.runtime_min:g} min of run time (runtime), partition "
                f"{part.name}'s time limit is {part.time_limit_min:g} min; "
                "lower chunk_size, or choose a partition with a longer limit (slurm_partition in "
                f"{PROFILE})"
            )


def _number(value: Any) -> float | None:
    try:
        return float(value) if value is not None and value != "" else None
    except (TypeError, ValueError):
        return None


def job_request(job: Any) -> Request:
    """What Snakemake's SLURM plugin will ask sbatch for, from a Snakemake job (duck-typed)."""
    res = job.resources
    cpus = int(_number(res.get("cpus_per_task")) or job.threads or 1)
    mem = _number(res.get("mem_mb"))
    per_cpu = _number(res.get("mem_mb_per_cpu"))
    if per_cpu:
        mem = per_cpu * cpus
    return Request(
        job.rule.name,
        max(1, cpus),
        None if mem is None else int(mem),
        _number(res.get("runtime")),
        res.get("slurm_partition") or None,
    )


def largest_requests(jobs: Iterable[Any]) -> list[Request]:
    """Per rule and partition, the largest CPU, memory and runtime request of the cluster jobs."""
    largest: dict[tuple[str, str | None], Request] = {}
    for job in jobs:
        if job.is_local:
            continue
        r = job_request(job)
        old = largest.get((r.rule, r.partition))
        if old is not None:
            r = Request(
                r.rule,
                max(r.cpus, old.cpus),
                max(r.mem_mb or 0, old.mem_mb or 0) or None,
                max(r.runtime_min or 0, old.runtime_min or 0) or None,
                r.partition,
            )
        largest[(r.rule, r.partition)] = r
    return list(largest.values())


def check_jobs(jobs: Iterable[Any], sinfo_text: str | None = None) -> None:
    """Raise ClusterFitError if one of `jobs` (Snakemake jobs) can never start on this cluster.
    Does nothing if there are no cluster jobs or sinfo cannot be run."""
    requests = largest_requests(jobs)
    if not requests:
        return
    text = sinfo() if sinfo_text is None else sinfo_text
    if text:
        check(requests, parse_sinfo(text))
