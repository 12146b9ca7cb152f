# Configuration, planning and input functions. All logic lives in the attnsim package.

import functools
import json
import shlex
import sys
import time
from pathlib import Path

from attnsim import files, seeding
from attnsim.config import state as workspace_state
from attnsim.config import workspace
from attnsim.records.grid import grid_columns
from attnsim.errors import AttnsimError
from attnsim.report import figure_check
from attnsim.kinds import all_kinds, get_kind
from attnsim.plan import bill
from attnsim.records.chunk import read_spec_file
from attnsim.records import cost as resources
from attnsim.plan import sweep as planning
from attnsim.cli import progress
from attnsim.report.status import report_context, run_summary
from attnsim.store import lock as store_lock
from attnsim.store import parquet as store

RUN_STARTED = time.monotonic()
# The software of every rule, for `--use-conda` (by default the rules run the attnsim on PATH).
CONDA_ENV = "../envs/attnsim.yaml"


def _fail(error):
    """Stop before any job runs, with the one-line message (no traceback: it is the user's input)."""
    print(f"attnsim: error: {error}", file=sys.stderr)
    sys.exit(1)


# The submitting process plans the sweep; a job (`--mode remote` on a cluster node, or the
# `--mode subprocess` step it starts) reads only its own chunk's spec file, written by the
# submitting process at its start: a job's start-up does not grow with the sweep.
PLANNING = workflow.is_main_process

try:
    # this sweep's folder (docs/usage.md): results/ for config.yaml, results/<stem>/ for another
    # config file, or `--config workspace=DIR`; everything the run writes goes under it. Its
    # effective config: the files <- the overrides and top-ups recorded in <workspace>/state.yaml
    # <- the command line's (attnsim.config.state, as every attnsim command reads it); keys given
    # twice in the config files, numbers written as text, the schema (the package's one schema
    # file, with each kind's grid), semantic checks: the one check of the config
    WORKSPACE = workspace_state.workflow_settings(
        config,
        workflow.configfiles,
        workflow.config_settings.overwrite_config,
        PLANNING,
    )
    RESULTS, SETTINGS = WORKSPACE.folder, WORKSPACE.settings
    STORE = RESULTS / "store"
    # a run while another process's `attnsim decide` works here: one line (dry runs read its
    # last complete look)
    if PLANNING and not workflow.output_settings.dryrun:
        workspace_state.refuse_concurrent(WORKSPACE.state, WORKSPACE.token, RESULTS)
    store.check_folders(STORE)
    # a read-only workspace: one line, not Snakemake's ProtectedOutputException
    if PLANNING:
        files.check_writable(RESULTS, workspace.OWN_FOLDERS)
    store.check_clock(STORE)
    # what the plan is read from: a run locks the store only once it starts (`lock_store`)
    PLANNED_FROM = store_lock.state(STORE) if PLANNING else None
    PLANS = planning.plan_all(SETTINGS, STORE) if PLANNING else {}
    if PLANNING:  # every declared figure has its function and caption, before any job
        figure_check.check_experiments(SETTINGS)
    # the bill: printed by dry runs (`attnsim plan`); past max_jobs nothing runs
    if PLANNING:
        _cores = workflow.resource_settings.cores if workflow.local_exec else None
        BILL = bill.bill(
            SETTINGS,
            PLANS,
            STORE,
            resources.spare_threads(planning.pending_chunks(PLANS), _cores),
        )
        if workflow.output_settings.dryrun:
            print(bill.render(BILL, SETTINGS, workflow.resource_settings.nodes))
        bill.check_limit(BILL, SETTINGS)
    # the config's asset copies exist and hold the right files (hashed at the start)
    if PLANNING:
        from attnsim.models.assets import check_local_copy

        for _name, _copy in SETTINGS.assets.items():
            check_local_copy(_name, _copy, hash=False)
    # summaries made from chunks that are gone or changed: rebuilt (their chunks recomputed)
    STALE = store.stale_summaries(STORE, SETTINGS.kinds()) if PLANNING else {}
except AttnsimError as error:
    _fail(error)

# what the report's home page says about this workspace (its template sees only `config`); read
# from the store only when a report is made (`--report`), ~0.7 CPU-s for the default sweep
if PLANNING and any(a == "--report" or a.startswith("--report=") for a in sys.argv):
    config["attnsim_report"] = report_context(SETTINGS, STORE)

# the logger plugin's progress lines read the run's manifest from there
progress.set_workspace(RESULTS)

