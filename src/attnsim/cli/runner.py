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
import stat
import sys
from pathlib import Path

# also in workflow/profiles/default (plain snakemake)
DEFAULT_ARGS = ["--cores", "all", "--rerun-incomplete"]
REPORT = "report.html"  # in the workspace

HELP = """\
usage: attnsim run [--report] [-v] [SNAKEMAKE OPTION ...] [TARGET ...]

Run the sweep of config.yaml: `snakemake --cores all --rerun-incomplete` with the workflow's
default profile (workflow/profiles/default), after clearing the lock a killed run left behind (only when
no Snakemake works in this directory). Only what is missing or changed is computed. It prints a
line per finished job (points and trials done, wall time, ETA) and ends with a summary; a failed
job's line names its rule, its wildcards and its one-line error.

options of attnsim run:
  --configfile FILE     the sweep to run instead of config.yaml (replaces it, not merged); its
                        workspace is results/<FILE's stem>/ (config.yaml's: results/)
  --workspace DIR       the folder for the sweep's store, figures, claims, logs and report
  --set KEY=VALUE ...   override a config key or a dotted path into it (also --config), e.g.
                        --set seed=1 experiments.robustness.grid.n=[16,64]
  --report              also write the workspace's report.html when the run ends
  -v, --verbose         Snakemake's full log (rule blocks, shell commands) instead of the job lines
  -h, --help            this help

Snakemake options used most (any other goes through as well):
  -n, --dry-run                 the bill (points, jobs, CPU-hours) and the jobs per rule, no run
                                (-n -v: each job with Snakemake's reason for it)
  --cores N                     use N cores (default: all)
  --workflow-profile slurm      submit the jobs to a SLURM cluster (docs/cluster.md): a profile
                                attnsim ships, by its name, or a profile folder's path
  --keep-going                  keep running the other jobs when one fails
  --forceall                    recompute everything (the store's finished points are kept otherwise)

Snakemake's own help, all of its options: snakemake --help
"""  # noqa: E501


def workspace_of(args: list[str], workdir: Path = Path(".")) -> Path:
    """The workspace a `run`/`plan` with these (attnsim's) arguments writes to."""
    from attnsim.config import workspace
    from attnsim.config.overrides import split_args

    rest, _, given = split_args(args)
    return workspace.locate(workspace.option_value(rest, "--configfile"), given, workdir)


# the files Snakemake looks for when no --snakefile is given (snakemake.common.SNAKEFILE_CHOICES)
SNAKEFILES = ("Snakefile", "snakefile", "workflow/Snakefile", "workflow/snakefile")


def packaged_snakefile() -> Path:
    """The workflow shipped inside the attnsim package (in a clone: the repository's workflow/)."""
    return Path(__file__).resolve().parents[1] / "workflow" / "Snakefile"


def snakefile_in_effect(args: list[str], workdir: Path = Path(".")) -> Path:
    """The Snakefile a run with `args` reads: the one given, the folder's own, or the packaged."""
    for i, arg in enumerate(args):
        if arg in ("-s", "--snakefile") and i + 1 < len(args):
            return Path(workdir) / args[i + 1]
        if arg.startswith("--snakefile="):
            return Path(workdir) / arg.split("=", 1)[1]
    for name in SNAKEFILES:
        if (Path(workdir) / name).is_file():
            return Path(workdir) / name
    return packaged_snakefile()


def snakefile_args(args: list[str], workdir: Path = Path(".")) -> list[str]:
    """`--snakefile <the packaged workflow>` unless one is given or the folder has its own: any
    folder holding a config runs the workflow that came with attnsim."""
    given = any(a in ("-s", "--snakefile") or a.startswith("--snakefile=") for a in args)
    if given or any((Path(workdir) / name).is_file() for name in SNAKEFILES):
        return []
    return ["--snakefile", str(packaged_snakefile())]


