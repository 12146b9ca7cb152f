"""A workspace per sweep: the folder holding one config's store, figures, claims, logs, plan files
and report, so that the default sweep, the presets and a user's own sweeps never write over one
another (nor mix their rows in one store).

The default sweep (config.yaml in the working directory) keeps `results/`. Any other config file
gets `results/<its stem>/` (workflow/presets/large.yaml -> results/large/); `--workspace DIR`
names the folder instead. Every command finds the workspace the same way from the same two
options (`--configfile FILE`, `--workspace DIR`), and the workflow from the config files Snakemake
was given and `--config workspace=DIR`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from attnsim.errors import ConfigError

DEFAULT_CONFIG = Path("config.yaml")
ROOT = Path("results")
# the default workspace's own folders: a config stem with one of these names would live inside them
RESERVED = ("store", "figures", "logs", "plan", "benchmarks", "claims")
STEM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
CONFIG_KEY = "workspace"  # `snakemake --config workspace=DIR`: the option's form for the workflow
# what a workspace holds besides RESERVED's folders: written by runs and commands, never by hand
OWN_FOLDERS = (*RESERVED, "rebuild", "decide")
OWN_FILES = ("claims.parquet", "claims.md", "claims.html", "report.html", "state.yaml")


def _is_default(path: Path, workdir: Path) -> bool:
    default = Path(workdir) / DEFAULT_CONFIG
    try:
        return os.path.samefile(Path(workdir) / path, default)
    except OSError:
        return os.path.normpath(Path(workdir) / path) == os.path.normpath(default)


def locate(
    configfiles: Sequence[str | Path] = (),
    given: str | Path | None = None,
    workdir: str | Path = ".",
) -> Path:
    """The workspace of a sweep read from `configfiles` (none: config.yaml), relative to `workdir`
    unless `given` is absolute: `given` if set, `results/` for config.yaml, else
    `results/<stem of the last config file>` (the last file is the sweep's own when several are
    merged)."""
    if given is not None and str(given) != "":
        return Path(given)
    files = [Path(f) for f in configfiles]
    if not files or all(_is_default(f, Path(workdir)) for f in files):
        return ROOT
    stem = files[-1].stem
    if not STEM.match(stem):
        raise ConfigError(
            f"{files[-1]}: its name {stem!r} cannot name a workspace folder (letters, digits, "
            "'_', '.', '-'); rename the file or give --workspace DIR"
        )
    if stem in RESERVED:
        raise ConfigError(
            f"{files[-1]}: a config named {stem!r} would put its workspace inside the default "
            f"sweep's results/{stem}/; rename the file or give --workspace DIR"
        )
    return ROOT / stem


def from_config(config: dict, configfiles: Sequence[str | Path], workdir=".") -> Path:
    """The workflow's workspace: `--config workspace=DIR` (taken out of `config`, which holds
    science only) or the one named after its config files."""
    given = config.pop(CONFIG_KEY, None)
    if given is not None and not isinstance(given, str):
        raise ConfigError(f"--config workspace={given!r}: give a folder, e.g. workspace=results/x")
    folder = locate(configfiles, given, workdir)
    check_place(folder, workdir)
    return folder


def check_place(folder: str | Path, workdir: str | Path = ".") -> None:
    """ConfigError when the workspace `folder` is a result store or lies inside one (another
    sweep's `<workspace>/store`, by its real path): a run there would write a second workspace,
    its plan, figures, claims and a store of its own, among that store's files."""
    real = Path(os.path.realpath(Path(workdir) / folder))
    for candidate in (real, *real.parents):
        if is_store(candidate):
            raise ConfigError(
                f"{folder}: inside the result store {candidate} (another sweep's); give a "
                "workspace outside every store, e.g. --workspace results/<name>"
            )


def is_store(folder: Path) -> bool:
    """Whether `folder` is a result store: it holds a run lock, or trial or summary tables."""
    from attnsim.store.lock import LOCK_NAME

    if (folder / LOCK_NAME).is_file():
        return True
    return any(
        (folder / table).is_dir() and any((folder / table).glob("kind=*"))
        for table in ("trials", "summary")
    )


def option_value(args: Sequence[str], name: str) -> list[str]:
    """The values given to a command-line option `name` (`--name V` or `--name=V`; an option
    that takes several values, like --configfile, takes each until the next option)."""
    values, taking = [], False
    for arg in args:
        if arg.startswith(name + "="):
            values.append(arg.split("=", 1)[1])
            taking = False
        elif arg == name:
            taking = True
        elif taking and not arg.startswith("-"):
            values.append(arg)
        else:
            taking = False
    return values


def check_not_own(output: str | Path, workspace: str | Path) -> None:
    """ConfigError when `output` (a file a command is asked to write, e.g. `query --output`) is
    one of the workspace's own: any file that exists inside it, anything in its folders (store,
    figures, plan, logs, ...), or a name a run writes there (claims.parquet, state.yaml, ...).
    Written over, they would be taken for the run's (a query's rows as the claims table)."""
    real, home = Path(os.path.realpath(output)), Path(os.path.realpath(workspace))
    if home not in real.parents:
        return
    inside = real.relative_to(home)
    if os.path.lexists(output) or inside.parts[0] in OWN_FOLDERS or real.name in OWN_FILES:
        raise ConfigError(
            f"{output}: one of the workspace's own files ({workspace}: its claims, figures, plan, "
            "logs and state are attnsim's); give a new file's path outside its folders (nothing "
            "written)"
        )


def options(configfiles: Sequence[str | Path], folder: Path, workdir: str | Path = ".") -> str:
    """The options a later command needs to name this workspace, as the user typed them:
    `--configfile FILE` for a config other than config.yaml, `--workspace DIR` when the folder is
    not the one named after it; '' for the default sweep."""
    files = [str(f) for f in configfiles]
    out = ""
    if files and not all(_is_default(Path(f), Path(workdir)) for f in files):
        out += f" --configfile {files[-1]}"
    try:
        named = locate(files, None, workdir)
    except ConfigError:
        named = None
    if named is None or os.path.normpath(named) != os.path.normpath(folder):
        out += f" --workspace {folder}"
    return out
