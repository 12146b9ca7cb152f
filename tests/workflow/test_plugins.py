"""Users' own kinds as plugins: a real distribution with an `attnsim.kinds` entry point,
pip-installed into a temporary venv, runs end to end through Snakemake like a built-in kind; broken
plugins are one line.

The venv sees this environment's packages through a .pth file (attnsim and its dependencies, nothing
downloaded), gets the `attnsim` command its jobs call, and the plugin installed by pip with
--no-deps."""

from __future__ import annotations

import shutil
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from helpers.configs import REPO
from helpers.workflow import workflow_args

pytestmark = pytest.mark.slow

PLUGIN = REPO / "tests/plugin_example"


def make_venv(path: Path) -> Path:
    """A venv that sees this environment's site-packages (processed as a site dir, so editable
    installs work) and has its own `attnsim` command (jobs call it: it must run this venv's Python
    to see its plugins)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    own = next(path.glob("lib/python*/site-packages"))
    (own / "_attnsim_test_parent.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in site.getsitepackages())
    )
    script = path / "bin/attnsim"
    script.write_text(
        f"#!{path / 'bin/python'}\nimport sys\n\n"
        "from attnsim.cli.main import main\n\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    return path


def pip_install(venv: Path, *packages: Path) -> None:
    """pip (the parent's, run by the venv's Python) installs into the venv: no dependencies, no
    index, no download."""
    args = [
        str(venv / "bin/python"),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
    ]
    result = subprocess.run([*args, *map(str, packages)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plugin-venv")
    venv = make_venv(root / "venv")
    # builds in a copy: nothing is written into the repository
    pip_install(venv, shutil.copytree(PLUGIN, root / "plugin"))
    return venv


def in_venv(venv: Path, *args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(cwd)}
    result = subprocess.run(
        [str(venv / "bin/python"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if check:
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def test_an_installed_plugin_kind_runs_end_to_end(venv, tmp_path):
    config = {
        "seed": 3,
        "experiments": {
            "shift": {
                "kind": "shifted_logits",
                "trials": 50,
                "grid": {"n": [16, 256], "shift": [-30.0, 0.0, 2.5, 400.0]},
            },
            "entropy": {
                "kind": "logit_entropy",
                "trials": 20,
                "grid": {"n": [16], "d": [4], "logits": ["gaussian"], "scale": [0.1, 1.0]},
            },
        },
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    in_venv(
        venv,
        "-m",
        "snakemake",
        *workflow_args(tmp_path),
        "--cores",
        "2",
        cwd=tmp_path,
    )
    results = tmp_path / "results"
    rows = pq.read_table(results / "store/trials/kind=shifted_logits/experiment=shift").to_pandas()
    assert len(rows) == 8 * 50 and (rows["shift_deviation"] < 1e-9).all()
    summary = pq.read_table(
        results / "store/summary/kind=shifted_logits/experiment=shift/summary.parquet"
    ).to_pandas()
    assert len(summary) == 8 and {
        "shift_deviation_mean",
        "shift_deviation_ci_high",
        "rounding_bound",
    } <= set(summary.columns)
    assert (results / "figures/shift/shift_deviation.png").stat().st_size > 1000
    claims = pq.read_table(results / "claims.parquet").to_pandas().set_index("claim_id")
    assert claims.loc["shift_invariance", "verdict"] == "holds"
    assert claims.loc["shift_invariance", "figure"] == "shift/shift_deviation"
    sql = "SELECT count(*) AS n FROM shift_trials"
    query = in_venv(venv, "-m", "attnsim.cli.main", "query", sql, cwd=tmp_path)
    assert "400" in query.stdout


BROKEN = {
    "import_error": (
        "attnsim_broken_import",
        "raise ImportError('No module named numpy_that_does_not_exist')",
    ),
    "not_a_kind": ("attnsim_not_a_kind", "KIND = 42"),
    "noisy_attention": (
        "attnsim_clash",
        "from attnsim.kinds import get_kind\n\nKIND = get_kind('noisy_attention')",
    ),
}


def broken_plugin(root: Path, entry: str, module: str, body: str) -> Path:
    package = root / module
    (package / module).mkdir(parents=True)
    (package / module / "__init__.py").write_text(body + "\n")
    (package / "pyproject.toml").write_text(
        textwrap.dedent(f"""\
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "{module.replace("_", "-")}"
        version = "0.1.0"
        [project.entry-points."attnsim.kinds"]
        {entry} = "{module}"
        [tool.setuptools]
        packages = ["{module}"]
        """)
    )
    return package


def test_broken_plugins_are_one_line_each_and_builtin_kinds_still_run(venv, tmp_path):
    broken_venv = make_venv(tmp_path / "venv")
    pip_install(
        broken_venv,
        *(
            broken_plugin(tmp_path / "src", entry, module, body)
            for entry, (module, body) in BROKEN.items()
        ),
    )
    config = {
        "seed": 1,
        "experiments": {
            "fine": {
                "kind": "logit_entropy",
                "trials": 5,
                "grid": {"n": [16], "d": [4], "logits": ["gaussian"], "scale": [1.0]},
            }
        },
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    check_config = ("-m", "attnsim.cli.main", "check-config", "config.yaml")
    ok = in_venv(broken_venv, *check_config, cwd=tmp_path)
    warnings = [
        line for line in ok.stderr.splitlines() if line.startswith("attnsim: warning: plugin")
    ]
    assert len(warnings) == 3, ok.stderr
    assert any(
        "'import_error'" in w and "ImportError" in w and "numpy_that_does_not_exist" in w
        for w in warnings
    )
    assert any("'not_a_kind'" in w and "not an attnsim.kinds.base.Kind" in w for w in warnings)
    assert any("'noisy_attention'" in w and "clashes with a built-in kind" in w for w in warnings)
    config["experiments"]["bad"] = {"kind": "import_error", "trials": 5, "grid": {}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    bad = in_venv(broken_venv, *check_config, cwd=tmp_path, check=False)
    errors = [line for line in bad.stderr.splitlines() if line.startswith("attnsim: error:")]
    assert (
        bad.returncode != 0
        and len(errors) == 1
        and "experiments.bad.kind: plugin 'import_error'" in errors[0]
    ), bad.stderr
