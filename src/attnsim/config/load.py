"""Load and check a sweep configuration: JSON Schema first, then what a schema cannot say.

Every error is a `ConfigError` whose message starts with the dotted path of the
offending key, e.g. ``experiments.robustness.grid.n[0]: 0 is less than the minimum of 2``.
"""

from __future__ import annotations

import copy
import json
import logging
from functools import cache
from importlib.resources import files
from pathlib import Path

import numpy as np
import yaml
from jsonschema import ValidationError, validators

from attnsim.config import generators, guard, yamlfile
from attnsim.config.coerce import StrictValidator, coerce_numbers, non_finite
from attnsim.config.yamlfile import key_path
from attnsim.errors import ConfigError
from attnsim.kinds import all_kinds, get_kind, registry
from attnsim.records.experiment import GRID, Experiment, Settings, TrialSettings
from attnsim.records.grid import grid_columns
from attnsim.seeding import digest

SCHEMA_FILE = "schema.yaml"
log = logging.getLogger(__name__)
_HINTED: set[str] = set()  # each renamed value's hint once per process


@cache
def base_schema() -> dict:
    """The schema of the keys every config has: the one schema file (`attnsim schema` prints it
    whole, with each kind's grid)."""
    text = files("attnsim.config").joinpath(SCHEMA_FILE).read_text()
    return yaml.load(text, Loader=yamlfile.LOADER)  # libyaml: ~20 ms less at every start


@cache
def schema() -> dict:
    """The whole config schema: the base, plus each registered kind's grid schema generated from its
    parameter declarations, so the schema, the docs and the code cannot drift."""
    full = copy.deepcopy(base_schema())
    kinds = all_kinds()
    experiment = full["$defs"]["experiment"]
    experiment["properties"]["kind"]["enum"] = list(kinds)
    experiment["allOf"] = [
        {
            "if": {"properties": {"kind": {"const": name}}},
            "then": {"properties": {"grid": {"$ref": f"#/$defs/{name}_grid"}}},
        }
        for name in kinds
    ]
    for name, kind in kinds.items():
        full["$defs"][f"{name}_grid"] = kind.grid_schema()
    return full