for _path, _why in STALE.items():
    print(f"attnsim: {_path}: out of date ({_why})", file=sys.stderr)


wildcard_constraints:
    kind="[a-z][a-z0-9_]*",  # the config schema's kind names (a plugin's may hold digits)
    experiment="[a-z][a-z0-9_]*",
    chunk="[0-9a-f]{16}",
    why="[0-9a-f]{16}",
    boundary="[a-z][a-z0-9_]*",
    round="[0-9]+",


def chunk_spec_path(wildcards):
    return planning.spec_path(RESULTS, wildcards.experiment, wildcards.chunk)


@functools.cache
def read_chunk_spec(experiment, chunk):
    try:
        return read_spec_file(planning.spec_path(RESULTS, experiment, chunk))
    except AttnsimError as error:
        raise ValueError(str(error)) from None


def planned_cost(wildcards):
    """The chunk's cost: from the plan (submitting process) or its spec file (a job)."""
    if not PLANNING:
        return read_chunk_spec(wildcards.experiment, wildcards.chunk).spec.cost
    try:
        return PLANS[wildcards.experiment].cost(wildcards.chunk)
    except KeyError:
        raise ValueError(
            f"chunk {wildcards.chunk} of {wildcards.experiment} is not in the current plan"
        ) from None


def chunk_threads(wildcards):
    """1 when there are at least as many chunks to run as cores; else the spare cores shared out
    (a one-chunk sweep uses them all). Jobs on a cluster: 1 unless the profile sets threads.
    """
    if not PLANNING:
        return read_chunk_spec(wildcards.experiment, wildcards.chunk).threads
    return resources.spare_threads(planning.pending_chunks(PLANS), _local_cores())


def _local_cores():
    return workflow.resource_settings.cores if workflow.local_exec else None


def chunk_assets(wildcards):
    """The verified assets the chunk's kind reads (`Kind.assets.names`): fetched once, before its
    jobs."""
    names = get_kind(wildcards.kind).assets.names
    return [f"resources/{name}.verified" for name in names]


def asset_local_copy(wildcards):
    """`--local-copy PATH` when the config names a copy of this asset (`assets:`), else nothing."""
    local = SETTINGS.assets.get(wildcards.asset)
    return f"--local-copy {shlex.quote(str(local))}" if local else ""


def chunk_mem_mb(wildcards, threads):
    return resources.chunk_mem_mb(planned_cost(wildcards), threads)


def chunk_runtime(wildcards, threads):
    return resources.chunk_runtime_min(planned_cost(wildcards), threads)


def chunk_priority(wildcards):
    return resources.chunk_priority(planned_cost(wildcards))


PRIORITY = resources.PRIORITY


def experiment_chunks(wildcards):
    plan = PLANS[wildcards.experiment]  # only the submitting process runs collect
    return [store.chunk_path(STORE, plan.kind, plan.name, c) for c in plan.chunks]


def experiment_folder(wildcards):
    """The chunks' folder: its mtime changes when a chunk file is deleted, so Snakemake rebuilds
    the summary (and recomputes the missing chunk) instead of trusting it. A real run creates it
    (empty) so that the set of collect's inputs is the same in every run; a dry run writes nothing.
    Anything else in the folder's place is left alone: the chunks' jobs fail on it and say so.
    """
    plan = PLANS[wildcards.experiment]
    if not workflow.output_settings.dryrun:
        make_chunk_folders()
    folder = store.experiment_dir(STORE, "trials", plan.kind, plan.name)
    return [folder] if folder.is_dir() else []


@functools.cache
def make_chunk_folders():
    """Every experiment's chunks' folder, made at once on the first call: Snakemake lists a
    folder's parent once and keeps what it found, so a folder made after its sibling's existence
    was checked counted as missing (two experiments' summaries as one run's targets:
    MissingInputException in collect)."""
    for plan in PLANS.values():
        folder = store.experiment_dir(STORE, "trials", plan.kind, plan.name)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:  # a file where a parent folder must go: simulate names it
            pass


def summary_rebuild(wildcards):
    """collect's marker input: a new one when the summary is behind its plan (`behind_marker`),
    else the one the last rebuild made (if any: the same inputs as recorded, so Snakemake's own
    triggers see no change)."""
    return experiment_markers(wildcards.experiment)


def experiment_markers(name):
    marker = behind_marker(name)
    if marker is not None:
        return [marker]
    return sorted(REBUILD.glob(f"{name}-*")) if REBUILD.is_dir() else []


