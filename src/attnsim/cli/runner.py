"""`attnsim run`: the README's run command, i.e. `snakemake --cores all` that recovers by itself.

A killed run (SIGKILL, power loss) leaves Snakemake's lock behind and a plain
rerun stops with "Directory cannot be locked". Before starting, the lock is
removed when no live Snakemake process works in this directory; a run that
is really going on keeps it, and Snakemake then refuses the second run.
Interrupted jobs never leave half files (store writes are atomic), and
`--rerun-incomplete` covers Snakemake's own bookkeeping.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

DEFAULT_ARGS = [
    "--cores",
    "all",
    "--rerun-incomplete",
]  # also in profiles/default (plain snakemake)
REPORT = "results/report.html"

HELP = f"""\
usage: attnsim run [--report] [-v] [SNAKEMAKE OPTION ...] [TARGET ...]

Run the sweep of config.yaml: `snakemake --cores all --rerun-incomplete` with the workflow's
default profile (profiles/default), after clearing the lock a killed run left behind (only when
no Snakemake works in this directory). Only what is missing or changed is computed. It prints a
line per finished job (points and trials done, wall time, ETA) and ends with a summary; a failed
job's line names its rule, its wildcards and its one-line error.

options of attnsim run:
  --report         also write {REPORT} when the run ends (snakemake --report-after-run)
  -v, --verbose    Snakemake's full log (rule blocks, shell commands) instead of the job lines
  -h, --help       this help

Snakemake options used most (any other goes through as well):
  -n, --dry-run                 the jobs that would run, with the reason for each
  --configfile FILE             the sweep to run instead of config.yaml (replaces it, not merged)
  --config KEY=VALUE ...        override config keys, e.g. --config seed=1
  --cores N                     use N cores (default: all)
  --workflow-profile workflow/profiles/slurm
                                submit the jobs to a SLURM cluster (docs/cluster.md)
  --keep-going                  keep running the other jobs when one fails
  --forceall                    recompute everything (the store's finished points are kept otherwise)

Snakemake's own help, all of its options: snakemake --help
"""  # noqa: E501


def translate(args: list[str]) -> list[str]:
    """attnsim run's own options into Snakemake's: --report, -v/--verbose."""
    out = []
    for arg in args:
        if arg == "--report":
            out += ["--report", REPORT, "--report-after-run"]
        elif arg in ("-v", "--verbose"):  # Snakemake's -v is --version: nobody means that here
            out.append("--logger-attnsim-full")
        else:
            out.append(arg)
    return out


def live_snakemake_dirs() -> set[Path] | None:
    """Working directories of running Snakemake processes (None where /proc is unavailable)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    found = set()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            if not any(b"snakemake" in part.rsplit(b"/", 1)[-1] for part in cmdline[:3]):
                continue
            if any(part == b"--unlock" for part in cmdline):
                continue
            found.add(Path(os.readlink(entry / "cwd")).resolve())
        except OSError:
            continue  # the process ended or is not ours to inspect
    return found


def _locked(workdir: Path) -> bool:
    locks = workdir / ".snakemake" / "locks"
    return locks.is_dir() and any(locks.iterdir())


def stale_lock(workdir: Path) -> bool:
    live = live_snakemake_dirs() if _locked(workdir) else None
    return live is not None and workdir.resolve() not in live


def live_run(workdir: Path) -> bool:
    """A Snakemake process works in `workdir` and holds its lock: a second run would stop with
    Snakemake's four-line LockException."""
    live = live_snakemake_dirs() if _locked(workdir) else None
    return live is not None and workdir.resolve() in live


def scripts_path() -> str:
    """PATH, with this interpreter's scripts directory put first if it is not on it: `attnsim run`
    called as `.venv/bin/attnsim` without activating the venv finds its own Snakemake, and the
    rules' `attnsim ...` commands find this attnsim (not another one, or none). A PATH that holds
    the directory already is kept as it is (a wrapper placed before it stays first)."""
    scripts = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if scripts in path.split(os.pathsep):
        return path
    return os.pathsep.join([scripts, path]) if path else scripts


NO_SNAKEMAKE = "snakemake is installed neither beside attnsim nor on PATH (pip install -e . does)"


def command(extra: list[str]) -> list[str]:
    """Snakemake's command line for `extra`; AttnsimError (one line) if there is no Snakemake."""
    from attnsim.errors import AttnsimError

    snakemake = shutil.which("snakemake", path=scripts_path())
    if snakemake is None:
        raise AttnsimError(NO_SNAKEMAKE)
    defaults = [
        a
        for a in DEFAULT_ARGS
        if not (
            a in ("--cores", "all") and any(x in extra for x in ("--cores", "-c", "--jobs", "-j"))
        )
    ]
    return [snakemake, *defaults, *extra]


def run(extra: list[str], workdir: Path = Path(".")) -> int:
    """Replace this process by Snakemake (signals reach it directly), unlocking a stale lock first.
    The config files and --config values are checked first (one line instead of Snakemake's
    traceback or multi-line error, and no alias bomb for Snakemake to expand)."""
    from attnsim.config import guard
    from attnsim.errors import AttnsimError

    try:
        guard.check_run_args(extra, workdir)
        cmd = command(extra)
    except AttnsimError as error:
        print(f"attnsim: error: {error}", file=sys.stderr)
        return 2
    env = {**os.environ, "PATH": scripts_path()}
    if live_run(workdir) and not any(a in ("-n", "--dry-run", "--dryrun") for a in extra):
        print(
            "attnsim: error: another run is going on in this folder (a Snakemake process works "
            "here); wait for it to finish or stop it, then rerun",
            file=sys.stderr,
        )
        return 2
    if stale_lock(workdir):
        print(
            "attnsim: removing the lock left by an interrupted run (no Snakemake process is "
            "working here)",
            file=sys.stderr,
        )
        import subprocess

        subprocess.run(
            [cmd[0], "--unlock", "--cores", "1", *extra_config(extra)],
            cwd=workdir,
            env=env,
            check=False,
            capture_output=True,
        )
    print("attnsim: " + " ".join(cmd), file=sys.stderr)
    os.execve(cmd[0], cmd, env)
    return 1  # not reached


def plan(extra: list[str], workdir: Path = Path(".")) -> int:
    """`attnsim plan`: a dry run that prints only the workflow's bill (the lines from `plan:` on,
    `attnsim.plan.bill`) or the one-line error that stops the sweep."""
    import subprocess

    from attnsim.config import guard
    from attnsim.errors import AttnsimError

    try:
        guard.check_run_args(extra, workdir)
        cmd = command(["--dry-run", *extra])
    except AttnsimError as error:
        print(f"attnsim: error: {error}", file=sys.stderr)
        return 2
    env = {**os.environ, "PATH": scripts_path()}
    result = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, env=env)
    lines = result.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("plan: ")), None)
    if start is not None:
        end = next(
            (i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines)
        )
        print("\n".join(lines[start:end]))
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("attnsim: error")]
        print("\n".join(errors) if errors else result.stderr.rstrip(), file=sys.stderr)
    return result.returncode


def extra_config(extra: list[str]) -> list[str]:
    """The arguments that select the config (needed to parse the workflow for --unlock)."""
    keep, take = [], 0
    for arg in extra:
        if take:
            keep.append(arg)
            take -= 1
        elif arg in (
            "--configfile",
            "--configfiles",
            "--config",
            "-s",
            "--snakefile",
            "-d",
            "--directory",
        ):
            keep.append(arg)
            take = 1
    return keep