def _with_defaults(validator_class):
    """A validator that fills `default`s into objects as it validates them."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema_):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub:
                    instance.setdefault(name, sub["default"])
        yield from validate_properties(validator, properties, instance, schema_)

    return validators.extend(validator_class, {"properties": set_defaults})


def _deepest(error: ValidationError) -> ValidationError:
    """The most specific error (jsonschema nests errors under if/then and $ref)."""
    while error.context:
        error = max(error.context, key=lambda e: len(e.absolute_path))
    return error


def validation_message(error: ValidationError) -> str:
    """The schema error as the one line a user reads: where, and what to write instead."""
    if "propertyNames" in error.schema_path:
        bad = error.instance
        return (
            f"{key_path(error.absolute_path)}: experiment name {bad!r} must be lower-case letters, "
            "digits and '_', "
            "starting with a letter (it becomes a folder and a SQL view name)"
        )
    error = _deepest(error)
    where = key_path(error.absolute_path)
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        allowed = ", ".join(error.schema.get("properties", {}))
        return f"{where}: unknown key {', '.join(map(repr, extra))} (allowed: {allowed})"
    if error.validator == "uniqueItems":
        return f"{where}: duplicate values in {error.instance!r}"
    if error.validator == "minItems" and error.instance == []:
        return f"{where}: empty list; give at least one value"
    if error.validator == "dependentRequired":
        needs = error.validator_value if isinstance(error.validator_value, dict) else {}
        given, missing = next(
            (
                (k, [m for m in v if m not in error.instance])
                for k, v in needs.items()
                if k in error.instance and any(m not in error.instance for m in v)
            ),
            ("?", []),
        )
        return f"{where}: {given} needs {', '.join(missing)} as well"
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        return f"{where}: missing required key {', '.join(map(repr, missing))}"
    if error.validator == "enum":
        return (
            f"{where}: {error.instance!r} is not one of "
            f"{', '.join(map(str, error.validator_value))}"
        )
    if error.validator == "type":
        if (
            error.validator_value == "integer"
            and isinstance(error.instance, float)
            and not isinstance(error.instance, bool)
        ):
            return (
                f"{where}: {error.instance!r} is not of type integer; give a whole number "
                "(whole values written 4096.0 or 1e3 are accepted)"
            )
        return f"{where}: {error.instance!r} is not of type {error.validator_value}"
    return f"{where}: {error.message}"


def _check_plugins(config: dict) -> None:
    """An experiment of a plugin kind that failed to load: that plugin's one-line problem, not
    'unknown kind'."""
    experiments = config.get("experiments")
    broken = registry()[1]
    if not isinstance(experiments, dict) or not broken:
        return
    for name, spec in experiments.items():
        kind = spec.get("kind") if isinstance(spec, dict) else None
        if isinstance(kind, str) and kind not in all_kinds():
            for message in broken.values():
                if f"'{kind}'" in message:
                    raise ConfigError(f"experiments.{name}.kind: {message}")


def renamed_values(config: dict) -> dict:
    """The config with every grid value a kind has renamed (`Param.renamed`) under its name now,
    and a one-line hint per renamed value; a config of the wrong shape is left to the schema."""
    experiments = config.get("experiments") if isinstance(config, dict) else None
    if not isinstance(experiments, dict):
        return config
    for name, spec in experiments.items():
        kind_name = spec.get("kind") if isinstance(spec, dict) else None
        kind = all_kinds().get(kind_name) if isinstance(kind_name, str) else None
        grid = spec.get("grid") if kind is not None else None
        if kind is None or not isinstance(grid, dict):
            continue
        for param in kind.schema.params:
            values = grid.get(param.name)
            if not param.renamed or not isinstance(values, list):
                continue
            now = [param.current(v) if isinstance(v, str) else v for v in values]
            for old, new in zip(values, now):
                hint = f"experiments.{name}.grid.{param.name}: {old} is now {new}"
                if old != new and hint not in _HINTED:
                    _HINTED.add(hint)
                    log.warning("%s (the same rule, its stored points kept); write %s", hint, new)
            grid[param.name] = now
    return config


def check_schema(config: dict) -> None:
    """Raise ConfigError for the first schema violation (in key order), filling defaults."""
    if not isinstance(config, dict):
        raise ConfigError(f"config: expected a mapping of settings, got {type(config).__name__}")
    _check_plugins(config)
    for path, value in non_finite(config):
        raise ConfigError(
            f"{key_path(path)}: {value!r} is not a finite number (NaN and infinities are not "
            "allowed)"
        )
    # whole floats were made ints; others are not integers
    validator = _with_defaults(StrictValidator)(schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        raise ConfigError(validation_message(errors[0]))


def check_semantics(settings: Settings) -> None:
    """Checks a schema cannot express: memory of the largest point against the budget."""
    budget = settings.memory_budget_mb * 2**20
    for name, experiment in settings.experiments.items():
        trials = experiment.trial_settings
        if trials.max_trials is not None and trials.max_trials < 2 * trials.trials:
            raise ConfigError(
                f"experiments.{name}.max_trials: {trials.max_trials} leaves no room for a "
                "second round of "
                f"trials = {trials.trials}; use at least {2 * trials.trials} (rounds add "
                "`trials` trials each)"
            )
        kind = get_kind(experiment.kind)
        if kind.schema.check_grid is not None:
            try:
                kind.schema.check_grid(experiment.grid)
            except ConfigError as error:
                # its message starts with grid.<key>: make it the full path
                raise ConfigError(f"experiments.{name}.{error}") from None
        grid = grid_columns(experiment)  # no point is made: one call per distinct cost
        deps, needs = grid.distinct(kind.compute.bytes_per_trial)
        worst = int(np.argmax(needs))
        need = needs[worst]
        if need > budget:
            shown = ", ".join(f"{k}={v}" for k, v in grid.params_at(deps, worst).items())
            raise ConfigError(
                f"experiments.{name}.grid: the point ({shown}) needs about {need / 2**20:,.0f} MiB "
                "per trial, "
                f"over memory_budget_mb = {settings.memory_budget_mb}; shrink n, d or noise_draws, "
                "or raise memory_budget_mb"
            )


def load(config: dict) -> Settings:
    """Validate a config mapping (as Snakemake or YAML gives it) into Settings."""
    config = generators.expand(config)  # {logspace: [...]} and the like become lists
    config = coerce_numbers(config, schema())  # a copy: numbers written as text become numbers
    config = renamed_values(config)  # an old name of a value: the name now, said in one line
    check_schema(config)
    guard.check_names(config["experiments"])  # names the store's views or Snakemake would trip on
    guard.check_size(config["experiments"], config["max_points"])  # before any grid is expanded
    guard.check_jobs(config["experiments"], config.get("chunk_size"), config["max_jobs"])
    experiments = {
        name: Experiment(
            name=name,
            kind=spec["kind"],
            grid=spec["grid"],
            trial_settings=TrialSettings.read(spec | {"seed": config["seed"]}),
            description=spec.get("description", ""),
            role=spec.get("role", GRID),
        )
        for name, spec in config["experiments"].items()
    }
    science = {"seed": config["seed"], "experiments": config["experiments"]}
    settings = Settings(
        seed=config["seed"],
        chunk_size=config.get("chunk_size"),
        memory_budget_mb=config["memory_budget_mb"],
        job_minutes=config["job_minutes"],
        max_jobs=config.get("max_jobs"),
        experiments=experiments,
        config_hash=digest(json.loads(json.dumps(science))),
        assets=dict(config.get("assets", {})),
        boundaries={k: dict(v) for k, v in (config.get("boundaries") or {}).items()},
    )
    check_semantics(settings)
    return settings


def load_file(path: str | Path, overrides: list[str] | tuple = ()) -> Settings:
    """A config file with the command line's `--set KEY=VALUE` overrides (attnsim.config.overrides)
    applied."""
    from attnsim.config import overrides as override

    data = yamlfile.load(path)  # one-line errors: missing, not YAML, a key given twice, too big
    guard.check_mapping(data, str(path))
    return load(override.apply(data, overrides) if overrides else data)


def load_workflow_config(config: dict, configfiles=()) -> Settings:
    """The workflow's config as Snakemake read it from `configfiles` (and --config): refuse keys
    given twice in those files, then load it (coerced and checked once, here: the rules read the
    `Settings`, never `config`)."""
    yamlfile.check_files(configfiles)
    return load(config)
