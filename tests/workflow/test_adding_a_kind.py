"""docs/adding-a-kind.md as a reader follows it: its files, copied into a fresh copy of the
repository, add one folder and nothing else, and the new kind runs end to end through the
workflow."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
import yaml
from helpers.configs import REPO

pytestmark = pytest.mark.slow

GUIDE = (REPO / "docs/adding-a-kind.md").read_text()


def guide_files() -> dict[str, str]:
    """Code blocks whose info string names a file: ```python uniform_logits/kernel.py ... ```."""
    return {
        path: code
        for path, code in re.findall(
            r"```(?:python|rst) (uniform_logits/\S+)\n(.*?)```", GUIDE, flags=re.S
        )
    }


def test_the_guide_adds_one_folder_and_the_kind_runs(tmp_path):
    files = guide_files()
    assert set(files) >= {
        "uniform_logits/__init__.py",
        "uniform_logits/kernel.py",
        "uniform_logits/figures.py",
        "uniform_logits/claims.py",
    }
    clone = tmp_path / "clone"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for name in filter(None, tracked):
        if (REPO / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, clone / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=clone, check=True)
    subprocess.run([*git, "add", "-A"], cwd=clone, check=True)
    subprocess.run([*git, "commit", "-qm", "before"], cwd=clone, check=True)
    for path, code in files.items():
        target = clone / "src/attnsim/kinds" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    changed = [line[3:] for line in status.splitlines()]
    assert changed and all(p.startswith("src/attnsim/kinds/uniform_logits/") for p in changed), (
        changed
    )
    # the guide's checks, in the clone: regenerate the docs that list every kind, run the tests
    # that look at every kind (a fast subset: the whole suite would take CI's budget several times)
    env = dict(
        os.environ,
        PYTHONPATH=str(clone / "src"),
        PATH=f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}",
    )
    commands = re.search(r"```\n(attnsim schema --update-docs.*?)```", GUIDE, flags=re.S).group(1)
    for line in commands.splitlines():
        argv = shlex.split(line.split("#")[0])
        argv = (
            [sys.executable, "-m", "attnsim.cli.main", *argv[1:]]
            if argv[0] == "attnsim"
            else [sys.executable, "-m", *argv]
        )
        check = subprocess.run(
            argv, cwd=clone, env=env, capture_output=True, text=True, timeout=900
        )
        assert check.returncode == 0, line + "\n" + check.stdout[-3000:] + check.stderr[-3000:]
    generated = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert {line[3:] for line in generated.splitlines()} - set(changed) <= {
        "README.md",
        "docs/usage.md",
        "docs/results-schema.md",
    }

    config = yaml.safe_load(re.search(r"```yaml\n(.*?)```", GUIDE, flags=re.S).group(1))
    config["seed"] = 5
    work = tmp_path / "work"
    work.mkdir()
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(clone / "workflow/Snakefile"),
            "-d",
            str(work),
            "--cores",
            "2",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = pq.read_table(
        work / "results/store/summary/kind=uniform_logits/experiment=uniform/summary.parquet"
    ).to_pandas()
    assert len(summary) == 8 and (summary["entropy_mean"] <= summary["log_n"]).all()
    assert (work / "results/figures/uniform/uniform_entropy.png").stat().st_size > 1000
    claims = pq.read_table(work / "results/claims.parquet").to_pandas().set_index("claim_id")
    assert claims.loc["uniform_small_spread", "verdict"] == "holds", claims.loc[
        "uniform_small_spread", "evidence"
    ]
