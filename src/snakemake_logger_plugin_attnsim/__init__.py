"""Snakemake logger plugin `attnsim`: a run a person can follow (`--logger attnsim`).

The workflow's default profile (workflow/profiles/default/config.yaml) selects it, so `attnsim
run` and plain `snakemake` both print one line per finished job (points and trials done, wall
time, an ETA from the planner's cost model; `attnsim.cli.progress`), a line when an asset is
fetched, and for a failed job the rule, its wildcards and the last `attnsim: error:` line of its
log. Everything else Snakemake says at warning level or above passes unchanged, as do its few
useful info lines ("Nothing to be done", "Complete log: ..."). Snakemake's full log (rule
blocks, shell commands) is still written to .snakemake/log/; `--logger-attnsim-full` (or `attnsim
run -v`) prints it here instead, and so do dry runs (`-n`: the jobs that would run; `attnsim
run -n` adds `--quiet rules`, leaving the bill and the job counts) and `--verbose`.

Written to snakemake-interface-logger-plugins' interface (Snakemake >= 9); found by Snakemake
because its top-level module name starts with `snakemake_logger_plugin_`. It imports nothing of
attnsim until a run's first event: every Snakemake process (each local job's included) imports
the plugins it finds.
"""

import logging
import os
import sys
from dataclasses import dataclass, field

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.settings import LogHandlerSettingsBase

# Snakemake's info lines without an event that say nothing a reader needs (the rest pass).
QUIET_INFO = (
    "Building DAG of jobs",
    "Using shell:",
    "Provided cores:",
    "Provided resources:",
    "Rules claiming more threads",
    "Assuming unrestricted shared filesystem",
    "host:",
    "Select jobs to execute",
    "Selected jobs",
    "Execute ",
    "Finished jobid",
    "Waiting at most",
    "Job stats:",
    "Adding ",  # each file of a report
    "Elapsed time:",  # the run summary's `wall time` says it
    "Conda environments: ignored",  # the rules' env file is for --use-conda only
    "Updating checkpoint dependencies",  # after each round of a boundary (boundaries.smk)
    "DAG of jobs will be updated after completion",
)
# Events replaced by the progress lines (or not worth a line of their own).
QUIET_EVENTS = {
    LogEvent.JOB_INFO,
    LogEvent.SHELLCMD,
    LogEvent.JOB_STARTED,
    LogEvent.JOB_FINISHED,
    LogEvent.PROGRESS,
    LogEvent.RUN_INFO,
    LogEvent.RESOURCES_INFO,
    LogEvent.WORKFLOW_STARTED,
    LogEvent.DEBUG_DAG,
    LogEvent.RULEGRAPH,
}


@dataclass
class LogHandlerSettings(LogHandlerSettingsBase):
    full: bool = field(
        default=False,
        metadata={
            "help": "Print Snakemake's full log (rule blocks, shell commands) instead of"
            " attnsim's one line per finished job.",
            "env_var": False,
        },
    )


# A report of results copied without .snakemake/ (or made by plain scripts): Snakemake warns once
# per file that it has no metadata (157 lines for the default sweep); one line says it for all.
NO_METADATA = "Missing metadata for file "
NO_METADATA_LINE = (
    "attnsim: the results' files have no Snakemake metadata (copied without .snakemake/?): the "
    "report shows them without their jobs' details"
)


class LogHandler(LogHandlerBase):
    def __post_init__(self) -> None:
        common = self.common_settings
        self.stream = sys.stdout if getattr(common, "stdout", False) else sys.stderr
        self.full = bool(
            getattr(self.settings, "full", False)
            or common.verbose
            or common.dryrun
            or common.debug_dag
        )
        self.default = None
        self.progress = None
        self.no_metadata = 0  # report files without Snakemake's metadata seen
        if self.full:
            # Snakemake's own stream handler, filter and formatter: exactly its usual output.
            from snakemake.logging import ColorizingTextHandler, DefaultFilter, DefaultFormatter

            self.default = ColorizingTextHandler(
                nocolor=common.nocolor,
                stream=self.stream,
                formatter=DefaultFormatter(common.quiet, common.show_failed_logs),
                filter=DefaultFilter(
                    common.quiet,
                    common.debug_dag,
                    common.verbose,
                    common.dryrun,
                    common.printshellcmds,
                ),
            )
        quiet = {str(q).lower().rsplit(".", 1)[-1] for q in (common.quiet or ())}
        self.quiet_all = "all" in quiet  # -q all: errors only
        self.quiet_progress = self.quiet_all or "progress" in quiet  # -q: no job lines

    # ------------------------------------------------------------------ the interface
    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return True

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.default is not None:
                self.default.handle(record)
                return
            for line in self._lines(record):
                self.stream.write(line + "\n")
            self.stream.flush()
        except BrokenPipeError:
            raise
        except Exception:
            self.handleError(record)

    def close(self) -> None:
        if self.default is not None:
            self.default.close()
        super().close()

    # ------------------------------------------------------------------ quiet mode
    def _progress(self):
        if self.progress is None:
            from attnsim.cli.progress import Progress

            self.progress = Progress(pid=os.getpid())
        return self.progress

    def _lines(self, record: logging.LogRecord) -> list[str]:
        event = getattr(record, "event", None)
        if event == LogEvent.RUN_INFO and getattr(record, "stats", None):
            return self._progress().run_info(record.stats)
        if event == LogEvent.JOB_INFO:
            lines = self._progress().job_started(
                record.jobid,
                record.rule_name,
                getattr(record, "wildcards", {}),
                getattr(record, "output", ()),
                getattr(record, "log", ()),
                getattr(record, "shellcmd", "") or "",
            )
            return [] if self.quiet_progress else lines
        if event == LogEvent.JOB_FINISHED:
            lines = self._progress().job_finished(record.job_id)
            return [] if self.quiet_progress else lines
        if event == LogEvent.JOB_ERROR:  # always: the failed job's one-line error
            return self._progress().job_failed(
                record.jobid, record.rule_name, getattr(record, "log", ())
            )
        if event == LogEvent.GROUP_ERROR:
            return [self._plain(record)]
        if event == LogEvent.ERROR and "CalledProcessError" in self._plain(record):
            return []  # a shell command of a job failed: its JOB_ERROR line says what and why
        if event in QUIET_EVENTS or (self.quiet_all and record.levelno < logging.ERROR):
            return []
        message = self._plain(record)
        if not message or (record.levelno < logging.WARNING and message.startswith(QUIET_INFO)):
            return []
        if message.startswith(NO_METADATA):  # one line for them all, not one per file
            self.no_metadata += 1
            return [NO_METADATA_LINE] if self.no_metadata == 1 else []
        return [message]

    @staticmethod
    def _plain(record: logging.LogRecord) -> str:
        message = record.getMessage() if record.msg is not None else ""
        return message.strip("\n")
