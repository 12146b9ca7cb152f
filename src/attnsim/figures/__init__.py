"""The library kinds draw with: the look (`style`), drawing helpers (`common`), the canvas's
extents (`canvas`) and the mathtext cache (`mathtext`). Each kind's figures live in its own package
(`<kind>/figures.py`); drawing an experiment's figures from its summary is `attnsim.report`."""
