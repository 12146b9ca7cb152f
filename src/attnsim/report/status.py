"""What is in the store for a config: `attnsim show` and the end-of-run summary."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from attnsim.kinds import get_kind
from attnsim.plan.sweep import plan_all
from attnsim.store import parquet


def show(settings, root: Path, config: Path) -> str:
    """Per experiment of `settings` (read from `config`): points done, trials, chunks to run."""
    plans = plan_all(settings, root)
    rows: list[dict[str, Any]] = []
    for name, plan in plans.items():
        e = settings.experiments[name]
        rows.append(
            {
                "experiment": name,
                "kind": e.kind,
                "points": plan.n_points,
                "done": plan.done_points,
                "trials/point": _trials_asked(e),
                "trials run": _trials_run(root, e.kind, name),
                "chunks to run": len(plan.pending),
            }
        )
    known = set(settings.experiments)
    extra = sorted(
        {p.parent.name.removeprefix("experiment=") for p in parquet.table_files(root)} - known
    )
    import pandas as pd

    text = pd.DataFrame(rows).to_string(index=False)
    total = sum(r["points"] for r in rows)
    done = sum(r["done"] for r in rows)
    pending = sum(r["chunks to run"] for r in rows)
    text += f"\n\n{done} of {total} points done ({percent_done(done, total)}), store: {root}"
    if pending:
        text += f"\n{pending} chunk{'s' if pending != 1 else ''} still to run: attnsim run"
    if extra:
        text += f"\nalso in the store, not in {config}: {', '.join(extra)}"
    return text


def percent_done(done: int, total: int) -> str:
    """Rounded down: 100% only when everything is done, 0% only when nothing is."""
    if total <= 0 or done >= total:
        return "100%"
    if done <= 0:
        return "0%"
    for digits in (0, 1, 2, 3):
        scale = 10**digits
        value = math.floor(100 * scale * done / total) / scale
        if 0 < value < 100 and (digits or value >= 1):
            return f"{value:.{digits}f}%"
    return "<0.001%" if done / total < 0.5 else ">99.999%"


def _trials_asked(e) -> str:
    """The config's trials per point: a number, rounds of trials to a number (a top-up `decide`
    recorded), or the adaptive range (rounds of trials, up to max)."""
    s = e.trial_settings
    return f"{s.trials}-{s.max_trials} adaptive" if s.adaptive else f"{s.per_point()[1]}"


def _trials_run(root: Path, kind: str, name: str) -> str:
    """Trials per point in the store's summary (its smallest and largest), or '-' before one."""
    path = parquet.summary_path(root, kind, name)
    if not path.exists():
        return "-"
    import pyarrow.compute as pc

    column = parquet.read_table(path, columns=["n_trials"]).column("n_trials")
    if len(column) == 0:
        return "-"
    low, high = pc.min(column).as_py(), pc.max(column).as_py()
    return f"{low}" if low == high else f"{low}-{high}"


SUMMARY_EXPERIMENTS = 8  # a sweep of more experiments gets one line for them (attnsim show)


def run_summary(
    settings,
    root: Path,
    elapsed: float | None = None,
    options: str = "",
    more: str = "",
    every: bool = False,
) -> str:
    """The end of a run: its experiments (one line each for a small sweep, one line in all for a
    large one), the claims' headline (`claims_render.render_headline`), where everything is and
    the next commands, with the `options` (`--configfile ...`, `--workspace ...`) that name this
    workspace as the user typed them; `every`: a line per experiment however many."""
    lines = ["", "attnsim run summary:"]
    if every or len(settings.experiments) <= SUMMARY_EXPERIMENTS:
        lines += _experiment_lines(settings, root)
    else:
        lines += _sweep_line(settings, root, options)
    folder = Path(root).parent
    claims_file = folder / "claims.parquet"
    if claims_file.exists():
        from attnsim.errors import StoreError
        from attnsim.report.claims import from_table_rows
        from attnsim.report.claims_check import checked
        from attnsim.report.claims_render import headline, render_headline

        try:  # the table is checked before its verdicts are shown (report.claims_check)
            table = from_table_rows(checked(claims_file, Path(root)))
            lines += ["", render_headline(headline(table), more=f"attnsim claims --all{options}")]
        except StoreError as error:
            lines += ["", f"claims not shown: {error}"]
    lines.append("")
    lines.append(f"claims:  {folder}/claims.html, {folder}/claims.md")
    lines.append(f"store:   {root}/  (attnsim query{options} 'SHOW TABLES')")
    lines.append(
        f"figures: {folder / 'figures'}/  report: {folder / 'report.html'} "
        f"(attnsim run{options} --report)"
    )
    if more:
        lines.append(more)
    if elapsed is not None:
        lines.append(f"wall time: {elapsed:.1f} s")
    return "\n".join(lines)


