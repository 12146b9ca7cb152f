"""Snakemake profiles by name, from any folder: `--workflow-profile slurm` is the profile attnsim
ships (`workflow/profiles/slurm` inside the package), whether or not the folder is a clone.

Snakemake resolves `--workflow-profile PATH` against the working directory and, when nothing is
there, goes on with the workflow's default profile without a word: a cluster profile named by a
path that exists only in a clone would run a sweep on the login node with laptop settings. Here a
value is an existing folder first, then the name of a packaged profile, else one line listing the
names. The profile in effect is what `attnsim plan` prints, and a profile whose executor plugin
is not installed is one line with the install command, not Snakemake's usage text.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import yaml

from attnsim.errors import ConfigError

OPTION = "--workflow-profile"
PLUGINS = {"slurm": ("snakemake_executor_plugin_slurm", "pip install 'attnsim[slurm]'")}
LOCAL_EXECUTORS = ("local", "dryrun", "touch")


def packaged() -> Path:
    """The profiles shipped with the workflow (in a clone: the repository's workflow/profiles)."""
    return Path(__file__).resolve().parents[1] / "workflow" / "profiles"


def names() -> list[str]:
    folder = packaged()
    return sorted(p.name for p in folder.iterdir() if (p / "config.yaml").is_file())


def resolve(value: str, workdir: Path = Path(".")) -> Path | None:
    """The folder `--workflow-profile value` means: an existing folder (relative to `workdir`),
    else the packaged profile of that name; None for Snakemake's `none` (no profile). A value that
    is neither is a ConfigError listing the names."""
    if value == "none":
        return None
    given = Path(value) if Path(value).is_absolute() else Path(workdir) / value
    if given.is_dir():
        return given
    if "/" not in value and (packaged() / value / "config.yaml").is_file():
        return packaged() / value
    where = "no such folder" if not given.exists() else "not a folder"
    raise ConfigError(
        f"{OPTION} {value}: {where}, and not a profile attnsim ships "
        f"({', '.join(names())}); give one of those names or a profile's folder"
    )


def option(args: list[str]) -> tuple[int, str] | None:
    """(index of the value, the value) of --workflow-profile in `args`, or None."""
    for i, arg in enumerate(args):
        if arg == OPTION and i + 1 < len(args):
            return i + 1, args[i + 1]
        if arg.startswith(OPTION + "="):
            return i, arg.split("=", 1)[1]
    return None


def rewrite(args: list[str], workdir: Path = Path(".")) -> list[str]:
    """`args` with --workflow-profile's value resolved to a folder Snakemake finds from anywhere
    (absolute), and its executor plugin checked (`check_plugin`)."""
    found = option(args)
    if found is None:
        return list(args)
    index, value = found
    folder = resolve(value, workdir)
    out = list(args)
    if folder is None:
        return out
    check_plugin(folder)
    resolved = str(folder.resolve())
    out[index] = resolved if out[index] == value else f"{OPTION}={resolved}"
    return out


def settings(folder: Path) -> dict[str, Any]:
    """A profile's config.yaml (empty when unreadable: Snakemake names the problem)."""
    try:
        data = yaml.safe_load((folder / "config.yaml").read_text())
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def check_plugin(folder: Path) -> None:
    """One line when the profile's executor needs a plugin that is not installed."""
    executor = str(settings(folder).get("executor", "local"))
    module, install = PLUGINS.get(executor, (None, ""))
    if module is not None and importlib.util.find_spec(module) is None:
        raise ConfigError(
            f"{OPTION} {folder}: its executor {executor!r} needs Snakemake's {executor} executor "
            f"plugin, which is not installed: {install}"
        )


def in_effect(args: list[str], snakefile: Path, workdir: Path = Path(".")) -> str:
    """The profile a run with `args` uses, as one phrase: the one given, else the workflow's
    default profile (Snakemake's `profiles/default` beside the Snakefile), else none."""
    found = option(args)
    if found is not None:
        folder = resolve(found[1], workdir)
        return "none" if folder is None else _named(folder)
    default = Path(snakefile).parent / "profiles" / "default"
    return _named(default) if default.is_dir() else "none"


def _named(folder: Path) -> str:
    if folder.resolve().parent == packaged().resolve():
        return f"{folder.name} ({folder.resolve()})"
    return str(folder)


def remote_executor(args: list[str], workdir: Path = Path(".")) -> bool:
    """Whether the jobs of a run with `args` execute elsewhere (an executor other than local, on
    the command line or in the profile given)."""
    for i, arg in enumerate(args):
        value = None
        if arg in ("--executor", "-e") and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--executor="):
            value = arg.split("=", 1)[1]
        if value is not None:
            return value not in LOCAL_EXECUTORS
    found = option(args)
    folder = resolve(found[1], workdir) if found is not None else None
    if folder is None:
        return False
    return str(settings(folder).get("executor", "local")) not in LOCAL_EXECUTORS
