"""CPU classes: detected from numpy's dispatch and OpenBLAS's core, recorded per chunk, and an
experiment whose chunks come from several classes is reported (allowed: docs/science.md §8.4)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from helpers.configs import small_config

from attnsim.config.load import load
from attnsim.plan.sweep import experiment_json, plan_experiment
from attnsim.run import cpu
from attnsim.run.collect import collect
from attnsim.run.simulate import run_chunk
from attnsim.run.status import run_summary
from attnsim.store import parquet as store


def test_class_is_numpy_level_and_blas_core():
    level, core = cpu.cpu_class().split("-", 1)
    assert level == cpu.numpy_dispatch() and core == cpu.blas()["architecture"] != "unknown"
    meta = cpu.provenance()
    assert meta["class"] == cpu.cpu_class() and level in meta["numpy_features"]
    assert {"internal_api", "version", "architecture"} <= set(meta["blas"]) and meta["model"]


def test_class_follows_numpy_dispatch_limits():
    level = cpu.numpy_dispatch()
    if level not in cpu.LEVELS[:-1]:
        pytest.skip(f"numpy dispatches {level}")
    below = cpu.LEVELS[cpu.LEVELS.index(level) + 1]
    from numpy._core._multiarray_umath import __cpu_dispatch__

    order = list(__cpu_dispatch__)
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(order[order.index(level) :])}
    out = subprocess.run(
        [sys.executable, "-c", "from attnsim.run import cpu; print(cpu.cpu_class())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == f"{below}-{cpu.blas()['architecture']}"


def relabel(path, klass: str) -> None:
    """Rewrite a chunk as if another CPU class had computed it (its provenance only)."""
    table = pq.read_table(path)
    meta = store.read_meta(path)
    meta["cpu"] = {**meta["cpu"], "class": klass}
    store.write_atomic(table.replace_schema_metadata({}), path, meta)


def test_chunks_record_their_class_and_mixed_classes_are_reported(tmp_path, caplog):
    settings = load(small_config())
    root = tmp_path / "store"
    plan = plan_experiment(settings, "robustness", root)
    paths = [
        run_chunk(plan.spec(c), store.chunk_path(root, plan.kind, plan.name, c))
        for c in plan.pending
    ]
    assert len(paths) >= 3
    assert {store.read_meta(p)["cpu"]["class"] for p in paths} == {cpu.cpu_class()}
    out = store.summary_path(root, plan.kind, "robustness")
    with caplog.at_level(logging.WARNING):
        collect(experiment_json(settings, "robustness"), paths, out)
    assert store.read_meta(out)["cpu_classes"] == {cpu.cpu_class(): len(paths)}
    assert "CPU classes" not in caplog.text
    assert "CPU classes" not in run_summary(settings, root)

    relabel(paths[0], "X86_V3-Haswell")
    with caplog.at_level(logging.WARNING):
        collect(experiment_json(settings, "robustness"), paths, out)
    classes = store.read_meta(out)["cpu_classes"]
    assert classes == dict(sorted({cpu.cpu_class(): len(paths) - 1, "X86_V3-Haswell": 1}.items()))
    assert (
        "robustness: rows computed on 2 CPU classes: " in caplog.text
        and "X86_V3-Haswell (1 chunk)" in caplog.text
    )
    assert "rows computed on 2 CPU classes" in run_summary(settings, root)
    json.dumps(classes)  # provenance stays plain JSON
