"""The workspace's state record, `<workspace>/state.yaml`: what a study has decided beyond its
config file, kept with the workspace so that every later command sees the same sweep.

It holds four things, each written by one command and read by all of them:

- `overrides`: the `--set KEY=VALUE` items of earlier commands, in order (as Hydra keeps
  `overrides.yaml`); `attnsim show --reset` clears them.
- `topups`: the trials per point `attnsim decide` settled on, per experiment, at its last
  complete look.
- `designs`: each claim's sequential design (`ClaimDesign`): how its verdict's error is
  controlled across looks, so that a rerun, `verify` and `cite` judge it the same way and a
  second `decide` continues the same error budget instead of starting a new one.
- `operation`: a state-changing command in progress (`decide`, `locate`): its process, its run
  token and what it was about to add. A command that finds one whose process is dead recovers
  (rolls back to the last complete look, or continues it) instead of refusing the workspace.
- `boundaries`: located boundaries, name -> record (`attnsim.report.boundaries.record`: the
  claim, axis, edge, fixed values, the store's `locate_<name>` experiment, the answer and every
  look of `claims.boundary.Located.record`, and the theory's declared equivalence claim where
  one exists), written by the workflow's record_boundaries (the config's names) and by
  `attnsim locate` (named `<claim>_<digest>`, with the `entry` that asks for it again);
  `verify` replays each from the store.

The effective config of any command is: the config file <- recorded overrides <- recorded top-ups
<- this command's `--set` (`attnsim.config.state.effective`). The record is versioned (`format`)
and written atomically; an unreadable or foreign one is one line naming the file, never a reset.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from attnsim import files
from attnsim.errors import StoreError

FILE = "state.yaml"
FORMAT = 1
DESIGN_METHODS = ("single look", "confidence sequence", "group sequential")
OPERATIONS = ("decide", "locate")


def path(workspace: str | Path) -> Path:
    return Path(workspace) / FILE


@dataclass(frozen=True)
class TopUp:
    """An experiment's trials per point as `decide` settled them at look `look`."""

    trials: int
    look: int


@dataclass(frozen=True)
class Look:
    """One look of a claim's sequential design: the trials per point its rows had."""

    look: int
    trials: int


@dataclass(frozen=True)
class ClaimDesign:
    """How a claim's verdict controls its error across looks (docs/science.md, decide).

    `method` is one of DESIGN_METHODS; `level` the two-sided coverage the verdict's interval keeps
    over every look at once (0.95: a single look's 95% interval); `parameters` what the method
    needs to recompute the interval (e.g. a confidence sequence's mixture width and the error
    its first look spent), fixed when the design was declared; `looks` the looks so far;
    `experiments` the experiments whose trials the looks top up; `declared` the attnsim version
    or commit that declared it."""

    claim_id: str
    method: str
    level: float
    parameters: Mapping[str, Any] = field(default_factory=dict)
    looks: tuple[Look, ...] = ()
    # a group-sequential design's looks (its error is spent at the last); for a confidence
    # sequence, which may look again at any time, the looks the last decide call planned (shown,
    # never a limit); 0: none stated
    planned_looks: int = 0
    experiments: tuple[str, ...] = ()
    declared: str = ""

    def __post_init__(self) -> None:
        if self.method not in DESIGN_METHODS:
            raise ValueError(f"design of {self.claim_id}: method must be one of {DESIGN_METHODS}")
        if not (0.0 < self.level < 1.0):
            raise ValueError(f"design of {self.claim_id}: level must lie in (0, 1)")
        object.__setattr__(self, "parameters", MappingProxyType(dict(self.parameters)))

    @classmethod
    def from_fields(cls, claim_id: str, fields: Mapping[str, Any]) -> ClaimDesign:
        """The record of a design the claims layer describes in plain fields (e.g.
        `claims.confidence_sequence.record`): `looks` as (look, trials) pairs; the claims layer
        sits below records/ and does not import it."""
        looks = tuple(Look(int(look), int(trials)) for look, trials in fields.get("looks", ()))
        return cls(claim_id=claim_id, **{**dict(fields), "looks": looks})

    @property
    def spent(self) -> bool:
        """A fixed (group-sequential) design whose planned looks are all used: it cannot look
        again. A confidence sequence is never spent: it is valid at every look."""
        fixed = self.method == "group sequential"
        return fixed and self.planned_looks > 0 and len(self.looks) >= self.planned_looks


@dataclass(frozen=True)
class Operation:
    """A state-changing command in progress: who runs it, its run token, what it was adding."""

    command: str
    token: str
    pid: int
    host: str
    started: str
    pending_topups: Mapping[str, TopUp] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.command not in OPERATIONS:
            raise ValueError(f"operation must be one of {OPERATIONS}, got {self.command!r}")
        object.__setattr__(self, "pending_topups", MappingProxyType(dict(self.pending_topups)))


