"""The job server: one process per run that imports what the workflow's summary, judge, figures,
claims and boundary-round jobs import (numpy, pyarrow, pandas, matplotlib and its PDF writer,
the run's kinds' claims and figures code) once, and forks a child for each such job, which then
runs with every import done: a job's command (`attnsim figures ...`) hands its arguments,
working directory, environment and standard streams to the server and waits for its child's
exit status.

Why: those imports cost a fresh process ~1-1.5 CPU-s, more than most of these jobs' own work, and
a run has one job per experiment and per kind (the default sweep: ~70). The jobs stay separate
Snakemake jobs with their own declared outputs (a changed experiment redraws only its figures).

The server is an optimisation, never a dependency: a job that finds none (no
`ATTNSIM_JOB_SERVER` in its environment, or nobody listening: a cluster node, a job run by hand,
a server that died) runs in its own process as before, with the same result. Each child starts
from the same state (the imports, nothing drawn or read), so what a job writes does not depend on
which jobs ran before it in the server (tests/cli/test_server.py compares bytes).

Its life: the workflow's `onstart` starts it (`start`) when jobs it serves are to run locally
(not with --use-conda or containers, whose jobs run another environment); `onsuccess`/`onerror`
stop it (`stop`). It also ends by itself when the Snakemake process that started it is gone. A
child ends when its job's command does (Snakemake cancelling a job kills the command; the child
sees its connection close). The CPU time of the server and its children is the run's: they are
Snakemake's descendants, waited for.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

ENV = "ATTNSIM_JOB_SERVER"  # the server's address in a job's environment; "off": never start one
# the workflow's commands a server runs
SERVED = ("collect", "judge", "figures", "claims", "locate-round", "record-boundaries")
REPLY_BYTES = 4096
STREAMS = (0, 1, 2)
STARTED = b"+"  # a child's first byte: it has the job (before it, the job can run elsewhere)


# --- a job's side --------------------------------------------------------------------------------


def request(argv: list[str]) -> int | None:
    """Run the command `argv` (`attnsim <argv>`) in a child of the job server named by the
    environment; its exit status, or None when there is no server to run it (the caller runs it
    itself). Cheap: no import beyond the standard library's socket and json."""
    address = os.environ.get(ENV, "")
    if not argv or argv[0] not in SERVED or not address or address == "off":
        return None
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(_sockaddr(address))
        message = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
        # its length first; the streams go with the first bytes. This side stays open until the
        # command ends: the child takes its closing for the command's end (`_watch`)
        socket.send_fds(client, [len(message).to_bytes(8, "big") + message], list(STREAMS))
    except OSError:
        client.close()
        return None
    try:
        reply = _read_all(client)
    except OSError:
        reply = b""
    finally:
        client.close()
    if not reply.startswith(STARTED):  # no child took the job (the server went away): run it here
        return None
    try:
        return int(json.loads(reply[len(STARTED) :])["code"])
    except (ValueError, KeyError, TypeError):
        print("attnsim: error: the job server's child ended without a result", file=sys.stderr)
        return 1


def _read_all(conn: socket.socket) -> bytes:
    chunks: list[bytes] = []
    while True:
        data = conn.recv(REPLY_BYTES)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def _sockaddr(address: str) -> str:
    """An abstract-namespace address (Linux: no file to clean up) is written with a leading @."""
    return "\0" + address[1:] if address.startswith("@") else address


# --- the server's side ---------------------------------------------------------------------------


def warm(kinds: list[str]) -> None:
    """Import what the served jobs import, so that their children import nothing: the job
    commands' modules, the plotting stack with its PNG and PDF writers, and the kinds' claims
    and figures code. Nothing is read or drawn (each child starts from the same state)."""
    from attnsim.jobs.tuning import single_blas_thread

    single_blas_thread()  # before numpy, as each job command does
    import matplotlib

    matplotlib.use("Agg")
    import importlib

    for module in (
        "numpy",
        "pyarrow.parquet",
        "pandas",
        "matplotlib.pyplot",
        "matplotlib.backends.backend_agg",
        "matplotlib.backends.backend_pdf",
        "fontTools.subset",
        "PIL.PngImagePlugin",
        "attnsim.cli.main",
        "attnsim.jobs.collect",
        "attnsim.report.claims",
        "attnsim.report.judged",
        "attnsim.report.figures",
        "attnsim.figures.style",
        "attnsim.figures.common",
        "attnsim.figures.mathtext",
        "attnsim.records.state",
        "attnsim.report.boundaries",
        "attnsim.jobs.simulate",
    ):
        try:
            importlib.import_module(module)
        except ImportError:  # an optional writer's dependency: the child imports it if it can
            pass
    from attnsim.kinds import get_kind

    for name in kinds:
        kind = get_kind(name)
        for part in ("claims", "figures"):
            try:
                kind.submodule(part)
            except ImportError:
                pass


