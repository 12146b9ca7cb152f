"""Shared fixtures: a small valid config, the real-model assets (helpers.assets), caches in the temp
dir."""

from __future__ import annotations

import pytest
from helpers.assets import (  # noqa: F401 (fixtures for every test)
    asset_cache,
    glove_dir,
    kind_assets,
    minilm_dir,
    minilm_wheel,
)
from helpers.configs import REPO, small_config  # noqa: F401 (REPO: for tests that still read it here)

# the plugin example's own tests run from outside the tree, with the plugin installed
# (test_figure_check.py)
collect_ignore = ["plugin_example"]


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
