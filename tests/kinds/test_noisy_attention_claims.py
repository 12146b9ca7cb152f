"""The noisy_attention claims on synthetic summaries: every point judged by equivalence
(delta_method_<family>, next_order_theory) in the regime the theory sets before the data, the
delta_slow exponent (one-sided), the heavy tails by their own rates where the theory fixes them,
and a low-power sweep that can only be inconclusive. The claims are ClaimSpecs the engine judges
(a spec is called on the kind's rows)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from attnsim.kinds.noisy_attention import claims
from attnsim.theory import delta_next
from attnsim.theory.noise import kappa


def summary(
    family="gaussian",
    sigmas=(0.1, 0.3),
    ratio=1.0,
    next_err=1.0,
    se=0.004,
    shortfall=None,
    ns=(64, 256, 1024, 4096),
):
    """Rows of a noisy_attention summary at uniform and non-uniform weights; err_ratio = `ratio` (a
    number,
    or a function of the row) or 1 - shortfall(sum p^2, logit_scale, sigma)."""
    rows = []
    for sigma in sigmas:
        k = kappa(family, sigma)
        for logit_scale in (0.0, 1.0):
            for n in ns:
                sum_p2 = (1 if logit_scale == 0 else math.e) / n
                row = dict(
                    experiment="robustness",
                    n=n,
                    d=16,
                    logit_scale=logit_scale,
                    noise=family,
                    noise_draws=8,
                    noise_scale=sigma,
                    n_trials=1000,
                )
                r = (
                    1 - shortfall(sum_p2, logit_scale, sigma)
                    if shortfall
                    else ratio(row)
                    if callable(ratio)
                    else ratio
                )
                row.update(
                    kappa=k,
                    kappa_finite=math.isfinite(k),
                    kappa_sum_p2=k * sum_p2,
                    err_ratio=r,
                    err_ratio_se=se,
                    err_ratio_ci_low=r - 1.96 * se,
                    err_ratio_ci_high=r + 1.96 * se,
                    next_ratio=r,
                    next_err_ratio=next_err(row) if callable(next_err) else next_err,
                    next_err_ratio_se=se,
                )
                rows.append(row)
    return pd.DataFrame(rows)


def in_regime(s, family="gaussian"):
    rows = s[s["noise"] == family]
    return rows[claims.predicted_correction(rows) <= claims.THRESHOLDS.correction_max]


def test_every_point_within_tolerance_holds():
    s = summary(ratio=0.98)
    judged = len(in_regime(s))
    c = claims.DELTA_METHOD["gaussian"](s)
    assert c.verdict == "holds" and c.number == "range over points" and c.statement == "robustness"
    assert (
        c.evidence.startswith(f"{judged} of {judged} points hold")
        and c.figure == "robustness/delta_shortfall"
    )
    assert (
        c.points == judged
        and c.trials == 1000 * judged
        and c.tolerance == 0.05
        and c.detectable == pytest.approx(1.96 * 0.004)
        and c.outcome == "open"
        and c.alternative_value == 0.9
    )


def test_the_regime_comes_from_the_predicted_correction_not_from_kappa_sum_p2():
    """Gaussian sigma = 0.3 at logit_scale 1, n = 64 has kappa sum p^2 = 0.004 (inside the old cut
    0.01) but a predicted first correction of 0.057 (§2.8): it is the next-order claim's point."""
    s = summary(ratio=0.98)
    row = s[(s["noise_scale"] == 0.3) & (s["logit_scale"] == 1.0) & (s["n"] == 64)]
    assert float(row["kappa_sum_p2"].iloc[0]) < 0.01
    assert float(claims.predicted_correction(row).iloc[0]) == pytest.approx(0.057, abs=0.002)
    assert row.index[0] not in in_regime(s).index
    one_off = summary(
        ratio=lambda r: (
            0.90 if (r["noise_scale"], r["logit_scale"], r["n"]) == (0.3, 1.0, 64) else 1.0
        )
    )
    c = claims.DELTA_METHOD["gaussian"](one_off)
    assert c.verdict == "holds"  # the 0.90 point is not judged here, nor by the next-order claim
    # (issue 49): with a first correction below 0.10 the two theories are not told apart there
    assert claims.NEXT_ORDER(one_off).verdict == "outside regime"


def test_every_point_off_fails():
    c = claims.DELTA_METHOD["gaussian"](summary(ratio=0.8))
    assert (
        c.verdict == "fails" and c.measured == pytest.approx(0.8) and c.evidence.startswith("0 of")
    )


