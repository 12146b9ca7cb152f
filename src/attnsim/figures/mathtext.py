"""One mathtext layout per expression for a whole figures job, not one per renderer.

Matplotlib lays out each mathtext string (every log axis's tick labels, `$\\mathdefault{10^{-2}}$`)
through a cache that belongs to one renderer and keeps 50 entries. Every figure, and each of its
passes (layout and PNG at 150 dpi, PDF at 72), has its own renderer, so the default sweep's figures
job parsed the same 43 strings 432 times (pyparsing, ~5-10 ms a parse: ~8% of the job's CPU,
profiled). `share_layouts` keys that same parse by what its result depends on instead: the
expression, dpi, font and the parser's kind of output (raster or vector), as matplotlib's own
cache does, plus the rcParams the parse reads (`mathtext.*`, `text.*`, `font.*`), which
matplotlib's per-renderer cache leaves out. A hit returns the very layout a new parse would build,
so every pixel and every PDF operator is the same (tested).

Installed by `attnsim.report.figures` in the figures job's process only: importing this module
changes nothing.
"""

from __future__ import annotations

import functools
from typing import Any

LAYOUTS = 4096  # expressions x sizes x dpis kept (the default sweep's figures need ~100)
RC_PREFIXES = ("mathtext.", "text.", "font.")


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


def share_layouts() -> bool:
    """Route matplotlib's mathtext parses through one process-wide cache (once per process).
    False, and nothing changed, on a matplotlib whose parser has no such cache to replace."""
    import matplotlib
    from matplotlib.mathtext import MathTextParser

    per_renderer = MathTextParser.__dict__.get("_parse_cached")
    parse = getattr(per_renderer, "__wrapped__", None)
    if getattr(per_renderer, "shared", False):
        return True
    if parse is None:
        return False
    keys = sorted(k for k in matplotlib.rcParams if k.startswith(RC_PREFIXES))
    parsers: dict[str, Any] = {}  # output kind -> a parser of that kind (it holds no other state)

    @functools.lru_cache(maxsize=LAYOUTS)
    def shared(output, rc, s, dpi, prop, antialiased, load_glyph_flags):
        return parse(parsers[output], s, dpi, prop, antialiased, load_glyph_flags)

    def _parse_cached(self, s, dpi, prop, antialiased, load_glyph_flags):
        parsers.setdefault(self._output_type, self)
        rc = tuple(_hashable(matplotlib.rcParams[k]) for k in keys)
        return shared(self._output_type, rc, s, dpi, prop, antialiased, load_glyph_flags)

    # Marks on the function that tests read back (attributes no type declares).
    _parse_cached.shared = True  # type: ignore[attr-defined]
    _parse_cached.per_renderer = per_renderer  # type: ignore[attr-defined]  # to put back
    MathTextParser._parse_cached = _parse_cached  # type: ignore[attr-defined]
    return True
