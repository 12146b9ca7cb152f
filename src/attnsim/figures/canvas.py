"""What of a laid-out figure a saved file would cut off: a library of the figures' style (it
reads matplotlib's extents, nothing of the kinds), re-exported by `attnsim.report.figure_check`."""

from __future__ import annotations


def reaching_out(fig, tolerance: float = 1.0) -> dict[str, tuple[float, float, float, float]]:
    """What of a laid-out figure reaches past its canvas by more than `tolerance` pixels (and so
    is cut off in a saved file): its legends (the figure's and each panel's), its titles and the
    panels' titles, each named ("figure legend 1", "legend of panel 2", "title of panel 3", ...)
    with how far it reaches out (left, bottom, right, top; pixels, 0 where it does not). Reads
    the extents of the last layout or draw; draws nothing itself."""
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    named = [(f"figure legend {i + 1}", legend) for i, legend in enumerate(fig.legends)]
    named += [("title", fig._suptitle), ("x label", fig._supxlabel), ("y label", fig._supylabel)]
    for i, ax in enumerate(fig.axes):
        named += [(f"legend of panel {i + 1}", ax.get_legend())]
        named += [(f"title of panel {i + 1}", ax.title)]
    out = {}
    for name, artist in named:
        if artist is None or not artist.get_visible():
            continue
        if hasattr(artist, "get_text") and not artist.get_text():
            continue  # an empty title takes no room
        box = artist.get_window_extent(renderer)
        if box.width == 0 and box.height == 0:
            continue
        reach = (-box.x0, -box.y0, box.x1 - width, box.y1 - height)
        if max(reach) > tolerance:
            left, bottom, right, top = (max(0.0, float(r)) for r in reach)
            out[name] = (left, bottom, right, top)
    return out


def outside_canvas(fig, tolerance: float = 1.0) -> list[str]:
    """The names of what `reaching_out` finds: a saved figure's legends and titles cut off."""
    return list(reaching_out(fig, tolerance))