def test_one_point_off_fails_although_the_mean_is_within_tolerance():
    """All points at 1.01 but one at 0.78: the mean over points is within 5%, the claim is not."""
    s = summary(
        ratio=lambda row: (
            0.78 if (row["n"], row["noise_scale"], row["logit_scale"]) == (256, 0.1, 1.0) else 1.01
        )
    )
    judged = len(in_regime(s))
    assert abs(in_regime(s)["err_ratio"].mean() - 1) < 0.05
    c = claims.DELTA_METHOD["gaussian"](s)
    assert c.verdict == "fails" and c.measured == pytest.approx(0.78)
    assert c.value_min == pytest.approx(0.78) and c.value_max == pytest.approx(1.01)
    assert math.isnan(c.ci_low) and math.isnan(c.ci_high)  # a range, not a confidence interval
    assert c.evidence.startswith(f"{judged - 1} of {judged} points hold (1 fails), worst 0.78")
    assert "at (n=256, σ=0.1, logit_scale=1)" in c.evidence


def test_a_point_whose_interval_straddles_the_band_edge_is_inconclusive():
    s = summary(ratio=0.955, se=0.01)  # [0.935, 0.975] straddles 0.95
    assert claims.DELTA_METHOD["gaussian"](s).verdict == "inconclusive"
    assert claims.DELTA_METHOD["gaussian"](summary(ratio=0.94, se=0.001)).verdict == "fails"
    assert claims.DELTA_METHOD["gaussian"](summary(ratio=0.96, se=0.001)).verdict == "holds"


def test_points_are_counted_by_noise_regime():
    s = summary(
        "laplace",
        sigmas=(0.1, 0.25, 0.4),
        ratio=lambda row: 0.8 if row["noise_scale"] == 0.25 else 1.0,
        ns=(4096, 16384, 65536),
    )
    c = claims.DELTA_METHOD["laplace"](s)
    assert c.verdict == "fails" and "points by noise regime: " in c.evidence
    assert "delta_slow" in c.evidence and " delta," in c.evidence


def test_next_order_theory_per_point_and_its_regime():
    """Judged where the omitted term is small and the delta method's first correction is at least
    0.10 (issue 49: there the plain delta method, the alternative, lies beyond the band)."""
    t = claims.THRESHOLDS
    grid = dict(sigmas=(0.5, 0.7), ns=(4, 8, 16, 32, 64))
    s = summary(next_err=1.01, **grid)
    inside = (claims.predicted_truncation(s) <= t.truncation_max) & (
        claims.predicted_correction(s) >= t.next_apart_min
    )
    c = claims.NEXT_ORDER(s)
    assert c.verdict == "holds" and c.points == int(inside.sum()) == 2
    judged = {(0.5, 0.0, 8), (0.7, 0.0, 16)}

    def at(row):
        return (row["noise_scale"], row["logit_scale"], row["n"])

    one_off = claims.NEXT_ORDER(
        summary(next_err=lambda r: 1.2 if at(r) == (0.5, 0, 8) else 1, **grid)
    )
    assert one_off.verdict == "fails" and one_off.measured == pytest.approx(1.2)
    # a miss where the theories agree (correction < 0.10) or the omitted term is large: not judged
    rest = claims.NEXT_ORDER(summary(next_err=lambda r: 1.0 if at(r) in judged else 1.3, **grid))
    assert rest.verdict == "holds" and rest.points == 2
    assert c.alternative_value == pytest.approx(1 / 1.1, abs=1e-4) and c.redeclared_from


def test_correction_sizes_follow_the_uniform_weight_expansion():
    """At uniform weights the predicted terms are the 1/n and 1/n^2 coefficients of §2.8."""
    kappa_, mu3, mu4 = delta_next.u_moments("gaussian", 1.0)
    z = delta_next.correction_sizes("gaussian", 1.0, 1 / 256, 0.0)
    assert z["first"] == pytest.approx((3 * kappa_**2 - 2 * mu3) / kappa_ / 256)
    assert z["second"] == pytest.approx(
        (3 * mu4 - 9 * kappa_**2 - 16 * kappa_ * mu3 + 15 * kappa_**3) / kappa_ / 256**2
    )
    assert z["tail"] == 0 and delta_next.delta_correction(z) == pytest.approx(abs(z["first"]))
    assert delta_next.next_order_truncation(z) == pytest.approx(z["second"] ** 2 / abs(z["first"]))
    slow = delta_next.correction_sizes("laplace", 0.5, 1 / 256, 0.0)  # k* = 2.83: the tail term, p1
    assert (
        slow["order"] == "p1"
        and slow["tail"] < 0
        and delta_next.next_order_truncation(slow) == pytest.approx(abs(slow["second"]))
    )
    assert (
        delta_next.correction_sizes("student_t", 1.0, 0.01) is None
        and delta_next.delta_correction(None) == math.inf
    )


