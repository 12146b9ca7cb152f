"""Read a YAML config file, refusing a key given twice in one mapping.

YAML parsers (PyYAML, and Snakemake's, which uses it) keep the last of two equal
keys without a word, so a second `seed:` further down silently wins. Here the file
is composed first and every mapping checked; the error names the key's dotted path
and both lines. Values are read exactly as PyYAML reads them (as Snakemake does),
so both see the same config; numbers written as text (`1e-3` is a string in
YAML 1.1) are turned into numbers later, by the schema (`attnsim.config.coerce`).
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from attnsim.errors import ConfigError

MERGE_TAG = "tag:yaml.org,2002:merge"
# libyaml's parser where PyYAML was built with it (the same resolver and constructor, so the same
# values): a 20,000-experiment config took 2 minutes to read in pure Python, three times over
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def key_path(path) -> str:
    """A key's place in the config as the error messages name it: `experiments.x.grid.n[2]`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "config"


def duplicate_keys(node: yaml.Node, path: list | None = None, seen: set | None = None):
    """Yield (path of the mapping, key, first line, second line) for each key given twice (lines
    1-based)."""
    path = [] if path is None else path
    seen = set() if seen is None else seen
    if id(node) in seen:  # an alias to a node already checked
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first: dict = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is not None and key_node.tag != MERGE_TAG:
                if key in first:
                    yield path, key, first[key], key_node.start_mark.line + 1
                else:
                    first[key] = key_node.start_mark.line + 1
            yield from duplicate_keys(value_node, [*path, "?" if key is None else key], seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from duplicate_keys(item, [*path, index], seen)


def check_duplicates(text: str, where: str) -> None:
    """ConfigError for the first key given twice in `text` (a file named `where`), or for aliases
    that expand to more values than any sweep needs (`guard.check_aliases`)."""
    parse(text, where)


def parse(text: str, where: str, duplicates: bool = True):
    """The YAML data of `text` (a file named `where`), parsed once: nesting depth, alias bombs
    and (with `duplicates`) keys given twice are refused in one line on the composed document
    before its values are made. yaml.YAMLError if it is not YAML."""
    from attnsim.config import guard

    guard.check_depth(text, where)
    loader = LOADER(text)
    try:
        node = loader.get_single_node()
        guard.check_aliases(node, where)
        if duplicates and node is not None:
            for path, key, line, again in duplicate_keys(node):
                raise ConfigError(
                    f"{where}: {key_path([*path, key])}: key given twice (lines {line} and "
                    f"{again}); keep one"
                )
        return None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def load(path: str | Path):
    """The YAML data of a config file; ConfigError if it is missing, a directory, too large, not
    UTF-8, not YAML, an alias bomb or repeats a key (`attnsim.config.guard`)."""
    from attnsim.config import guard

    path = Path(path)
    try:
        return parse(guard.read_text(path), str(path))
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({str(error).splitlines()[0]})") from None


def check_files(paths) -> None:
    """The checks `load` makes, on config files another reader (Snakemake, for a plain
    `snakemake --configfile X`) has already parsed: size, UTF-8, alias bombs, keys given twice,
    so that run and `attnsim run` refuse the same files in the same words. A file that reader
    accepted but YAML cannot parse (it also reads JSON) is left to it."""
    from attnsim.config import guard

    for path in paths:
        where = os.path.normpath(path)
        text = guard.read_text(Path(where))
        try:
            check_duplicates(text, where)
        except yaml.YAMLError:
            continue
