"""Read a YAML config file within bounds, refusing a key given twice in one mapping.

The file is at most MAX_CONFIG_BYTES of UTF-8, its collections nest at most MAX_DEPTH deep and
its aliases expand to at most MAX_EXPANDED_NODES values (a "billion laughs" file is a few lines
that expand to 10^9), all checked before its values are made, each in one line.

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
MAX_CONFIG_BYTES = 8 * 2**20  # a sweep is lists of values: 10^5 values are ~1 MiB of YAML
MAX_EXPANDED_NODES = 1_000_000  # YAML values after alias expansion
MAX_DEPTH = 64  # nested lists or mappings: a sweep needs about 5; PyYAML recurses per level
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


def read_text(path: Path) -> str:
    """The text of a config file, or a one-line ConfigError: missing, a directory, too large, not
    UTF-8."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise ConfigError(
                f"{path}: a directory, not a config file; name a YAML file such as config.yaml"
            )
        if size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"{path}: {size / 2**20:,.1f} MiB, over the {MAX_CONFIG_BYTES // 2**20} MiB a "
                "config may have; "
                "a grid is lists of values (write ranges out with fewer values, or split the sweep)"
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except PermissionError:
        raise ConfigError(f"{path}: not readable (permission denied)") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read ({error.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}: not UTF-8 text (byte 0x{data[error.start]:02x} on line {line}); save it as "
            "UTF-8"
        ) from None


def check_depth(text: str, where: str) -> None:
    """ConfigError when collections nest deeper than MAX_DEPTH: PyYAML composes (and Snakemake
    loads) a document recursively, and 5,000 nested lists in 10 KB end in a RecursionError. The
    scanner counted here is not recursive."""
    try:
        _check_depth(text, where, LOADER)
    except yaml.YAMLError:  # libyaml stops at its own nesting limit: say which limit, in ours
        _check_depth(text, where, yaml.SafeLoader)
        raise


def _check_depth(text: str, where: str, loader: type) -> None:
    opening = (
        yaml.BlockMappingStartToken,
        yaml.BlockSequenceStartToken,
        yaml.FlowMappingStartToken,
        yaml.FlowSequenceStartToken,
    )
    closing = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
    depth = 0
    for token in yaml.scan(text, Loader=loader):
        if isinstance(token, opening):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(
                    f"{where}: line {token.start_mark.line + 1}: lists or mappings nested more "
                    f"than {MAX_DEPTH} deep; a config needs a few levels"
                )
        elif isinstance(token, closing):
            depth -= 1


def expanded_size(node: yaml.Node, cap: int = MAX_EXPANDED_NODES) -> int:
    """How many values `node` holds once every alias is expanded (counted without expanding:
    each node's size once, memoised); stops counting past `cap`."""
    sizes: dict[int, int] = {}

    def size(n: yaml.Node) -> int:
        if id(n) in sizes:
            return sizes[id(n)]
        sizes[id(n)] = cap + 1  # a node inside itself (a recursive alias) is unbounded
        if isinstance(n, yaml.MappingNode):
            total = 1 + sum(size(k) + size(v) for k, v in n.value)
        elif isinstance(n, yaml.SequenceNode):
            total = 1 + sum(size(v) for v in n.value)
        else:
            total = 1
        sizes[id(n)] = min(total, cap + 1)
        return sizes[id(n)]

    return size(node)


def check_aliases(node: yaml.Node | None, where: str) -> None:
    if node is not None and expanded_size(node) > MAX_EXPANDED_NODES:
        raise ConfigError(
            f"{where}: its YAML aliases (*name) expand to more than {MAX_EXPANDED_NODES:,} values; "
            "a sweep never needs that many (an alias bomb?): write the lists out"
        )


def check_duplicates(text: str, where: str) -> None:
    """ConfigError for the first key given twice in `text` (a file named `where`), or for aliases
    that expand to more values than any sweep needs (`check_aliases`)."""
    parse(text, where)


def parse(text: str, where: str, duplicates: bool = True):
    """The YAML data of `text` (a file named `where`), parsed once: nesting depth, alias bombs
    and (with `duplicates`) keys given twice are refused in one line on the composed document
    before its values are made. yaml.YAMLError if it is not YAML."""
    check_depth(text, where)
    loader = LOADER(text)
    try:
        node = loader.get_single_node()
        check_aliases(node, where)
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
    path = Path(path)
    try:
        return parse(read_text(path), str(path))
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({str(error).splitlines()[0]})") from None


def check_files(paths) -> None:
    """The checks `load` makes, on config files another reader (Snakemake, for a plain
    `snakemake --configfile X`) has already parsed: size, UTF-8, alias bombs, keys given twice,
    so that run and `attnsim run` refuse the same files in the same words. A file that reader
    accepted but YAML cannot parse (it also reads JSON) is left to it."""
    for path in paths:
        where = os.path.normpath(path)
        text = read_text(Path(where))
        try:
            check_duplicates(text, where)
        except yaml.YAMLError:
            continue
