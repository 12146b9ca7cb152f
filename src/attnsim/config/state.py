"""The effective config of a workspace: what every command (and the workflow itself) runs.

    the config file  <-  the overrides recorded in <workspace>/state.yaml (earlier `--set`)
                     <-  decide's top-ups recorded there (per experiment, at its last complete look)
                     <-  this command's own `--set KEY=VALUE`

`attnsim run --set` records its overrides (a real run, not a dry one: `plan` and `run -n` only
price them; recorded by the workflow once the sweep they make has planned, so a refused one is
not kept), so later commands see the same sweep without repeating them (as Hydra keeps
`overrides.yaml`); `attnsim show` prints what is in effect and `attnsim show --reset` clears the
overrides. An override replaces the value at its key whole: a generator replaces a list or
another generator, never merged with it.

A top-up is what `attnsim decide` settled an experiment on: `trials` per point, drawn in rounds
of the config's own `trials` (`max_trials` without `target_se`, docs/usage.md), so the rows are
those of a fresh run of the effective config and a config asking fewer reads each point's first
trials (`attnsim.jobs.collect`). A decide in progress leaves an `operation` in the record with
its pid: any command that finds one whose process is gone recovers (`recover`) by rolling back
to the last complete look (its top-ups), keeping every trial the interrupted look computed on
disk, where the next `decide` finds them (the chunks of a look have stable ids).
"""

from __future__ import annotations

import calendar
import copy
import fcntl
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from attnsim.config import overrides as override
from attnsim.errors import ConfigError, StoreError, WriteError
from attnsim.records import state as record
from attnsim.records.state import Operation, TopUp, WorkspaceState

# the keys `attnsim run` passes the workflow through Snakemake's --config (taken out of the config
# before it is read): this command's --set items (a list of KEY=VALUE), whether to record them,
# and the run token of the decide whose look it runs
COMMAND_KEY = "attnsim_set"
TOKEN_KEY = "attnsim_operation"
RECORD_KEY = "attnsim_record"  # a real run: record the --set items once the sweep has planned
TOKEN_ENV = "ATTNSIM_OPERATION"  # set by decide for the runs it starts
RECORDED = "state.yaml"  # how the recorded overrides are named in an error


def apply_topups(data: dict, topups: Mapping[str, TopUp]) -> dict:
    """A copy of config `data` with each topped-up experiment's trials per point raised to its
    top-up, in rounds of its own `trials` (`max_trials`, no `target_se`). An experiment the config
    no longer has, an adaptive one, or one whose config asks as many trials itself is left as it
    is."""
    experiments = data.get("experiments") if isinstance(data, dict) else None
    if not topups or not isinstance(experiments, dict):
        return data
    data = copy.deepcopy(data)
    for name, topup in topups.items():
        spec = data["experiments"].get(name)
        if not isinstance(spec, dict) or spec.get("target_se") is not None:
            continue
        trials = spec.get("trials")
        if not isinstance(trials, int) or isinstance(trials, bool):
            continue  # the schema names it
        asked = spec.get("max_trials") or trials
        if isinstance(asked, int) and topup.trials > asked:
            spec["max_trials"] = topup.trials
    return data


def in_effect(state: WorkspaceState, token: str | None = None) -> dict[str, TopUp]:
    """The top-ups in effect: the recorded ones, and the pending ones of the operation whose run
    token is `token` (decide's own runs of a look)."""
    topups = dict(state.topups)
    if token is not None and state.operation is not None and state.operation.token == token:
        topups |= dict(state.operation.pending_topups)
    return topups


def effective_data(
    data: dict, state: WorkspaceState, command: Sequence[str] = (), token: str | None = None
) -> dict:
    """The config mapping `data` (the file's) <- recorded overrides <- top-ups <- `command`."""
    if state.overrides:
        data = override.apply(data, state.overrides, option=f"{RECORDED} override")
    data = apply_topups(data, in_effect(state, token))
    return override.apply(data, command) if command else data


def science(items: Sequence[str]) -> list[str]:
    """The overrides that are part of the sweep (not `workspace=DIR`, a runtime choice)."""
    return [i for i in items if i.partition("=")[0] not in override.RUNTIME_KEYS]