def test_correction_sizes_against_the_next_order_theory_on_lognormal_weights():
    """With clean logits N(0, l^2) the predicted first + tail + second terms match the next-order
    theory evaluated on drawn weights and values (the shape factors e^{l^2} of §2.8)."""
    rng = np.random.default_rng(3)
    n, trials, d = 4096, 40, 8
    for noise, sigma, scale in (("gaussian", 0.3, 1.0), ("laplace", 0.4, 0.5)):
        s = rng.normal(0, scale, (trials, n))
        p = np.exp(s - s.max(axis=1, keepdims=True))
        v = rng.standard_normal((trials, n, d))
        stats = delta_next.next_order_stats(p, v, tail_power=delta_next.tail_power(noise, sigma))
        theory = (
            np.mean(delta_next.next_order_from_stats(stats, noise, sigma, "p2"))
            / np.mean(delta_next.sq_err_delta(p, v, noise, sigma))
            - 1
        )
        z = delta_next.correction_sizes(noise, sigma, float(np.mean(stats["sum_p2"])), scale)
        assert z["first"] + z["tail"] + z["second"] == pytest.approx(theory, rel=0.1), (
            noise,
            sigma,
        )


@pytest.mark.parametrize(
    ("alpha", "verdict"), [(0.83, "holds"), (0.914, "inconclusive"), (1.2, "fails")]
)
def test_delta_slow_exponent_is_recovered(alpha, verdict):
    """1 - ratio = A (sum p^2)^alpha with an amplitude per logit scale, at laplace sigma = 0.5 (k* =
    2.83):
    the fit recovers alpha; one-sided against the bound midway between k* - 2 and 1 (0.914, issue
    49): holds when the interval lies below it, inconclusive when it contains it, fails above."""
    amp = {0.0: 20.0, 1.0: 35.0}
    s = summary(
        "laplace",
        sigmas=(0.5,),
        shortfall=lambda p2, ls, sigma: amp[ls] * p2**alpha,
        ns=(256, 1024, 4096, 16384, 65536),
        se=1e-4,
    )
    c = claims.DELTA_SLOW_RATE["laplace"](s)
    assert c.verdict == verdict and c.measured == pytest.approx(alpha, abs=2e-3)
    assert (
        math.isnan(c.predicted)
        and (c.bound, c.side) == (claims.SLOW_BOUND["laplace"], "below") == (0.914, "below")
        and c.number == "fitted slope (95% CI)"
        and c.alternative_value == 1.0
    )
    assert c.ci_low - 1e-9 <= alpha <= c.ci_high + 1e-9
    assert (" meets the asymptotic k* - 2 = 0.83" in c.evidence) == (abs(alpha - 0.83) <= 0.1)


def test_shortfall_fit_is_not_biased_by_unresolved_points():
    """Points whose shortfall is below its SE (even negative) enter as they are: the exponent from
    noisy
    data scatters around the truth (a log-log fit of the resolved points only would be too flat)."""
    rng = np.random.default_rng(0)
    fits = []
    for _ in range(200):
        s = summary(
            "laplace",
            sigmas=(0.5,),
            shortfall=lambda p2, ls, sigma: 20 * p2**0.8,
            ns=(64, 256, 1024, 4096, 16384),
            se=0.004,
        )
        s["err_ratio"] += rng.normal(0, 0.004, len(s))
        fits.append(claims.shortfall_fit(s, 1 - s["err_ratio"], s["err_ratio_se"])[0])
    assert abs(np.median(fits) - 0.8) < 0.03


def test_delta_slow_is_outside_regime_without_delta_slow_points():
    assert (
        claims.DELTA_SLOW_RATE["laplace"](summary("laplace", sigmas=(0.1, 0.3))).verdict
        == "outside regime"
    )
    assert claims.DELTA_SLOW_RATE["gumbel"](None).verdict == "not measured"