@functools.cache
def behind_marker(name):
    """A marker named after why the summary of experiment `name` is behind the plan
    (`store.summary_behind`), or None. A target of the run and an input of collect: missing,
    it makes collect (and the chunks collect waits for) run, since neither timestamps nor
    Snakemake's metadata can be trusted to say so (without metadata Snakemake ignores a
    missing input of a job whose output exists)."""
    plan = PLANS[name]
    settings = planning.experiment_json(SETTINGS, name)
    why = store.summary_behind(STORE, plan.kind, name, plan.chunks, settings)
    if why is None:
        return None
    print(f"attnsim: {name}: summary out of date ({why})", file=sys.stderr)
    return REBUILD / f"{name}-{seeding.digest([name, why, plan.chunks, settings])}"


REBUILD = RESULTS / "rebuild"


def sweep_rebuild_markers():
    """Each experiment's markers but the newest (its collect's input): they pile up otherwise."""
    for name in SETTINGS.experiments:
        keep = experiment_markers(name)
        for marker in REBUILD.glob(f"{name}-*") if REBUILD.is_dir() else []:
            if marker not in keep:
                marker.unlink(missing_ok=True)


def collect_threads(wildcards):
    """2 for an experiment of 10^7 trial rows or more (a second thread reads and checks the next
    row group while one is summarised: the million preset's collect); else 1, so that the small
    experiments' collects run side by side."""
    plan = PLANS[wildcards.experiment]
    return 2 if plan.n_points * (plan.trials or 1) >= 10**7 else 1


def experiment_json(wildcards):
    return planning.experiment_json(SETTINGS, wildcards.experiment)


def experiment_spec(wildcards):
    return planning.experiment_spec_path(RESULTS, wildcards.experiment)


def summary_file(wildcards):
    return store.summary_path(
        STORE, SETTINGS.experiments[wildcards.experiment].kind, wildcards.experiment
    )


def all_summaries():
    return [
        store.summary_path(STORE, e.kind, name)
        for name, e in SETTINGS.experiments.items()
    ]


def summary_of(name):
    return store.summary_path(STORE, SETTINGS.experiments[name].kind, name)


@functools.cache
def experiment_figures(name):
    """The figures of the experiment's kind that its grid has something to show in."""
    experiment = SETTINGS.experiments[name]
    return get_kind(experiment.kind).figures_for(grid_columns(experiment).values)


def figure_options(name):
    return " ".join(f"--figure {figure}" for figure in experiment_figures(name))


def figure_caption(name, figure):
    return str(get_kind(SETTINGS.experiments[name].kind).caption(figure))


def kind_experiments(kind):
    """The config's experiments of a kind, by name."""
    return sorted(n for n, e in SETTINGS.experiments.items() if e.kind == kind)


def sweep_kinds():
    """The kinds the config's experiments are of: one judge job (one claims file) each."""
    return sorted({e.kind for e in SETTINGS.experiments.values()})


def judged_claims(kind):
    """A kind's judged claims, the judge job's output: the claims table and the kind's figures of
    verdicts read it (attnsim.report.judged)."""
    return RESULTS / "claims" / f"{kind}.parquet"


def kind_summaries(wildcards):
    return [summary_of(name) for name in kind_experiments(wildcards.kind)]


def kind_trial_chunks(wildcards):
    """The trial files a kind's claims read besides its summaries: its experiments' chunks when
    its claims fit every run (`Kind.schema.run_columns`, declared in the kind's record: the claims
    code is not imported to list them)."""
    if not get_kind(wildcards.kind).schema.run_columns:
        return []
    return [
        store.chunk_path(STORE, PLANS[name].kind, name, chunk)
        for name in kind_experiments(wildcards.kind)
        for chunk in PLANS[name].chunks
    ]


def kind_experiments_json(wildcards):
    """The kind's experiments as the judge reads them (not on the command line: a rename or a
    new experiment of the kind reruns its judge)."""
    return json.dumps({n: wildcards.kind for n in kind_experiments(wildcards.kind)})


@functools.cache
def state_designs():
    """Each claim's sequential design in the workspace's state record, as one canonical
    text: a changed design reruns the judges (each keys only its own claims' designs).
    """
    from attnsim.records import state

    try:
        designs = state.to_data(state.read(RESULTS)).get("designs", {})
        return json.dumps(designs, sort_keys=True)
    except AttnsimError as error:
        _fail(error)


def claims_threads(wildcards):
    """The claims job, the run's last, scales the figures for claims.html on the local cores:
    Pillow works without the GIL (0.9 s less for the default sweep's 25 figures)."""
    return max(1, _local_cores() or 1)


