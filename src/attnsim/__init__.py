"""attnsim: Monte Carlo tests of claims about softmax attention.

The package holds all logic; the Snakemake workflow only calls into it.
"""

# The one place the version is written (pyproject.toml reads it: `dynamic = ["version"]`). Every
# job process records it in its files' provenance: a constant costs nothing, where asking
# importlib.metadata cost each of a run's ~40 processes ~50 ms.
__version__ = "0.1.0"
