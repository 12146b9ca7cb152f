"""What an experiment kind declares: its parameters, columns, kernel, theory, figures, headline.

A kind is one package, `attnsim/kinds/<kind>/` (or a plugin's package, registered under the
entry-point group `attnsim.kinds`): its `__init__.py` defines `KIND = Kind(...)`, `kernel.py`
computes trial blocks, `figures.py` draws from the summary (captions in `report/<figure>.rst`)
and `claims.py` judges the essay's claims. The driver (`attnsim.jobs.simulate`), the planner, the
store, the summaries, the figures, the claims engine and the workflow work from these
declarations only. See docs/adding-a-kind.md; `attnsim.testing.check_kind` checks that a kind
keeps this contract.

The contract is small at its core: a name, a description, the package, the algorithm version, the
`Schema` (parameters and trial columns) and the `Compute` (the kernel and its cost). The rest,
`Theory`, `Summary`, `Presentation` and `Assets`, are optional records, empty by default.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

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
    [default] (so a parameter added to a kind keeps existing configs valid). With
    `id_omits_default` as well, a point at the default leaves the parameter out of its id
    (`attnsim.records.grid.point_ids`), so a parameter added to a kind keeps today's point ids
    and rows (an axis added beside existing points, not a new algorithm).
    `renamed`: (old name, name now) pairs of values renamed after points were stored under them,
    with the same meaning. A config or a stored chunk spec that says the old name means the new
    one (`current`; config load says so in one line), and a point at the new name keeps the id
    and stream the old name gave it (`id_value`), so its stored rows stay valid. A value whose
    meaning changes is not renamed: that is a new algorithm version.
    """

    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    choices: tuple[str, ...] = ()
    default: object = None
    id_omits_default: bool = False
    renamed: tuple[tuple[str, str], ...] = ()

    def current(self, value: Any) -> Any:
        """The value's name now (an old name renamed, anything else unchanged)."""
        return next((new for old, new in self.renamed if value == old), value)

    def id_value(self, value: Any) -> Any:
        """The value as ids and streams hash it: a renamed value under its old name."""
        return next((old for old, new in self.renamed if value == new), value)

    def item_schema(self) -> dict:
        if self.choices:  # an old name of `renamed` is made the new one before validation
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


Params = Mapping[str, Any]  # parameter name -> canonical value (str, int or float)
# A kind's kernel: (generator, trials in the block, the points sharing these draws) -> for each
# point, metric name -> its (trials,) array.
BlockKernel = Callable[[np.random.Generator, int, Sequence[Params]], list[dict[str, np.ndarray]]]


@dataclass(frozen=True)
class Schema:
    """What a kind's grid and trial rows are: the columns of its trials files."""

    # The grid parameters, in the order points are enumerated.
    params: tuple[Param, ...]
    # The parameters that shape the random draws: points equal in these share one stream.
    stream_params: tuple[str, ...]
    # The per-trial float64 columns the kernel returns.
    metrics: tuple[Column, ...]
    # The metric whose standard error decides `target_se` and the headline numbers.
    main_metric: str
    # Checks a JSON Schema cannot express: raise a ConfigError whose message starts with
    # `grid.<key>`.
    check_grid: Callable[[Mapping[str, list]], None] | None = None
    # The trial columns the kind's claims read run by run besides the summary (a fit on every
    # run, e.g. right-censored escape times; each point's runs reach the claims as a column
    # `runs`). Declared here, not in the claims module, so that the workflow lists the trial files
    # a kind's claims read without importing its claims code; () for most kinds.
    run_columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class Counts:
    """Work in the machine's units: what a kernel does, counted from its algorithm (not timed).

    The units are the machine's own rates (`attnsim.records.cost` holds them per CPU class, the
    benchmarks measure them): the first seven are the work a kernel cannot avoid once its
    algorithm is fixed (the benchmark's machine bound adds them up at the measured rates), the
    last two what it spends besides (memory passes, the Python calls of numpy operations).
    """

    normals: float = 0.0  # float32 standard normals (`kernels.sampling`: Box-Muller from words)
    normals64: float = 0.0  # numpy's own float64 samplers (ziggurat normals, chi-squares)
    words: float = 0.0  # 32-bit random words turned into uniforms (no normal transform)
    exps: float = 0.0  # float64 exp or log (numpy's SIMD loops)
    exps32: float = 0.0  # float32 exp, log, sqrt, sin or cos
    expm1s: float = 0.0  # float32 expm1 (no SIMD loop on AVX2-only CPUs: its own rate)
    flops: float = 0.0  # float32 matrix-product flops (2 m k n per product)
    flops64: float = 0.0  # float64 matrix-product flops
    casts: float = 0.0  # numbers rounded to a low-precision format (ml_dtypes casts)
    bytes: float = 0.0  # bytes read and written by the other elementwise passes and reductions
    calls: float = 0.0  # numpy calls (each costs Python and dispatch time whatever its size)

    def values(self) -> tuple[float, ...]:
        """The counts in field order (no copy of anything: `dataclasses.astuple` deep-copies, and
        the planner sums counts once per combination of a grid's parameters)."""
        return tuple(getattr(self, name) for name in _COUNT_FIELDS)

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(a + b for a, b in zip(self.values(), other.values())))

    def __mul__(self, factor: float) -> Counts:
        return Counts(*(a * factor for a in self.values()))

    __rmul__ = __mul__


