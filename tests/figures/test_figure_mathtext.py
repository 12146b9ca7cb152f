"""The figures job lays out each mathtext expression once per process (`attnsim.figures.mathtext`):
the same files as matplotlib's per-renderer cache gives, with far fewer parses, and a new layout
wherever an rcParam the parse reads has changed."""

from __future__ import annotations

import io
import re

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib import _mathtext
from matplotlib.mathtext import MathTextParser
from PIL import Image

from attnsim.figures import mathtext, style

matplotlib.use("Agg")


@pytest.fixture
def restored(monkeypatch):
    """Matplotlib's own per-renderer cache for the test (a figures test before it in this worker
    may have shared the layouts, as the job does for its whole life), the current one after it."""
    current = MathTextParser.__dict__["_parse_cached"]
    monkeypatch.setattr(MathTextParser, "_parse_cached", getattr(current, "per_renderer", current))


@pytest.fixture
def parses(monkeypatch):
    """Counts the layouts matplotlib builds (one `ship` per parse that missed every cache)."""
    count = [0]
    ship = _mathtext.ship

    def counted(box):
        count[0] += 1
        return ship(box)

    monkeypatch.setattr(_mathtext, "ship", counted)
    return count


@style.figure_function
def _log_figure(_summary, title: str):
    fig, axes = plt.subplots(1, 2)
    for ax in axes:
        ax.loglog([1e-3, 1e3], [1e-4, 1e2])
        ax.set_xlabel(r"$\tau$ (temperature)")
    axes[0].set_title(title)
    return fig


def _files(title: str) -> tuple[np.ndarray, bytes]:
    """The PNG's pixels and the PDF's bytes (creation date aside) of one figure, as `save` draws
    them: laid out at the PNG's resolution, then each file in one pass."""
    fig = _log_figure(None, title)
    style.lay_out(fig)
    fig.set_layout_engine(None)
    png, pdf = io.BytesIO(), io.BytesIO()
    fig.savefig(png, dpi=style.DPI, format="png")
    fig.savefig(pdf, dpi=style.DPI, format="pdf")
    plt.close(fig)
    date = rb"/CreationDate \([^)]*\)"
    return np.asarray(Image.open(png)), re.sub(date, b"", pdf.getvalue())


def test_shared_layouts_draw_the_same_files_with_fewer_parses(restored, parses):
    plain = [_files(t) for t in ("first", "second")]
    plain_parses = parses[0]
    parses[0] = 0
    assert mathtext.share_layouts()
    shared = [_files(t) for t in ("first", "second")]
    for (pixels, pdf), (pixels_shared, pdf_shared) in zip(plain, shared):
        assert np.array_equal(pixels, pixels_shared)
        assert pdf == pdf_shared
    # matplotlib parsed every tick label again for each figure and each file; shared, the second
    # figure (same labels) parses nothing new
    assert 0 < parses[0] < plain_parses, (parses[0], plain_parses)
    before = parses[0]
    _files("third")
    assert parses[0] == before


def test_an_rcparam_the_parse_reads_is_in_the_key(restored):
    """`mathtext.default` (the font of plain letters) is read inside the parse: a change gives a
    new layout, not the one cached before it."""
    assert mathtext.share_layouts()
    parser = MathTextParser("path")
    with matplotlib.rc_context({"mathtext.default": "it"}):
        italic = parser.parse("$x$", dpi=72)
    with matplotlib.rc_context({"mathtext.default": "rm"}):
        upright = parser.parse("$x$", dpi=72)
    fonts = [{glyph[0].fname for glyph in layout.glyphs} for layout in (italic, upright)]
    assert fonts[0] != fonts[1]


def test_installing_twice_wraps_once(restored):
    assert mathtext.share_layouts()
    installed = MathTextParser.__dict__["_parse_cached"]
    assert mathtext.share_layouts()
    assert MathTextParser.__dict__["_parse_cached"] is installed


def test_a_matplotlib_without_the_cache_is_left_alone(monkeypatch):
    def _parse_cached(self, s, dpi, prop, antialiased, load_glyph_flags):  # no __wrapped__
        raise AssertionError("not called here")

    monkeypatch.setattr(MathTextParser, "_parse_cached", _parse_cached)
    assert not mathtext.share_layouts()
    assert MathTextParser.__dict__["_parse_cached"] is _parse_cached
