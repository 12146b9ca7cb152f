"""What an experiment kind declares: its parameters, metrics, kernel and theory.

The driver (`attnsim.simulate`), the store and the figures work from these
declarations only, so adding a kind means adding one module here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

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
    name: str
    type: pa.DataType
    doc: str

    def field(self, nullable: bool = False) -> pa.Field:
        return pa.field(self.name, self.type, nullable=nullable, metadata={"description": self.doc})


Params = Mapping[str, object]
# (generator, trials in block, the points sharing these draws) -> per point: metric -> (trials,) array
BlockKernel = Callable[[np.random.Generator, int, Sequence[Params]], list[dict[str, np.ndarray]]]


@dataclass(frozen=True)
class Kind:
    name: str
    description: str
    params: tuple[Column, ...]  # grid parameters, in the order points are enumerated
    stream_params: tuple[str, ...]  # the parameters that shape the random draws
    metrics: tuple[Column, ...]  # per-trial float64 columns
    theory_columns: tuple[Column, ...]
    algorithm_version: int  # bump whenever a point's numbers would change
    bytes_per_trial: Callable[[Params], int]
    simulate_block: BlockKernel
    theory: Callable[[Params], dict[str, object]]
    main_metric: str
    extra_columns: tuple[Column, ...] = field(default=())
    extra_summary: Callable[[dict[str, np.ndarray], Params], dict[str, object]] | None = None
    constant_metrics: tuple[str, ...] = ()  # per-trial columns that are constant per point: no mean/CI
    block_factor: int = 1  # this kind's blocks aim at block_factor * TARGET_BLOCK_BYTES

    @property
    def summary_metrics(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.metrics if c.name not in self.constant_metrics)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.params)

    def block_trials(self, params: Params) -> int:
        """Trials per random-number block: a function of the stream parameters only."""
        per_trial = max(1, self.bytes_per_trial(params))
        return int(min(MAX_BLOCK_TRIALS, max(1, self.block_factor * TARGET_BLOCK_BYTES // per_trial)))

    def stream_of(self, params: Params) -> dict[str, object]:
        return {k: params[k] for k in self.stream_params}