def figure_claims(name):
    """The kind's claims file when experiment `name` draws one of its kind's figures of
    verdicts (`Kind.presentation.claims_figures`): drawn after the kind is judged."""
    kind = SETTINGS.experiments[name].kind
    verdicts = get_kind(kind).presentation.claims_figures
    shows = set(verdicts) & set(experiment_figures(name))
    return [judged_claims(kind)] if shows else []


def figure_claims_option(name):
    paths = figure_claims(name)
    return " ".join(f"--claims {shlex.quote(str(path))}" for path in paths)


@functools.cache
def drawn_boundaries():
    """Experiment -> the config's boundaries its figures draw (plan.sweep.drawn_boundaries)."""
    return planning.drawn_boundaries(SETTINGS)


def figure_boundaries(name):
    """The located files of the boundaries the figures of experiment `name` draw beside their
    claim: its figures job waits for them; every other starts after its summary."""
    names = drawn_boundaries().get(name, [])
    return [RESULTS / f"locate/{b}/located.json" for b in names]


def figure_boundaries_option(name):
    paths = figure_boundaries(name)
    return " ".join(f"--boundary {shlex.quote(str(path))}" for path in paths)


def all_figure_pngs():
    """Every experiment's figures (PNG): claims.html links to them and embeds a copy for the report."""
    return [
        RESULTS / "figures" / name / f"{figure}.png"
        for name in SETTINGS.experiments
        for figure in experiment_figures(name)
    ]


def experiments_json():
    return planning.experiments_json(SETTINGS)


def boundary_entry(wildcards):
    """A boundary's entry and the sweep's experiments, as one text (`boundaries_json`)."""
    return planning.boundaries_json(SETTINGS) + wildcards.boundary


def previous_round(wildcards):
    """A boundary's last round's file (none before round 0)."""
    r = int(wildcards.round)
    return (
        [RESULTS / f"locate/{wildcards.boundary}/round-{r - 1}.json"] if r > 0 else []
    )


def last_round(wildcards):
    """A boundary's last round: its rounds' files are read as the checkpoints finish, one
    round after another, until one says `done` (JSON only: no claims code in the DAG). One
    boundary's rounds wait for nothing of another's: they run side by side."""
    r = 0
    while True:
        job = checkpoints.locate_round.get(boundary=wildcards.boundary, round=r)
        path = job.output[0]
        if json.loads(Path(path).read_text()).get("status") == "done":
            return path
        r += 1


def located_files():
    """Each boundary's located file (its last round's copy)."""
    names = sorted(SETTINGS.boundaries)
    return [RESULTS / f"locate/{name}/located.json" for name in names]


def own_figure_boundaries():
    """The boundaries whose claim no figure of the run shows (`drawn_boundaries`): each
    gets its own figure from record_boundaries; the others, their claim's figure."""
    shown = {name for names in drawn_boundaries().values() for name in names}
    return sorted(set(SETTINGS.boundaries) - shown)


def boundary_figures():
    """The own figures of the boundaries no claim's figure shows, PNG and PDF."""
    names = own_figure_boundaries()
    return [RESULTS / "boundaries" / f"{n}.{e}" for n in names for e in ("png", "pdf")]


def boundary_draw_option():
    return " ".join(f"--draw {name}" for name in own_figure_boundaries())


def boundaries_file():
    """The located boundaries' file, when the config has any (the claims job reads it)."""
    return [RESULTS / "boundaries.json"] if SETTINGS.boundaries else []


def all_targets(wildcards=None):
    targets = all_summaries() + [judged_claims(kind) for kind in sweep_kinds()]
    targets += boundaries_file()
    targets += [
        RESULTS / "claims.parquet",
        RESULTS / "claims.md",
        RESULTS / "claims.html",
    ]
    targets += [m for m in map(behind_marker, SETTINGS.experiments) if m is not None]
    for name in SETTINGS.experiments:
        targets += [
            RESULTS / "figures" / name / f"{figure}.{ext}"
            for figure in experiment_figures(name)
            for ext in ("png", "pdf")
        ]
    return targets


def lock_store():
    """One run per store, from any working directory (results/ or the store may be a shared
    folder), and only if the store is as this run planned from it."""
    try:
        store_lock.acquire(STORE, planned_from=PLANNED_FROM)
    except AttnsimError as error:
        _fail(error)