def translate(args: list[str], workdir: Path = Path("."), record: bool = False) -> list[str]:
    """attnsim run's own options into Snakemake's: the packaged workflow where the folder has
    none, --report (into the workspace), -v/--verbose, --workspace DIR and the --set/--config
    overrides (one `--config`, at the end: Snakemake keeps only the last of several). The
    overrides go as one list the workflow applies after the workspace's record
    (`attnsim.config.state`), each replacing its key whole (Snakemake would merge mappings key by
    key: a generator into another); `record`: a real run, whose workflow records them in the
    workspace's state record once the sweep has planned."""
    import json

    from attnsim.config import overrides
    from attnsim.config import state as workspace_state
    from attnsim.plan import profiles

    rest, items, given = overrides.split_args(args)
    rest = profiles.rewrite(rest, workdir)  # a packaged profile by name, from any folder
    out = snakefile_args(rest, workdir)
    for arg in rest:
        if arg == "--report":
            report = workspace_of(args, workdir) / REPORT
            out += ["--report", str(report), "--report-after-run"]
        elif arg in ("-v", "--verbose"):  # Snakemake's -v is --version: nobody means that here
            out.append("--logger-attnsim-full")
        else:
            out.append(arg)
    dry = any(a in ("-n", "--dry-run", "--dryrun") for a in rest)
    quiet = any(a in ("-q", "--quiet") for a in rest)
    if dry and not quiet and "--logger-attnsim-full" not in out:
        # the bill and the job counts: no block per job with its reason's list of paths
        out += ["--quiet", "rules", "host", "reason"]
    entries = []
    science = workspace_state.science(items)
    if science:
        entries.append(f"{workspace_state.COMMAND_KEY}={json.dumps(science)}")
        if record:  # a real run: the workflow records them once the sweep has planned
            entries.append(f"{workspace_state.RECORD_KEY}=true")
    if given:
        entries.append(f"workspace={given}")
    token = os.environ.get(workspace_state.TOKEN_ENV)
    if token:  # a run `attnsim decide` started: the top-ups of its look in progress
        entries.append(f"{workspace_state.TOKEN_KEY}={token}")
    return out + (["--config", *entries] if entries else [])


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


def check_args(args: list[str], workdir: Path = Path(".")) -> list[str]:
    """The config files and overrides, before Snakemake reads them: one line for each problem,
    and the effective sweep (the files <- the workspace's record <- the overrides) loaded as the
    workflow will load it (a bad override is one line, not Snakemake's traceback). Returns the
    overrides that are part of the sweep. A sweep that passed before with this very code
    (`checked_key`) is not loaded again here: the workflow loads it in full at its start."""
    from attnsim.config import guard, overrides
    from attnsim.config import state as workspace_state

    merged = guard.check_run_args(args, workdir)
    _, items, _ = overrides.split_args(args)
    science = workspace_state.science(items)
    folder = Path(workdir) / workspace_of(args, workdir)
    token = os.environ.get(workspace_state.TOKEN_ENV)
    record = workspace_state.current(folder, token=token)
    data = workspace_state.effective_data(merged, record, science, token)
    key = checked_key(data)
    if key is not None and _passed(key):
        return science  # this very sweep passed with this very code: nothing to say again
    from attnsim.config import load as loading
    from attnsim.kinds import all_kinds

    hinted = len(loading._HINTED)
    loading.load(data)
    plugins = any(not k.package.startswith("attnsim.") for k in all_kinds().values())
    if key is not None and len(loading._HINTED) == hinted and not plugins:
        _passed(key, record=True)  # a sweep with hints or plugin kinds is checked every time
    return science


PASSED = "checked-sweeps"  # the cache's folder of sweeps that passed `check_args`


