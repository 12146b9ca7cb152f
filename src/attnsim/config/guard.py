"""Bounds on what a config may ask for, checked before anything big is built.

- the file: a YAML mapping (its size, encoding, nesting and aliases: `attnsim.config.yamlfile`);
- names: an experiment name is a path segment and a SQL view, so it may not be a view of the
  store's own (`trials`, `summary`, `provenance`, `_provenance`) or another experiment's
  `<name>_trials`, and may not end in a part repeated 20 times (Snakemake refuses such wildcard
  values as "periodic");
- size: a grid's points are the product of its list lengths, known before any expansion; a
  config over `max_points` in all is refused with the points and the planning memory they need;
- `attnsim run`'s own arguments (`--configfile`, `--config KEY=VALUE`) before Snakemake reads them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from attnsim.config.yamlfile import parse, read_text
from attnsim.errors import ConfigError

DEFAULT_MAX_POINTS = 10_000_000
PLAN_BYTES_PER_POINT = 160  # planning's memory per grid point (docs/scaling.md: ~1.5 GB per 10^7)
RESERVED_NAMES = ("trials", "summary", "provenance", "_provenance")
PERIODIC = re.compile(r"(.+)\1{19,}$")  # Snakemake's PeriodicityDetector (20 repeats or more)


def check_mapping(data, where: str) -> None:
    if data is None:
        raise ConfigError(
            f"{where}: empty; a config is a mapping with seed: and experiments: (see config.yaml)"
        )
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where}: a config is a mapping with seed: and experiments:, this file holds a "
            f"{type(data).__name__}"
        )


def check_names(names) -> None:
    """Experiment names that would collide with the store's views or that Snakemake refuses
    (one pass over a set: 40,000 experiments took 86 s when each name scanned all the others)."""
    names = list(names)
    taken = set(names)
    for name in names:
        if name in RESERVED_NAMES:
            raise ConfigError(
                f"experiments.{name}: reserved, the store's view `{name}` has that name; choose "
                "another name"
            )
        owner = name.removesuffix("_trials")
        if owner != name and owner in taken:
            raise ConfigError(
                f"experiments.{name}: reserved, the view of experiment {owner}'s trials has that "
                "name; choose another name"
            )
        if PERIODIC.search(name):
            raise ConfigError(
                f"experiments.{name}: ends in a part repeated 20 times or more, which Snakemake "
                "refuses in a path (a periodic wildcard); choose another name"
            )


# the length of a grid axis not yet expanded: (experiment, parameter, value) -> its count, or
# None for a list's length (1 for anything else)
Lengths = Callable[[str, str, Any], "int | None"]


def _length(value: Any, given: int | None = None) -> int:
    if given is not None:
        return given
    return len(value) if isinstance(value, list) else 1


def grid_size(grid: dict, name: str = "", lengths: Lengths | None = None) -> int:
    return math.prod(
        _length(values, lengths(name, key, values) if lengths else None)
        for key, values in grid.items()
    )


def check_size(experiments: dict, max_points: int, lengths: Lengths | None = None) -> None:
    """The config's points (products of list lengths, nothing expanded; `lengths`: the counts of
    generators not yet expanded) against `max_points`."""
    grids = {
        name: (spec.get("grid") if isinstance(spec, dict) else None) or {}
        for name, spec in experiments.items()
    }
    sizes = {
        name: grid_size(grid, name, lengths) if isinstance(grid, dict) else 1
        for name, grid in grids.items()
    }
    total = sum(sizes.values())
    if total > max_points:
        name = max(sizes, key=lambda e: sizes[e])
        shape = " x ".join(
            f"{k}: {_length(v, lengths(name, k, v) if lengths else None)}"
            for k, v in grids[name].items()
        )
        raise ConfigError(
            f"experiments.{name}.grid: {sizes[name]:,} points ({shape}); the config has {total:,} "
            "in all, over max_points = "
            f"{max_points:,}; planning them needs about "
            f"{total * PLAN_BYTES_PER_POINT / 2**30:,.1f} GiB of memory: shrink the grid "
            "or raise max_points"
        )


def check_jobs(experiments: dict, chunk_size: int | None, max_jobs: int) -> None:
    """With `chunk_size` set, every experiment needs at least ceil(points / chunk_size) simulate
    jobs, known before any grid is expanded: `chunk_size: 1` at 10^6 points once planned for
    4 minutes and 7.5 GB before failing. The bill checks the exact count after planning."""
    if not chunk_size:
        return
    sizes = {name: grid_size(spec.get("grid") or {}) for name, spec in experiments.items()}
    jobs = sum(-(-points // chunk_size) for points in sizes.values())
    if jobs > max_jobs:
        raise ConfigError(
            f"chunk_size: {chunk_size:,} point{'s' * (chunk_size != 1)} per job makes at least "
            f"{jobs:,} simulate jobs for the config's {sum(sizes.values()):,} points, over "
            f"max_jobs = {max_jobs:,}; remove chunk_size (jobs are sized by cost) or raise it, "
            "or raise max_jobs"
        )


# --- `attnsim run`: the arguments Snakemake would read before attnsim sees the config -------------


def run_configfiles(extra: list[str], workdir: Path = Path(".")) -> list[Path]:
    """The config files a `snakemake ...extra` run reads: those after --configfile(s), else
    config.yaml."""
    from attnsim.config.workspace import option_value

    files = [Path(f) for f in option_value(extra, "--configfile")]
    files += [Path(f) for f in option_value(extra, "--configfiles")]
    return files or [Path(workdir) / "config.yaml"]


def read_config(path: Path) -> dict:
    """A config file's mapping, checked as Snakemake will read it (one line for each problem)."""
    text = read_text(path)
    try:  # keys given twice are the workflow's to name (yamlfile.check_files), in its words
        data = parse(text, str(path), duplicates=False)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({str(error).splitlines()[0]})") from None
    check_mapping(data, str(path))
    return data


def merge(into: dict, other: dict) -> dict:
    """`other` merged into `into` key by key, as Snakemake merges several config files."""
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value
    return into


def check_run_args(args: list[str], workdir: Path = Path(".")) -> dict:
    """One line for what Snakemake would report as a traceback or a multi-line error: a config
    file that is missing, not UTF-8, too large, an alias bomb, empty or not a mapping; an override
    (`--set`/`--config KEY=VALUE`) that is malformed; a workspace that cannot be named after the
    config file. Returns the config files' mapping, merged as Snakemake merges them."""
    from attnsim.config import overrides, workspace

    rest, items, given = overrides.split_args(args)
    for item in items:
        overrides.parse(item)
    default = run_configfiles([], workdir)[0]
    merged: dict = {}
    for path in run_configfiles(rest, workdir):
        if path == default and not path.exists():
            raise ConfigError(
                "config.yaml: no such config file in this folder; `attnsim init .` writes a "
                "starter config, or name yours with --configfile FILE"
            )
        merge(merged, read_config(Path(workdir) / path))
    workspace.locate(workspace.option_value(rest, "--configfile"), given, workdir)
    return merged
