"""`attnsim run`'s Snakemake as a child that a signal always ends.

Snakemake's own SIGTERM handler can deadlock (it waits for a lock its main thread holds during a
lazy import: 3 runs in 10 when the signal came 0.15-0.3 s after the first chunk file appeared),
and a deadlocked Snakemake keeps the store's run lock until someone sends SIGKILL. So `attnsim run`
starts Snakemake in a session of its own, passes SIGINT, SIGTERM and SIGHUP on to it once, and
if it has not ended GRACE_SECONDS later, kills its session (Snakemake and its jobs): every
descriptor closes, and with it the store's flock. A SIGKILL to `attnsim run` kills Snakemake too
(PR_SET_PDEATHSIG on Linux), as when `attnsim run` exec'd it. The chunks already written stay
(writes are atomic) and a rerun continues; the next `attnsim run` clears Snakemake's stale lock.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

GRACE_SECONDS = 10.0  # Snakemake cancels its jobs and exits in about a second when it can
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def supervise(
    cmd: list[str], env: dict[str, str], workdir: Path, grace: float = GRACE_SECONDS
) -> int:
    """Run `cmd` to its end and return its exit status (128 + N for a signal N, as a shell
    reports it); a signal to this process is passed on, and escalated to SIGKILL of the child's
    whole session when the child outlives `grace` seconds after it."""
    parent = os.getpid()
    child = subprocess.Popen(
        cmd,
        cwd=workdir,
        env=env,
        start_new_session=True,
        preexec_fn=lambda: _die_with(parent),
    )
    received: list[tuple[int, float]] = []  # (signal, when)

    def pass_on(signum: int, frame: FrameType | None) -> None:
        if not received:
            _signal_session(child.pid, signum)
        received.append((signum, time.monotonic()))

    previous = {s: signal.signal(s, pass_on) for s in FORWARDED}
    try:
        while True:
            try:
                return _status(child.wait(timeout=0.2))
            except subprocess.TimeoutExpired:
                pass
            if received and time.monotonic() - received[0][1] > grace:
                return _kill(child, received[0][0], grace)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _kill(child: subprocess.Popen, signum: int, grace: float) -> int:
    _signal_session(child.pid, signal.SIGKILL)
    child.wait()
    print(
        f"attnsim: error: the run was stopped ({signal.Signals(signum).name}) and Snakemake had "
        f"not exited {grace:g} s later: it and its jobs were killed, the store's lock is "
        "released; rerun to continue",
        file=sys.stderr,
    )
    return 128 + signum


def _die_with(parent: int) -> None:
    """In the child before it execs: SIGKILL it when `attnsim run` dies (a SIGKILL to the wrapper
    reached Snakemake directly when the wrapper exec'd it; in its own session it would run on)."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the wrapper died before the line above
        os._exit(1)


def _signal_session(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)  # the child leads its session's one process group
    except ProcessLookupError:
        pass


def _status(code: int) -> int:
    return 128 - code if code < 0 else code
