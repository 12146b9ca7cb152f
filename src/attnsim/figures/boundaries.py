"""A claim's located boundaries drawn in the claim's own figure (docs/usage.md, "Locating where a
claim stops holding"): where the claim's statistic crosses an edge of its band along one axis,
as a vertical line at x* over its 95% interval (a shaded band), and the theory's prediction of
the crossing with its tolerance (dashed, over a lighter band) where one exists, each with an
entry for the figure's legend. A boundary that was not located ("not located within budget",
"none in range") is drawn as nothing: its legend entry is a note saying so, never a line.

The records are the workspace's (`attnsim.report.boundaries.record`, as a run's located files
and state.yaml hold them); the figure function that shows the claim (`Kind.presentation.
boundary_figures`) picks the panel and, where its x is not the boundary's axis, maps the axis
onto it (`x_of`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from matplotlib.colors import to_rgba
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

LOCATED = "located"
# a colour per boundary in one panel, in the order of their names: dark, so that the lines stand
# apart from the kinds' mid-tone palettes
COLOURS = ("0.15", "#6a3d9a", "#b15928", "#1f78b4")
BAND_ALPHA = 0.2  # the located interval
THEORY_ALPHA = 0.1  # the theory's tolerance


def located(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The crossings of a boundary that were located, each with its estimate and 95% interval;
    none unless the boundary's status is "located", whatever estimates its crossings carry."""
    if record.get("status") != LOCATED:
        return []
    return [c for c in record.get("crossings") or [] if c.get("status") == LOCATED]


def where(record: Mapping[str, Any], keys: Sequence[str]) -> str:
    """The boundary's fixed values named by `keys` ("n = 16, logit_scale = 0")."""
    at = record.get("at") or {}
    return ", ".join(f"{k} = {_number(at[k])}" for k in keys if k in at)


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _span(x_of: Callable[[float], float], low: float, high: float) -> tuple[float, float] | None:
    ends = sorted((x_of(low), x_of(high)))
    return (ends[0], ends[1]) if all(math.isfinite(e) for e in ends) else None


def mark(
    ax,
    record: Mapping[str, Any],
    colour: Any,
    x_of: Callable[[float], float] | None = None,
    keys: Sequence[str] = (),
    symbol: str | None = None,
) -> list:
    """One boundary in the panel `ax`: each located crossing's x* (a line) over its 95% interval
    (a band) and, beside a located crossing, the theory's prediction with its tolerance (dashed,
    over a lighter band) and the exact crossing where the record has one (dash-dotted: a check);
    their legend entries. `x_of` maps a value of the boundary's axis to
    the panel's x (identity by default; monotone, as the interval's ends are mapped); `keys`
    name the fixed values in the labels, `symbol` the axis (its parameter's name by default).
    A boundary not located, or not on the panel's x: an entry with no mark, saying why."""
    x_of = x_of or float
    name = symbol or str(record.get("axis", "x"))
    tail = where(record, keys)
    tail = f" ({tail})" if tail else ""
    crossings = located(record)
    if not crossings:
        return [_note(f"{name}*{tail}: {record.get('status', 'not located')}")]
    handles: list[Any] = []
    drawn = False
    for crossing in crossings:
        x, span = x_of(crossing["estimate"]), _span(x_of, crossing["low"], crossing["high"])
        found = f"boundary {name}* = {crossing['estimate']:.4g} [{crossing['low']:.4g}, "
        found += f"{crossing['high']:.4g}]{tail}"
        if not math.isfinite(x) or span is None:
            handles.append(_note(f"{found}: not on this x axis"))
            continue
        ax.axvspan(*span, color=colour, alpha=BAND_ALPHA, lw=0, zorder=0.5)
        ax.axvline(x, color=colour, lw=1.3, zorder=2.5)
        handles.append(_handle(colour, "-", BAND_ALPHA, found))
        drawn = True
    theory = record.get("theory")
    if theory and drawn:  # beside the located boundary it predicts, never alone
        predicted, tolerance = float(theory["predicted"]), float(theory["tolerance"])
        x = x_of(predicted)
        span = _span(x_of, predicted - tolerance, predicted + tolerance)
        if math.isfinite(x) and span is not None:
            ax.axvspan(*span, color=colour, alpha=THEORY_ALPHA, lw=0, zorder=0.4)
            ax.axvline(x, color=colour, lw=1.1, ls="--", zorder=2.4)
            label = f"theory {name}* {predicted:.4g} ± {tolerance:.2g}: "
            label += str(theory.get("verdict", ""))
            handles.append(_handle(colour, "--", THEORY_ALPHA, label))
    exact = record.get("exact")
    if exact and drawn and math.isfinite(at := x_of(float(exact["x"]))):  # a check, never alone
        ax.axvline(at, color=colour, lw=1.1, ls="-.", zorder=2.4)
        where_ = "inside" if exact["inside"] else "outside"
        label = f"exact {name}* {float(exact['x']):.4g} ({exact['by']}), {where_} the interval"
        handles.append(Line2D([], [], color=colour, ls="-.", lw=1.1, label=label))
    return handles


def _handle(colour: Any, style: str, alpha: float, label: str) -> Patch:
    """A legend entry of a line over its band: the band, outlined in the line's colour and
    style."""
    return Patch(facecolor=to_rgba(colour, alpha), edgecolor=colour, ls=style, lw=1.1, label=label)


def _note(label: str) -> Line2D:
    """A legend entry with no mark: a boundary drawn as nothing."""
    return Line2D([], [], ls="none", label=label)


def draw(
    ax,
    records: Iterable[Mapping[str, Any]],
    x_of: Callable[[Mapping[str, Any], float], float] | None = None,
    keys: Sequence[str] = (),
    symbol: str | None = None,
) -> list:
    """Every boundary of `records` in the panel `ax` (`mark`, a colour each, in the order of their
    names: the same figure whatever order they come in); their legend entries, for the figure's
    legend. `x_of(record, value)`: the panel's x at a value of that boundary's axis."""
    handles: list = []
    ordered = sorted(records, key=lambda r: str(r.get("name", "")))
    for i, record in enumerate(ordered):
        own = None if x_of is None else functools.partial(x_of, record)
        handles += mark(ax, record, COLOURS[i % len(COLOURS)], own, keys, symbol)
    return handles
