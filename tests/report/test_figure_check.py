"""A kind that declares a figure without its function or caption is refused before any job, in one
line naming the kind and the figure; and the plugin example's own tests pass from outside the tree
(tests/plugin_example/tests/, as docs/adding-a-kind.md shows them)."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.configs import REPO
from helpers.workflow import snakemake, tree, write_config

from attnsim.errors import ConfigError
from attnsim.kinds import all_kinds, get_kind
from attnsim.kinds.base import Kind
from attnsim.report.figure_check import cached_top_level_names, check_kind, top_level_names

PLUGIN = REPO / "tests/plugin_example"
GUIDE = (REPO / "docs/adding-a-kind.md").read_text()


def test_every_built_in_kind_passes():
    for kind in all_kinds().values():
        check_kind(kind)


def test_top_level_names():
    source = "import numpy as np\nfrom x import y as z\ndef f(): pass\n@deco\ndef g(): pass\n"
    source += "h = f\nclass C: pass\n"
    assert top_level_names(source) == {"np", "z", "f", "g", "h", "C"}


def test_the_names_are_kept_by_the_source_and_never_stale(tmp_path, monkeypatch):
    """Each start reads the names from the cache (`files.cached_json`) by the source's sha256: the
    same names as parsing it; an edited source is parsed again, and an entry that is not a list
    of names (a damaged cache) is ignored."""
    monkeypatch.setenv("ATTNSIM_CACHE", str(tmp_path))
    source = "def temperature_gap(): pass\ndef gap_vs_d(): pass\n"
    assert cached_top_level_names(source) == {"temperature_gap", "gap_vs_d"}
    (entry,) = (tmp_path / "top-level-names").iterdir()
    edited = source.replace("def gap_vs_d(): pass\n", "")
    assert cached_top_level_names(edited) == {"temperature_gap"}
    entry.write_text('{"not": "names"}')
    assert cached_top_level_names(source) == {"temperature_gap", "gap_vs_d"}
    entry.write_text("[1, 2")
    assert cached_top_level_names(source) == {"temperature_gap", "gap_vs_d"}
    monkeypatch.setenv("ATTNSIM_CACHE", "off")
    assert cached_top_level_names(edited) == {"temperature_gap"}
    assert len(list((tmp_path / "top-level-names").iterdir())) == 2
    for kind in all_kinds().values():  # with entries kept, every built-in kind passes again
        monkeypatch.setenv("ATTNSIM_CACHE", str(tmp_path))
        check_kind(kind)


def with_figures(kind: Kind, *figures: str) -> Kind:
    presentation = dataclasses.replace(kind.presentation, figures=figures)
    return dataclasses.replace(kind, presentation=presentation)


def test_a_figure_without_function_or_caption_is_named():
    kind = get_kind("temperature_entropy")
    with pytest.raises(ConfigError) as missing:
        check_kind(with_figures(kind, "temperature_gap", "gap_vs_d"))
    assert str(missing.value).startswith(
        "kind temperature_entropy, figure gap_vs_d: declared in Kind.presentation.figures but"
    )
    # a function that exists without its caption: the fetcher of report/*.rst is the package data
    with pytest.raises(ConfigError) as uncaptioned:
        check_kind(with_figures(kind, "asymptotic_gap"))  # a name the module imports
    assert (
        "kind temperature_entropy, figure asymptotic_gap: its caption"
        " report/asymptotic_gap.rst is missing" in str(uncaptioned.value)
    )
    with pytest.raises(ConfigError) as no_module:
        check_kind(dataclasses.replace(kind, package="attnsim.kinds.base"))
    assert "has no module attnsim.kinds.base.figures" in str(no_module.value)


def fake_distribution(site: Path, package: str, kind: str) -> None:
    """Register `package:KIND` under attnsim's entry-point group without installing anything."""
    info = site / f"{package}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[attnsim.kinds]\n{kind} = {package}:KIND\n")


@pytest.mark.slow
def test_the_run_stops_before_any_job_with_one_line(tmp_path, monkeypatch):
    """The plugin example with a second figure declared but never written, as a plugin kind."""
    site = tmp_path / "site"
    source = PLUGIN / "src/attnsim_plugin_example"
    target = site / "broken_plugin"
    target.mkdir(parents=True)
    for name in ("figures.py", "claims.py"):
        (target / name).write_text(
            (source / name).read_text().replace("attnsim_plugin_example", "broken_plugin")
        )
    init = (source / "__init__.py").read_text()
    init = init.replace('name="shifted_logits"', 'name="broken_shift"').replace(
        'figures=("shift_deviation",)', 'figures=("shift_deviation", "shift_histogram")'
    )
    (target / "__init__.py").write_text(init)
    (target / "report").mkdir()
    (target / "report/shift_deviation.rst").write_text(
        (source / "report/shift_deviation.rst").read_text()
    )
    fake_distribution(site, "broken_plugin", "broken_shift")
    write_config(
        tmp_path / "w",
        {
            "seed": 1,
            "experiments": {
                "shift": {"kind": "broken_shift", "trials": 5, "grid": {"n": [8], "shift": [1.0]}}
            },
        },
    )
    before = tree(tmp_path / "w")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    )
    result = snakemake(tmp_path / "w", "--cores", "1", check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1, result.stderr
    assert lines[0].startswith(
        "attnsim: error: kind broken_shift, figure shift_histogram: declared in"
        " Kind.presentation.figures but broken_plugin.figures defines no shift_histogram()"
    )
    assert tree(tmp_path / "w") == before  # no job ran, nothing was written


def guide_block(name: str) -> str:
    match = re.search(rf"```python {re.escape(name)}\n(.*?)```", GUIDE, flags=re.S)
    assert match, f"docs/adding-a-kind.md has no block {name}"
    return match.group(1)


def test_the_guide_shows_the_plugins_own_tests_verbatim():
    assert (
        guide_block("tests/test_shifted_logits.py")
        == (PLUGIN / "tests/test_shifted_logits.py").read_text()
    )


def test_the_plugins_own_tests_pass_from_outside_the_tree(tmp_path):
    site = tmp_path / "site"
    fake_distribution(site, "attnsim_plugin_example", "shifted_logits")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(PLUGIN / "src")]))
    # the plugin's repository: none of attnsim's test settings
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-c",
        str(tmp_path / "pytest.ini"),
        "--rootdir",
        str(PLUGIN),
    ]
    cmd.append(str(PLUGIN / "tests/test_shifted_logits.py"))
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "4 passed" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]
