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
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from attnsim.config import guard
from attnsim.errors import ConfigError
from attnsim.kinds.base import Param

SIGNIFICANT_DIGITS = 12
MAX_VALUES = 10_000_000  # per generator: the config's max_points caps the grid afterwards
USAGE = {
    "logspace": "{logspace: [start, stop, count]} (start, stop > 0)",
    "linspace": "{linspace: [start, stop, count]}",
    "range": "{range: [start, stop, step]} (integers; stop excluded)",
}


def expand(config: dict) -> dict:
    """A copy of `config` whose grid generators are expanded into lists (anything that is not a
    config with experiments is returned as it is: the schema names the problem). Bounded before
    expanded: each generator's count, its values' type and range on its axis (the kind's
    parameter) and the grids' points against `max_points` are checked before any list is built,
    so a 10^7-value generator on an integer axis is one line, not gigabytes."""
    experiments = config.get("experiments") if isinstance(config, dict) else None
    if not isinstance(experiments, dict) or not any(
        isinstance(v, dict)
        for spec in experiments.values()
        if isinstance(spec, dict) and isinstance(spec.get("grid"), dict)
        for v in spec["grid"].values()
    ):
        return config
    rules = {}  # (experiment, parameter) -> the generator's parsed arguments
    for name, spec in experiments.items():
        grid = spec.get("grid") if isinstance(spec, dict) else None
        if isinstance(grid, dict):
            params = _params(spec.get("kind"))
            for param, value in grid.items():
                if isinstance(value, dict):
                    where = f"experiments.{name}.grid.{param}"
                    rules[name, param] = _parse(value, where)
                    _check_axis(rules[name, param], params.get(param), where)
    limit = config.get("max_points", guard.DEFAULT_MAX_POINTS)
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        counts = {key: rule.count for key, rule in rules.items()}
        guard.check_size(experiments, limit, lambda name, param, value: counts.get((name, param)))
    config = copy.deepcopy(config)
    for (name, param), rule in rules.items():
        config["experiments"][name]["grid"][param] = _build(rule)
    return config


def _params(kind: object) -> dict[str, Param]:
    """The parameters of the kind named `kind`, by name (none for an unknown kind: the schema
    names it)."""
    from attnsim.kinds import all_kinds

    found = all_kinds().get(kind) if isinstance(kind, str) else None
    return {p.name: p for p in found.schema.params} if found is not None else {}


@dataclass(frozen=True)
class _Rule:
    """A generator's checked arguments, before its values are made."""

    name: str  # logspace, linspace or range
    start: float
    stop: float
    count: int
    digits: int
    step: int = 1  # range only
    where: str = ""
    text: str = ""  # the generator as written, for messages


def values(rule: dict, where: str, param: Param | None = None) -> list:
    """The list a generator stands for; ConfigError (one line, starting with `where`). With
    `param`, the axis it is for: its values' type and bounds are checked before the list is
    built."""
    parsed = _parse(rule, where)
    _check_axis(parsed, param, where)
    return _build(parsed)


