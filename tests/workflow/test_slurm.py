"""The workflow through a real SLURM cluster (tests/slurm/local-cluster.sh) with the shipped
profile: jobs really go through SLURM, results equal a local run byte for byte, a failing chunk is
reported as failed, the rerun after the fix computes only what is missing, and a job no node can
hold stops the run at once.

Opt-in, because it installs SLURM and MariaDB with apt-get and starts their daemons (as root):
ATTNSIM_SLURM_TESTS=1 pytest tests/workflow/test_slurm.py. Without the switch the tests are skipped;
with it (as in CI) they fail if the cluster cannot run. A cluster that was already up is used and
left up; one the fixture started is stopped again, also when a test fails or pytest is interrupted.
Every SLURM command gets the test cluster's own SLURM_CONF, never the machine's /etc/slurm."""

from __future__ import annotations

import atexit
import copy
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers.workflow import (
    REPO,
    point_rows,
    python_first_on_path,
    simulate_jobs,
    snakemake,
    snakemake_command,
    write_config,
)

from attnsim.store import parquet as store

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SWITCH = "ATTNSIM_SLURM_TESTS"
SCRIPT = REPO / "tests/slurm/local-cluster.sh"
TIMEOUT = 240  # seconds for one Snakemake run through SLURM, then SIGINT


def _cannot_run() -> str | None:
    if os.geteuid() != 0:
        return "needs root to start munge, slurmdbd, slurmctld and slurmd"
    if not shutil.which("apt-get") and not shutil.which("slurmctld"):
        return "needs Debian's SLURM packages (apt-get not found)"
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        return "needs the SLURM executor plugin: pip install -e '.[slurm]'"
    return None


def _script(command: str, env: dict, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), command], env=env, capture_output=True, text=True, timeout=timeout
    )


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")  # unwinds pytest, so the fixture's `finally` runs


@pytest.fixture(scope="module")
def cluster():
    """The environment every SLURM client call of these tests must use (SLURM_CONF of the test
    cluster)."""
    if os.environ.get(SWITCH) != "1":
        pytest.skip(
            f"real-cluster SLURM test is opt-in: set {SWITCH}=1 (root + apt-get: installs SLURM "
            "and MariaDB, runs their daemons during the test)"
        )
    reason = _cannot_run()
    if reason:
        pytest.fail(f"{SWITCH}=1 but the SLURM test cannot run: {reason}")
    env = dict(os.environ)
    # export SLURM_CONF=...; export PATH=<its srun>:$PATH
    for line in _script("env", env, 30).stdout.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = value.replace("$PATH", os.environ["PATH"])
    assert (
        env.get("SLURM_CONF", "").endswith("/slurm.conf") and env["PATH"] != os.environ["PATH"]
    ), env
    if _script("status", env, 60).returncode == 0:
        yield env  # someone else's cluster: theirs to take down
        return

    stopped = []

    def down():
        if not stopped:
            stopped.append(True)
            result = _script("down", env, 180)
            assert result.returncode == 0, result.stdout + result.stderr

    atexit.register(down)  # pytest ended some other way than through the fixture's teardown
    previous = {
        sig: signal.signal(sig, _raise_interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)
    }
    try:
        up = _script("up", env, 600)
        assert up.returncode == 0, up.stdout + up.stderr
        yield env
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        down()
        atexit.unregister(down)


def config():
    grid = {
        "n": [16, 256],
        "d": [4],
        "logit_scale": [0.0, 1.0],
        "noise": ["gaussian", "gumbel"],
        "noise_draws": [4],
        "noise_scale": [0.1, 0.5],
    }
    return {
        "seed": 11,
        "chunk_size": 8,
        "experiments": {
            "robust": {"kind": "noisy_attention", "trials": 50, "grid": grid},
            "fragile": {"kind": "noisy_attention", "trials": 30, "grid": {**grid, "n": [32]}},
        },
    }


