"""attnsim: Monte Carlo tests of claims about softmax attention.

The package holds all logic; the Snakemake workflow only calls into it.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("attnsim")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"
