"""What is in the store for a config: `attnsim show` and the end-of-run summary."""

from __future__ import annotations

from pathlib import Path

from attnsim.config.load import load_file
from attnsim.kinds import get_kind
from attnsim.plan.sweep import plan_all
from attnsim.store import parquet as store


def show(config: Path, root: Path) -> str:
    settings = load_file(config)
    plans = plan_all(settings, root)
    rows = []
    for name, plan in plans.items():
        e = settings.experiments[name]
        rows.append(
            {
                "experiment": name,
                "kind": e.kind,
                "points": plan.n_points,
                "done": plan.done_points,
                "trials/point": e.trials,
                "chunks to run": len(plan.pending),
            }
        )
    known = set(settings.experiments)
    extra = sorted({p.parent.name.removeprefix("experiment=") for p in store.chunk_files(root)} - known)
    import pandas as pd

    text = pd.DataFrame(rows).to_string(index=False)
    total = sum(r["points"] for r in rows)
    done = sum(r["done"] for r in rows)
    text += f"\n\n{done} of {total} points done ({100 * done / max(total, 1):.0f}%), store: {root}"
    if extra:
        text += f"\nalso in the store, not in {config}: {', '.join(extra)}"
    return text


def run_summary(settings, root: Path, elapsed: float | None = None) -> str:
    lines = ["", "attnsim run summary", "=" * 19]
    for name, e in settings.experiments.items():
        path = store.summary_path(root, e.kind, name)
        if not path.exists():
            lines.append(f"{name:<20} {e.kind:<20} (no summary yet)")
            continue
        s = store.read_table(path).to_pandas()
        low, high = (int(s["n_trials"].min()), int(s["n_trials"].max())) if len(s) else (e.trials, e.trials)
        trials = f"{e.trials}" if low == high == e.trials else f"{low}-{high}"
        adaptive = f" (rounds of {e.trials} to SE <= {e.target_se:g})" if e.target_se is not None else ""
        lines.append(f"{name:<20} {e.kind:<20} {len(s):>5} points x {trials} trials{adaptive}")
        kind = get_kind(e.kind)
        headline = kind.headline(s) if kind.headline else ""
        if headline:
            lines.append(f"{'':<20} {headline}")
    claims_file = Path(root).parent / "claims.parquet"
    if claims_file.exists():
        from attnsim.claims.io import from_table
        from attnsim.claims.render import short

        lines += ["", "claims (results/claims.html, results/claims.md, attnsim claims):", short(from_table(store.read_table(claims_file)))]
    lines.append("")
    lines.append(f"store:   {root}/  (attnsim query 'SHOW TABLES')")
    lines.append(f"report:  snakemake --report {Path(root).parent / 'report.html'}  (one self-contained file)")
    lines.append(f"figures: {Path(root).parent / 'figures'}/")
    if elapsed is not None:
        lines.append(f"wall time: {elapsed:.1f} s")
    return "\n".join(lines)
