"""Columns and grid parameters that several kinds share, declared once so their names, meanings and
bounds cannot drift."""

from __future__ import annotations

import pyarrow as pa

from attnsim.kinds.base import Column, Param
from attnsim.subjects import normalisers

F64, I64, STR, BOOL = pa.float64(), pa.int64(), pa.string(), pa.bool_()

N = Param("n", I64, "number of keys", minimum=2, maximum=1048576)
ENTROPY = Column("entropy", F64, "entropy H of the weights, nats, in [0, log n]")
N_EFF = Column("n_eff", F64, "effective number of keys 1 / sum_i p_i^2")
GRAD_SQ = Column("grad_sq", F64, "||do/ds||_F^2 = sum_i p_i^2 ||v_i - o||^2")
LOG_N = Column("log_n", F64, "log n: the entropy of uniform weights, the upper bound")


def with_ci(
    name: str, doc: str, interval: str = "95% interval", ends: str = ""
) -> tuple[Column, ...]:
    """A summary column and the two ends of its interval, `ends`_ci_low and `ends`_ci_high
    (`ends` = `name` unless given), each saying what it is the end of."""
    ends = ends or name
    return (
        Column(name, F64, doc),
        Column(f"{ends}_ci_low", F64, f"lower end of the {interval} of {name}"),
        Column(f"{ends}_ci_high", F64, f"upper end of the {interval} of {name}"),
    )


def paired_ratio(name: str, doc: str) -> tuple[Column, ...]:
    """The summary columns of a paired ratio of means (`attnsim.stats.ratio_of_means`): the ratio,
    its delta-method standard error and the two ends of its 95% interval, in that order."""
    ratio, low, high = with_ci(name, doc)
    return ratio, Column(f"{name}_se", F64, f"delta-method standard error of {name}"), low, high


def d_param(doc: str, minimum: int = 1) -> Param:
    return Param("d", I64, doc, minimum=minimum, maximum=4096)


def normaliser_param(
    doc: str = "the map from logits to weights (docs/science.md §12.1)", after: str = "", **extra
) -> Param:
    """The `normaliser` parameter: its choices are the registry's (`attnsim.subjects.normalisers`),
    so every kind that has one takes a new record as soon as it is registered."""
    names = normalisers.names()
    return Param("normaliser", STR, f"{doc}: {', '.join(names)}{after}", choices=names, **extra)


def scale_param(name: str, doc: str) -> Param:
    """A standard deviation of logits or weights (>= 0)."""
    return Param(name, F64, doc, minimum=0, maximum=10000)
