"""A cluster job that no node of its partition can hold is refused before submission, with one
line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from attnsim.plan import cluster
from attnsim.plan.cluster import ClusterFitError, Partition, Request

# `sinfo --noheader --Node --format '%P|%c|%m|%l'` on the test cluster
# (tests/slurm/local-cluster.sh)
LOCAL = "debug*|2|23000|infinite\n"
# ... and on a cluster with two partitions sharing nodes of different sizes, and a short queue
SITE = """\
compute*|32|192000|2-00:00:00
compute*|32|192000|2-00:00:00
compute*|64|512000|2-00:00:00
bigmem|64|512000|7-00:00:00
short|8|16000|30:00
"""


def job(rule="simulate", threads=4, local=False, **resources):
    return SimpleNamespace(
        rule=SimpleNamespace(name=rule), threads=threads, is_local=local, resources=resources
    )


@pytest.mark.parametrize(
    "text,minutes",
    [
        ("infinite", None),
        ("UNLIMITED", None),
        ("30:00", 30),
        ("2:00:00", 120),
        ("1-00:00:00", 1440),
        ("1-12", 2160),
        ("45", 45),
        ("0:30", 0.5),
    ],
)
def test_time_limits_in_minutes(text, minutes):
    assert cluster.parse_time_limit(text) == minutes


def test_sinfo_gives_each_partition_its_largest_node_and_the_default():
    parts = cluster.parse_sinfo(SITE)
    assert parts["compute"] == Partition("compute", 64, 512000, 2880, default=True)
    assert parts["short"] == Partition("short", 8, 16000, 30, default=False)
    assert cluster.parse_sinfo(LOCAL) == {"debug": Partition("debug", 2, 23000, None, default=True)}


def test_too_many_cpus_names_the_rule_the_partition_and_the_fix():
    with pytest.raises(ClusterFitError) as error:
        cluster.check_jobs([job(threads=4, mem_mb=1000, runtime=30)], LOCAL)
    assert str(error.value) == (
        "simulate asks for 4 CPUs per task, partition debug's largest node has 2; lower "
        "set-threads in workflow/profiles/slurm/config.yaml"
    )


def test_cpus_per_task_resource_wins_over_threads():
    cluster.check_jobs([job(threads=4, cpus_per_task=2)], LOCAL)
    with pytest.raises(ClusterFitError, match="asks for 3 CPUs"):
        cluster.check_jobs([job(threads=1, cpus_per_task="3")], LOCAL)


def test_memory_and_runtime_against_the_named_partition():
    fits = [
        job(threads=8, mem_mb=16000, runtime=30, slurm_partition="short"),
        job(threads=64, mem_mb=500000, runtime=2880),
    ]
    cluster.check_jobs(fits, SITE)
    with pytest.raises(
        ClusterFitError,
        match=r"^simulate asks for 16001 MB of memory \(mem_mb\), partition short's largest node "
        r"has 16000 MB; ",
    ):
        cluster.check_jobs([job(threads=8, mem_mb=16001, slurm_partition="short")], SITE)
    with pytest.raises(
        ClusterFitError,
        match=r"asks for 24000 MB of memory \(mem_mb\), partition debug's largest node has 23000 "
        r"MB",
    ):
        # --mem-per-cpu times the CPUs
        cluster.check_jobs([job(threads=2, mem_mb_per_cpu=12000)], LOCAL)
    with pytest.raises(
        ClusterFitError,
        match=r"^simulate asks for 31 min of run time \(runtime\), partition short's time limit "
        r"is 30 min; ",
    ):
        cluster.check_jobs([job(threads=1, runtime=31, slurm_partition="short")], SITE)


def test_unknown_partition_is_named():
    with pytest.raises(
        ClusterFitError,
        match=r"asks for partition gpu, which sinfo does not list \(partitions: bigmem, compute, "
        r"short\)",
    ):
        cluster.check_jobs([job(threads=1, slurm_partition="gpu")], SITE)


def test_the_largest_request_counts_and_local_jobs_are_ignored():
    jobs = [job(threads=1, mem_mb=m, runtime=5) for m in (500, 900, 700)] + [
        job(rule="figures", threads=99, local=True)
    ]
    assert cluster.largest_requests(jobs) == [Request("simulate", 1, 900, 5, None)]
    cluster.check_jobs(jobs, LOCAL)


def test_no_cluster_jobs_or_no_sinfo_means_no_check(monkeypatch):
    monkeypatch.setattr(cluster, "SINFO", ["/nonexistent/sinfo"])
    assert cluster.sinfo() is None
    cluster.check_jobs([job(threads=1000)])  # sinfo unavailable: the plugin reports that itself
    cluster.check_jobs([job(threads=1000, local=True)], LOCAL)
