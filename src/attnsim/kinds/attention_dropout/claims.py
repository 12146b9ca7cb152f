"""Claims on attention dropout (docs/science.md §11.6), judged on `attention_dropout` summaries;
regimes and tolerances from §11.6, fixed before the data."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from attnsim.claims.engine import Claim
from attnsim.kinds.ratio_claims import ratio_is_one, within_one


@dataclass(frozen=True)
class Thresholds:
    # measured / predicted within 1 +- 0.05, as the essay's delta-method claims
    ratio_tolerance: float = 0.05
    # the delta method's predicted first correction (§2.8) at most half the tolerance
    delta_correction_max: float = 0.025


THRESHOLDS = Thresholds()
FIGURE = "dropout_error"
REASON = "docs/science.md §11.6"


def _point(row) -> str:
    return (
        f"({row['form']}, rate={row['rate']:g}, σ={row['logit_scale']:g}, "
        f"value_mean={row['value_mean']:g}, n={row['n']})"
    )


def _transformers(r: pd.DataFrame) -> pd.Series:
    """Dropout as transformers apply it, at a rate that drops something."""
    return (r["form"] == "transformers") & (r["rate"] > 0)


def transformers_exact(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "dropout_transformers_exact",
        "Dropout as transformers apply it (mask after the softmax, x 1/(1 - p), not renormalised) "
        "changes the output by "
        "E||o~ - o||^2 = p/(1 - p) sum w_i^2 ||v_i||^2, exactly.",
        statement="robustness",
        number="mean (95% CI)",
        role="sanity",
        regime="attention_dropout, form transformers, rate > 0 (an identity: w~ - w has "
        "independent entries of variance w^2 p/(1 - p))",
        reason=REASON,
        compared_to="1: mean over rows of sq_err / (p/(1 - p) sum p^2 ||v||^2), at every point",
        threshold=f"every point's 95% interval inside 1 ± {t.ratio_tolerance} (it can fail only "
        "through a bug)",
    )
    ratio_is_one(claim, s, _transformers, FIGURE, "ratio_exact", t.ratio_tolerance, _point)
    return claim


def transformers_iid(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "dropout_transformers_iid",
        "The essay's delta method, kappa sum p^2 ||v - o||^2 with the dropout law's kappa = p/(1 "
        "- p), predicts the error of dropout as transformers apply it.",
        statement="robustness",
        number="mean (95% CI)",
        role="evidence",
        regime="attention_dropout, form transformers, rate > 0 (no expansion: the error is linear "
        "in the mask)",
        reason=REASON,
        compared_to="1: mean over rows of sq_err / (kappa sum p^2 ||v - o||^2), at every point; "
        "compared with the exact "
        "factor sum p^2 ||v||^2 / sum p^2 ||v - o||^2",
        threshold=within_one(t.ratio_tolerance),
    )
    rows = ratio_is_one(claim, s, _transformers, FIGURE, "ratio_iid", t.ratio_tolerance, _point)
    if rows is None:
        return claim
    claim.evidence += (
        "; the exact factor sum p^2||v||^2 / sum p^2||v - o||^2 is "
        f"{rows['value_factor'].min():.3f}-{rows['value_factor'].max():.3f}: "
        "without renormalisation the output's norm fluctuates, so a common mean of the values "
        "counts"
    )
    return claim


def logit_delta(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "dropout_logit_delta",
        "Dropout as logit noise (eps = -inf on dropped keys, renormalised) is i.i.d. noise with "
        "kappa = p/(1 - p): the "
        "essay's delta method predicts its error.",
        statement="robustness",
        number="mean (95% CI)",
        role="evidence",
        regime="attention_dropout, form logit, rate > 0, the delta method's correction predicted "
        "by the next order p2 "
        "(docs/science.md §2.8 with the Bernoulli moments, from the same rows' clean sums) <= "
        f"{t.delta_correction_max}",
        reason=REASON,
        compared_to="1: mean over rows of sq_err / (kappa sum p^2 ||v - o||^2), at every point; "
        "compared with the next order",
        threshold=within_one(t.ratio_tolerance),
    )
    rows = ratio_is_one(
        claim,
        s,
        lambda r: (
            (r["form"] == "logit")
            & (r["rate"] > 0)
            & (r["delta_correction"] <= t.delta_correction_max)
        ),
        FIGURE,
        "ratio_iid",
        t.ratio_tolerance,
        _point,
    )
    if rows is None:
        return claim
    claim.evidence += (
        "; next order: measured / p2 "
        f"{rows['ratio_next_mean'].min():.3f}-{rows['ratio_next_mean'].max():.3f}"
    )
    return claim


CLAIMS = (transformers_exact, transformers_iid, logit_delta)
