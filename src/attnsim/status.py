"""What is in the store for a config: `attnsim show` and the end-of-run summary."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from attnsim import store
from attnsim.config import load_file
from attnsim.plan import plan_all

if TYPE_CHECKING:  # pandas is imported where it is used: Snakemake loads this module at every start
    import pandas as pd


def show(config: Path, root: Path) -> str:
    settings = load_file(config)
    plans = plan_all(settings, root)
    rows = []
    for name, plan in plans.items():
        e = settings.experiments[name]
        rows.append({"experiment": name, "kind": e.kind, "points": len(plan.points), "done": plan.done_points, "trials/point": e.trials, "chunks to run": len(plan.pending)})
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


def _headline(kind: str, s: pd.DataFrame) -> str:
    if kind == "noisy_attention":
        ok = s[s["kappa_finite"] & (s["kappa"] > 0) & (s["kappa_sum_p2"] < 0.01)]
        parts = []
        if len(ok):
            parts.append(f"measured/predicted sq_err where κΣp² < 0.01: median {np.median(ok['err_ratio']):.3f} (range {ok['err_ratio'].min():.3f}–{ok['err_ratio'].max():.3f}, {len(ok)} points)")
        infinite = int((~s["kappa_finite"]).sum())
        if infinite:
            parts.append(f"κ = ∞ flagged on {infinite} points")
        return "; ".join(parts)
    if kind == "logit_entropy":
        small = s[(s["logits"] == "gaussian") & (s["sigma_eff"] > 0) & (s["sigma_eff"] <= 0.3)]
        if len(small):
            worst = (small["entropy_mean"] - small["entropy_small_scale"]).abs().max()
            return f"|H − (log n − σ²/2)| ≤ {worst:.2g} nats where σ ≤ 0.3 ({len(small)} points)"
    if kind == "temperature_entropy":
        at_one = s[np.isclose(s["tau"], 1.0)]
        text = f"every trial within its exact bound: {bool(s['gap_within_bound'].all())}"
        if len(at_one):
            text += f"; largest gap at τ = 1: {at_one['gap_max'].max():.4f} (bound g(1) = {at_one['gap_asymptotic'].iloc[0]:.4f})"
        return text
    if kind == "init_gradient":
        top = s[s["scale"] == s["scale"].max()]
        return f"at scale {top['scale'].iloc[0]:g}: mean entropy ≤ {top['entropy_mean'].max():.2g} nats, mean grad_sq ≤ {top['grad_sq_mean'].max():.2g} (peak {s['grad_sq_mean'].max():.2g})"
    return ""


def run_summary(settings, root: Path, elapsed: float | None = None) -> str:
    lines = ["", "attnsim run summary", "=" * 19]
    for name, e in settings.experiments.items():
        path = store.summary_path(root, e.kind, name)
        if not path.exists():
            lines.append(f"{name:<20} {e.kind:<20} (no summary yet)")
            continue
        s = store.read_table(path).to_pandas()
        lines.append(f"{name:<20} {e.kind:<20} {len(s):>5} points x {e.trials} trials")
        headline = _headline(e.kind, s)
        if headline:
            lines.append(f"{'':<20} {headline}")
    claims_file = Path(root).parent / "claims.parquet"
    if claims_file.exists():
        from attnsim.claims import short_from_table

        lines += ["", "claims (results/claims.md, attnsim claims --markdown):", short_from_table(store.read_table(claims_file))]
    lines.append("")
    lines.append(f"store:   {root}/  (attnsim query 'SHOW TABLES')")
    lines.append(f"report:  snakemake --report {Path(root).parent / 'report.html'}  (one self-contained file)")
    lines.append(f"figures: {Path(root).parent / 'figures'}/")
    if elapsed is not None:
        lines.append(f"wall time: {elapsed:.1f} s")
    return "\n".join(lines)
