"""Shared figure machinery: the look (`style`), drawing helpers (`common`) and `render`, which draws
an experiment's figures from its summary. Each kind's figures live in its own package
(`<kind>/figures.py`)."""
