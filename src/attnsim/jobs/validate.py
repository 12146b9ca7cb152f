"""Every kernel's output checked before it is written (issue 22 item 3).

A kind's `simulate_block(rng, trials, points)` returns, per point, metric -> array of `trials`
values. A block whose output has another length or shape, is not a numpy array of float64 or
float32 (every metric is a float64 column: a bool, an integer past 2**53 or a float16 would be
stored as something the kernel did not compute), misses or adds a metric, or holds NaN or inf
where the kind does not declare it (`Kind.summary.finite_metrics`,
`Kind.summary.nonfinite_metrics`) fails the job with one line naming the kind, the metric and the
point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from attnsim.errors import KernelOutputError

FLOATS = (np.dtype(np.float64), np.dtype(np.float32))  # what a float64 column holds exactly


def _where(kind, point, metric: str | None = None) -> str:
    params = ", ".join(f"{k}={v}" for k, v in point.params.items())
    return (
        f"kind {kind.name}"
        + (f", metric {metric}" if metric else "")
        + f", point {point.id} ({params})"
    )


class _Where:
    """`_where(...)` on demand: the checks run on every block, the text only on a failure (the
    point's parameters formatted for every metric of every block cost ~15% of a small job)."""

    def __init__(self, kind, point, metric: str):
        self.args = (kind, point, metric)

    def __format__(self, spec: str) -> str:
        return format(_where(*self.args), spec)


def check_block(kind, points: Sequence, trials: int, output) -> None:
    """KernelOutputError unless `output` holds, for each of `points`, every metric of `kind` as a
    (trials,) numpy array of float64 or float32 with NaN or inf only where the kind declares
    them."""
    if (
        not isinstance(output, Sequence)
        or isinstance(output, (str, bytes))
        or len(output) != len(points)
    ):
        got = f"{len(output)} results" if isinstance(output, Sequence) else type(output).__name__
        raise KernelOutputError(
            f"kind {kind.name}: simulate_block returned {got} for a block of {len(points)} points"
        )
    names = [m.name for m in kind.schema.metrics]
    for point, metrics in zip(points, output):
        if not isinstance(metrics, Mapping):
            raise KernelOutputError(
                f"{_where(kind, point)}: simulate_block gave a {type(metrics).__name__}, not "
                "metric -> values"
            )
        missing = [n for n in names if n not in metrics]
        extra = sorted(set(metrics) - set(names))
        if missing or extra:
            what = (
                f"missing metric {missing[0]}"
                if missing
                else f"a metric {extra[0]!r} the kind does not declare"
            )
            raise KernelOutputError(f"{_where(kind, point)}: simulate_block's output has {what}")
        for name in names:
            values = metrics[name]
            where = _Where(kind, point, name)  # formatted only if a check fails
            if not isinstance(values, np.ndarray):
                raise KernelOutputError(
                    f"{where}: values given as a {type(values).__name__}, not a numpy array of "
                    "float64 or float32"
                )
            if values.dtype not in FLOATS:
                raise KernelOutputError(
                    f"{where}: values of dtype {values.dtype}, not float64 or float32 (every "
                    "metric is stored as float64: booleans, integers past 2**53 and float16's "
                    "rounding would change on the way)"
                )
            if values.shape != (trials,):
                if values.ndim == 1:
                    raise KernelOutputError(
                        f"{where}: {values.shape[0]} values for {trials} trials"
                    )
                raise KernelOutputError(
                    f"{where}: an array of shape {values.shape}, not one value per trial "
                    f"({trials},)"
                )
            if not np.isfinite(values).all():
                declared = kind.summary.finite_metrics + kind.summary.nonfinite_metrics
                if name not in declared:
                    nan, inf = int(np.isnan(values).sum()), int(np.isinf(values).sum())
                    what = (
                        f"{nan} of {trials} values are NaN"
                        if nan
                        else f"{inf} of {trials} values are infinite"
                    )
                    raise KernelOutputError(
                        f"{where}: {what}, which the kind does not declare (finite_metrics, "
                        "nonfinite_metrics)"
                    )