def summaries(config: dict) -> list[str]:
    """The summaries of `config`'s experiments: what a run makes when its rows are compared, not
    the figures and claims, which add no row."""
    return [
        str(store.summary_path(Path("results/store"), experiment["kind"], name))
        for name, experiment in config["experiments"].items()
    ]


def start_through_slurm(
    workdir: Path, slurm_env: dict, threads: int = 1, targets: tuple[str, ...] = ()
) -> subprocess.Popen:
    """Snakemake with the shipped profile and fast status polling, started in a session of its
    own (stdout and stderr together), making `targets` (default: everything)."""
    env = python_first_on_path(slurm_env)
    cmd = snakemake_command(
        workdir,
        *targets,
        "--workflow-profile",
        str(REPO / "workflow/profiles/slurm"),
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--set-threads",
        f"simulate={threads}",
        "--retries",
        "0",
    )
    return subprocess.Popen(
        cmd,
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def through_slurm(
    workdir: Path,
    slurm_env: dict,
    threads: int = 1,
    timeout: float = TIMEOUT,
    targets: tuple[str, ...] = (),
) -> subprocess.CompletedProcess:
    """The shipped profile, with fast status polling, stopped by SIGINT if it hangs."""
    process = start_through_slurm(workdir, slurm_env, threads, targets)
    cmd = process.args
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)  # SIGTERM does not stop a plugin waiting on sacct
        out, _ = process.communicate(timeout=60)
        pytest.fail(f"snakemake through SLURM hung for {timeout} s:\n{out[-4000:]}")
    except BaseException:
        # pytest interrupted: Snakemake (its own session) must not outlive the test
        os.killpg(process.pid, signal.SIGINT)  # it cancels its SLURM jobs
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
        raise
    return subprocess.CompletedProcess(cmd, process.returncode, out, "")


def sacct_jobs(workdir: Path, slurm_env: dict) -> list[tuple[str, str, str]]:
    """(job id, comment, state) of this workflow's jobs, from SLURM accounting."""
    cmd = ["sacct", "-X", "-n", "-P", "-S", "now-1hour", "-o", "JobID,Comment,State,WorkDir"]
    out = subprocess.run(cmd, env=slurm_env, capture_output=True, text=True, check=True).stdout
    rows = [line.split("|") for line in out.splitlines() if line]
    return [(r[0], r[1], r[2]) for r in rows if len(r) >= 4 and Path(r[3]) == workdir]


def test_slurm_run_matches_local_and_recovers_from_a_failed_chunk(cluster, tmp_path):
    local, remote = tmp_path / "local", tmp_path / "slurm"
    write_config(local, config())
    snakemake(local, *summaries(config()), "--cores", "2")

    write_config(remote, config())
    blocker = remote / "results/store/trials/kind=noisy_attention/experiment=fragile"
    blocker.parent.mkdir(parents=True)
    blocker.write_text(
        "a file where the experiment's folder must go: every chunk of `fragile` fails"
    )

    failed = through_slurm(remote, cluster)
    assert failed.returncode != 0, failed.stdout[-3000:]
    assert "Error in rule simulate" in failed.stdout and "experiment=fragile" in failed.stdout
    jobs = sacct_jobs(remote, cluster)
    by_state = {}
    for _, comment, state in jobs:
        by_state.setdefault(state, []).append(comment)
    assert all(
        c.startswith("rule_simulate_wildcards_noisy_attention_") for c in sum(by_state.values(), [])
    )
    assert (
        {c for c in by_state.get("FAILED", [])}
        == {c for c in sum(by_state.values(), []) if "_fragile_" in c}
        != set()
    )
    # robust: 16 points in chunks of 8; kept despite the failure
    assert len(by_state.get("COMPLETED", [])) == 2
    assert not (remote / "results/store/summary/kind=noisy_attention/experiment=fragile").exists()

    blocker.unlink()  # the fix
    planned = snakemake(remote, "-n", "--cores", "1").stdout
    assert planned.count("rule simulate:") == 1 and "experiment=fragile" in planned
    rerun = through_slurm(remote, cluster)
    assert rerun.returncode == 0, rerun.stdout[-3000:]
    new_jobs = [j for j in sacct_jobs(remote, cluster) if j not in jobs]
    assert [(c, s) for _, c, s in new_jobs] == [
        (next(c for _, c, _ in new_jobs), "COMPLETED")
    ] and "_fragile_" in new_jobs[0][1]

    assert point_rows(remote) == point_rows(local)
    assert "Nothing to be done" in snakemake(remote, "-n", "--cores", "1").stdout


