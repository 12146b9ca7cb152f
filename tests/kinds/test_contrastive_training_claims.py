"""Claims of `contrastive_training` on constructed summaries: each verdict it can reach (holds,
fails, inconclusive, outside regime, not measured), judged per setting; the best-tau table."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from attnsim.kinds.contrastive_training import claims as cc
from attnsim.kinds.contrastive_training.besttau import best_tau
from attnsim.theory.entropy import exact_gap

CLASS = dict(
    n=32,
    classes=16,
    latent_dim=8,
    input_dim=32,
    embed_dim=8,
    view_noise=2.0,
    positives="class",
    instance_noise=0.0,
    optimiser="adam",
    lr=0.01,
    steps=300,
    loss="infonce",
    bias_init=-10.0,
)
INSTANCE = CLASS | dict(classes=4, view_noise=0.5, positives="instance", instance_noise=2.0)


def row(
    setting,
    tau,
    acc,
    se=0.006,
    mode="fixed",
    entropy=3.3,
    lowest=3.3,
    log_tau=None,
    log_se=0.01,
    excess=0.3,
):
    n = setting["n"]
    floor = math.log(n) - float(exact_gap(n, tau))
    out = setting | dict(
        experiment="c",
        n_trials=48,
        tau=tau,
        tau_mode=mode,
        log_n=math.log(n),
        entropy_gap=float(exact_gap(n, tau)),
    )
    out |= dict(
        entropy_floor=floor,
        ideal_entropy=3.39,
        simplex_attainable=1.0,
        probe_chance=1 / setting["classes"],
        entropy_min_finite=48,
        entropy_min_mean=lowest + 0.05,
    )
    out |= dict(
        entropy_lowest=lowest, entropy_lowest_excess=lowest - floor, entropy_floor_tolerance=1e-11
    )
    out |= dict(entropy_excess_lowest=excess, entropy_excess_tolerance=1e-11)
    out |= dict(
        final_entropy_mean=entropy,
        final_entropy_ci_low=entropy - 0.01,
        final_entropy_ci_high=entropy + 0.01,
    )
    for metric in ("probe_accuracy", "knn_accuracy", "linear_probe_accuracy"):
        out |= {
            f"{metric}_mean": acc,
            f"{metric}_se": se,
            f"{metric}_ci_low": acc - 2 * se,
            f"{metric}_ci_high": acc + 2 * se,
        }
    log_tau = math.log(tau) if log_tau is None else log_tau
    out |= dict(
        log_tau_final_mean=log_tau,
        log_tau_final_ci_low=log_tau - 2 * log_se,
        log_tau_final_ci_high=log_tau + 2 * log_se,
    )
    return out


def sweep(setting, accs: dict, **kw) -> list[dict]:
    return [row(setting, tau, acc, **kw) for tau, acc in accs.items()]


CLASS_WORSE = {0.05: 0.65, 0.2: 0.66, 0.5: 0.62, 1.0: 0.55}
INSTANCE_BETTER = {0.05: 0.66, 0.2: 0.67, 0.5: 0.70, 1.0: 0.74, 2.0: 0.76}


def frame(*rows) -> pd.DataFrame:
    return pd.DataFrame([r for group in rows for r in group])


def test_best_tau_and_its_tied_range():
    t = best_tau(frame(sweep(CLASS, CLASS_WORSE)), "probe_accuracy").iloc[0]
    # 0.65 is within the margin of 0.66 (0.017), 0.62 is not
    assert t["best_tau"] == 0.2 and t["tau_low"] == 0.05 and t["tau_high"] == 0.2
    assert t["diff"] == pytest.approx(-0.11) and t["smaller_tau"] == 0.2 and t["diff_high"] < 0
    assert t["diff_high"] - t["diff"] == pytest.approx(2.0117 * 0.006 * math.sqrt(2), rel=1e-3)


def map_setting(**change) -> dict:
    """A setting of the declared class map (CLASS is one: n 32, 16 classes, view noise 2)."""
    return CLASS | change


def test_the_declared_map_names_every_setting_parameter():
    from attnsim.kinds.contrastive_training import SETTING

    assert set(cc.DECLARED_MAP) == set(SETTING)
    assert math.prod(len(v) for v in cc.DECLARED_MAP.values()) == 16


def whole_map(accs) -> pd.DataFrame:
    """Every declared setting with the same accuracies."""
    settings = [
        map_setting(n=n, classes=c, view_noise=v)
        for n in cc.DECLARED_MAP["n"]
        for c in cc.DECLARED_MAP["classes"]
        for v in cc.DECLARED_MAP["view_noise"]
    ]
    return frame(*(sweep(setting, accs) for setting in settings))


@pytest.mark.parametrize(
    "accs, verdict",
    [
        (CLASS_WORSE, "holds"),
        ({0.05: 0.60, 0.5: 0.61, 1.0: 0.70}, "fails"),
        ({0.05: 0.60, 0.5: 0.61, 1.0: 0.615}, "inconclusive"),
    ],
)
def test_tau_one_worse_probe_on_the_whole_declared_map(accs, verdict):
    claim = cc.TAU_ONE_WORSE_PROBE(whole_map(accs))
    assert claim.verdict == verdict and claim.role == "evidence" and claim.outcome == "open"
    assert claim.figure == "c/temperature_sweep" and claim.alternative_value == 0.02
    assert claim.redeclared_from.startswith("was inconclusive; regime contrastive_training")


def test_tau_one_worse_probe_cannot_hold_on_part_of_the_map():
    """One setting that holds is not the map: the 15 declared settings not run are points without
    an interval (inconclusive); one that fails still fails the claim."""
    one = cc.TAU_ONE_WORSE_PROBE(frame(sweep(CLASS, CLASS_WORSE)))
    assert one.verdict == "inconclusive"
    assert one.evidence.startswith("1 of 16 settings hold (15 inconclusive)")
    assert "15 of the 16 declared settings not run" in one.evidence
    bad = map_setting(view_noise=0.5)
    s = frame(sweep(CLASS, CLASS_WORSE), sweep(bad, {0.05: 0.90, 0.5: 0.95, 1.0: 0.99}))
    assert cc.TAU_ONE_WORSE_PROBE(s).verdict == "fails"


def test_tau_one_worse_probe_regime_is_the_declared_class_map():
    off_map = CLASS | {"classes": 8}  # a class setting nobody declared
    s = frame(sweep(off_map, CLASS_WORSE), sweep(INSTANCE, INSTANCE_BETTER))
    assert cc.TAU_ONE_WORSE_PROBE(s).verdict == "outside regime"
    # no tau = 1
    assert (
        cc.TAU_ONE_WORSE_PROBE(frame(sweep(CLASS, {0.05: 0.6, 0.2: 0.7}))).verdict
        == "outside regime"
    )
    assert cc.TAU_ONE_WORSE_PROBE(None).verdict == "not measured"


def test_instance_claim():
    assert cc.INSTANCE_WORSE_KNN(frame(sweep(INSTANCE, INSTANCE_BETTER))).verdict == "fails"
    assert cc.INSTANCE_WORSE_KNN(frame(sweep(INSTANCE, CLASS_WORSE))).verdict == "holds"
    # without instance noise instance positives are the class task: outside this claim's regime
    assert (
        cc.INSTANCE_WORSE_KNN(
            frame(sweep(INSTANCE | {"instance_noise": 0.0}, INSTANCE_BETTER))
        ).verdict
        == "outside regime"
    )


@pytest.mark.parametrize(
    "entropy, verdict", [(3.35, "fails"), (3.01, "holds"), (3.4657 - 0.9 * 0.4738, "inconclusive")]
)
def test_floor_binds(entropy, verdict):
    s = frame(sweep(CLASS, {0.2: 0.66}), [row(CLASS, 1.0, 0.55, entropy=entropy)])
    claim = cc.FLOOR_BINDS(s)
    assert claim.verdict == verdict, claim.evidence
    assert "the best tau there (0.2" in claim.evidence


@pytest.mark.parametrize("lowest, verdict", [(3.3, "holds"), (2.9919, "holds"), (2.98, "fails")])
def test_training_entropy_floor_is_a_sanity_check(lowest, verdict):
    s = frame(sweep(CLASS, CLASS_WORSE, lowest=lowest))
    claim = cc.TRAINING_ENTROPY_FLOOR(s)
    assert claim.role == "sanity" and claim.verdict == verdict
    assert cc.TRAINING_ENTROPY_FLOOR(s.query("tau < 1")).verdict == "outside regime"


def learned(setting, tau0, log_tau, **kw):
    return [row(setting, tau0, 0.6, mode="learned", log_tau=log_tau, **kw)]


def test_learned_entropy_floor():
    assert cc.LEARNED_ENTROPY_FLOOR(frame(learned(CLASS, 1.0, -1.4, excess=0.002))).verdict == (
        "holds"
    )
    assert cc.LEARNED_ENTROPY_FLOOR(frame(learned(CLASS, 1.0, -1.4, excess=-1e-6))).verdict == (
        "fails"
    )
    assert cc.LEARNED_ENTROPY_FLOOR(frame(sweep(CLASS, CLASS_WORSE))).verdict == "outside regime"


@pytest.mark.parametrize("log_tau, verdict", [(-1.4, "holds"), (0.3, "fails"), (-0.005, "fails")])
def test_learned_tau_falls_is_a_sanity_check(log_tau, verdict):
    """A sanity bound (§10.4: the sign of dL/dt): holds when every point's interval of tau_final
    is below 1; an interval reaching 1 breaks it (no inconclusive for a sanity check)."""
    s = frame(learned(CLASS, 1.0, log_tau), learned(CLASS, 0.07, -1.5))
    claim = cc.LEARNED_TAU_FALLS(s)
    assert claim.verdict == verdict and claim.role == "sanity" and claim.points == 1
    assert claim.bound == 1.0 and claim.measured == pytest.approx(math.exp(log_tau + 0.02))


@pytest.mark.parametrize(
    "log_tau, verdict",
    [
        (math.log(0.25), "holds"),
        (math.log(0.01), "fails"),
        (math.log(0.2 * math.sqrt(2)), "inconclusive"),
    ],
)
def test_learned_tau_settles_at_best(log_tau, verdict):
    # best 0.2, tied 0.05-0.2: band [0.035, 0.28]
    s = frame(sweep(CLASS, CLASS_WORSE), learned(CLASS, 1.0, log_tau))
    claim = cc.LEARNED_TAU_SETTLES_AT_BEST(s)
    assert claim.verdict == verdict, claim.evidence
    centre = (math.log(0.05 / math.sqrt(2)) + math.log(0.2 * math.sqrt(2))) / 2
    half = (math.log(0.2 * math.sqrt(2)) - math.log(0.05 / math.sqrt(2))) / 2
    assert claim.measured == pytest.approx((log_tau - centre) / half)
    assert "vs best fixed 0.2 (tied 0.05-0.2)" in claim.evidence
    # no fixed tau to compare
    assert (
        cc.LEARNED_TAU_SETTLES_AT_BEST(frame(learned(CLASS, 1.0, log_tau))).verdict
        == "outside regime"
    )


def test_every_claim_declares_its_regime_reason_and_alternative_before_the_data():
    for spec in cc.CLAIMS:
        claim = spec(None)
        assert (
            claim.verdict == "not measured"
            and claim.regime
            and claim.reason.startswith("docs/science.md §")
        ), claim.claim_id
        assert (claim.role == "sanity") == (spec.alternative is None), claim.claim_id


# --------------------------------------------------------------------------- issue 43's claims


def flip_setting(**change) -> dict:
    """A setting of the declared debiased slice below the flip (8 classes, view noise 0.375)."""
    return {k: v[0] for k, v in cc.DECLARED_FLIP.items()} | change


def whole_flip(accs) -> pd.DataFrame:
    settings = [
        flip_setting(classes=c, view_noise=v)
        for c in cc.DECLARED_FLIP["classes"]
        for v in cc.DECLARED_FLIP["view_noise"]
    ]
    return frame(*(sweep(setting, accs) for setting in settings))


def test_the_declared_flip_slice_names_every_setting_parameter_below_the_flip():
    from attnsim.kinds.contrastive_training import SETTING

    assert set(cc.DECLARED_FLIP) == set(SETTING)
    noise = cc.DECLARED_FLIP["instance_noise"][0]
    assert all(v / noise <= cc.FLIP_BELOW for v in cc.DECLARED_FLIP["view_noise"])


@pytest.mark.parametrize(
    "accs, verdict",
    [(CLASS_WORSE, "holds"), (INSTANCE_BETTER, "fails"), ({0.05: 0.7, 1.0: 0.705}, "inconclusive")],
)
def test_debiased_claim_is_judged_on_the_whole_declared_slice(accs, verdict):
    claim = cc.DEBIASED_BELOW_FLIP(whole_flip(accs))
    assert claim.verdict == verdict, claim.evidence
    part = cc.DEBIASED_BELOW_FLIP(frame(sweep(flip_setting(), CLASS_WORSE)))
    assert (
        part.verdict == "inconclusive" and "3 of the 4 declared settings not run" in part.evidence
    )
    # plain InfoNCE on the same slice is not this claim's regime
    plain = whole_flip(accs).assign(loss="infonce")
    assert cc.DEBIASED_BELOW_FLIP(plain).verdict == "outside regime"


def test_siglip_claim_judges_each_kind_of_positives_by_its_accuracy():
    siglip_class, siglip_instance = CLASS | {"loss": "siglip"}, INSTANCE | {"loss": "siglip"}
    both = frame(sweep(siglip_class, CLASS_WORSE), sweep(siglip_instance, INSTANCE_BETTER))
    claim = cc.SIGLIP_TAU_ONE_WORSE(both)
    assert claim.verdict == "fails" and "1 of 2 settings hold" in claim.evidence
    assert cc.SIGLIP_TAU_ONE_WORSE(frame(sweep(siglip_class, CLASS_WORSE))).verdict == "holds"
    assert cc.SIGLIP_TAU_ONE_WORSE(frame(sweep(CLASS, CLASS_WORSE))).verdict == "outside regime"


@pytest.mark.parametrize("log_tau, verdict", [(math.log(0.2), "holds"), (math.log(0.01), "fails")])
def test_siglip_learnt_tau_from_its_own_start(log_tau, verdict):
    setting = CLASS | {"loss": "siglip"}
    s = frame(sweep(setting, CLASS_WORSE), learned(setting, 0.1, log_tau))
    assert cc.SIGLIP_LEARNED_TAU_SETTLES(s).verdict == verdict
    # an InfoNCE run from 0.1 or a SigLIP run from 1 is not SigLIP's start
    assert (
        cc.SIGLIP_LEARNED_TAU_SETTLES(
            frame(sweep(CLASS, CLASS_WORSE), learned(CLASS, 0.1, log_tau))
        ).verdict
        == "outside regime"
    )


@pytest.mark.parametrize(
    "entropy, verdict",
    [(3.4657 - 0.1, "holds"), (3.4657 - 0.03, "fails"), (3.4657 - 0.9 * 0.0757, "inconclusive")],
)
def test_tau_one_reaches_optimum_gap(entropy, verdict):
    """The optimum's gap here: log 32 - 3.39 = 0.0757 nats; the trained gap over it against 0.9."""
    s = frame(sweep(CLASS, {0.2: 0.66}), [row(CLASS, 1.0, 0.55, entropy=entropy)])
    claim = cc.OPTIMUM_GAP_REACHED(s)
    assert claim.verdict == verdict, claim.evidence
    unattainable = s.assign(simplex_attainable=0.0)
    assert cc.OPTIMUM_GAP_REACHED(unattainable).verdict == "outside regime"