@dataclass(frozen=True)
class WorkspaceState:
    """The record (see the module docstring); empty for a workspace no command has changed."""

    overrides: tuple[str, ...] = ()
    topups: Mapping[str, TopUp] = field(default_factory=dict)
    designs: Mapping[str, ClaimDesign] = field(default_factory=dict)
    boundaries: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    operation: Operation | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "overrides", tuple(self.overrides))
        for name in ("topups", "designs", "boundaries"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    @property
    def empty(self) -> bool:
        return self == WorkspaceState()

    def with_overrides(self, items: tuple[str, ...]) -> WorkspaceState:
        return replace(self, overrides=tuple(items))


# --- the file ------------------------------------------------------------------------------------


def read(workspace: str | Path) -> WorkspaceState:
    """The workspace's record; an empty one when the file is absent. A file that is not a record
    of this format is a StoreError naming it (never silently replaced: it holds a study's
    decisions)."""
    where = path(workspace)
    try:
        text = where.read_text(encoding="utf-8")
    except FileNotFoundError:
        return WorkspaceState()
    except (OSError, UnicodeDecodeError) as error:
        raise StoreError(f"{where}: cannot read the workspace's state record ({error})") from None
    try:
        return from_data(_parsed(text))
    except (yaml.YAMLError, ValueError, TypeError, KeyError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise StoreError(
            f"{where}: not a state record attnsim can read ({reason}); it holds the study's "
            "overrides, top-ups and designs: restore it, or move it away to start afresh"
        ) from None


# libyaml's parser where PyYAML has it (the same resolver and constructor: the same values)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PARSED: dict[str, Any] = {}  # the record's text -> its YAML, per process


def _parsed(text: str) -> Any:
    """The record's YAML, parsed once per process per text (a workflow's start reads it twice:
    the effective config and the claims' designs); a copy, so no reader changes another's."""
    if text not in _PARSED:
        _PARSED.clear()  # one record at a time: the last one read
        _PARSED[text] = yaml.load(text, Loader=_LOADER)
    return copy.deepcopy(_PARSED[text])


def write(workspace: str | Path, state: WorkspaceState) -> None:
    """Write the record atomically (readers see the old record or the new one). An empty record
    removes the file, so a fresh workspace and a reset one look the same."""
    where = path(workspace)
    if state.empty:
        where.unlink(missing_ok=True)
        return
    text = yaml.safe_dump(to_data(state), sort_keys=False, allow_unicode=True, width=100)
    files.write_text(where, text)


def to_data(state: WorkspaceState) -> dict[str, Any]:
    data: dict[str, Any] = {"format": FORMAT}
    if state.overrides:
        data["overrides"] = list(state.overrides)
    if state.topups:
        data["topups"] = {name: _topup_data(t) for name, t in sorted(state.topups.items())}
    if state.designs:
        data["designs"] = {cid: _design_data(d) for cid, d in sorted(state.designs.items())}
    if state.boundaries:
        data["boundaries"] = {k: dict(v) for k, v in sorted(state.boundaries.items())}
    if state.operation is not None:
        op = state.operation
        data["operation"] = {
            "command": op.command,
            "token": op.token,
            "pid": op.pid,
            "host": op.host,
            "started": op.started,
            "pending_topups": {n: _topup_data(t) for n, t in sorted(op.pending_topups.items())},
        }
    return data


def from_data(data: Any) -> WorkspaceState:
    if not isinstance(data, dict):
        raise ValueError("the file is not a mapping")
    if data.get("format") != FORMAT:
        raise ValueError(f"format {data.get('format')!r}, expected {FORMAT}")
    unknown = set(data) - {"format", "overrides", "topups", "designs", "boundaries", "operation"}
    if unknown:
        raise ValueError(f"unknown key {sorted(unknown)[0]!r}")
    overrides = data.get("overrides") or []
    if not all(isinstance(item, str) for item in overrides):
        raise ValueError("overrides must be KEY=VALUE strings")
    operation = None
    if data.get("operation"):
        op = data["operation"]
        operation = Operation(
            command=op["command"],
            token=str(op["token"]),
            pid=int(op["pid"]),
            host=str(op["host"]),
            started=str(op["started"]),
            pending_topups={n: _topup(t) for n, t in (op.get("pending_topups") or {}).items()},
        )
    return WorkspaceState(
        overrides=tuple(overrides),
        topups={name: _topup(t) for name, t in (data.get("topups") or {}).items()},
        designs={cid: _design(cid, d) for cid, d in (data.get("designs") or {}).items()},
        boundaries={k: dict(v) for k, v in (data.get("boundaries") or {}).items()},
        operation=operation,
    )


def _topup_data(topup: TopUp) -> dict[str, int]:
    return {"trials": topup.trials, "look": topup.look}


def _topup(data: Mapping[str, Any]) -> TopUp:
    trials, look = data["trials"], data["look"]
    if not (isinstance(trials, int) and trials >= 1 and isinstance(look, int) and look >= 1):
        raise ValueError("a top-up is {trials: positive integer, look: positive integer}")
    return TopUp(trials=trials, look=look)


def _design_data(design: ClaimDesign) -> dict[str, Any]:
    return {
        "method": design.method,
        "level": design.level,
        "parameters": {k: _plain(v) for k, v in design.parameters.items()},
        "looks": [{"look": look.look, "trials": look.trials} for look in design.looks],
        "planned_looks": design.planned_looks,
        "experiments": list(design.experiments),
        "declared": design.declared,
    }


def _design(claim_id: str, data: Mapping[str, Any]) -> ClaimDesign:
    return ClaimDesign(
        claim_id=claim_id,
        method=data["method"],
        level=float(data["level"]),
        parameters=dict(data.get("parameters") or {}),
        looks=tuple(Look(int(x["look"]), int(x["trials"])) for x in data.get("looks") or []),
        planned_looks=int(data.get("planned_looks") or 0),
        experiments=tuple(data.get("experiments") or ()),
        declared=str(data.get("declared") or ""),
    )


def _plain(value: Any) -> Any:
    """YAML-safe numbers (a float NaN or inf has no place in a design's parameters)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"a design parameter must be finite, got {value}")
    return value
