"""What a kind declares: its parameters, columns, kernel, theory, figures, claims and headline.

A kind is one package, `attnsim/kinds/<kind>/` (or a plugin's package, registered under the
entry-point group `attnsim.kinds`): its `__init__.py` defines `KIND = Kind(...)`, `kernel.py`
computes trial blocks, `figures.py` draws from the summary (captions in `report/<figure>.rst`)
and `claims.py` judges the essay's claims. The driver (`attnsim.jobs.simulate`), the planner, the
store, the summaries, the figures, the claims engine and the workflow work from these
declarations only. See docs/adding-a-kind.md.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

# A trial block's working set is kept near this size (times the kind's `block_factor`); part of
# the algorithm (block boundaries fix which random numbers a trial gets), hence fixed. Blocks are
# what threads share out; a few MiB keeps numpy's passes in the caches while each call does
# enough work to amortise Python's overhead and the GIL hand-offs between threads.
TARGET_BLOCK_BYTES = 8 * 2**20
MAX_BLOCK_TRIALS = 1024


@dataclass(frozen=True)
class Column:
    """A typed, documented column of the store."""

    name: str
    type: pa.DataType
    doc: str

    def field(self, nullable: bool = False) -> pa.Field:
        return pa.field(self.name, self.type, nullable=nullable, metadata={"description": self.doc})


@dataclass(frozen=True)
class Param(Column):
    """A grid parameter: a store column plus what the config schema says about its values.

    The experiment's `grid.<name>` is a non-empty list of distinct values; each value must be of
    the column's type, within [minimum, maximum] (or above `exclusive_minimum`), one of
    `choices` if given. `attnsim.config.load.schema` generates the JSON Schema from these
    declarations.
    A parameter with a `default` may be left out of a grid: it then takes the one value
    [default] (so a parameter added to a kind keeps existing configs valid).
    """

    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    choices: tuple[str, ...] = ()
    default: object = None

    def item_schema(self) -> dict:
        if self.choices:
            return {"enum": list(self.choices)}
        if pa.types.is_integer(self.type):
            schema: dict = {"type": "integer"}
        elif pa.types.is_floating(self.type):
            schema = {"type": "number"}
        elif pa.types.is_string(self.type):
            schema = {"type": "string"}
        else:
            raise TypeError(f"grid parameter {self.name}: unsupported type {self.type}")
        for key, value in (
            ("minimum", self.minimum),
            ("maximum", self.maximum),
            ("exclusiveMinimum", self.exclusive_minimum),
        ):
            if value is not None:
                schema[key] = value
        return schema

    def list_schema(self) -> dict:
        schema = {
            "description": self.doc,
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": self.item_schema(),
        }
        if self.default is not None:
            schema["default"] = [self.default]
        return schema


Params = Mapping[str, object]
# (generator, trials in block, the points sharing these draws)
#     -> per point: metric -> (trials,) array
BlockKernel = Callable[[np.random.Generator, int, Sequence[Params]], list[dict[str, np.ndarray]]]


@dataclass(frozen=True)
class Kind:
    name: str
    description: str
    # the kind's package (`__name__` of its __init__): figures, claims and captions live there
    package: str
    params: tuple[Param, ...]  # grid parameters, in the order points are enumerated
    stream_params: tuple[str, ...]  # the parameters that shape the random draws
    metrics: tuple[Column, ...]  # per-trial float64 columns
    theory_columns: tuple[Column, ...]
    algorithm_version: int  # bump whenever a point's numbers would change
    bytes_per_trial: Callable[[Params], int]
    simulate_block: BlockKernel
    theory: Callable[[Params], dict[str, object]]
    main_metric: str
    # functions of `<package>.figures`, each (summary DataFrame) -> Figure
    figures: tuple[str, ...] = ()
    # Figures drawn only where they have something to show: figure -> a test of the experiment's
    # grid (parameter -> its distinct values, defaults filled in). A figure without one is drawn
    # for every experiment of the kind; one whose test fails is neither drawn nor listed.
    figure_applies: Mapping[str, Callable[[Mapping[str, list]], bool]] = field(default_factory=dict)
    # (summary DataFrame) -> one line for the run summary
    headline: Callable[[object], str] | None = None
    extra_columns: tuple[Column, ...] = field(default=())
    extra_summary: Callable[[dict[str, np.ndarray], Params], dict[str, object]] | None = None
    # per-trial columns that are constant per point: no mean/CI
    constant_metrics: tuple[str, ...] = ()
    # a figure of this kind showing the entropy between 0 and log n (cited by the entropy-bounds
    # claim)
    entropy_figure: str = ""
    # metrics whose smallest and largest trial value the summary keeps (`<m>_min`, `<m>_max`)
    extreme_metrics: tuple[str, ...] = ()
    # metrics a trial may leave non-finite (+inf or NaN: a diverged training run): their mean, SE
    # and CI are over the finite trials only, and the summary adds `<m>_finite`, the number of
    # those trials (medians etc.: extra_summary)
    finite_metrics: tuple[str, ...] = ()
    # metrics a trial may leave NaN or +/-inf by definition, summaries unchanged (kappa of a noise
    # without the moment the delta method needs; a quantity that does not apply at a point);
    # NaN/inf anywhere else fails the job (attnsim.jobs.validate checks every block;
    # finite_metrics may be non-finite too)
    nonfinite_metrics: tuple[str, ...] = ()
    block_factor: int = 1  # this kind's blocks aim at block_factor * TARGET_BLOCK_BYTES
    # The cost model's time of one trial, in passes over its working set (bytes_per_trial, which
    # alone sizes blocks and memory): None for one pass. A kind whose trials stream through it
    # many times declares how many, e.g. per optimiser step (attnsim.records.cost,
    # docs/scaling.md).
    passes_per_trial: Callable[[Params], float] | None = None
    # checks a schema cannot express (ConfigError whose message starts with grid.<key>)
    check_grid: Callable[[Mapping[str, list]], None] | None = None
    # data the kernel reads (attnsim.models.assets names), fetched before any job runs
    assets: tuple[str, ...] = ()
    # extra provenance of every trials/summary file (e.g. asset and corpus hashes)
    provenance: Callable[[], dict] | None = None
    # Optional: `theory` over columns, (param name -> numpy array) -> (theory column -> array),
    # the same numbers as `theory` point by point (tests compare them); a summary of a million
    # points then costs no million Python calls. Without it, `theory` is called per point.
    theory_table: Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]] | None = None
    # A small valid experiment of this kind ({"trials": ..., "grid": {...}}, every parameter
    # listed): the docs' examples and the scale tests, which lengthen its last float parameter
    # with two or more values to a million points. Built-in kinds must declare one (a test
    # checks).
    example: Mapping[str, object] | None = None

    @property
    def summary_metrics(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.metrics if c.name not in self.constant_metrics)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.params)

    def block_trials(self, params: Params) -> int:
        """Trials per random-number block: a function of the stream parameters only."""
        per_trial = max(1, self.bytes_per_trial(params))
        trials = self.block_factor * TARGET_BLOCK_BYTES // per_trial
        return int(min(MAX_BLOCK_TRIALS, max(1, trials)))

    def grid_schema(self) -> dict:
        """JSON Schema of `experiments.<name>.grid` for this kind, from its parameters."""
        return {
            "type": "object",
            "additionalProperties": False,
            "required": [p.name for p in self.params if p.default is None],
            "properties": {p.name: p.list_schema() for p in self.params},
        }

    def figures_for(self, values: Mapping[str, list]) -> tuple[str, ...]:
        """The figures that apply to a grid of these distinct values (`figure_applies`)."""
        return tuple(
            f
            for f in self.figures
            if f not in self.figure_applies or self.figure_applies[f](values)
        )

    def submodule(self, name: str):
        """The kind's `figures` or `claims` module, imported only when needed (the plotting stack
        is slow to import)."""
        return importlib.import_module(f"{self.package}.{name}")

    def caption(self, figure: str) -> Path:
        """The report caption of one of the kind's figures: `report/<figure>.rst` in its package."""
        package = Path(importlib.import_module(self.package).__file__).parent
        return package / "report" / f"{figure}.rst"
