"""The registry of experiment kinds: every package under `attnsim/kinds/` plus installed plugins.

A built-in kind is a sub-package of this one whose `__init__.py` defines `KIND`; a plugin is
any installed distribution with an entry point in the group `attnsim.kinds` that loads to a
`Kind` (or to a module defining `KIND`). Nothing here names a kind. A plugin that fails to
load (import error, not a Kind, a missing field, a name clash with a built-in kind) is left
out with one line naming it and the problem; every other kind still works, and a config
that uses the broken one is refused with that line.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from types import ModuleType

from attnsim.errors import ConfigError
from attnsim.kinds.base import Kind

ENTRY_POINT_GROUP = "attnsim.kinds"
# The core every kind must fill (the rest of `Kind` is optional).
REQUIRED = (
    "name",
    "package",
    "schema.params",
    "schema.metrics",
    "schema.main_metric",
    "compute.simulate_block",
)


def _as_kind(obj) -> Kind:
    if isinstance(obj, ModuleType):
        obj = getattr(obj, "KIND", None)
    if not isinstance(obj, Kind):
        raise TypeError(f"loads to {type(obj).__name__}, not an attnsim.kinds.base.Kind")
    missing = [f for f in REQUIRED if not _field(obj, f)]
    if missing:
        raise TypeError(f"Kind {obj.name!r} lacks {', '.join(missing)}")
    return obj


def _field(kind: Kind, dotted: str) -> object:
    value: object = kind
    for name in dotted.split("."):
        value = getattr(value, name, None)
    return value


def _builtins() -> dict[str, Kind]:
    found = {}
    for module in pkgutil.iter_modules(__path__):
        if module.ispkg:
            kind = _as_kind(importlib.import_module(f"{__name__}.{module.name}"))
            found[kind.name] = kind
    return found


# filled once per process; plugins that import attnsim while loading see the built-ins
_KINDS: dict[str, Kind] | None = None
_BROKEN: dict[str, str] = {}


def registry() -> tuple[dict[str, Kind], dict[str, str]]:
    """(kind name -> Kind, plugin name -> why it was left out)."""
    global _KINDS
    if _KINDS is not None:
        return _KINDS, _BROKEN
    from importlib.metadata import entry_points  # here: a job's own kind never needs it (~28 ms)

    _KINDS = kinds = _builtins()
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        where = f"plugin {ep.name!r} ({ep.value}{f', from {ep.dist.name}' if ep.dist else ''})"
        try:
            kind = _as_kind(ep.load())
        except Exception as error:  # noqa: BLE001 (any failure of third-party code: report it in one line)
            _BROKEN[ep.name] = (
                f"{where}: {type(error).__name__}: "
                f"{str(error).splitlines()[0] if str(error) else ''}".rstrip(": ")
            )
            continue
        if kind.name in kinds:
            _BROKEN[ep.name] = (
                f"{where}: kind name {kind.name!r} clashes with "
                f"{'a built-in' if kind.package.startswith(__name__) else 'another'} kind; rename "
                "it"
            )
            continue
        kinds[kind.name] = kind
    for message in _BROKEN.values():
        print(f"attnsim: warning: {message} (left out)", file=sys.stderr)
    return kinds, _BROKEN


def all_kinds() -> dict[str, Kind]:
    return registry()[0]


def _builtin(name: str) -> Kind | None:
    """The built-in kind `name` alone, without importing every other kind (a job needs only its
    own: the registry imports all, with their kernels' dependencies)."""
    if not name.isidentifier() or not any(
        m.name == name and m.ispkg for m in pkgutil.iter_modules(__path__)
    ):
        return None
    kind = _as_kind(importlib.import_module(f"{__name__}.{name}"))
    return kind if kind.name == name else None


def get_kind(name: str) -> Kind:
    if _KINDS is None and (kind := _builtin(name)) is not None:
        return kind
    kinds, broken = registry()
    try:
        return kinds[name]
    except KeyError:
        for message in broken.values():
            if f"'{name}'" in message:
                raise ConfigError(message) from None
        raise ConfigError(
            f"unknown experiment kind {name!r}; expected one of {', '.join(kinds)}"
        ) from None


def as_kind(kind: Kind | str) -> Kind:
    """A Kind from itself or its name (library functions accept either)."""
    return kind if isinstance(kind, Kind) else get_kind(kind)
