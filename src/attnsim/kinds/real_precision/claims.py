"""Claims of §11 on the trained heads of all-MiniLM-L6-v2 (`real_precision` summaries): the essay's
i.i.d. delta method against rounding, and the rounding model, per layer (heads pooled), in the
regime of docs/science.md §11.4 fixed before the data."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from attnsim.claims.engine import Claim, pooled, select_regime
from attnsim.kinds.low_precision import first_order_regime


@dataclass(frozen=True)
class Thresholds:
    kappa_eff_max: float = 0.01  # the first-order regime of §11.4 (neglected terms <= ~3%)
    flushed_max: float = 1e-3
    ratio_tolerance: float = 0.05
    min_heads: int = 3  # a layer's between-head interval needs at least this many points


THRESHOLDS = Thresholds()
FIGURE = "real_precision_layers"
REASON = "docs/science.md §11.7"


def in_regime(rows: pd.DataFrame) -> pd.Series:
    return first_order_regime(rows, THRESHOLDS.kappa_eff_max, THRESHOLDS.flushed_max)


def per_layer(rows: pd.DataFrame, column: str, keys=("layer",)) -> pd.DataFrame:
    """One row per group (layer, ...): the mean over its heads' points of `column` with the
    between-head 95% interval (heads differ for real, not only by their rows' noise)."""
    out = []
    for key, part in rows.groupby(list(keys)):
        stats = pooled(part[column].to_numpy(float))
        key = key if isinstance(key, tuple) else (key,)
        out.append(
            {
                **dict(zip(keys, key)),
                "value": stats["mean"],
                "low": stats["ci_low"],
                "high": stats["ci_high"],
                "heads": len(part),
            }
        )
    return pd.DataFrame(out)


def _judged_groups(claim: Claim, rows: pd.DataFrame, column: str, keys) -> pd.DataFrame | None:
    """`per_layer` groups with at least min_heads points; None (outside regime) without one."""
    groups = per_layer(rows, column, keys)
    groups = groups[groups["heads"] >= THRESHOLDS.min_heads]
    if groups.empty:
        claim.verdict = "outside regime"
        return None
    return groups


def _describe(row) -> str:
    extra = f", {row['format']}" if "format" in row else ""
    return f"layer {int(row['layer'])}{extra} ({int(row['heads'])} points)"


def iid_delta(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_rounding_iid_delta",
        "On the trained heads of all-MiniLM-L6-v2, rounding the logits acts like i.i.d. logit "
        "noise: the essay's delta "
        "method with kappa of the row's pooled rounding errors predicts the output's change, in "
        "every layer.",
        statement="robustness",
        number="mean (95% CI)",
        role="evidence",
        regime=f"real_precision, site logits, kappa_eff <= {t.kappa_eff_max}, no saturation, <= "
        f"{t.flushed_max:g} flushed; "
        "per layer, the points of its heads and formats pooled",
        reason=REASON,
        compared_to="1: mean over rows of sq_err / sq_err_iid, per layer (mean over its points, "
        "between-point interval)",
        threshold=f"every layer's 95% interval inside 1 ± {t.ratio_tolerance} (equivalence)",
    )
    rows = select_regime(claim, s, lambda r: (r["site"] == "logits") & in_regime(r), FIGURE)
    if rows is None:
        return claim
    layers = _judged_groups(claim, rows, "ratio_iid_mean", ("layer",))
    if layers is None:
        return claim
    claim.per_point(layers, "value", "low", "high", 1.0, t.ratio_tolerance, describe=_describe)
    claim.evidence += (
        "; the rounding model's factor over the i.i.d. method: "
        f"{rows['iid_factor_model'].min():.2f}-{rows['iid_factor_model'].max():.2f}"
    )
    return claim


def model_delta(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_rounding_model",
        "On the trained heads the rounding model (Var = ulp^2/12 per rounded number) predicts the "
        "output's change to first "
        "order at every site and format, in every layer.",
        statement="robustness",
        number="mean (95% CI)",
        role="evidence",
        regime=f"real_precision, kappa_eff <= {t.kappa_eff_max} (or site output), no saturation, "
        f"<= {t.flushed_max:g} flushed; "
        f"per layer, format and site with >= {t.min_heads} heads in the regime, their points "
        "pooled",
        reason=REASON,
        compared_to="1: mean over rows of sq_err / sq_err_model, per layer, format and site",
        threshold=f"every group's 95% interval inside 1 ± {t.ratio_tolerance} (equivalence)",
    )
    rows = select_regime(claim, s, in_regime, FIGURE)
    if rows is None:
        return claim
    groups = _judged_groups(claim, rows, "ratio_model_mean", ("layer", "format", "site"))
    if groups is None:
        return claim
    return claim.per_point(
        groups,
        "value",
        "low",
        "high",
        1.0,
        t.ratio_tolerance,
        describe=lambda r: (
            f"layer {int(r['layer'])}, {r['format']}, {r['site']} ({int(r['heads'])} heads)"
        ),
    )


CLAIMS = (iid_delta, model_delta)
