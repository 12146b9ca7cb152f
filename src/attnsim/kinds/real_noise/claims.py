"""Claims of statement 1 (robustness to i.i.d. logit noise, docs/science.md §2, §5.6, §5.9-5.12)
judged on the trained heads of all-MiniLM-L6-v2 (`real_noise` summaries).

Every regime and tolerance below is fixed from theory before the data (the reason is the
docs/science.md section beside it); a claim over several layers (or layers and noise scales)
holds when every group holds, fails when any group fails, and is inconclusive otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from attnsim.claims.engine import (
    Claim,
    equivalence_verdict,
    one_sided_verdict,
    pooled,
    select_regime,
)
from attnsim.kinds.real_noise import ROW_CORRECTION, SINK_ROW


@dataclass(frozen=True)
class Thresholds:
    # the delta method's tolerance, as in noisy_attention: measured / predicted error within 1 +-
    # this
    ratio_tolerance: float = 0.05
    # its regime: the predicted first correction |3 kappa^2 - 2 mu3| / kappa * sum p^2 (§2.8) at
    # most
    # half the tolerance, so the neglected term cannot by itself push the ratio out of the band
    # (§5.10)
    delta_correction: float = 0.025
    # the next-order theory is judged where the delta method alone is not enough (correction above
    # delta_correction) but the first term it neglects, (correction)^3 row by row weighted like the
    # error, is at most delta_correction too (§5.10)
    next_truncation: float = 0.025
    # the within-head rate: the slope of rel_err in n may differ from -1/2 by this much (as
    # error_rate_sqrt_n)
    slope_tolerance: float = 0.05
    # ... judged on heads whose rows are near-uniform at the nest's smallest window: mean n_eff >= n
    # / 2,
    # the small-scale regime (§3.3) where n_eff / n = exp(-sigma_s^2) does not change with n (§5.9)
    rate_n_eff_share: float = 0.5
    min_windows: int = 3  # a within-head slope needs at least this many window lengths
    # a statement about the typical head of a group needs a between-head interval: at least 3 heads
    # (2 degrees of freedom); smaller groups are listed in the evidence, not judged
    min_heads: int = 3
    # heavy tails (kappa = inf, E e^eps = inf): "does not fall" = the within-head slope is above
    # this
    breakdown_slope: float = -0.25
    breakdown_min_sigma: float = (
        0.25  # as noisy_attention: smaller sigma needs far larger n to show (§2.7)
    )
    # sink-dominated rows: judged where the layer has at least this many of them over its points
    min_sink_rows: int = 20


THRESHOLDS = Thresholds()
FIGURE_MAP, FIGURE_SIGMA, FIGURE_RATE, FIGURE_ROWS = (
    "real_noise_map",
    "real_noise_sigma",
    "real_noise_within_heads",
    "real_noise_rows",
)
LIGHT = (
    "gaussian",
    "uniform",
)  # noise with every moment of the expansion finite (k* = inf): §2.8's regime "delta"


def light(s: pd.DataFrame) -> pd.Series:
    return s["noise"].isin(LIGHT) & (s["noise_scale"] > 0)


def delta_regime(s: pd.DataFrame) -> pd.Series:
    return (
        light(s)
        & (s["predicted_correction"] <= THRESHOLDS.delta_correction)
        & s["err_ratio"].notna()
    )


def next_regime(s: pd.DataFrame) -> pd.Series:
    t = THRESHOLDS
    c = s["predicted_correction"]
    return (
        light(s)
        & (c > t.delta_correction)
        & (s["next_truncation"] <= t.next_truncation)
        & s["next_err_ratio"].notna()
        & s["next_err_ratio_se"].notna()
    )


def by_group(rows: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """Per group (e.g. layer and noise setting): the mean of `value` over its heads with the
    between-head 95% interval (`pooled`): what a typical head of the layer does. A head's points
    (its windows, which share texts, queries and noise) are averaged first, so they count once."""
    out = []
    for key, part in rows.groupby(keys):
        per_head = (
            part.groupby(["layer", "head"])[value].mean()
            if {"layer", "head"} <= set(part)
            else part[value]
        )
        stats = pooled(per_head.to_numpy(float))
        out.append(
            dict(zip(keys, key if isinstance(key, tuple) else (key,)))
            | stats
            | {"points": len(part), "heads": len(per_head)}
        )
    return pd.DataFrame(out)


def combine(claim: Claim, groups: pd.DataFrame, verdicts: list[str], label: str) -> Claim:
    """The claim's verdict from its groups' verdicts: every judged group holds -> holds, any
    fails ->
    fails, else inconclusive. Groups of fewer than `min_heads` heads are listed, not judged (none
    left: outside regime). Shown: the judged group farthest from the prediction (for a one-sided
    claim: the one whose interval reaches farthest to the wrong side of the bound)."""
    few = groups["heads"].to_numpy() < THRESHOLDS.min_heads
    if few.any():
        skipped = ", ".join(_describe(g) for _, g in groups[few].iterrows())
        label += f"; not judged (fewer than {THRESHOLDS.min_heads} heads): {skipped}"
    verdicts = [v for v, f in zip(verdicts, few) if not f]
    groups = groups[~few].reset_index(drop=True)
    if groups.empty:
        claim.verdict = "outside regime"
        claim.evidence = label
        return claim
    if claim.side:
        edge = groups["ci_low"] if claim.side == "above" else -groups["ci_high"]
        worst = int(np.argmin(edge.to_numpy(float)))
    else:
        worst = int(np.argmax(np.abs(groups["mean"].to_numpy(float) - claim.predicted)))
    claim.verdict = (
        "fails"
        if "fails" in verdicts
        else ("inconclusive" if "inconclusive" in verdicts else "holds")
    )
    row = groups.iloc[worst]
    claim.measured, claim.ci_low, claim.ci_high = (
        float(row[k]) for k in ("mean", "ci_low", "ci_high")
    )
    claim.detectable = float(((groups["ci_high"] - groups["ci_low"]) / 2).max())
    counts = {v: verdicts.count(v) for v in ("holds", "inconclusive", "fails") if verdicts.count(v)}
    claim.evidence = (
        f"{label}: "
        + ", ".join(f"{c} {v}" for v, c in counts.items())
        + f"; shown: the group farthest from the prediction ({_describe(row)})"
    )
    return claim


def _describe(row) -> str:
    parts = [f"layer {int(row['layer'])}"] if "layer" in row else []
    if "noise" in row and "noise_scale" in row:
        parts.append(f"{row['noise']} σ = {row['noise_scale']:g}")
    return ", ".join(parts)


def _layer_sigma_text(groups: pd.DataFrame) -> str:
    return "; ".join(
        f"L{int(layer)}: "
        + ", ".join(
            f"σ {g['noise_scale']:g} {g['mean']:.3f} [{g['ci_low']:.3f}, {g['ci_high']:.3f}]"
            for _, g in part.iterrows()
        )
        for layer, part in groups.groupby("layer")
    )


def equivalence_groups(claim: Claim, rows: pd.DataFrame, value: str, label: str) -> Claim:
    """Per (layer, noise, sigma): the pooled `value` over the heads, judged by equivalence with
    1."""
    t = THRESHOLDS
    groups = by_group(rows, ["layer", "noise", "noise_scale"], value)
    verdicts = [
        equivalence_verdict(g["ci_low"], g["ci_high"], 1.0, t.ratio_tolerance)
        for _, g in groups.iterrows()
    ]
    claim.predicted, claim.tolerance = 1.0, t.ratio_tolerance
    combine(
        claim,
        groups,
        verdicts,
        f"{len(groups)} (layer, σ) groups over {len(rows)} head points",
    )
    claim.rel_deviation = claim.measured - 1.0
    claim.evidence += "; per layer and σ (mean over heads, 95% CI): " + _layer_sigma_text(groups)
    return claim


VERDICT_MARK = {"holds": "✓", "inconclusive": "?", "fails": "✗"}


def by_sigma(s: pd.DataFrame, value: str) -> str:
    """Per layer, at every light-noise sigma measured (in the regime or not), the pooled ratio over
    the layer's heads and its verdict against 1 +- tolerance (✓ holds, ? inconclusive, ✗ fails):
    where each theory stops holding, beside the regime the claim is judged in."""
    rows = s[light(s) & s[value].notna()]
    if rows.empty:
        return ""
    groups = by_group(rows, ["layer", "noise", "noise_scale"], value)
    out = []
    for layer, part in groups.groupby("layer"):
        marks = []
        for _, g in part.sort_values("noise_scale").iterrows():
            verdict = equivalence_verdict(
                g["ci_low"], g["ci_high"], 1.0, THRESHOLDS.ratio_tolerance
            )
            marks.append(f"{g['noise_scale']:g} {g['mean']:.3f}{VERDICT_MARK[verdict]}")
        out.append(f"L{int(layer)} " + " ".join(marks))
    return "; ".join(out)


def delta_method(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_delta_method",
        "On the trained heads of all-MiniLM-L6-v2 the mean squared change of the output under "
        "logit noise "
        "equals kappa * sum p^2 ||v - o||^2 (delta method), in every layer and at every noise "
        "scale of its regime.",
        statement="robustness",
        number="mean (95% CI)",
        regime=f"real_noise, gaussian or uniform noise, predicted first correction |3κ² − 2μ3|/κ · "
        f"Σp² (per row, weighted like the error) ≤ {t.delta_correction}",
        reason="docs/science.md §2.8, §5.10",
        tolerance=t.ratio_tolerance,
        compared_to="1: measured / predicted mean squared error, per layer and σ the mean over "
        "heads",
        threshold=f"every (layer, σ) group's 95% interval inside 1 ± {t.ratio_tolerance} (the "
        f"delta method's tolerance everywhere)",
    )
    rows = select_regime(claim, s, delta_regime, FIGURE_SIGMA)
    if rows is None:
        return claim
    equivalence_groups(claim, rows, "err_ratio", "err_ratio")
    claim.evidence += "; every σ measured, all heads (σ ratio verdict): " + by_sigma(s, "err_ratio")
    return claim


def next_order(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_next_order_theory",
        "On trained heads, where the delta method's first correction matters, the next-order "
        "theory (§2.8, p2) "
        "predicts the measured error in every layer and at every noise scale of its regime.",
        statement="robustness",
        number="mean (95% CI)",
        regime=f"real_noise, gaussian or uniform noise, predicted correction > "
        f"{t.delta_correction} and the first neglected term, "
        f"(|3κ² − 2μ3|/κ · Σp²)³ per row weighted like the error, ≤ {t.next_truncation}",
        reason="docs/science.md §2.8, §5.10",
        tolerance=t.ratio_tolerance,
        compared_to="1: measured / next-order mean squared error, per layer and σ the mean over "
        "heads",
        threshold=f"every (layer, σ) group's 95% interval inside 1 ± {t.ratio_tolerance}, the "
        f"delta method's tolerance, so the two verdicts compare",
    )
    rows = select_regime(claim, s, next_regime, FIGURE_SIGMA)
    if rows is None:
        if s is not None:
            claim.evidence = "every σ measured, all heads (σ ratio verdict): " + by_sigma(
                s, "next_err_ratio"
            )
        return claim
    equivalence_groups(claim, rows, "next_err_ratio", "next_err_ratio")
    claim.evidence += "; every σ measured, all heads (σ ratio verdict): " + by_sigma(
        s, "next_err_ratio"
    )
    return claim


def per_row_law(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_per_row_law",
        "Row by row, the squared change of a trained head's output under logit noise is kappa * "
        "sum p^2 ||v - o||^2, "
        "whatever the row's n_eff (the shorthand rel_err = sqrt(kappa / n_eff) is not: it needs "
        "grad_sq = sum p^2 * spread).",
        statement="robustness",
        number="mean (95% CI)",
        regime=f"real_noise, gaussian or uniform noise; in each point the rows whose own predicted "
        f"correction |3κ² − 2μ3|/κ · Σp² ≤ {ROW_CORRECTION}",
        reason="docs/science.md §2.8, §5.11",
        tolerance=t.ratio_tolerance,
        compared_to="1: the mean over rows of sq_err / (κ Σp²‖v − o‖²), per layer and σ the mean "
        "over heads",
        threshold=f"every (layer, σ) group's 95% interval inside 1 ± {t.ratio_tolerance}",
    )
    rows = select_regime(
        claim,
        s,
        lambda r: light(r) & r["row_ratio"].notna() & (r["row_ratio_rows"] >= 2),
        FIGURE_ROWS,
    )
    if rows is None:
        return claim
    equivalence_groups(claim, rows, "row_ratio", "row_ratio")
    shorthand = rows.groupby("layer")["concentration_mean"].mean()
    claim.evidence += (
        "; compared with the shorthand's grad_sq / (Σp² spread) = 1: mean per layer "
        + ", ".join(f"L{k} {v:.2f}" for k, v in shorthand.items())
    )
    return claim


SLOPE_KEYS = ["layer", "head", "noise", "noise_scale", "noise_draws", "n"]  # a nest of windows


def within_head_slopes(
    s: pd.DataFrame, value: str = "rel_err_mean", se: str = "rel_err_se"
) -> pd.DataFrame:
    """Per head and noise setting of a nest (keys > 0, several window lengths): the weighted
    least-squares slope of log `value` on log n_keys, its standard error from the points' SEs, the
    slope of log n_eff (harmonic), and the nest's smallest window with its n_eff share. Grouped
    sums over all nests at once (a loop over the ~10^3 nests took most of the claims' time);
    `tests/oracles/real_noise.within_head_slopes` is the loop, the reference."""
    keys = SLOPE_KEYS
    usable = (s["keys"] > 0) & s[value].notna() & (s[value] > 0) & s[keys].notna().all(axis=1)
    nested = s[usable].sort_values([*keys, "n_keys"], kind="stable")
    nested = nested[nested.groupby(keys)["n_keys"].transform("nunique") >= THRESHOLDS.min_windows]
    x = np.log(nested["n_keys"].to_numpy(float))
    y = np.log(nested[value].to_numpy(float))
    w = (nested[value] / nested[se]).to_numpy(float) ** 2
    z = np.log(nested["sum_p2_mean"].to_numpy(float)) * -1.0  # log n_eff, n_eff = 1 / Σp²
    group = nested.groupby(keys, sort=True).ngroup().to_numpy()
    size = np.bincount(group).astype(float)

    def total(values):
        return np.bincount(group, weights=values, minlength=len(size))

    xm = (total(w * x) / total(w))[group]  # the weighted means, then the centred sums
    sxx = total(w * (x - xm) ** 2)
    slope = total(w * (x - xm) * y) / sxx
    xu = (total(x) / size)[group]  # n_eff's slope: unweighted least squares
    n_eff_slope = total((x - xu) * z) / total((x - xu) ** 2)
    first = nested.groupby(group).head(1)  # each nest's smallest window (sorted above)
    predicted_ok = (nested["predicted_correction"] <= THRESHOLDS.delta_correction).to_numpy()
    out = first[keys].reset_index(drop=True)
    out["slope"] = slope
    out["slope_se"] = 1 / np.sqrt(sxx)
    out["n_eff_slope"] = n_eff_slope
    out["n_eff_share"] = 1.0 / first["sum_p2_mean"].to_numpy(float) / first["n_keys"].to_numpy()
    out["in_delta"] = np.bincount(group, weights=~predicted_ok, minlength=len(size)) == 0
    out["windows"] = size.astype(int)
    out["n_trials"] = total(nested["n_trials"].to_numpy(float)).astype(int)
    return out


def _smallest_light_sigma(slopes: pd.DataFrame) -> pd.DataFrame:
    light_rows = slopes[slopes["noise"].isin(LIGHT) & (slopes["noise_scale"] > 0)]
    if light_rows.empty:
        return light_rows
    return light_rows[light_rows["noise_scale"] == light_rows["noise_scale"].min()]


def _based_on_slopes(claim: Claim, s: pd.DataFrame, slopes: pd.DataFrame) -> None:
    """A claim on within-head slopes rests on the sweep's experiments, the rate figure, and the
    slopes' windows (its points) and trials."""
    claim.experiments = ", ".join(sorted(s["experiment"].unique())) if "experiment" in s else ""
    claim.figure = f"{claim.experiments.split(', ')[0]}/{FIGURE_RATE}" if claim.experiments else ""
    claim.points, claim.trials = int(slopes["windows"].sum()), int(slopes["n_trials"].sum())


def _per_layer_text(slopes: pd.DataFrame, value: str = "slope") -> str:
    return ", ".join(
        f"L{int(g['layer'])} {g['mean']:.3f} [{g['ci_low']:.3f}, {g['ci_high']:.3f}]"
        for _, g in by_group(slopes, ["layer"], value).iterrows()
    )


def rate_within_heads(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_rate_within_heads",
        "Within a trained head the relative error falls like n^-1/2 as the window grows (the same "
        "texts and queries, more keys), where the rows are spread enough for n_eff to grow with n.",
        statement="robustness",
        number="fitted slope (95% CI)",
        regime=f"real_noise nests (keys > 0, ≥ {t.min_windows} windows), the smallest light-noise "
        f"σ, every window in the delta regime "
        f"(correction ≤ {t.delta_correction}), heads with mean n_eff ≥ {t.rate_n_eff_share:g} n at "
        f"the smallest window",
        reason="docs/science.md §3.3, §5.9",
        tolerance=t.slope_tolerance,
        compared_to="−1/2, the exponent of sqrt(κ / n) for weights whose logit law does not change "
        "with n; per layer the mean over its heads",
        threshold=f"the 95% interval (between the regime's heads, all layers together; at least "
        f"{t.min_heads} heads) inside −1/2 ± {t.slope_tolerance}",
    )
    if s is None:
        return claim
    slopes = _smallest_light_sigma(within_head_slopes(s)) if "keys" in s else pd.DataFrame()
    if slopes.empty:
        claim.verdict = "outside regime"
        claim.evidence = "no nest of ≥ 3 windows (keys > 0) with light noise in the sweep"
        return claim
    every = (
        "within-head slopes of all heads per layer (mean, 95% CI between heads): "
        + _per_layer_text(slopes)
    )
    every += "; their n_eff slopes: " + _per_layer_text(slopes, "n_eff_slope")
    chosen = slopes[slopes["in_delta"] & (slopes["n_eff_share"] >= t.rate_n_eff_share)]
    if chosen.empty:
        claim.verdict = "outside regime"
        claim.evidence = (
            f"no head with n_eff ≥ {t.rate_n_eff_share:g} n at its smallest window; " + every
        )
        return claim
    _based_on_slopes(claim, s, chosen)
    groups = by_group(
        chosen, ["noise", "noise_scale"], "slope"
    )  # every head in the regime, all layers
    verdicts = [
        equivalence_verdict(g["ci_low"], g["ci_high"], -0.5, t.slope_tolerance)
        for _, g in groups.iterrows()
    ]
    claim.predicted = -0.5
    layers = ", ".join(f"L{k} {v}" for k, v in chosen.groupby("layer")["head"].nunique().items())
    combine(
        claim,
        groups,
        verdicts,
        f"{len(chosen)} heads in the regime (per layer: {layers}), judged together",
    )
    claim.rel_deviation = (claim.measured + 0.5) / 0.5
    claim.evidence += "; " + every
    return claim


def rate_follows_delta(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_rate_follows_delta",
        "Within a trained head the error changes with n as the delta method per row predicts: the "
        "within-head slope "
        "of rel_err equals that of sqrt(kappa * grad_sq / spread), whatever n_eff does.",
        statement="robustness",
        number="fitted slope (95% CI)",
        regime=f"real_noise nests (keys > 0, ≥ {t.min_windows} windows), the smallest light-noise "
        f"σ, every window in the delta regime (correction ≤ {t.delta_correction}), every head",
        reason="docs/science.md §2.8, §5.9",
        tolerance=t.slope_tolerance,
        compared_to="0: measured minus predicted within-head slope; per layer the mean over its "
        "heads",
        threshold=f"every layer's 95% interval (between heads) inside 0 ± {t.slope_tolerance}, the "
        f"rate's tolerance",
    )
    if s is None:
        return claim
    if "keys" not in s:
        claim.verdict = "outside regime"
        return claim
    measured = _smallest_light_sigma(within_head_slopes(s))
    predicted = _smallest_light_sigma(within_head_slopes(s, "rel_err_pred_mean", "rel_err_pred_se"))
    keys = ["layer", "head", "noise", "noise_scale", "noise_draws", "n"]
    if measured.empty or predicted.empty:
        claim.verdict = "outside regime"
        return claim
    both = measured.merge(
        predicted[[*keys, "slope"]].rename(columns={"slope": "slope_pred"}), on=keys
    )
    both = both[both["in_delta"]]
    if both.empty:
        claim.verdict = "outside regime"
        return claim
    both["difference"] = both["slope"] - both["slope_pred"]
    _based_on_slopes(claim, s, both)
    groups = by_group(both, ["layer"], "difference")
    verdicts = [
        equivalence_verdict(g["ci_low"], g["ci_high"], 0.0, t.slope_tolerance)
        for _, g in groups.iterrows()
    ]
    claim.predicted = 0.0
    combine(claim, groups, verdicts, f"{len(both)} heads in {len(groups)} layers")
    claim.evidence += "; predicted within-head slopes per layer: " + _per_layer_text(
        both, "slope_pred"
    )
    return claim


def breakdown(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_heavy_tail_breakdown",
        "On trained heads, logit noise without a mean (Student t) gives an error that does not "
        "fall as the window grows.",
        statement="robustness",
        number="fitted slope (95% CI)",
        regime=f"real_noise nests (keys > 0, ≥ {t.min_windows} windows), E[e^ε] = ∞ (student_t), σ "
        f"≥ {t.breakdown_min_sigma}",
        reason="docs/science.md §2.7, §5.9",
        compared_to=f"the bound {t.breakdown_slope}: the within-head slope of rel_err in n, per "
        f"layer the mean over its heads (−1/2 would be the finite-κ rate)",
        threshold=f"'does not fall' = every layer's 95% interval above {t.breakdown_slope}",
    )
    if s is None:
        return claim
    slopes = within_head_slopes(s) if "keys" in s else pd.DataFrame()
    rows = (
        slopes[(slopes["noise"] == "student_t") & (slopes["noise_scale"] >= t.breakdown_min_sigma)]
        if len(slopes)
        else slopes
    )
    if rows.empty:
        claim.verdict = "outside regime"
        return claim
    _based_on_slopes(claim, s, rows)
    groups = by_group(rows, ["layer"], "slope")
    verdicts = [
        one_sided_verdict(g["ci_low"], g["ci_high"], t.breakdown_slope, "above")
        for _, g in groups.iterrows()
    ]
    claim.bound, claim.side = t.breakdown_slope, "above"
    combine(
        claim,
        groups,
        verdicts,
        f"{len(rows)} head series in {len(groups)} layers",
    )
    claim.evidence += "; per layer: " + _per_layer_text(rows)
    return claim


def delta_sink_rows(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_delta_method_sink_rows",
        f"The delta method holds on sink-dominated rows (more than {SINK_ROW:g} of the weight on "
        f"[CLS] and [SEP]) as on the others.",
        statement="robustness",
        number="mean (95% CI)",
        regime=f"the delta method's regime (correction ≤ {t.delta_correction}); per layer, the "
        f"points' sink-dominated rows, judged where the layer has ≥ {t.min_sink_rows} of them",
        reason="docs/science.md §5.12",
        tolerance=t.ratio_tolerance,
        compared_to="1: measured / predicted mean squared error over the sink-dominated rows; the "
        "other rows' ratio beside it",
        threshold=f"every (layer, σ) group's 95% interval inside 1 ± {t.ratio_tolerance}",
    )
    rows = select_regime(
        claim, s, lambda r: delta_regime(r) & r["err_ratio_sink"].notna(), FIGURE_SIGMA
    )
    if rows is None:
        return claim
    counts = (rows["sink_rows"] * rows["n_trials"]).groupby(rows["layer"]).sum()
    rows = rows[rows["layer"].map(counts) >= t.min_sink_rows]
    if rows.empty:
        claim.verdict = "outside regime"
        return claim
    claim.based_on(rows, FIGURE_SIGMA)
    equivalence_groups(claim, rows, "err_ratio_sink", "err_ratio_sink")
    rest = by_group(rows[rows["err_ratio_rest"].notna()], ["layer"], "err_ratio_rest")
    claim.evidence += "; the other rows per layer: " + ", ".join(
        f"L{int(g['layer'])} {g['mean']:.3f}" for _, g in rest.iterrows()
    )
    claim.evidence += "; share of sink-dominated rows per layer: " + ", ".join(
        f"L{k} {v:.2f}"
        for k, v in rows.groupby("layer")
        .apply(lambda p: np.average(p["sink_rows"], weights=p["n_trials"]), include_groups=False)
        .items()
    )
    return claim


CLAIMS = (
    delta_method,
    next_order,
    per_row_law,
    rate_within_heads,
    rate_follows_delta,
    breakdown,
    delta_sink_rows,
)
