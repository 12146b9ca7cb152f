"""Overrides on the command line: `--set KEY=VALUE` (or `--config KEY=VALUE`), KEY a dotted path
into the config (`seed`, `experiments.robustness.trials`, `experiments.robustness.grid.n`) and
VALUE read as YAML (`[16,64]`, `{logspace: [0.01, 100, 50]}`, `1.0e-3`).

`attnsim run`/`plan` hand them to Snakemake as `--config`: a top-level key as it is, nested keys
folded into one YAML mapping per top-level key (`experiments={robustness: {trials: 10}}`), which
Snakemake merges into the config key by key. `show`, `claims` and `summary` apply them to the file
they read. Either way the same overrides give the same sweep, and a bad one is one line.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable

import yaml

from attnsim.errors import ConfigError

KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
RUNTIME_KEYS = ("workspace",)  # not part of the sweep: attnsim.config.workspace


def parse(item: str, option: str = "--set") -> tuple[list[str], object]:
    """`KEY=VALUE` as (key path, value); ConfigError naming the item when it is neither."""
    key, sep, text = item.partition("=")
    if not sep or not KEY.match(key):
        raise ConfigError(
            f"{option} {item}: give KEY=VALUE with KEY a config key or a dotted path into it "
            "(e.g. seed=3, experiments.robustness.trials=10, experiments.robustness.grid.n=[16,64])"
        )
    from attnsim.config.yamlfile import parse as parse_yaml

    try:  # as a config file is read: nesting, alias bombs (a recursive one too), keys twice
        value = parse_yaml(text, f"{option} {item}") if text.strip() else None
    except yaml.YAMLError as error:
        reason = str(error).splitlines()[0]
        raise ConfigError(f"{option} {item}: the value is not valid YAML ({reason})") from None
    if value is None:
        raise ConfigError(f"{option} {item}: no value after '='")
    return key.split("."), value


def apply(data: dict, items: Iterable[str], option: str = "--set") -> dict:
    """A copy of the config `data` with the overrides set, in order. Each key's parents must exist
    in the config (an experiment's name misspelt would otherwise become a new experiment)."""
    data = copy.deepcopy(data)
    for item in items:
        path, value = parse(item, option)
        node = data
        for depth, part in enumerate(path[:-1]):
            child = node.get(part) if isinstance(node, dict) else None
            if not isinstance(child, dict):
                where = ".".join(path[: depth + 1])
                known = ", ".join(node) if isinstance(node, dict) and node else "none"
                raise ConfigError(
                    f"{option} {item}: the config has no mapping {where} (there: {known})"
                )
            node = child
        node[path[-1]] = value
    return data


def snakemake_entries(items: Iterable[str], option: str = "--config") -> list[str]:
    """The overrides as Snakemake's `--config` entries: top-level ones as given, nested ones folded
    into a YAML flow mapping per top-level key (Snakemake merges mappings key by key)."""
    plain: list[str] = []
    nested: dict[str, dict] = {}
    for item in items:
        path, value = parse(item, option)
        if len(path) == 1:
            plain.append(item)
            continue
        node = nested.setdefault(path[0], {})
        for part in path[1:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"{option} {item}: {'.'.join(path[:-1])} is set twice")
        node[path[-1]] = value
    return plain + [f"{key}={flow_yaml(tree)}" for key, tree in nested.items()]


def flow_yaml(tree: dict) -> str:
    """One line of YAML (`{a: {b: [1, 2]}}`), keys in the order given."""
    return yaml.safe_dump(tree, default_flow_style=True, width=2**20, sort_keys=False).strip()


# attnsim's own options of `run` and `plan` that take values: the overrides (one or more items)
OVERRIDE_OPTIONS = ("--set", "--config", "-C")


def split_args(args: list[str]) -> tuple[list[str], list[str], str | None]:
    """(Snakemake's other arguments, the overrides of --set/--config, --workspace's folder)."""
    rest, overrides, workspace, taking = [], [], None, False
    args = list(args)
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in OVERRIDE_OPTIONS and eq:
            overrides.append(value)
            taking = True
        elif arg in OVERRIDE_OPTIONS:
            taking = True
        elif name == "--workspace":
            if not eq:
                i += 1
                value = args[i] if i < len(args) else ""
            workspace = value
            taking = False
        elif taking and not arg.startswith("-"):
            overrides.append(arg)
        else:
            taking = False
            rest.append(arg)
        i += 1
    return rest, overrides, workspace
