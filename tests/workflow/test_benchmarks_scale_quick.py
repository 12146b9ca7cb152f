"""`python -m benchmarks --scale --quick` runs end to end and writes its rows (a module of its
own, so that pytest-xdist runs it beside the other quick benchmarks: each takes minutes)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from helpers.benchmarks import run_benchmarks

pytestmark = pytest.mark.slow


def test_quick_scale_benchmarks_write_their_rows(tmp_path):
    """`python -m benchmarks --scale --quick --no-store`: planning, a job's start-up and the
    one-point sweep on small sizes (the 10^8-row store and SLURM rows are left out here)."""
    run_benchmarks(tmp_path, "--scale", "--quick", "--no-store")
    rows = {r["what"]: r for r in pq.read_table(tmp_path / "scale/latest.parquet").to_pylist()}
    for size in ("10k", "100k"):
        assert rows[f"scale: {size} points, snakemake -n"]["value"] > 0
        assert rows[f"scale: job start-up to first kernel call, {size}-point sweep"]["value"] > 0
    assert (
        rows["scale: 100k points, chunk jobs (SLURM profile)"]["value"]
        <= rows["scale: 100k points, chunk jobs (laptop default)"]["value"]
    )
    assert any(
        w.startswith("scale: one-point sweep, speedup over the naive loop, threads") for w in rows
    )