def test_flip_interval_brackets_the_sign_change():
    from attnsim.kinds.contrastive_training.besttau import flip_interval

    diffs = {0.375: 0.10, 0.75: 0.06, 1.125: 0.01, 1.5: -0.05, 2.25: -0.08}
    table = pd.DataFrame(
        [
            dict(view_noise=v, instance_noise=1.5, diff=d, diff_low=d - 0.02, diff_high=d + 0.02)
            for v, d in diffs.items()
        ]
    )
    flip = flip_interval(table)
    assert flip["low"] == 0.5 and flip["high"] == 1.0  # 0.75 is tied (0.01 +- 0.02)
    assert flip["zero"] == pytest.approx(0.75 + 0.25 * 0.01 / 0.06)
    none = flip_interval(table.assign(diff=0.5, diff_low=0.4, diff_high=0.6))
    assert none["low"] == 1.5 and math.isnan(none["high"]) and math.isnan(none["zero"])


def test_every_evidence_claim_is_declared_with_a_variance_and_a_valid_alternative():
    """Issue 49: alternatives where the rule says fails (+0.02 accuracy, a declared smallest
    effect; -2 in the settle claims' units; 0.75; the optimum encoder's share), a variance fixed
    before the run (pilot at another seed), and the old verdict of each re-declared claim."""
    from attnsim.claims import power
    from attnsim.kinds.contrastive_training.redeclared import WAS

    for spec in cc.CLAIMS:
        if spec.role == "sanity":
            continue
        assert spec.variance is not None and spec.variance.source == "pilot", spec.claim_id
        refusal = power.alternative_refusal(spec.claim_id, spec.rule, spec.alternative.value)
        assert refusal == "", refusal
    declared = {s.claim_id: s.redeclared_from for s in cc.CLAIMS}
    for claim_id, (verdict, _) in WAS.items():
        assert declared[claim_id].startswith(f"was {verdict}; regime "), claim_id
    # the optimum's share from the design: the largest over the planned class settings
    assert cc.OPTIMUM_SHARE == pytest.approx(0.4495, abs=1e-3) and cc.OPTIMUM_SHARE < 0.9


def test_siglip_evidence_gives_each_bias_start():
    """Each bias start is a setting of its own (§10.9): the claim holds only if it holds at every
    start, and the evidence names the farthest difference per start."""
    from attnsim.kinds.contrastive_training.kernel import prior_bias

    siglip = CLASS | {"loss": "siglip"}
    starts = [siglip | {"bias_init": b} for b in (round(prior_bias(32), 3), -10.0, 0.0)]
    rows = frame(*(sweep(s, CLASS_WORSE) for s in starts))
    claim = cc.SIGLIP_TAU_ONE_WORSE(rows)
    assert claim.verdict == "holds", claim.evidence
    for start in cc.BIAS_STARTS:
        assert start in claim.evidence
    worse_at_zero = [sweep(s, CLASS_WORSE) for s in starts[:2]]
    tied = {0.05: 0.60, 0.5: 0.61, 1.0: 0.70}
    mixed = frame(*worse_at_zero, sweep(starts[2], tied))
    assert cc.SIGLIP_TAU_ONE_WORSE(mixed).verdict == "fails"