def test_a_job_no_node_can_hold_stops_the_run_at_once_with_one_line(cluster, tmp_path):
    """Without the check the job would sit PENDING (PartitionConfig) and Snakemake would wait
    forever."""
    sinfo = subprocess.run(
        ["sinfo", "-h", "-N", "-p", "debug", "-o", "%c"],
        env=cluster,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    cpus = max(int(c) for c in sinfo.split())
    write_config(tmp_path, config())
    started = time.monotonic()
    result = through_slurm(tmp_path, cluster, threads=cpus + 1, timeout=120)
    took = time.monotonic() - started
    line = (
        f"attnsim: error: simulate asks for {cpus + 1} CPUs per task, partition debug's "
        f"largest node has {cpus}; lower set-threads in workflow/profiles/slurm/config.yaml"
    )
    assert result.returncode == 1 and line in result.stdout.splitlines(), result.stdout[-3000:]
    assert "Traceback" not in result.stdout and not re.search(
        r"Submitted (batch )?job", result.stdout
    ), result.stdout[-3000:]
    assert took < 60, f"took {took:.0f} s"
    assert sacct_jobs(tmp_path, cluster) == []  # nothing was submitted
    # and the directory is not left locked
    assert not list((tmp_path / ".snakemake/locks").glob("*"))


def test_a_killed_top_up_through_slurm_loses_no_trials(cluster, tmp_path):
    """Issue 52 item 1 on a cluster, where jobs outlive the process that submitted them: raise
    the trials, SIGKILL the submitting Snakemake while the top-ups' jobs run, rerun at once. The
    dead run's jobs finish in SLURM but write nothing; the stored chunks stay until their top-ups
    are whole; the store ends as a local run at the larger count. One experiment: the other's
    jobs would only lengthen each of the four runs."""
    fewer = config()
    del fewer["experiments"]["fragile"]
    more = copy.deepcopy(fewer)
    more["experiments"]["robust"]["trials"] *= 4
    local, remote = tmp_path / "local", (tmp_path / "slurm").resolve()
    write_config(local, more)
    snakemake(local, *summaries(more), "--cores", "2")
    write_config(remote, fewer)
    first = through_slurm(remote, cluster, targets=tuple(summaries(fewer)))  # the stored chunks
    assert first.returncode == 0, first.stdout[-3000:]
    stored = sorted((remote / "results/store/trials").rglob("chunk-*.parquet"))
    write_config(remote, more)
    killed = start_through_slurm(remote, cluster)
    deadline = time.monotonic() + TIMEOUT
    while not simulate_jobs(remote):  # the cluster's one node is this machine
        assert killed.poll() is None, killed.stdout.read()[-3000:]
        assert time.monotonic() < deadline, "no simulate job started"
        time.sleep(0.1)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.communicate()
    # a SIGKILLed Snakemake leaves its directory lock: `--unlock` first, as Snakemake says to
    # (`attnsim run` does it for a dead run's lock); the dead run's SLURM jobs still run
    snakemake(remote, "--unlock", "--cores", "1")
    rerun = through_slurm(remote, cluster)
    assert rerun.returncode == 0, rerun.stdout[-3000:]
    while any(state in ("PENDING", "RUNNING") for _, _, state in sacct_jobs(remote, cluster)):
        assert time.monotonic() < deadline + TIMEOUT, "the dead run's jobs never ended"
        time.sleep(1)
    assert point_rows(remote) == point_rows(local)
    assert not any(path.exists() for path in stored)
