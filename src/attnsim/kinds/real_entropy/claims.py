"""Claims of statement 2 (information content, docs/science.md §3, §5.7, §5.12) judged on the
attention rows of all-MiniLM-L6-v2, trained and re-initialised (`real_entropy` summaries).

Regimes and tolerances are fixed from theory before the data (the docs/science.md section beside
each). A claim over several heads holds when every head holds, fails when any head fails, and is
inconclusive otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attnsim.claims.engine import Claim, one_sided_verdict, pooled, select_regime
from attnsim.kinds.real_entropy import SINK_EPSILON, SINK_ROW
from attnsim.models.heads import LAYERS

FIGURE, FIGURE_SINKS = "real_entropy_layers", "real_entropy_sinks"
Z975 = 1.959963984540054


@dataclass(frozen=True)
class Thresholds:
    bert_std: float = 0.02  # BERT's initializer_range: the "standard init" of the claim
    # nats: §5.3 predicts log n - H ~ (0.02^2 * 384)^2 / 2 = 0.011; 0.05 allows the ||x|| and key
    # correlations it neglects
    near_log_n: float = 0.05
    one_hot_entropy: float = (
        0.1  # nats: "one-hot", as in init_gradient's one_hot_vanishing_gradient
    )
    vanish_fraction: float = 0.1  # grad_rel below this fraction of its uniform value 1/n
    large_std: float = (
        0.2  # the claim about large init needs init_std >= this (logit std >= 15, §5.3)
    )
    # "trained heads lie in between" holds for at least this share of heads (a claim about typical
    # heads)
    between_share: float = 0.9
    # Clark et al. 2019: in BERT-base (12 layers) more than half of the attention of layers 6-10
    # goes to
    # [SEP]; the layers at the same relative depth (l + 1/2) / L in [5.5/12, 9.5/12] of a 6-layer
    # model
    # are 3 and 4 (0-based), fixed before the data (§5.12)
    clark_depth: tuple[float, float] = (5.5 / 12, 9.5 / 12)
    sep_share: float = 0.5
    # Gu et al. 2024: a token is a sink when the mean attention it receives exceeds this
    sink_epsilon: float = SINK_EPSILON


THRESHOLDS = Thresholds()


def wilson(successes: int, trials: int) -> tuple[float, float]:
    """95% Wilson score interval of a proportion."""
    if trials == 0:
        return math.nan, math.nan
    p, z2 = successes / trials, Z975 * Z975
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = Z975 * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def combined(verdicts: list[str]) -> str:
    return (
        "fails"
        if "fails" in verdicts
        else ("inconclusive" if "inconclusive" in verdicts else "holds")
    )


def _counts(verdicts: list[str]) -> str:
    return ", ".join(
        f"{verdicts.count(v)} {v}" for v in ("holds", "inconclusive", "fails") if verdicts.count(v)
    )


def standard_init(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_init_entropy_near_log_n",
        f"At BERT's initialisation (std {t.bert_std}) every head's attention rows are nearly "
        f"uniform: H within {t.near_log_n} nats of log n.",
        statement="information",
        number="range over points",
        regime=f"real_entropy, init_std = {t.bert_std}, every layer, head and n",
        reason="docs/science.md §3.3, §5.3",
        compared_to=f"the bound {t.near_log_n} nats: the mean gap log n − H of each head; compared "
        f"with (logit std)²/2 = (init_std²·384)²/2, the small-scale gap",
        threshold=f"every head's 95% interval of the gap below {t.near_log_n} (one-sided, per "
        f"head)",
    )
    rows = select_regime(claim, s, lambda r: np.isclose(r["init_std"], t.bert_std), FIGURE)
    if rows is None:
        return claim
    gap = rows["log_n"] - rows["entropy_mean"]
    half = rows["entropy_ci_high"] - rows["entropy_mean"]
    verdicts = [one_sided_verdict(g - h, g + h, t.near_log_n, "below") for g, h in zip(gap, half)]
    worst = gap.idxmax()
    claim.bound, claim.side = t.near_log_n, "below"
    claim.measured, claim.ci_low, claim.ci_high = (
        float(gap[worst]),
        float(gap.min()),
        float(gap.max()),
    )
    claim.detectable = float(half.max())
    claim.verdict = combined(verdicts)
    small = float((rows["log_n"] - rows["entropy_small_scale"]).mean())
    row = rows.loc[worst]
    claim.evidence = (
        f"{len(rows)} heads: {_counts(verdicts)}; mean gap {gap.mean():.4f} nats, compared with "
        f"σ_s²/2 = {small:.4f}; "
        f"largest {gap[worst]:.4f} at layer {row['layer']}, head {row['head']}, n = {row['n']}"
    )
    return claim


def large_init(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_large_init_one_hot",
        "Re-initialised with a large std, every head's typical row is one-hot and its logit "
        "gradient ||do/ds|| has vanished.",
        statement="information",
        number="range over points",
        regime=f"real_entropy, the sweep's largest init_std (≥ {t.large_std}), every layer, head "
        f"and n; per head the median row",
        reason="docs/science.md §3.6, §5.3",
        compared_to=f"the bounds: median H < {t.one_hot_entropy} nats and median grad_rel < "
        f"{t.vanish_fraction}/n; measured: the largest median H; the means beside",
        threshold="every head's distribution-free 95% interval of both medians below its bound "
        "(one-sided, per head)",
    )
    rows = select_regime(claim, s, lambda r: r["init_std"] >= t.large_std)
    if rows is None:
        return claim
    rows = rows[rows["init_std"] == rows["init_std"].max()]
    if "entropy_median" not in rows:
        claim.verdict = "inconclusive"
        claim.evidence = "summary without medians (algorithm version 1)"
        return claim
    claim.based_on(rows, FIGURE)
    vanish = t.vanish_fraction / rows["n"]
    verdicts = []
    for (_, r), bound in zip(rows.iterrows(), vanish):
        v = [
            one_sided_verdict(
                r["entropy_median_ci_low"], r["entropy_median_ci_high"], t.one_hot_entropy, "below"
            ),
            one_sided_verdict(
                r["grad_rel_median_ci_low"], r["grad_rel_median_ci_high"], bound, "below"
            ),
        ]
        verdicts.append(combined(v))
    worst = rows["entropy_median"].idxmax()
    claim.bound, claim.side = t.one_hot_entropy, "below"
    claim.measured = float(rows.loc[worst, "entropy_median"])
    claim.ci_low, claim.ci_high = (
        float(rows["entropy_median"].min()),
        float(rows["entropy_median"].max()),
    )
    claim.verdict = combined(verdicts)
    mean_one_hot = int(
        ((rows["entropy_mean"] < t.one_hot_entropy) & (rows["grad_rel_mean"] < vanish)).sum()
    )
    per_layer = rows.groupby("layer")["entropy_median"].max()
    claim.evidence = (
        f"init_std = {rows['init_std'].iloc[0]:g}, {len(rows)} heads on the median row: "
        f"{_counts(verdicts)}; largest median H per layer: "
        + ", ".join(f"L{k} {v:.3f}" for k, v in per_layer.items())
        + f"; on the mean instead (carried by near-ties, §3.6): {mean_one_hot} of {len(rows)} "
        "heads one-hot with a vanished gradient"
    )
    return claim


def trained_between(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "real_trained_between",
        "Trained heads lie between the two initialisations: less entropy than BERT's standard "
        "init, more than a large init.",
        statement="information",
        number="share of points",
        regime=f"real_entropy, heads measured trained, at init_std = {t.bert_std} and at the "
        f"largest init_std ≥ {t.large_std}",
        reason="docs/science.md §5.7",
        compared_to=f"the bound {t.between_share:.0%}: the share of trained heads whose mean H is "
        f"strictly between (95% intervals apart), with its 95% Wilson interval",
        threshold=f"the Wilson interval of the share above {t.between_share:.0%} (one-sided)",
    )
    if s is None:
        return claim
    key = ["n", "layer", "head"]
    trained = s[s["init_std"] == 0]
    standard = s[np.isclose(s["init_std"], t.bert_std)]
    large = s[s["init_std"] >= t.large_std]
    if trained.empty or standard.empty or large.empty:
        claim.verdict = "outside regime"
        return claim
    large = large[large["init_std"] == large["init_std"].max()]
    cols = [*key, "entropy_mean", "entropy_ci_low", "entropy_ci_high"]
    merged = trained[
        [
            *cols,
            "n_trials",
            *(["experiment"] if "experiment" in trained else []),
            *(c for c in ("entropy_other_rows",) if c in trained),
        ]
    ]
    merged = merged.merge(
        standard[cols].rename(columns=lambda c: c if c in key else f"{c}_standard"), on=key
    )
    merged = merged.merge(
        large[cols].rename(columns=lambda c: c if c in key else f"{c}_large"), on=key
    )
    if merged.empty:
        claim.verdict = "outside regime"
        return claim
    claim.based_on(merged, FIGURE)
    between = (merged["entropy_ci_high"] < merged["entropy_ci_low_standard"]) & (
        merged["entropy_ci_low"] > merged["entropy_ci_high_large"]
    )
    low, high = wilson(int(between.sum()), len(merged))
    claim.one_sided(
        {"mean": float(between.mean()), "ci_low": low, "ci_high": high},
        t.between_share,
        "above",
        "",
    )
    claim.evidence = (
        f"{int(between.sum())} of {len(merged)} trained heads; mean H trained "
        f"{merged['entropy_mean'].mean():.3f}, "
        f"standard init {merged['entropy_mean_standard'].mean():.3f}, init "
        f"{large['init_std'].iloc[0]:g} {merged['entropy_mean_large'].mean():.3f} nats"
    )
    if "entropy_other_rows" in merged:
        rest = merged["entropy_other_rows"]
        kept = rest.notna()
        apart = (rest[kept] < merged.loc[kept, "entropy_ci_low_standard"]) & (
            rest[kept] > merged.loc[kept, "entropy_ci_high_large"]
        )
        claim.evidence += (
            f"; without the sink-dominated rows ([CLS] + [SEP] > {SINK_ROW:g}) the trained mean H "
            f"is {rest.mean():.3f} and {int(apart.sum())} of {int(kept.sum())} heads lie between"
        )
    return claim


def _layer_depth(layers: pd.Series, count: int) -> pd.Series:
    return (layers + 0.5) / count


def sep_sink(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    low, high = t.clark_depth
    claim = Claim(
        "real_sep_sink_middle_layers",
        "As Clark et al. (2019) found in BERT, more than half of the trained model's attention in "
        "its middle-to-late layers goes to [SEP].",
        statement="information",
        number="mean (95% CI)",
        regime=f"real_entropy, trained weights, the layers at BERT's layers 6–10 relative depth, "
        f"(layer + 1/2)/6 in [{low:.3f}, {high:.3f}]",
        reason="docs/science.md §5.12",
        compared_to=f"the bound {t.sep_share}: per layer, the mean over heads of the attention "
        f"[SEP] receives",
        threshold=f"every such layer's 95% interval (between heads) above {t.sep_share} "
        f"(one-sided)",
    )
    if s is None:
        return claim
    if "sep_weight_mean" not in s:
        claim.verdict = "inconclusive"
        claim.evidence = "summary without sep_weight (algorithm version 1)"
        return claim
    trained = s[s["init_std"] == 0]
    depth = _layer_depth(trained["layer"], LAYERS)
    rows = select_regime(claim, trained, (depth >= low) & (depth <= high), FIGURE_SINKS)
    if rows is None:
        return claim
    groups = [
        (layer, pooled(part["sep_weight_mean"].to_numpy(float)))
        for layer, part in rows.groupby("layer")
    ]
    verdicts = [
        one_sided_verdict(g["ci_low"], g["ci_high"], t.sep_share, "above") for _, g in groups
    ]
    worst = min(range(len(groups)), key=lambda i: groups[i][1]["mean"])
    g = groups[worst][1]
    claim.bound, claim.side = t.sep_share, "above"
    claim.measured, claim.ci_low, claim.ci_high = g["mean"], g["ci_low"], g["ci_high"]
    claim.detectable = max((x["ci_high"] - x["ci_low"]) / 2 for _, x in groups)
    claim.verdict = combined(verdicts)
    claim.evidence = f"{_counts(verdicts)} of {len(groups)} layers; " + sink_statistics(trained)
    return claim


def sink_statistics(trained: pd.DataFrame) -> str:
    """The sink numbers as the literature reports them: per layer the mean attention received by
    [CLS], [SEP], "." and "," together and any other token; the share of heads with a sink (mean
    attention received by [CLS] or [SEP] above epsilon, Gu et al. 2024) with its Wilson interval."""
    t = THRESHOLDS
    parts = []
    for layer, part in trained.groupby("layer"):
        other = ((1 - part["cls_weight_mean"] - part["sep_weight_mean"]) / (part["n"] - 2)).mean()
        parts.append(
            f"L{layer} [CLS] {part['cls_weight_mean'].mean():.2f}, [SEP] "
            f"{part['sep_weight_mean'].mean():.2f}, "
            f"'.'/',' {part['punct_weight_mean'].mean():.2f}, other token {other:.3f}"
        )
    shares = []
    for n, by_n in trained.groupby(
        "n"
    ):  # the attention a sink receives depends on the window length
        heads = by_n.groupby(["layer", "head"])[["cls_weight_mean", "sep_weight_mean"]].mean()
        sink = (heads.max(axis=1) > t.sink_epsilon).to_numpy()
        low, high = wilson(int(sink.sum()), len(sink))
        cls = int((heads["cls_weight_mean"] > t.sink_epsilon).sum())
        sep = int((heads["sep_weight_mean"] > t.sink_epsilon).sum())
        shares.append(
            f"n = {n}: {int(sink.sum())} of {len(sink)} = {sink.mean():.2f} [{low:.2f}, "
            f"{high:.2f}] ({cls} on [CLS], {sep} on [SEP])"
        )
    return (
        "mean attention received per layer: "
        + "; ".join(parts)
        + f"; heads with a sink at ε = {t.sink_epsilon} (Gu et al. 2024): "
        + "; ".join(shares)
    )


CLAIMS = (standard_init, large_init, trained_between, sep_sink)