def verify_assets():
    """Every asset this run's kinds read, hashed in full before any job (resources/ and the
    config's `assets:` copies); a wrong file stops the run in one line, nothing removed.
    """
    from attnsim.models import assets

    kinds = [get_kind(e.kind) for e in SETTINGS.experiments.values()]
    needed = [name for kind in kinds for name in kind.assets.names]
    try:
        assets.check_run_assets(needed, SETTINGS.assets, Path("resources"))
    except AttnsimError as error:
        _fail(error)


def rerun_chunks():
    """(experiment, chunk) of every chunk this run's Snakemake will compute: the plan's pending
    ones and finished ones it computes again (`--rerun-incomplete`: a job a killed run started).
    Known once the run starts."""
    return {
        (job.wildcards.experiment, job.wildcards.chunk)
        for job in workflow.dag.needrun_jobs()
        if job.rule.name == "simulate"
    }


def record_overrides():
    """`attnsim run --set`'s overrides, kept in the workspace's state record once the sweep
    has planned (a refused sweep records nothing)."""
    if PLANNING and WORKSPACE.record and WORKSPACE.command:
        try:
            workspace_state.record_overrides(RESULTS, WORKSPACE.command)
        except AttnsimError as error:
            _fail(error)


def sweep_dead_writers():
    # killed jobs' temp files anywhere in the workspace: chunks, summaries, figures, claims
    files.sweep_dead_temps(RESULTS)
    # chunks an interrupted run's top-ups replaced, once proved superseded by top-ups that this
    # run will not compute again (Snakemake deletes a job's output before it runs it)
    again = [
        store.chunk_path(STORE, PLANS[e].kind, e, c)
        for e, c in rerun_chunks()
        if e in PLANS
    ]
    planning.remove_replaced(PLANS, STORE, rerun=again)


def write_chunk_specs():
    """The spec file of each chunk this run computes, for its job, naming this run's token
    (real runs only: `onstart` never runs in a dry run, nor in a job's Snakemake)."""
    threads = resources.spare_threads(planning.pending_chunks(PLANS), _local_cores())
    planning.write_specs(
        PLANS, RESULTS, threads, run=store_lock.token(STORE), rerun=rerun_chunks()
    )
    if PLANNING:  # the submitting process only (a job's Snakemake runs onstart too)
        planning.write_experiment_specs(SETTINGS, RESULTS)
    # what this run computes, for its progress lines (attnsim.cli.progress)
    progress.write_manifest(PLANS, RESULTS, _local_cores(), workflow.configfiles)


def remove_replaced_chunks():
    """Stored chunks whose points this run topped up with more trials: their rows live on in the
    top-ups' files (query views never see a point twice)."""
    planning.remove_replaced(PLANS, STORE)


JOB_SERVER = []  # the run's job server (attnsim.cli.server), if one was started


SERVER_MIN_JOBS = 3  # fewer jobs to serve save less than the server's own imports cost


def start_job_server():
    """A job server for the local summary, judge, figures, claims and boundary-round jobs
    (attnsim.cli.server): they then run with the imports done, the server having imported the
    code of the kinds whose jobs are to run. None where jobs run in another environment
    (--use-conda, containers) or too few of those jobs are to run; ATTNSIM_JOB_SERVER=off:
    never."""
    if workflow.deployment_settings.deployment_method:
        return
    kinds, served = set(), 0
    for job in workflow.dag.needrun_jobs():
        step = job.rule.name
        if step == "judge":
            kinds.add(job.wildcards.kind)
        elif step == "collect" or step.startswith("figures_"):
            kinds.add(SETTINGS.experiments[job.wildcards.experiment].kind)
        elif step not in ("claims", "locate_round", "record_boundaries"):
            continue
        served += 1
    if served >= SERVER_MIN_JOBS:
        from attnsim.cli import server

        JOB_SERVER.append(server.start(RESULTS, sorted(kinds)))


def stop_job_server():
    from attnsim.cli import server

    while JOB_SERVER:
        server.stop(JOB_SERVER.pop())


def print_run_summary():
    options = workspace.options(workflow.configfiles, RESULTS)
    print(run_summary(SETTINGS, STORE, time.monotonic() - RUN_STARTED, options))


def check_cluster_fit():
    """With the SLURM executor, stop before submitting if a job asks for more than any node has
    (it would wait in the queue for ever). The executor is known only once the run starts.
    """
    # imported here: the hook stays one self-contained block
    from attnsim.plan import cluster

    plugin = workflow.executor_plugin
    if plugin is not None and plugin.name == "slurm":
        try:
            cluster.check_jobs(workflow.dag.needrun_jobs())
        except AttnsimError as error:
            _fail(error)