def _experiment_lines(settings, root: Path) -> list[str]:
    lines = []
    for name, e in settings.experiments.items():
        path = parquet.summary_path(root, e.kind, name)
        if not path.exists():
            lines.append(f"{name:<20} {e.kind:<20} (no summary yet)")
            continue
        s = parquet.read_summary(path).to_pandas()
        asked = e.trial_settings
        low, high = (
            (int(s["n_trials"].min()), int(s["n_trials"].max()))
            if len(s)
            else (asked.trials, asked.trials)
        )
        trials = f"{low}" if low == high else f"{low}-{high}"
        adaptive = (
            f" (rounds of {asked.trials} to SE <= {asked.target_se:g})" if asked.adaptive else ""
        )
        lines.append(f"{name:<20} {e.kind:<20} {len(s):>5} points x {trials} trials{adaptive}")
        classes = parquet.read_meta(path).get("cpu_classes", {})
        if len(classes) > 1:
            lines.append(f"{'':<20} {parquet.mixed_classes_note(name, classes)}")
        kind = get_kind(e.kind)
        headline = kind.presentation.headline(s) if kind.presentation.headline else ""
        if headline:
            lines.append(f"{'':<20} {headline}")
    return lines


def _sweep_line(settings, root: Path, options: str) -> list[str]:
    """One line for a sweep of many experiments: their points and trials as the store holds."""
    points = trials = 0
    missing = []
    mixed = []
    for name, e in settings.experiments.items():
        path = parquet.summary_path(root, e.kind, name)
        if not path.exists():
            missing.append(name)
            continue
        column = parquet.read_table(path, columns=["n_trials"]).column("n_trials")
        points += len(column)
        trials += sum(column.to_pylist())
        if len(parquet.read_meta(path).get("cpu_classes", {})) > 1:
            mixed.append(name)
    count = len(settings.experiments)
    text = f"{count} experiments: {points:,} points, {trials:,} trials"
    text += f" (each one's: attnsim show{options})"
    lines = [text]
    if missing:
        lines.append(f"no summary yet: {', '.join(missing)}")
    if mixed:
        lines.append(
            f"rows from several CPU classes: {', '.join(mixed)} (attnsim summary{options})"
        )
    return lines


def report_context(settings, root: Path) -> dict[str, Any]:
    """What the report's home page says about this workspace (workflow/report/workflow.rst): each
    experiment's kind, its points and trials per point as the store's summaries hold them (the
    config's where none is made yet: a range for adaptive or topped-up experiments), the store's
    folder and the seed. Computed here because the page's template sees only the raw config,
    whose generators and top-ups it cannot count."""
    from attnsim.records.grid import grid_columns

    experiments = []
    for name, e in settings.experiments.items():
        path = parquet.summary_path(root, e.kind, name)
        stored = _trials_run(root, e.kind, name) if path.exists() else "-"
        experiments.append(
            {
                "name": name,
                "kind": e.kind,
                "points": grid_columns(e).size,
                "trials": stored if stored != "-" else _trials_asked(e),
            }
        )
    return {
        "experiments": experiments,
        "store": f"{root}/",
        "seed": settings.seed,
        "chunk_size": settings.chunk_size,
        "job_minutes": settings.job_minutes,
    }