def checked_key(data: dict) -> str | None:
    """A digest of what `load`'s verdict on `data` depends on: the data, attnsim's files (path,
    size, mtime), the import path's folders (a package installed or removed, a plugin kind among
    them, changes a folder's mtime) and Python's version; None for data that is not JSON."""
    import hashlib
    import json

    import attnsim

    try:
        text = json.dumps(data, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError):
        return None
    package = Path(attnsim.__file__).parent
    code = []
    for path in sorted(package.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        try:
            st = path.stat()
        except OSError:  # gone meanwhile: no verdict kept
            return None
        if stat.S_ISREG(st.st_mode):  # files only: a folder's mtime moves as __pycache__ appears
            code.append((str(path.relative_to(package)), st.st_size, st.st_mtime_ns))
    folders: list[tuple[str, int | None]] = []
    for entry in sys.path:
        try:
            folders.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            folders.append((entry, None))
    return hashlib.sha256(json.dumps([text, code, folders, sys.version]).encode()).hexdigest()


def _passed(key: str, record: bool = False) -> bool:
    """Whether the sweep of `key` passed before (`record`: note that it did). The workflow checks
    every sweep in full again at its start: this only spares `attnsim run` its second copy of that
    check (importing the config's schema, every kind and numpy: ~0.7 CPU-s)."""
    from attnsim import files
    from attnsim.errors import WriteError

    folder = files.cache_folder()
    if folder is None:
        return False
    entry = folder / PASSED / key
    if not record:
        return entry.is_file()
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        files.write_text(entry, "", fsync=False)
    except (OSError, WriteError):
        pass
    return True


def is_dry(args: list[str]) -> bool:
    return any(a in ("-n", "--dry-run", "--dryrun") for a in args)


def run(args: list[str], workdir: Path = Path(".")) -> int:
    """Run Snakemake to its end (`attnsim.cli.supervise`: a signal always ends it), unlocking a
    stale lock first.
    The config files and --config values are checked first (one line instead of Snakemake's
    traceback or multi-line error, and no alias bomb for Snakemake to expand)."""
    from attnsim.errors import AttnsimError

    try:
        check_args(args, workdir)
        extra = translate(args, workdir, record=not is_dry(args))
        cmd = command(extra)
    except AttnsimError as error:
        print(f"attnsim: error: {error}", file=sys.stderr)
        return 2
    env = {**os.environ, "PATH": scripts_path()}
    if live_run(workdir) and not is_dry(extra):
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
    if "--logger-attnsim-full" in cmd:  # -v: the command Snakemake runs, with its full log
        print("attnsim: " + " ".join(cmd), file=sys.stderr)
    from attnsim.cli.supervise import supervise

    return supervise(cmd, env, workdir)


def plan(args: list[str], workdir: Path = Path(".")) -> int:
    """`attnsim plan`: a dry run that prints only the workflow's bill (the lines from `plan:` on,
    `attnsim.plan.bill`) or the one-line error that stops the sweep."""
    import subprocess

    from attnsim.errors import AttnsimError

    try:
        check_args(args, workdir)
        cmd = command(["--dry-run", *translate(args, workdir)])
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
        print(f"  profile: {profile_in_effect(args, workdir)}")
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("attnsim: error")]
        print("\n".join(errors) if errors else result.stderr.rstrip(), file=sys.stderr)
    return result.returncode


def profile_in_effect(args: list[str], workdir: Path = Path(".")) -> str:
    from attnsim.plan import profiles

    rest = translate(args, workdir)
    return profiles.in_effect(rest, snakefile_in_effect(rest, workdir), workdir)


def extra_config(extra: list[str]) -> list[str]:
    """The arguments that select the config (needed to parse the workflow for --unlock)."""
    many = ("--configfile", "--configfiles", "--config")
    one = ("-s", "--snakefile", "-d", "--directory")
    keep, take = [], 0
    for arg in extra:
        if arg in many or arg in one:
            keep.append(arg)
            take = -1 if arg in many else 1
        elif take and not (take < 0 and arg.startswith("-")):
            keep.append(arg)
            take = max(take - 1, -1) if take > 0 else -1
        else:
            take = 0
    return keep
