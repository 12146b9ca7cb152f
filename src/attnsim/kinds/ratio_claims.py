"""The judgement shared by the claims that a prediction of the output's error holds to first
order (dropout and rounding, docs/science.md §11): at every point of the claim's regime, the
mean over rows of measured / predicted error is 1 within a tolerance fixed before the data, its
95% interval inside the band (equivalence, the engine's `Claim.per_point`)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from attnsim.claims.engine import Claim, select_regime


def within_one(tolerance: float) -> str:
    """The threshold, in the claims' words, of a ratio judged point by point against 1."""
    return f"every point's 95% interval inside 1 ± {tolerance} (equivalence)"


def ratio_is_one(
    claim: Claim,
    s: pd.DataFrame | None,
    regime,
    figure: str,
    ratio: str,
    tolerance: float,
    describe: Callable[[pd.Series], str],
    mean: str = "_mean",
) -> pd.DataFrame | None:
    """Select the claim's `regime` (a mask or a function of the rows) and judge every point's
    `ratio` (column `ratio` + `mean`, 95% interval `ratio`_ci_low/_ci_high) by equivalence with
    1 ± `tolerance`. Returns the judged rows, or None once the verdict is set (not measured,
    outside regime)."""
    rows = select_regime(claim, s, regime, figure)
    if rows is not None:
        claim.per_point(
            rows,
            f"{ratio}{mean}",
            f"{ratio}_ci_low",
            f"{ratio}_ci_high",
            1.0,
            tolerance,
            describe=describe,
        )
    return rows