_COUNT_FIELDS = tuple(f.name for f in fields(Counts))


@dataclass(frozen=True)
class Work:
    """One point's work per trial, as its kernel does it. `own`: each point's; `shared`: once per
    stream, whatever its number of points (the draws they share: common random numbers, charged
    to one point of the stream). `own_block` and `shared_block` are the same per trial block
    rather than per trial: what does not shrink with the block's trials (numpy calls, a model
    drawn per block)."""

    own: Counts
    shared: Counts = Counts()
    own_block: Counts = Counts()
    shared_block: Counts = Counts()
    # Once per job and stream: what a process does before its first block (a model's weights
    # read, a population of embeddings computed; cached for the process's later blocks).
    setup: Counts = Counts()


def bytes_work(bytes_per_trial: int) -> Work:
    """The work of a kind that declares no counts: one pass over its working set per point and
    trial, three for the stream's draws (the cost model's rule before counts were declared)."""
    return Work(own=Counts(bytes=bytes_per_trial), shared=Counts(bytes=3 * bytes_per_trial))


@dataclass(frozen=True)
class Compute:
    """How a kind's trials are computed, and what they cost."""

    # The kernel: one block of trials for the points sharing its draws.
    simulate_block: BlockKernel
    # The working set of one trial, in bytes: it alone sizes blocks and memory.
    bytes_per_trial: Callable[[Params], int]
    # What one trial costs, counted from the kernel's algorithm (`Work`): the planner's cost model
    # (`attnsim.records.cost`, times the kind's calibration factor per CPU class) and the
    # benchmark's machine bound (benchmarks/machine.py) both derive from it. None: one pass over
    # the working set (`bytes_work`), a rough guess for a plugin kind.
    counts: Callable[[Params], Work] | None = None
    # This kind's blocks aim at block_factor * TARGET_BLOCK_BYTES.
    block_factor: int = 1

    def work(self, params: Params) -> Work:
        """The kind's declared `Work` at a point, or `bytes_work` if it declares none."""
        if self.counts is None:
            return bytes_work(self.bytes_per_trial(params))
        return self.counts(params)


@dataclass(frozen=True)
class Theory:
    """What theory predicts at each point: the summary's theory columns."""

    # The theory columns of the summary.
    columns: tuple[Column, ...] = ()
    # The prediction at one point: (param name -> value) -> (theory column -> value).
    point: Callable[[Params], dict[str, object]] | None = None
    # Optional: the same numbers over columns, (param name -> numpy array) -> (theory column ->
    # array), point by point equal to `point` (tests compare them). A summary of a million points
    # then costs no million Python calls.
    table: Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]] | None = None


@dataclass(frozen=True)
class Summary:
    """How a kind's trials become its per-point summary, beyond mean, SE and interval."""

    # Per-trial columns that are constant within a point: no mean or interval.
    constant_metrics: tuple[str, ...] = ()
    # Metrics whose smallest and largest trial value the summary keeps (`<m>_min`, `<m>_max`).
    extreme_metrics: tuple[str, ...] = ()
    # Metrics a trial may leave non-finite (+inf or NaN: a diverged training run). Their mean, SE
    # and interval are over the finite trials only, and the summary adds `<m>_finite`, the number
    # of those trials (medians and the like: `extra`).
    finite_metrics: tuple[str, ...] = ()
    # Metrics a trial may leave NaN or +/-inf by definition, summaries unchanged (kappa of a noise
    # without the moment the delta method needs; a quantity that does not apply at a point).
    # NaN or inf anywhere else fails the job (attnsim.jobs.validate checks every block).
    nonfinite_metrics: tuple[str, ...] = ()
    # The kind's own summary columns, and the function that fills them for one point:
    # (metric -> the point's trial values, params) -> (column -> value).
    extra_columns: tuple[Column, ...] = ()
    extra: Callable[[dict[str, np.ndarray], Params], dict[str, object]] | None = None


