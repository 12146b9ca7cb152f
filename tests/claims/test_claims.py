"""Each claim's computation on small synthetic summaries, where it holds and where it fails,
and `not measured` for a config without the experiment."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from attnsim.claims import engine
from attnsim.kinds import all_kinds, get_kind
from attnsim.kinds.init_gradient import claims as gradient_claims
from attnsim.kinds.logit_entropy import claims as entropy_claims
from attnsim.kinds.noisy_attention import claims as noisy_claims
from attnsim.kinds.temperature_entropy import claims as temperature_claims
from attnsim.records.experiment import TrialSettings
from attnsim.report import claims as io
from attnsim.store import parquet as store
from attnsim.theory.entropy import asymptotic_gap, exact_gap
from attnsim.theory.noise import kappa


def noisy(
    ratio=1.0, slope=-0.5, heavy_slope=0.1, families=("gaussian", "student_t"), sigmas=(0.1, 0.5)
):
    """A synthetic noisy_attention summary: rel_err ~ n^slope (finite kappa) or n^heavy_slope (kappa
    = inf)."""
    rows = []
    for family in families:
        for sigma in sigmas:
            k = kappa(family, sigma)
            for n in (64, 256, 1024, 4096):
                rel = (math.sqrt(k) if math.isfinite(k) else 0.3) * n ** (
                    slope if math.isfinite(k) else heavy_slope
                )
                rows.append(
                    dict(
                        n=n,
                        d=16,
                        logit_scale=0.0,
                        noise=family,
                        noise_draws=8,
                        noise_scale=sigma,
                        kappa=k,
                        kappa_finite=math.isfinite(k),
                        kappa_sum_p2=k / n,
                        err_ratio=ratio if math.isfinite(k) else None,
                        err_ratio_ci_low=ratio - 0.005 if math.isfinite(k) else None,
                        err_ratio_ci_high=ratio + 0.005 if math.isfinite(k) else None,
                        rel_err_mean=rel,
                        rel_err_se=rel * 0.01,
                    )
                )
    return pd.DataFrame(rows)


def test_delta_method_holds_and_fails():
    assert noisy_claims.DELTA_METHOD["gaussian"](noisy(ratio=1.01)).verdict == "holds"
    bad = noisy_claims.DELTA_METHOD["gaussian"](noisy(ratio=0.8))
    assert (
        bad.verdict == "fails"
        and bad.measured == pytest.approx(0.8)
        and bad.rel_deviation == pytest.approx(-0.2)
    )
    assert noisy_claims.DELTA_METHOD["uniform"](noisy()).verdict == "outside regime"
    assert noisy_claims.DELTA_METHOD["gaussian"](None).verdict == "not measured"


def test_error_rate_slope_is_a_sanity_check():
    good = noisy_claims.ERROR_RATE(noisy(slope=-0.5))
    assert good.verdict == "holds" and good.measured == pytest.approx(-0.5, abs=1e-9)
    assert good.role == "sanity" and good.outcome == ""
    assert noisy_claims.ERROR_RATE(noisy(slope=-0.3)).verdict == "fails"


def test_breakdown():
    """No mean: judged where Student t's largest noisy logit sigma n^(1/3) reaches log n (sigma = 2
    at every n here; sigma = 0.5 nowhere up to n = 4096)."""
    s = noisy(heavy_slope=0.1, sigmas=(0.5, 2.0))
    holds = noisy_claims.BREAKDOWN(s)
    assert (
        holds.verdict == "holds"
        and holds.points == 4
        and math.isnan(holds.predicted)
        and holds.bound == -0.25
    )
    falling = noisy_claims.BREAKDOWN(noisy(heavy_slope=-0.5, sigmas=(0.5, 2.0)))
    assert falling.verdict == "fails" and falling.measured == pytest.approx(-0.5)
    # sigma 0.1, 0.5: not yet dominated
    assert noisy_claims.BREAKDOWN(noisy(heavy_slope=0.1)).verdict == "outside regime"
    assert noisy_claims.BREAKDOWN(noisy(families=("gaussian",))).verdict == "outside regime"


def entropy_summary(shift=0.0, se=1e-5, null=False):
    """A synthetic logit_entropy summary: H = log n - sigma^2/2 + shift (or the null H = log n)."""
    rows = []
    for n in (256, 4096):
        for sigma in (0.0, 0.1, 0.3, 1.0):
            x = sigma / math.sqrt(2 * math.log(n))
            h = math.log(n) if null else math.log(n) - sigma**2 / 2 + shift
            rows.append(
                dict(
                    n=n,
                    logits="gaussian",
                    sigma_eff=sigma,
                    log_n=math.log(n),
                    entropy_mean=h,
                    entropy_ci_low=h - 1.96 * se,
                    entropy_ci_high=h + 1.96 * se,
                    entropy_small_scale=math.log(n) - sigma**2 / 2,
                    rem_x=x,
                    entropy_norm_mean=h / math.log(n),
                    entropy_norm_ci_low=(h - 1.96 * se) / math.log(n),
                    entropy_norm_ci_high=(h + 1.96 * se) / math.log(n),
                )
            )
    return pd.DataFrame(rows)


def test_small_scale_and_rem():
    assert entropy_claims.SMALL_SCALE_ENTROPY(entropy_summary()).verdict == "holds"
    # deficit 0.05 too large
    assert entropy_claims.SMALL_SCALE_ENTROPY(entropy_summary(shift=-0.05)).verdict == "fails"
    liquid = entropy_claims.REM_LIQUID_DEFICIT(entropy_summary())
    assert liquid.verdict == "holds" and liquid.points == 2  # sigma = 1 at n = 256 and 4096
    assert entropy_claims.REM_LIQUID_DEFICIT(entropy_summary(shift=-0.1)).verdict == "fails"


def test_small_scale_entropy_fails_for_the_null_h_equals_log_n():
    """The null H = log n (no deficit at all) must fail, not hold because a wide interval meets a
    band."""
    null = entropy_claims.SMALL_SCALE_ENTROPY(entropy_summary(null=True))
    assert null.verdict == "fails" and null.measured == pytest.approx(0.0)
    assert null.evidence.startswith("0 of 4 points hold (4 fails)")
    # even with a noisy measurement, as long as the intervals exclude the prediction's band
    assert (
        entropy_claims.SMALL_SCALE_ENTROPY(entropy_summary(null=True, se=1e-4)).verdict == "fails"
    )


def gradient_summary(vanish=True):
    rows = []
    for n in (16, 256):
        for scale in (0.1, 1.0, 10.0, 100.0):
            h = math.log(n) * math.exp(-scale) if vanish else math.log(n) / 2
            g = 1.0 / (1 + scale**2) if vanish else 1.0
            rows.append(dict(n=n, d=8, scale=scale, entropy_mean=h, grad_sq_mean=g))
    return pd.DataFrame(rows)


def test_one_hot_vanishing_gradient():
    ok = gradient_claims.ONE_HOT_VANISHING_GRADIENT(gradient_summary())
    assert ok.verdict == "holds" and ok.measured == 1.0 and ok.value_max == 100.0
    # no onset where the sweep reaches large scales: the bound is broken, not out of regime
    assert (
        gradient_claims.ONE_HOT_VANISHING_GRADIENT(gradient_summary(vanish=False)).verdict
        == "fails"
    )


def temperature_summary(excess=-1e-3):
    rows = []
    for n in (16, 256):
        for tau in (0.1, 1.0, 2.0):
            bound = float(exact_gap(n, tau))
            rows.append(
                dict(
                    n=n,
                    d=3,
                    tau=tau,
                    gap_mean=bound / 3,
                    gap_max=bound + excess,
                    gap_exact=bound,
                    gap_within_bound=excess <= 0,
                    n_trials=100,
                )
            )
    return pd.DataFrame(rows)


def test_temperature_claims():
    s = temperature_summary()
    bound = temperature_claims.TAU_ONE_GAP(s)
    assert (
        bound.verdict == "holds"
        and bound.role == "sanity"
        and bound.bound == pytest.approx(0.4745, abs=5e-5)
        and bound.side == "below"
    )
    assert temperature_claims.EXACT_GAP_BOUND(s).verdict == "holds"
    widen = temperature_claims.SMALLER_TAU_WIDENS(s)
    assert (
        widen.verdict == "holds"
        and widen.bound == pytest.approx(float(asymptotic_gap(1.0)))
        and math.isnan(widen.predicted)
    )
    assert f"g(0.1) = {float(asymptotic_gap(0.1)):.4g}" in widen.evidence
    over = temperature_summary(excess=0.6)
    assert (
        temperature_claims.EXACT_GAP_BOUND(over).verdict == "fails"
        and temperature_claims.TAU_ONE_GAP(over).verdict == "fails"
    )
    assert temperature_claims.SMALLER_TAU_WIDENS(s[s["tau"] >= 1]).verdict == "outside regime"


def test_config_without_experiments_gives_not_measured(tmp_path):
    rows = io.evaluate(io.load_summaries(tmp_path / "store", {}), {})
    assert {c.verdict for c in rows} == {"not measured"}
    # every kind's claims and entropy_in_bounds
    assert len(rows) == 1 + sum(len(k.submodule("claims").CLAIMS) for k in all_kinds().values())
    written = io.write(rows, tmp_path, {"seed": 1})
    table = store.read_table(written[0])
    assert table.num_rows == len(rows) and table.schema.field("verdict").metadata[b"description"]
    # the tables list no claim: one line counts those of kinds the sweep does not run
    assert f"{len(rows)} claims need kinds this sweep does not run" in written[1].read_text()
    assert f"{len(rows)} claims need kinds" in written[2].read_text()
    assert set(engine.VERDICTS) >= {c.verdict for c in rows}


def test_entropy_bounds_covers_every_trial_through_the_summaries():
    from types import SimpleNamespace

    from oracles.points import expand
    from oracles.summaries import summarise_points

    from attnsim.jobs.simulate import simulate_points

    points = expand(
        SimpleNamespace(
            kind="logit_entropy",
            grid={"n": [2, 64], "d": [4], "logits": ["gaussian"], "scale": [0.0, 1e4]},
        )
    )
    summary = summarise_points(
        "logit_entropy",
        "ent",
        simulate_points(get_kind("logit_entropy"), TrialSettings(1, 10), points),
        points,
    ).to_pandas()
    claim = engine.entropy_bounds({"ent": summary})
    assert claim.verdict == "holds" and claim.value_min >= 0 and claim.measured <= 1 + 1e-12
    assert "40 trials" in claim.evidence