# --- the record on disk: read, recovered, updated under a lock ----------------------------------


@contextmanager
def _locked(workspace: Path) -> Iterator[None]:
    """An exclusive lock on the workspace's record for a read-modify-write (a hidden file beside
    it: the record itself is replaced atomically, so it cannot be the lock)."""
    lock = Path(workspace) / ".state.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def update(workspace: Path, change: Callable[[WorkspaceState], WorkspaceState]) -> WorkspaceState:
    """Read the record, apply `change`, write it back atomically, all under the record's lock; a
    folder that cannot be written is one line naming the record."""
    try:
        with _locked(workspace):
            new = change(record.read(workspace))
            record.write(workspace, new)
            return new
    except PermissionError as error:
        raise WriteError(
            f"{record.path(workspace)}: cannot be written ({error.strerror}): the workspace's "
            "state record"
        ) from None


def alive(operation: Operation) -> bool:
    """Whether the process that started `operation` still runs: on another host it is taken to
    (nothing here can tell); here, its pid exists and started no later than the operation (a
    process started since holds a reused pid)."""
    if operation.host != socket.gethostname():
        return True
    try:
        os.kill(operation.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = _process_started(operation.pid)
    if started is None:
        return True
    try:
        recorded = calendar.timegm(time.strptime(operation.started, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return True
    return started <= recorded + 2.0  # the clock's second: the record is written after the start


def _process_started(pid: int) -> float | None:
    """When process `pid` started (epoch seconds), from /proc; None where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        with open("/proc/stat") as handle:
            boot = next(float(line.split()[1]) for line in handle if line.startswith("btime"))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def describe_topups(topups: Mapping[str, TopUp]) -> str:
    if not topups:
        return "the config's own trials"
    return ", ".join(
        f"{n} {t.trials:,} trials per point (look {t.look})" for n, t in topups.items()
    )


def recover(workspace: Path) -> tuple[WorkspaceState, str]:
    """The record, with an interrupted operation rolled back: its process is gone, so its pending
    top-ups are dropped and the workspace is at its last complete look again (written back when
    the folder is writable). Returns the record and a note for the user ('' when nothing
    happened). A live operation is left in place (its note says so)."""
    state = record.read(workspace)
    operation = state.operation
    if operation is None:
        return state, ""
    if alive(operation):
        return state, (
            f"attnsim: {operation.command} (pid {operation.pid} on {operation.host}) is working "
            f"in {workspace}; this command reads its last complete look"
        )
    pending = ", ".join(sorted(operation.pending_topups)) or "nothing yet"
    note = (
        f"attnsim: {operation.command} (pid {operation.pid}, started {operation.started}) was "
        f"interrupted while topping up {pending}; {workspace} is back at its last complete look "
        f"({describe_topups(state.topups)}); the trials it computed are kept, and "
        f"`attnsim {operation.command}` reuses them"
    )
    try:
        state = update(
            workspace,
            lambda s: replace(s, operation=None) if s.operation == operation else s,
        )
    except (OSError, WriteError):  # a read-only workspace: rolled back for this command only
        state = replace(state, operation=None)
    return state, note


def current(workspace: Path, quiet: bool = False, token: str | None = None) -> WorkspaceState:
    """The workspace's record for a command that reads it, recovered (`recover`); the note goes
    to stderr (none for the runs of the operation itself, those carrying its `token`)."""
    state, note = recover(workspace)
    own = token is not None and state.operation is not None and state.operation.token == token
    if note and not quiet and not own:
        print(note, file=sys.stderr)
    return state


# --- what commands call -------------------------------------------------------------------------


def load_data(configfile: str | Path) -> dict:
    """The config file's mapping, checked as every reader checks it."""
    from attnsim.config import guard, yamlfile

    data = yamlfile.load(configfile)
    guard.check_mapping(data, str(configfile))
    return data


def settings(
    configfile: str | Path,
    workspace: Path,
    command: Sequence[str] = (),
    state: WorkspaceState | None = None,
    token: str | None = None,
):
    """The effective `Settings` of the sweep in `workspace` (its record read and recovered unless
    given)."""
    from attnsim.config.load import load

    state = current(workspace) if state is None else state
    return load(effective_data(load_data(configfile), state, science(command), token))


def record_overrides(workspace: Path, items: Sequence[str]) -> WorkspaceState:
    """Add a run's `--set` items to the record: an item for a key already recorded replaces it
    (the last value wins, as it would on the command line), the others keep their order."""
    items = science(items)
    if not items:
        return record.read(workspace)

    def add(state: WorkspaceState) -> WorkspaceState:
        keys = {_key(i) for i in items}
        kept = [i for i in state.overrides if _key(i) not in keys]
        return state.with_overrides((*kept, *items))

    return update(workspace, add)


def _key(item: str) -> str:
    return ".".join(override.parse(item)[0])


def reset(workspace: Path) -> WorkspaceState:
    """Clear the recorded overrides (decide's top-ups and designs stay: they describe trials the
    store holds and the error the verdicts spent)."""
    return update(workspace, lambda s: s.with_overrides(()))


def summary_lines(configfile: str | Path, state: WorkspaceState) -> list[str]:
    """What is in effect beyond the config file, for `attnsim show` (none: one line saying so)."""
    lines = []
    if state.overrides:
        lines.append(f"overrides recorded ({len(state.overrides)}; `attnsim show --reset` clears):")
        lines += [f"  --set {item}" for item in state.overrides]
    if state.topups:
        lines.append(f"decide's top-ups: {describe_topups(state.topups)}")
    if not lines:
        return [f"config: {configfile} as written (no overrides recorded)"]
    return [f"config: {configfile}, with", *lines]


@dataclass(frozen=True)
class WorkflowState:
    """What the workflow (`common.smk`) reads at its start: its workspace, that workspace's
    record, the effective `Settings`, the run token of the decide it runs for (or None), this
    command's --set items and whether a real `attnsim run` asked to record them."""

    folder: Path
    state: WorkspaceState
    settings: Any
    token: str | None
    command: tuple[str, ...]
    record: bool


def workflow_settings(
    config: dict,
    configfiles: Sequence[str | Path],
    cli: Mapping[str, Any] | None = None,
    main: bool = True,
) -> WorkflowState:
    """The workflow's workspace, record and `Settings`, the same as `attnsim`'s commands compute:
    `config` is Snakemake's (the files and `--config` merged); the recorded overrides and top-ups
    go on it, then Snakemake's own `--config` entries again (`cli`: a plain `snakemake --config`
    wins over the record, as `--set` does) and `attnsim run`'s `--set`. `main`: the submitting
    process (a job's process says nothing about the record)."""
    from attnsim.config import workspace as workspaces
    from attnsim.config.load import load_workflow_config

    command = config.pop(COMMAND_KEY, None) or []
    token = config.pop(TOKEN_KEY, None)
    record = str(config.pop(RECORD_KEY, "")).lower() == "true"
    if not isinstance(command, list) or not all(isinstance(i, str) for i in command):
        raise ConfigError(f"--config {COMMAND_KEY}: a list of KEY=VALUE strings")
    token = None if token is None else str(token)
    folder = workspaces.from_config(config, configfiles)
    state = current(folder, quiet=not main, token=token)
    data = effective_data(config, state, (), token)
    if cli:
        ours = (COMMAND_KEY, TOKEN_KEY, RECORD_KEY, workspaces.CONFIG_KEY)
        data = _merged(data, {k: v for k, v in cli.items() if k not in ours})
    data = override.apply(data, command) if command else data
    settings = load_workflow_config(data, configfiles)
    return WorkflowState(folder, state, settings, token, tuple(command), record)


def _merged(data: dict, cli: Mapping[str, Any]) -> dict:
    """Snakemake's `update_config`: mappings merged key by key, anything else replaced."""
    out = copy.deepcopy(data)
    for key, value in cli.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def refuse_concurrent(state: WorkspaceState, token: str | None, workspace: Path) -> None:
    """A real run while another process's decide works in the workspace: one line, nothing run
    (its own runs carry its token)."""
    operation = state.operation
    if operation is None or (token is not None and token == operation.token):
        return
    raise StoreError(
        f"{workspace}: `attnsim {operation.command}` (pid {operation.pid} on {operation.host}) is "
        "working here; wait for it to finish or stop it (what it completed is kept), then rerun"
    )
