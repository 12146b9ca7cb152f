"""Grid generators: a grid parameter may be written as a rule instead of a list,

    scale: {logspace: [0.01, 100, 500]}     500 values from 0.01 to 100, evenly spaced in log
    tau: {linspace: [0.1, 2.0, 20]}         20 values from 0.1 to 2.0, evenly spaced
    n: {range: [16, 4097, 16]}              16, 32, ..., 4096 (Python's range: stop excluded)

expanded once, when the config is loaded, into the list it stands for: everything after (the
schema, the records, the config hash, point ids) sees lists of values, so a generator and the
same values written out are the same sweep. Values are rounded to 12 significant digits (or
`digits: k`), so that e.g. {logspace: [0.01, 1, 3]} gives exactly [0.01, 0.1, 1.0], the values a
person writes. Each mistake is one line naming the parameter.
"""

from __future__ import annotations

import copy
import math

from attnsim.errors import ConfigError

SIGNIFICANT_DIGITS = 12
MAX_VALUES = 10_000_000  # per generator: the config's max_points caps the grid afterwards
USAGE = {
    "logspace": "{logspace: [start, stop, count]} (start, stop > 0)",
    "linspace": "{linspace: [start, stop, count]}",
    "range": "{range: [start, stop, step]} (integers; stop excluded)",
}


def expand(config: dict) -> dict:
    """A copy of `config` whose grid generators are expanded into lists (anything that is not a
    config with experiments is returned as it is: the schema names the problem)."""
    experiments = config.get("experiments") if isinstance(config, dict) else None
    if not isinstance(experiments, dict) or not any(
        isinstance(v, dict)
        for spec in experiments.values()
        if isinstance(spec, dict) and isinstance(spec.get("grid"), dict)
        for v in spec["grid"].values()
    ):
        return config
    config = copy.deepcopy(config)
    for name, spec in config["experiments"].items():
        grid = spec.get("grid") if isinstance(spec, dict) else None
        if isinstance(grid, dict):
            for param, value in grid.items():
                if isinstance(value, dict):
                    grid[param] = values(value, f"experiments.{name}.grid.{param}")
    return config


def values(rule: dict, where: str) -> list:
    """The list a generator stands for; ConfigError (one line, starting with `where`)."""
    rule = dict(rule)
    digits = _integer(rule.pop("digits", SIGNIFICANT_DIGITS), f"{where}.digits", 1, 17)
    if len(rule) != 1 or next(iter(rule)) not in USAGE:
        raise ConfigError(
            f"{where}: a mapping here is a generator, one of "
            f"{', '.join(USAGE.values())}, optionally with digits: k; got {sorted(rule)}"
        )
    ((name, args),) = rule.items()
    if name == "range":
        return _range(args, where)
    if not isinstance(args, list) or len(args) != 3:
        raise ConfigError(f"{where}: write {USAGE[name]}; got {args!r}")
    start, stop = (_number(a, f"{where}.{name}[{i}]") for i, a in enumerate(args[:2]))
    count = _integer(args[2], f"{where}.{name}[2] (count)", 1, MAX_VALUES)
    if name == "logspace":
        if start <= 0 or stop <= 0:
            raise ConfigError(f"{where}: logspace needs start and stop > 0; got {args!r}")
        ratio = math.log(stop / start)
        raw = [start * math.exp(ratio * i / max(count - 1, 1)) for i in range(count)]
    else:
        raw = [start + (stop - start) * i / max(count - 1, 1) for i in range(count)]
    if count > 1:
        raw[-1] = stop  # the end point exactly as written
    out = [float(f"{v:.{digits}g}") for v in raw]
    if len(set(out)) != len(out):
        raise ConfigError(
            f"{where}: {count} values rounded to {digits} significant digits repeat one another; "
            "use fewer values or more digits"
        )
    return out


def _range(args, where: str) -> list[int]:
    if not isinstance(args, list) or not 1 <= len(args) <= 3:
        raise ConfigError(f"{where}: write {USAGE['range']}; got {args!r}")
    numbers = [_integer(a, f"{where}.range[{i}]") for i, a in enumerate(args)]
    if len(numbers) == 3 and numbers[2] == 0:
        raise ConfigError(f"{where}.range[2]: the step may not be 0")
    span = range(*numbers)
    if not span:
        raise ConfigError(f"{where}: {{range: {args!r}}} is empty (Python's range: stop excluded)")
    if len(span) > MAX_VALUES:
        raise ConfigError(f"{where}: {len(span):,} values, over {MAX_VALUES:,} per generator")
    return list(span)


def _number(value, where: str) -> float:
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise ConfigError(f"{where}: {value!r} is not a finite number")
    return number


def _integer(value, where: str, low: int | None = None, high: int | None = None) -> int:
    number = _number(value, where)
    if not number.is_integer():
        raise ConfigError(f"{where}: {value!r} is not a whole number")
    number = int(number)
    if (low is not None and number < low) or (high is not None and number > high):
        raise ConfigError(f"{where}: {number:,} is outside {low:,}..{high:,}")
    return number