def _parse(rule: dict, where: str) -> _Rule:
    """The generator's arguments and its count, checked; nothing expanded."""
    rule = dict(rule)
    digits = _integer(rule.pop("digits", SIGNIFICANT_DIGITS), f"{where}.digits", 1, 17)
    if len(rule) != 1 or next(iter(rule)) not in USAGE:
        raise ConfigError(
            f"{where}: a mapping here is a generator, one of "
            f"{', '.join(USAGE.values())}, optionally with digits: k; got {sorted(rule)}"
        )
    ((name, args),) = rule.items()
    text = f"{{{name}: {args!r}}}"
    if name == "range":
        if not isinstance(args, list) or not 1 <= len(args) <= 3:
            raise ConfigError(f"{where}: write {USAGE['range']}; got {args!r}")
        numbers = [_integer(a, f"{where}.range[{i}]") for i, a in enumerate(args)]
        if len(numbers) == 3 and numbers[2] == 0:
            raise ConfigError(f"{where}.range[2]: the step may not be 0")
        span = range(*numbers)
        if not span:
            raise ConfigError(
                f"{where}: {{range: {args!r}}} is empty (Python's range: stop excluded)"
            )
        if len(span) > MAX_VALUES:
            raise ConfigError(f"{where}: {len(span):,} values, over {MAX_VALUES:,} per generator")
        return _Rule(name, span[0], span[-1], len(span), digits, span.step, where, text)
    if not isinstance(args, list) or len(args) != 3:
        raise ConfigError(f"{where}: write {USAGE[name]}; got {args!r}")
    start, stop = (_number(a, f"{where}.{name}[{i}]") for i, a in enumerate(args[:2]))
    count = _integer(args[2], f"{where}.{name}[2] (count)", 1, MAX_VALUES)
    if name == "logspace" and (start <= 0 or stop <= 0):
        raise ConfigError(f"{where}: logspace needs start and stop > 0; got {args!r}")
    return _Rule(name, start, stop, count, digits, 1, where, text)


def _raw(rule: _Rule) -> Iterator[float]:
    """The generator's values one at a time, before rounding."""
    count, start, stop = rule.count, rule.start, rule.stop
    if rule.name == "logspace":
        ratio = math.log(stop / start)
        for i in range(count):
            yield (
                stop
                if count > 1 and i == count - 1
                else start * math.exp(ratio * i / max(count - 1, 1))
            )
    else:
        for i in range(count):
            yield (
                stop
                if count > 1 and i == count - 1
                else start + (stop - start) * i / max(count - 1, 1)
            )


def _check_axis(rule: _Rule, param: Param | None, where: str) -> None:
    """The generator's values against the axis they are for, before any list is built: a
    parameter of choices takes none; the values run from `start` to `stop` (monotone), so the
    bounds are checked at the ends; an integer axis takes only whole values, checked one value
    at a time until the first that is not (the second, for most generators that miss)."""
    if param is None:
        return
    if param.choices or pa.types.is_string(param.type):
        raise ConfigError(
            f"{where}: {rule.text} gives numbers; {param.name} takes one of "
            f"{', '.join(param.choices) or 'its names'}, written as a list"
        )
    low, high = min(rule.start, rule.stop), max(rule.start, rule.stop)
    if param.minimum is not None and low < param.minimum:
        raise ConfigError(
            f"{where}: {rule.text} reaches {low:g}, below the minimum {param.minimum:g}"
        )
    if param.exclusive_minimum is not None and low <= param.exclusive_minimum:
        raise ConfigError(
            f"{where}: {rule.text} reaches {low:g}, not above {param.exclusive_minimum:g}"
        )
    if param.maximum is not None and high > param.maximum:
        raise ConfigError(
            f"{where}: {rule.text} reaches {high:g}, above the maximum {param.maximum:g}"
        )
    if pa.types.is_integer(param.type) and rule.name != "range":
        for i, raw in enumerate(_raw(rule)):
            value = float(f"{raw:.{rule.digits}g}")
            if not value.is_integer():
                raise ConfigError(
                    f"{where}: {rule.text} gives {value!r} (value {i + 1} of {rule.count:,}), "
                    f"not a whole number; {param.name} takes integers"
                )


def _build(rule: _Rule) -> list:
    """The generator's list (rounded to its digits; a range's integers as they are)."""
    if rule.name == "range":
        return list(range(int(rule.start), int(rule.stop) + rule.step, rule.step))[: rule.count]
    out = [float(f"{v:.{rule.digits}g}") for v in _raw(rule)]
    if len(set(out)) != len(out):
        raise ConfigError(
            f"{rule.where}: {rule.count} values rounded to {rule.digits} significant digits repeat "
            "one another; use fewer values or more digits"
        )
    return out


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
