"""Draw the figures of experiments from their summary files: one process per run imports the
plotting stack once (`render_all`; the workflow's one figures job), forked workers draw."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from attnsim.errors import AttnsimError
from attnsim.kinds import get_kind
from attnsim.report import figure_data
from attnsim.store import parquet

if TYPE_CHECKING:
    import pandas as pd


def render(
    summary_path: Path,
    outdir: Path,
    figures: list[str] | None = None,
    claims: Path | None = None,
    boundaries: Sequence[Path] = (),
) -> list[Path]:
    """Write <outdir>/<figure>.png and .pdf for each named figure (default: the kind's figures
    that apply to the summary's grid, `Kind.figures_for`). A figure of the kind's verdicts
    (`Kind.presentation.claims_figures`) is drawn from `claims`, the kind's judged claims file
    (`report.judged`); without one it is an error to ask for it. `boundaries`: located
    boundaries' files (a run's `locate/<name>/located.json`), each drawn in the figure that shows
    its claim (`Kind.presentation.boundary_figures`, `shown_boundaries`)."""
    import matplotlib
    import pyarrow as pa

    matplotlib.use("Agg")  # the figures job draws to files only (a figure module never chooses)
    from attnsim.figures.mathtext import share_layouts
    from attnsim.figures.style import save

    share_layouts()  # this process draws many figures: each mathtext string is laid out once

    kind = get_kind(parquet.read_meta(summary_path)["kind"])
    known = kind.presentation.figures
    unknown = [f for f in figures or [] if f not in known]
    if unknown:
        raise AttnsimError(
            f"no figure {unknown[0]!r} for kind {kind.name}; known: {', '.join(known)}"
        )
    module = kind.submodule("figures")
    names = figures or kind.presentation.figures
    # the point ids only where a figure of single trials needs them: a million-point summary's
    # ids are most of what reading and checking it costs (time and memory)
    trials = any(getattr(getattr(module, f), "trial_columns", None) for f in names)
    # the whole summary, or a large experiment's sub-grid read in bounded memory
    frame = figure_data.read(summary_path, kind, ids=trials)
    pa.default_memory_pool().release_unused()  # the read's buffers, before drawing
    if not figures:  # all the kind's figures that have something to show in this grid
        names = kind.figures_for({p: frame[p].unique().tolist() for p in kind.param_names})
    shows_claims = [f for f in names if f in kind.presentation.claims_figures]
    judged = judged_claims(kind, claims, shows_claims)
    located = shown_boundaries(kind, parquet.read_meta(summary_path)["experiment"], boundaries)
    written = []
    for figure in names:
        draw = getattr(module, figure)
        # a figure of single trials declares the columns it reads
        columns = getattr(draw, "trial_columns", None)
        args = (frame,) if columns is None else (frame, trials_of(summary_path, frame, columns))
        extra: dict = {"claims": judged} if figure in kind.presentation.claims_figures else {}
        if located.get(figure):  # only then: a figure without boundaries is drawn as before
            extra["boundaries"] = located[figure]
        written += save(draw(*args, **extra), Path(outdir) / f"{figure}.png")
    return written


def judged_claims(kind, claims: Path | None, figures: list[str]) -> list | None:
    """The kind's judged claims (`ClaimResult`s) for its figures of verdicts, read from its claims
    file; None when no such figure is drawn. The file must be this kind's."""
    if not figures:
        return None
    if claims is None:
        raise AttnsimError(
            f"figure {figures[0]} of kind {kind.name} shows the kind's judged claims: give its "
            "claims file (--claims <workspace>/claims/<kind>.parquet)"
        )
    from attnsim.report import judged

    found, _ = judged.read(claims)
    if found.kind != kind.name:
        raise AttnsimError(f"{claims}: the claims of kind {found.kind}, not of {kind.name}")
    return list(found.claims)


def shown_boundaries(kind, experiment: str, paths: Sequence[Path]) -> dict[str, list[dict]]:
    """Figure -> the records of the located boundaries in `paths` it draws, in the order of their
    names (`Kind.presentation.boundary_figures`). A file that is not a located boundary, or one
    of a claim no figure of the kind draws or of another experiment, is one error."""
    if not paths:
        return {}
    from attnsim.report.boundaries import located_record

    shown: dict[str, list[dict]] = {}
    for path in paths:
        record = located_record(path)
        figure = kind.presentation.boundary_figures.get(record.get("claim"))
        if figure is None or record.get("experiment") != experiment:
            raise AttnsimError(
                f"{path}: boundary {record.get('name')} of claim {record.get('claim')} "
                f"(experiment {record.get('experiment')}) is drawn in no figure of the "
                f"experiment {experiment} (kind {kind.name})"
            )
        shown.setdefault(figure, []).append(record)
    return {f: sorted(records, key=lambda r: str(r["name"])) for f, records in shown.items()}


def render_all(summaries: list[Path], outdir: Path, threads: int = 1) -> list[Path]:
    """Every figure of every summary's experiment into <outdir>/<experiment>/, `threads` experiments
    at a time in workers forked after the imports (each worker then pays no import)."""
    import multiprocessing

    from attnsim.figures import style  # noqa: F401 (the plotting stack, imported once for all workers)

    jobs = []
    for path in summaries:
        meta = parquet.read_meta(path)
        get_kind(meta["kind"]).submodule("figures")  # imported before the fork too
        jobs.append((Path(path), Path(outdir) / meta["experiment"]))
    if threads <= 1 or len(jobs) <= 1:
        return [p for job in jobs for p in render(*job)]
    from threadpoolctl import threadpool_limits

    with (
        threadpool_limits(limits=1),
        multiprocessing.get_context("fork").Pool(min(threads, len(jobs))) as pool,
    ):
        return [p for written in pool.starmap(render, jobs, chunksize=1) for p in written]


def trials_of(summary_path: Path, summary, columns) -> pd.DataFrame | None:
    """The trials of the summary's points (its experiment's chunk files, only `columns` and the
    point ids), for a figure of single trials; rows of points no longer in the grid are left
    out."""
    import pyarrow as pa
    import pyarrow.compute as pc

    meta = parquet.read_meta(summary_path)
    # <root>/summary/kind=<kind>/experiment=<experiment>/summary.parquet
    root = Path(summary_path).parents[3]
    wanted = pa.array(summary["point_id"].astype(str).tolist())
    tables = []
    for path in parquet.experiment_chunks(root, meta["kind"], meta["experiment"]):
        table = parquet.read_table(path, columns=["point_id", *columns])
        tables.append(table.filter(pc.is_in(table["point_id"].cast(pa.string()), value_set=wanted)))
    return pa.concat_tables(tables).to_pandas() if tables else None