@dataclass(frozen=True)
class Presentation:
    """What a run shows of a kind: figures and the summary's headline."""

    # Functions of `<package>.figures`, each (summary DataFrame) -> Figure; captions in
    # `<package>/report/<figure>.rst`.
    figures: tuple[str, ...] = ()
    # Figures drawn only where they have something to show: figure -> a test of the experiment's
    # grid (parameter -> its distinct values, defaults filled in). A figure without one is drawn
    # for every experiment of the kind; one whose test fails is neither drawn nor listed.
    figure_applies: Mapping[str, Callable[[Mapping[str, list]], bool]] = field(default_factory=dict)
    # (summary DataFrame) -> one line for the run summary.
    headline: Callable[[object], str] | None = None
    # A figure of this kind showing the entropy between 0 and log n (the entropy-bounds claim
    # cites it).
    entropy_figure: str = ""
    # Figures that show the kind's judged claims (verdicts, measured numbers): drawn from the
    # kind's claims file (`<workspace>/claims/<kind>.parquet`, the judge job's) besides the
    # summary, as `figure(summary, claims=[ClaimResult, ...])`. A figure never judges: the
    # engine judged those claims once, on the rows of every experiment of the kind.
    claims_figures: tuple[str, ...] = ()
    # Per-point claims whose located boundaries (a config's `boundaries:`, docs/usage.md) a
    # figure draws beside the claim: claim id -> the figure (the claim's own, `ClaimSpec.figure`),
    # called as `figure(summary, boundaries=[record, ...])` when the run located any. Declared
    # here, not read off the claims, so that the workflow knows which figures jobs wait for the
    # boundaries without importing claims code.
    boundary_figures: Mapping[str, str] = field(default_factory=dict)
    # The most grid points its figures draw from: a larger experiment's figures are drawn from a
    # sub-grid of about this many points, each parameter's values spread over its range
    # (`attnsim.report.figure_data`). Figures that bin large sweeps themselves declare more.
    figure_points: int = 10_000


@dataclass(frozen=True)
class Assets:
    """Data a kind's kernel reads from outside the package."""

    # attnsim.models.assets names, fetched before any job runs.
    names: tuple[str, ...] = ()
    # Extra provenance of every trials and summary file (e.g. asset and corpus hashes).
    provenance: Callable[[], dict] | None = None


@dataclass(frozen=True)
class Kind:
    """An experiment kind: a required core (who it is, its columns, its kernel) and optional
    records for theory, summary, presentation and assets, each empty by default."""

    name: str
    # One line: what the kind measures, against which theory.
    description: str
    # The kind's package (`__name__` of its __init__): figures, claims and captions live there.
    package: str
    # Bump whenever a point's numbers would change: stored results of another version are
    # refused, never mixed.
    algorithm_version: int
    schema: Schema
    compute: Compute
    theory: Theory = Theory()
    summary: Summary = Summary()
    presentation: Presentation = Presentation()
    assets: Assets = Assets()
    # A small valid experiment of this kind ({"trials": ..., "grid": {...}}, every parameter
    # listed): the docs' examples, `attnsim.testing.check_kind` and the scale tests (which
    # lengthen its last float parameter with two or more values to a million points). Built-in
    # kinds must declare one (a test checks).
    example: Mapping[str, object] | None = None

    @property
    def summary_metrics(self) -> tuple[str, ...]:
        """The metrics the summary gives a mean, SE and interval."""
        constant = self.summary.constant_metrics
        return tuple(c.name for c in self.schema.metrics if c.name not in constant)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.schema.params)

    def block_trials(self, params: Params) -> int:
        """Trials per random-number block: a function of the stream parameters only."""
        per_trial = max(1, self.compute.bytes_per_trial(params))
        target = self.compute.block_factor * TARGET_BLOCK_BYTES
        return int(min(MAX_BLOCK_TRIALS, max(1, target // per_trial)))

    def grid_schema(self) -> dict:
        """JSON Schema of `experiments.<name>.grid` for this kind, from its parameters."""
        return {
            "type": "object",
            "additionalProperties": False,
            "required": [p.name for p in self.schema.params if p.default is None],
            "properties": {p.name: p.list_schema() for p in self.schema.params},
        }

    def figures_for(self, values: Mapping[str, list]) -> tuple[str, ...]:
        """The figures that apply to a grid of these distinct values (`figure_applies`)."""
        return tuple(
            f
            for f in self.presentation.figures
            if f not in self.presentation.figure_applies
            or self.presentation.figure_applies[f](values)
        )

    def submodule(self, name: str):
        """The kind's `figures` or `claims` module, imported only when needed (the plotting stack
        is slow to import)."""
        return importlib.import_module(f"{self.package}.{name}")

    def caption(self, figure: str) -> Path:
        """The report caption of one of the kind's figures: `report/<figure>.rst` in its package."""
        package_file = importlib.import_module(self.package).__file__
        assert package_file is not None  # a package, not a namespace
        return Path(package_file).parent / "report" / f"{figure}.rst"
