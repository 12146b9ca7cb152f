"""The job server (attnsim.cli.server): a served job writes the same bytes as the same command in
its own process, whatever ran in the server before it; exit status and one-line errors come
back; a child ends when its job's command does, and the server when its run's process does."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.workflow import python_first_on_path

from attnsim.cli import server
from attnsim.kinds import get_kind
from attnsim.testing import example_config, run_experiment

KINDS = ("temperature_entropy", "normaliser_attention", "attention_dropout")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Three small experiments (one with a figure of verdicts), summarised, and its kind judged."""
    from attnsim.report import judged

    root = tmp_path_factory.mktemp("served") / "store"
    for name in KINDS:
        run_experiment(example_config(get_kind(name), trials=6, seed=2), name, root)
    experiments = {name: name for name in KINDS}
    kind = get_kind("normaliser_attention")
    judged.judge_to_file(kind, experiments, root, judged.path(root.parent, kind.name), {})
    return root


def figures_argv(store: Path, name: str, out: Path) -> list[str]:
    summary = store / f"summary/kind={name}/experiment={name}/summary.parquet"
    argv = ["figures", "--summary", str(summary), "--outdir", str(out / name)]
    if get_kind(name).presentation.claims_figures:
        argv += ["--claims", str(store.parent / "claims" / f"{name}.parquet")]
    return argv


def attnsim(argv: list[str], address: str | None = None) -> subprocess.CompletedProcess:
    env = python_first_on_path()
    env.pop(server.ENV, None)
    if address is not None:
        env[server.ENV] = address
    return subprocess.run(["attnsim", *argv], capture_output=True, text=True, env=env, timeout=600)


def start(*kinds: str, parent: int | None = None) -> tuple[subprocess.Popen, str]:
    """A job server, returned once it listens (its abstract socket is in /proc/net/unix): a job
    sent before that runs in its own process, as it should, which is not what these tests ask."""
    address = f"@attnsim-test-{os.getpid()}-{os.urandom(4).hex()}"
    process = subprocess.Popen(
        [sys.executable, "-m", "attnsim.cli.server", address, str(parent or os.getpid()), *kinds],
        env=python_first_on_path(),
    )
    deadline = time.monotonic() + 120
    while address not in Path("/proc/net/unix").read_text() and process.poll() is None:
        assert time.monotonic() < deadline, "the job server never listened"
        time.sleep(0.05)
    return process, address


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.*"))}


@pytest.mark.slow
def test_served_figures_are_the_bytes_of_their_own_process_in_any_order(store, tmp_path):
    alone = tmp_path / "alone"
    for name in KINDS:
        done = attnsim(figures_argv(store, name, alone))
        assert done.returncode == 0, done.stderr
        assert "job server" not in done.stderr
    for order, kinds in (("forward", KINDS), ("reversed", tuple(reversed(KINDS)))):
        process, address = start(*KINDS)
        try:
            out = tmp_path / order
            for name in kinds:
                done = attnsim(figures_argv(store, name, out), address)
                assert done.returncode == 0, done.stderr
                assert "run by the job server" in done.stderr
        finally:
            process.terminate()
            process.wait(timeout=60)
        assert tree(out) == tree(alone), order


def test_a_served_command_returns_its_status_and_its_one_line_error(tmp_path):
    process, address = start()
    try:
        argv = ["collect", "--experiment-file", str(tmp_path / "missing.json"), "--output",
                str(tmp_path / "s.parquet")]  # fmt: skip
        served = attnsim(argv, address)
        alone = attnsim(argv)
    finally:
        process.terminate()
        process.wait(timeout=60)
    assert served.returncode == alone.returncode == 2
    assert served.stderr.splitlines()[-1] == alone.stderr.splitlines()[-1]
    assert "cannot be read" in alone.stderr


def test_without_a_server_the_command_runs_in_its_own_process(tmp_path):
    argv = ["collect", "--experiment-file", str(tmp_path / "missing.json"), "--output", "x"]
    done = attnsim(argv, "@attnsim-test-nobody-listens")
    assert done.returncode == 2 and "job server" not in done.stderr


def test_a_server_that_drops_the_job_unstarted_leaves_it_to_the_command(tmp_path):
    """A server that goes away with the job queued (it died while importing, or was stopped):
    the command runs the job itself, once, with its own result."""
    import threading

    address = f"@attnsim-test-drop-{os.getpid()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(server._sockaddr(address))
    listener.listen(1)

    def drop() -> None:
        conn, _ = listener.accept()
        conn.recv(1 << 16)
        conn.close()

    dropper = threading.Thread(target=drop)
    dropper.start()
    argv = ["collect", "--experiment-file", str(tmp_path / "missing.json"), "--output", "x"]
    done = attnsim(argv, address)
    dropper.join(timeout=60)
    listener.close()
    assert done.returncode == 2 and "cannot be read" in done.stderr
    assert "job server" not in done.stderr


def test_a_child_ends_when_its_jobs_command_is_gone():
    mine, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the server's child: watches its connection, would otherwise sleep on
        mine.close()
        server._watch(theirs)
        time.sleep(60)
        os._exit(0)
    theirs.close()
    time.sleep(0.2)
    mine.close()  # the job's command ended
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the child outlived its job's command")


def test_the_server_ends_with_the_process_that_started_it():
    process, _ = start(parent=1)  # not its parent: as if the run's Snakemake had gone
    assert process.wait(timeout=120) == 0
