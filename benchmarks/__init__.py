"""attnsim's benchmark suite: machine limits, kernels against naive loops, memory, and the workflow.

Run from the repository root (not part of the test run):

    python -m benchmarks            # full run, ~10 minutes on 2 cores
    python -m benchmarks --quick    # every row once on tiny sizes, values not compared (CI)

Writes benchmarks/results/latest.md and latest.parquet (git-ignored) and prints the table; every
row has what, value, unit, target, met (and a note). The machine it ran on heads the Markdown.
"""
