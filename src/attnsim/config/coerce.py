"""Numbers written as text become numbers, wherever the JSON schema asks for one.

PyYAML (and so Snakemake) follows YAML 1.1, where `1e-3` and `1e3` (no dot, or an
exponent without a sign) are strings, and Snakemake's `--config key=value` reads
nested values as strings. A string at a place whose schema type is `number` or
`integer` is converted if Python's int() or float() reads it; real strings and
booleans are left alone for the schema to refuse. An `integer` place also takes a
float or text that is exactly a whole number (`4096.0`, `1e3` -> 4096, 1000); a
fraction (`4096.5`) is left as a float, which the schema then refuses.

The places come from the schema itself, however it is built ($ref, allOf, if/then,
...): a validator whose `integer` admits only ints reports every value of the wrong
type with its path, and the convertible ones are converted, until none is left.
"""

from __future__ import annotations

import copy
import math
from decimal import Decimal, InvalidOperation

from jsonschema import Draft202012Validator, validators

EXACT_FLOAT_INT = 2**53  # above this a float may not be the integer that was written


def _strict_integer(checker, instance) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


# Item schemas `_plainly_valid` decides alone: exact Python types per JSON type (no bool, no
# subclass), bounds, string enums
_PLAIN_TYPES = {"integer": (int,), "number": (int, float), "string": (str,)}
_BOUNDS = {
    "minimum": lambda low, high, bound: low >= bound,
    "maximum": lambda low, high, bound: high <= bound,
    "exclusiveMinimum": lambda low, high, bound: low > bound,
    "exclusiveMaximum": lambda low, high, bound: high < bound,
}


def _plainly_valid(instance: list, items) -> bool:
    """True if every item of a list is valid against a scalar item schema (a type, bounds, an
    enum of strings), decided in one pass: a grid of 50,000 values took jsonschema ~0.5 s per
    validation. False means "not sure": jsonschema decides, and words the error."""
    if not isinstance(items, dict) or not set(items) <= {"type", "enum", *_BOUNDS}:
        return False
    enum = items.get("enum")
    if enum is not None and not all(type(v) is str for v in enum):
        return False
    types = _PLAIN_TYPES.get(items.get("type", "string" if enum is not None else ""))
    if types is None or not all(type(v) in types for v in instance):
        return False
    if enum is not None and not set(instance) <= set(enum):
        return False
    bounds = [(key, bound) for key, bound in items.items() if key in _BOUNDS]
    if bounds and instance:
        if types == (str,) or not all(type(b) in (int, float) for _, b in bounds):
            return False
        if any(v != v for v in instance):  # NaN: min and max would depend on where it sits
            return False
        low, high = min(instance), max(instance)
        return all(_BOUNDS[key](low, high, bound) for key, bound in bounds)
    return True


def _items(validator, items, instance, schema):
    """Draft 2020-12's `items`, with a list that is `_plainly_valid` passed without a look at
    each value (no errors either way, so the same verdict)."""
    if (
        isinstance(instance, list)
        and "prefixItems" not in schema
        and "unevaluatedItems" not in schema
        and _plainly_valid(instance, items)
    ):
        return
    yield from Draft202012Validator.VALIDATORS["items"](validator, items, instance, schema)


# Draft 2020-12 with `integer` meaning an int: jsonschema's own also takes whole floats, so
# 1.2345678901234568e+16 (not the integer that was written) would pass as an integer.
StrictValidator = validators.extend(
    Draft202012Validator,
    {"items": _items},
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _strict_integer),
)

_KEEP = object()


def _as_number(value):
    """int if int() reads it, else float if float() does, else _KEEP."""
    if not isinstance(value, str):
        return _KEEP
    for parse in (int, float):
        try:
            return parse(value)
        except ValueError:
            continue
    return _KEEP


def _as_integer(value):
    """An int equal to `value` (a float or numeric text), the float when it is not whole, else
    _KEEP."""
    if isinstance(value, str):
        number = _as_number(value)
        if number is _KEEP or isinstance(number, int):
            return number
        try:
            exact = Decimal(value.strip().replace("_", ""))
        except InvalidOperation:
            return number
        if exact.is_finite() and exact == exact.to_integral_value():
            return int(exact)
        return number
    if (
        isinstance(value, float)
        and not isinstance(value, bool)
        and value.is_integer()
        and abs(value) <= EXACT_FLOAT_INT
    ):
        return int(value)
    return _KEEP


def _convert(value, wanted: set[str]):
    if isinstance(value, bool):
        return _KEEP
    if "integer" in wanted:
        return _as_integer(value)
    if "number" in wanted:
        return _as_number(value)
    return _KEEP


def _type_errors(errors):
    for error in errors:
        if error.validator == "type":
            yield error
        yield from _type_errors(error.context or ())


def coerce_numbers(config, schema: dict, rounds: int = 10):
    """A copy of `config` with numeric text (and whole floats at integer places) converted per
    `schema`."""
    config = copy.deepcopy(config)
    probe = StrictValidator(schema)
    for _ in range(rounds):  # again after a change: an if/then may now take another branch
        changed = False
        for error in list(_type_errors(probe.iter_errors(config))):
            path = list(error.absolute_path)
            wanted = (
                {error.validator_value}
                if isinstance(error.validator_value, str)
                else set(error.validator_value)
            )
            new = _convert(error.instance, wanted)
            if (
                not path
                or new is _KEEP
                or (type(new) is type(error.instance) and new == error.instance)
            ):
                continue
            parent = config
            for part in path[:-1]:
                parent = parent[part]
            parent[path[-1]] = new
            changed = True
        if not changed:
            break
    return config


def non_finite(config, path: tuple = ()):
    """Yield (path, value) of every NaN or infinity in a nested config."""
    if isinstance(config, float) and not math.isfinite(config):
        yield path, config
    elif isinstance(config, dict):
        for key, value in config.items():
            yield from non_finite(value, (*path, key))
    elif isinstance(config, list):
        for index, value in enumerate(config):
            yield from non_finite(value, (*path, index))
