"""Shared fixtures: small valid configs and a temporary store."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# the plugin example's own tests run from outside the tree, with the plugin installed (test_figure_check.py)
collect_ignore = ["plugin_example"]

NOISY_GRID = {
    "n": [16, 64],
    "d": [4],
    "logit_scale": [0.0, 1.0],
    "noise": ["gaussian", "student_t"],
    "noise_draws": [4],
    "noise_scale": [0.1, 0.5],
}


def small_config(**overrides) -> dict:
    config = {
        "seed": 7,
        "chunk_size": 3,
        "experiments": {"robustness": {"kind": "noisy_attention", "trials": 20, "grid": copy.deepcopy(NOISY_GRID)}},
    }
    config.update(overrides)
    return config


@pytest.fixture
def config() -> dict:
    return small_config()


@pytest.fixture(autouse=True, scope="session")
def _caches_in_the_temp_dir(tmp_path_factory):
    """Snakemake keeps a source cache per run under ~/.cache, and a run a test kills with SIGKILL
    leaves it there: caches of the test runs go to the temp dir instead, so that the test command
    writes nothing outside the clone and the temp dir."""
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    yield
    patch.undo()