def serve(address: str, parent: int, kinds: list[str], ready: Path | None = None) -> None:
    """Listen at `address`, import (`warm`), then fork a child per connection until stopped
    (SIGTERM) or until the process `parent` is gone. Children are waited for."""
    import select
    import signal

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(_sockaddr(address))
    listener.listen(128)  # a job connecting during the imports waits in the queue
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    warm(kinds)
    if ready is not None:
        ready.touch()
    children: set[int] = set()
    while not stopping and os.getppid() == parent:
        readable, _, _ = select.select([listener], [], [], 0.5)
        _reap(children, block=False)
        if not readable:
            continue
        conn, _ = listener.accept()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            listener.close()
            _child(conn)  # never returns
        children.add(pid)
        conn.close()
    listener.close()
    _reap(children, block=True)  # their CPU time is the run's (and their jobs may still run)


def _reap(children: set[int], block: bool) -> None:
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)


def _child(conn: socket.socket) -> None:
    """Run one job's command with its streams, directory and environment; reply its status."""
    import signal

    code = 1
    try:
        message, fds, _, _ = socket.recv_fds(conn, 1 << 20, len(STREAMS))
        data = bytearray(message)
        while len(data) < 8 or len(data) < 8 + int.from_bytes(data[:8], "big"):
            more = conn.recv(1 << 16)  # the rest of a long request
            if not more:
                raise ConnectionError("the job's command went away")
            data += more
        request_ = json.loads(bytes(data[8:]))
        for target, fd in zip(STREAMS, fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        conn.sendall(STARTED)
        # the job's process is this one now: signals end it as they would end the command
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request_["cwd"])
        os.environ.clear()
        os.environ.update(request_["env"])
        os.environ.pop(ENV, None)  # this process runs the command itself
        _watch(conn)
        print(f"attnsim: run by the job server (process {os.getpid()})", file=sys.stderr)
        from attnsim.cli.main import main

        sys.argv = ["attnsim", *request_["argv"]]
        code = main(request_["argv"])
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # noqa: BLE001 (the job's traceback goes to its log, as in its own process)
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            pass
        try:
            conn.sendall(json.dumps({"code": code}).encode())
        except OSError:
            pass
        os._exit(code if 0 <= code < 256 else 1)


def _watch(conn: socket.socket) -> None:
    """End this child when its job's command is gone (Snakemake cancelled the job): the command
    never closes its side until it exits, so a hang-up seen by poll is its end."""
    import select
    import threading

    def watch() -> None:
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLRDHUP | select.POLLHUP)
        while True:
            for _, event in poller.poll():
                if event & (select.POLLRDHUP | select.POLLHUP):
                    os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


# --- starting and stopping it from the workflow --------------------------------------------------


def start(workspace: Path, kinds: list[str]):
    """Start a server for this process's run (`onstart`) and put its address into the
    environment the jobs inherit; the process handle, or None when `ATTNSIM_JOB_SERVER=off`."""
    import subprocess

    if os.environ.get(ENV) == "off":
        return None
    address = f"@attnsim-jobs-{os.getpid()}-{os.urandom(4).hex()}"
    log = Path(workspace) / "logs" / "job-server.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "attnsim.cli.server", address, str(os.getpid()), *kinds],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
    os.environ[ENV] = address
    return process


def stop(process) -> None:
    """Stop the server (`onsuccess`, `onerror`) and wait for it and its children."""
    if process is None:
        return
    import subprocess

    os.environ.pop(ENV, None)
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


if __name__ == "__main__":  # python -m attnsim.cli.server ADDRESS PARENT_PID [KIND ...]
    serve(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
