"""recall_training's claims (declared in its claims module, judged by the engine) on synthetic
rows: each rule holds, fails and is inconclusive where it should, the escape-time law is fitted
on every run (censored runs included) and recovers known exponents, "not measured" means the
sweep has no run of the thing, and no verdict depends on which experiment comes first."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from attnsim.claims.engine import judge
from attnsim.kinds.recall_training import claims as rc
from attnsim.kinds.recall_training import wilson
from attnsim.kinds.recall_training.redeclared import WAS

SETTING = dict(
    n=16, d=16, batch=32, values="trainable", logits="dot", log_n=math.log(16), escape_exponent=0.5
)
SCALES = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0]
RUNS = 16


def escape_rows(
    optimiser="adam",
    exponent=0.5,
    sigma=0.2,
    shares=None,
    steps=10000,
    lr=0.03,
    seed=0,
    runs=RUNS,
    **extra,
) -> pd.DataFrame:
    """Synthetic escape points: per run, log T = log 100 + exponent log(logit_std) + sigma W (W
    standard minimum-Gumbel: Weibull times), censored at the budget; the share escaped by the
    budget from `shares` (Wilson, `runs` runs) where given, else from the runs."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, scale in enumerate(SCALES):
        logit_std = scale**2 * math.sqrt(1.09)
        times = np.exp(
            math.log(100)
            + exponent * math.log(logit_std)
            + sigma * np.log(rng.exponential(size=runs))
        )
        escaped = (times <= steps).astype(float)
        share = escaped.mean() if shares is None else shares[i]
        low, high = wilson(round(share * runs), runs)
        median = float(np.median(times))
        rows.append(
            SETTING
            | dict(experiment="p", n_trials=runs, scale=scale, optimiser=optimiser, lr=lr)
            | dict(steps=steps, stop="threshold", logit_std=logit_std)
            | dict(
                init_logit_std_mean=logit_std,
                init_entropy_mean=2.7 * math.exp(-logit_std / 3),
                init_grad_qk_mean=1 / logit_std,
            )
            | dict(
                escape_median=median if median <= steps else math.inf,
                escape_median_ci_low=median / 1.2,
                escape_median_ci_high=median * 1.2 if median * 1.2 <= steps else math.inf,
                escaped_ckpt_7=share,
                escaped_ckpt_7_ci_low=low,
                escaped_ckpt_7_ci_high=high,
                zhai_margin_min_min=0.01,
                runs={"escape_step": np.minimum(times, steps), "escaped": escaped},
            )
            | extra
        )
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "shares, verdict",
    [([1, 1, 1, 1, 0.5, 0.25, 0.0], "fails"), ([1, 1, 1, 0.0, 0.0, 0.0, 0.0], "inconclusive")],
)
def test_impossible_claim_fails_where_runs_escape(shares, verdict):
    rows = escape_rows(shares=shares)
    result = judge(rc.ONE_HOT_START_IMPOSSIBLE, rows)
    assert result.verdict == verdict, result.evidence  # 0 of 16 cannot show <= 5%: never holds
    many = escape_rows(shares=[1, 1, 1, 0, 0, 0, 0]).assign(escaped_ckpt_7_ci_high=0.01)
    assert judge(rc.ONE_HOT_START_IMPOSSIBLE, many).verdict == "holds"  # e.g. 0 of 400
    assert judge(rc.ONE_HOT_START_IMPOSSIBLE, rows.head(2)).verdict == "outside regime"
    assert judge(rc.ONE_HOT_START_IMPOSSIBLE, None).verdict == "not measured"
    assert "budget" in rc.ONE_HOT_START_IMPOSSIBLE.budget and "flip" in result.budget


def law(optimiser: str):
    return next(c for c in rc.CLAIMS if c.claim_id == f"plateau_law_{optimiser}")


def grows(optimiser: str):
    return next(c for c in rc.CLAIMS if c.claim_id == f"escape_time_grows_with_scale_{optimiser}")


@pytest.mark.parametrize(
    "exponent, sigma, verdict",
    [
        (0.5, 0.2, "holds"),
        (1.2, 0.2, "fails"),
        (0.75, 0.2, "inconclusive"),
        (0.5, 3.0, "inconclusive"),
    ],
)
def test_plateau_law_on_every_run_against_its_prediction(exponent, sigma, verdict):
    rows = escape_rows(exponent=exponent, sigma=sigma, steps=3000)
    result = judge(law("adam"), rows)
    assert result.verdict == verdict, result.evidence
    assert result.number == "fitted slope (95% CI)" and result.unit == "runs"
    in_regime = rows[rows["logit_std"] >= 4]
    assert result.points == len(in_regime) and result.n == RUNS * len(in_regime)
    # the interval covers the true exponent (fixed seed), and it is a confidence interval
    assert result.ci_low <= exponent <= result.ci_high
    assert "log-normal" in result.evidence
    if verdict == "holds":  # the out-of-sample comparison of predictors: 4 finite medians
        assert "out of sample" in result.evidence


def test_censored_runs_enter_the_fit():
    """At budget 3000 the largest scales' runs are censored (the medians beyond the budget): the
    fit still recovers the exponent, from every run."""
    rows = escape_rows(exponent=1.0, steps=3000, seed=4)
    censored = sum(int((1 - r["escaped"]).sum()) for r in rows["runs"])
    assert censored > RUNS  # more than one point's worth of runs censored
    result = judge(law("sgd"), rows.assign(optimiser="sgd"))
    assert result.verdict == "holds" and f"{censored} censored" in result.evidence


def test_growth_claim():
    rows = escape_rows(exponent=0.5)
    assert judge(grows("adam"), rows).verdict == "holds"
    assert judge(grows("adam"), escape_rows(exponent=-0.5)).verdict == "fails"
    # measured, but no run escapes at two scales of the regime: the exponent is not identified
    stuck = escape_rows(exponent=0.5, steps=10)
    result = judge(grows("adam"), stuck)
    assert result.verdict == "inconclusive" and "not identified" in result.evidence


def test_not_measured_means_no_run_of_the_optimiser():
    adam = escape_rows()
    for claim in (law("sgd"), grows("sgd")):
        assert judge(claim, adam).verdict == "not measured"
        # SGD runs, but none in the law's regime (logit std >= 4): outside regime
        sgd_small = escape_rows(optimiser="sgd").head(1)
        assert judge(claim, pd.concat([adam, sgd_small])).verdict == "outside regime"


def test_separating_claim():
    escaping = escape_rows(optimiser="normgd", shares=[1, 1, 1, 1, 0.75, 0.5, 0.3])
    assert judge(rc.NORMALISED_STEPS_STALL, escaping).verdict == "fails"
    stalled = escape_rows(optimiser="normgd", shares=[1, 1, 1, 0, 0, 0, 0]).assign(
        escaped_ckpt_7_ci_high=0.01
    )
    assert judge(rc.NORMALISED_STEPS_STALL, stalled).verdict == "holds"
    assert judge(rc.NORMALISED_STEPS_STALL, escape_rows()).verdict == "not measured"


def test_mover_interval_of_a_difference():
    """MOVER on two Wilson intervals is Newcombe's hybrid score interval (Newcombe 1998, method
    10, example (a): 56/70 vs 48/80, difference 0.2, interval [0.0524, 0.3339])."""
    (l1, u1), (l2, u2) = wilson(56, 70), wilson(48, 80)
    low, high = rc.mover(56 / 70, l1, u1, 48 / 80, l2, u2)
    assert low == pytest.approx(0.0524, abs=1e-4) and high == pytest.approx(0.3339, abs=1e-4)
    # symmetric intervals: the Wald interval of the difference
    low, high = rc.mover(1.0, 0.8, 1.2, 0.5, 0.2, 0.8)
    assert (low, high) == pytest.approx((0.5 - math.hypot(0.2, 0.3), 0.5 + math.hypot(0.2, 0.3)))


def map_rows(optimiser, exponents: dict, seed=0) -> pd.DataFrame:
    """Escape rows of one optimiser in cells (batch, lr) -> the cell's true exponent."""
    frames = [
        escape_rows(optimiser=optimiser, exponent=b, lr=lr, seed=seed + i, batch=batch)
        for i, ((batch, lr), b) in enumerate(sorted(exponents.items()))
    ]
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize(
    "small, large, verdict",
    [(0.9, 0.5, "holds"), (0.68, 0.5, "inconclusive"), (0.5, 0.5, "fails")],
)
def test_exponent_falls_with_batch(small, large, verdict):
    """b(smallest batch) - b(largest batch) is judged per (optimiser, lr, ...) against half
    §9.8's predicted difference (0.176); the middle batch is fitted but not compared."""
    rows = map_rows("adam", {(8, 0.03): small, (32, 0.03): 0.7, (128, 0.03): large}, seed=3)
    result = judge(rc.exponent_and_batch("adam"), rows)
    assert result.verdict == verdict, result.evidence
    assert "b at batch 8 minus b at batch 128" in result.evidence
    assert result.ci_low <= small - large <= result.ci_high  # covers the truth (fixed seed)


def test_exponent_free_of_batch_sgd_and_of_lr():
    same = map_rows("sgd", {(8, 1.0): 1.0, (128, 1.0): 1.0, (8, 4.0): 1.0, (128, 4.0): 1.0})
    assert judge(rc.exponent_and_batch("sgd"), same).verdict == "holds"
    assert judge(rc.exponent_free_of_lr("sgd"), same).verdict == "holds"
    apart = map_rows("sgd", {(8, 1.0): 0.5, (128, 1.0): 1.2, (8, 4.0): 0.5, (128, 4.0): 1.2})
    assert judge(rc.exponent_and_batch("sgd"), apart).verdict == "fails"
    # one batch and one learning rate: nothing to compare, the regime is empty
    single = map_rows("sgd", {(32, 1.0): 1.0})
    assert judge(rc.exponent_and_batch("sgd"), single).verdict == "outside regime"
    assert judge(rc.exponent_free_of_lr("sgd"), single).verdict == "outside regime"
    assert judge(rc.exponent_free_of_lr("normgd"), single).verdict == "not measured"


def test_gradient_direction_beats_random():
    """normgd's share minus randdir's at the same point, one-hot points only (H0 < 0.1 nats)."""
    normgd = escape_rows(optimiser="normgd", shares=[1, 1, 1, 1, 1, 1, 0.9])
    control = escape_rows(optimiser="randdir", shares=[0] * 7)
    result = judge(rc.GRADIENT_DIRECTION_BEATS_RANDOM, pd.concat([normgd, control]))
    one_hot = int((normgd["init_entropy_mean"] < 0.1).sum())
    assert result.verdict == "holds" and result.points == 2 * one_hot, result.evidence
    assert "normgd 90% minus randdir 0%" in result.evidence
    alike = escape_rows(optimiser="randdir", shares=[1, 1, 1, 1, 1, 1, 0.9])
    assert judge(rc.GRADIENT_DIRECTION_BEATS_RANDOM, pd.concat([normgd, alike])).verdict == (
        "inconclusive"
    )
    assert judge(rc.GRADIENT_DIRECTION_BEATS_RANDOM, normgd).verdict == "not measured"
    # randdir runs are not training runs: the essay's "impossible" is judged without them
    impossible = judge(rc.ONE_HOT_START_IMPOSSIBLE, pd.concat([normgd, control]))
    assert impossible.points == one_hot
    # a check since issue 49: randdir cannot escape, so it is normgd's share again
    assert rc.GRADIENT_DIRECTION_BEATS_RANDOM.role == "check" and result.role == "check"


def test_random_direction_stalls_is_a_sanity_control():
    """randdir's largest share escaped over its one-hot points: at most 5% (§9.10)."""
    claim = rc.RANDOM_DIRECTION_STALLS
    assert claim.role == "sanity"
    control = escape_rows(optimiser="randdir", shares=[0] * 7)
    assert judge(claim, control).verdict == "holds"
    escaping = escape_rows(optimiser="randdir", shares=[1, 1, 1, 1, 1, 1, 0.5])
    assert judge(claim, escaping).verdict == "fails"
    assert judge(claim, escape_rows(optimiser="normgd")).verdict == "not measured"


def test_thin_rule_marks_fitted_laws_on_few_scales_or_runs():
    """The watch list's rule (issue 49): fewer than 4 scales or 32 runs at a scale is thin; the
    column names the settings, and is empty for a law fitted on enough of both."""
    claim = rc.plateau_law("adam")
    enough = judge(claim, escape_rows(runs=32, exponent=0.5))
    assert enough.thin == ""
    few_runs = judge(claim, escape_rows(runs=16, exponent=0.5))
    assert "1 of 1 fitted settings below the rule" in few_runs.thin
    assert "16 runs at the fewest" in few_runs.thin
    two = escape_rows(runs=32, exponent=0.5).query("scale in (3.0, 4.0)")
    assert "2 scales" in judge(claim, two).thin


def test_batch_bound_is_half_the_refinements_difference():
    """§9.8's refinement over the batch x lr map's scales (logit std >= 4): b(8) = 0.851 and
    b(128) = 0.500, so the claim's bound is half of 0.351."""
    assert rc.BATCH_DIFFERENCE == pytest.approx(0.351, abs=5e-4)
    bound = rc.exponent_and_batch("adam").rule.rule.bound
    assert bound == pytest.approx(rc.BATCH_DIFFERENCE / 2)


def test_every_evidence_claim_is_declared_with_a_variance_and_a_valid_alternative():
    """Issue 49: an evidence claim's alternative lies where its rule says fails, and its
    variance is fixed before the run (theory, or a pilot at another seed); a re-declared claim
    names its old verdict, regime and commit."""
    from attnsim.claims import power

    for spec in rc.CLAIMS:
        if spec.role == "sanity":
            continue
        assert spec.variance is not None, spec.claim_id
        if spec.role == "evidence":
            refusal = power.alternative_refusal(spec.claim_id, spec.rule, spec.alternative.value)
            assert refusal == "", refusal
    declared = {s.claim_id: s.redeclared_from for s in rc.CLAIMS}
    for claim_id, (verdict, _) in WAS.items():
        assert declared[claim_id].startswith(f"was {verdict}; regime "), claim_id
        assert declared[claim_id].endswith("; judged at 9b9a604"), claim_id


def collapse_rows(
    first: int, diverged: int, qk_early: float, dot_early=0.9, steps=300, optimiser="adam", lr=1.0
):
    rows = []
    for logits, early in (("dot", dot_early), ("qk_norm", qk_early)):
        low, high = wilson(round(early * 40), 40)
        f_low, f_high = wilson(first, diverged)
        rows.append(
            SETTING
            | dict(experiment="c", n_trials=40, scale=1.0, optimiser=optimiser, lr=lr, steps=steps)
            | dict(stop="never", logits=logits, logit_std=1.0, init_entropy_mean=2.3)
            | dict(collapsed_share=1.0, diverged_mean=diverged / 40, zhai_margin_min_min=0.0)
            | dict(
                collapsed_early_share=early,
                collapsed_early_ci_low=low,
                collapsed_early_ci_high=high,
            )
            | dict(
                diverged_count=diverged if logits == "dot" else 0,
                collapse_first_share=first / diverged if logits == "dot" else math.nan,
                collapse_first_ci_low=f_low,
                collapse_first_ci_high=f_high,
            )
        )
    return pd.DataFrame(rows)


def test_collapse_precedes_divergence():
    """Judged in plain softmax's window (SGD lr in [13.7, 64], §9.6) at the points where most
    runs diverge; value-path divergence (lr above the start's threshold 80) is outside regime."""
    claim = rc.COLLAPSE_PRECEDES_DIVERGENCE
    sgd = dict(optimiser="sgd", lr=32.0)
    assert judge(claim, collapse_rows(30, 32, 0.1, **sgd)).verdict == "holds"
    assert judge(claim, collapse_rows(2, 32, 0.1, **sgd)).verdict == "fails"
    assert judge(claim, collapse_rows(17, 32, 0.1, **sgd)).verdict == "inconclusive"
    for lr in (8.0, 80.0, 128.0):
        rows = collapse_rows(30, 32, 0.1, optimiser="sgd", lr=lr)
        assert judge(claim, rows).verdict == "outside regime", lr
    assert judge(claim, collapse_rows(30, 32, 0.1)).verdict == "outside regime"  # Adam
    calm = collapse_rows(0, 1, 0.1, **sgd).assign(diverged_count=0)
    assert judge(claim, calm).verdict == "outside regime"  # no divergence to order


def test_qk_norm_judged_on_collapse_before_learning():
    claim = rc.QK_NORM_PREVENTS_EARLY_COLLAPSE
    assert judge(claim, collapse_rows(0, 1, qk_early=0.0)).verdict == "holds"
    assert judge(claim, collapse_rows(0, 1, qk_early=1.0)).verdict == "fails"
    assert judge(claim, collapse_rows(0, 1, qk_early=0.5)).verdict == "inconclusive"
    # without QK-norm nothing collapses before learning (a sharp head after it is the solution)
    nothing = collapse_rows(0, 1, qk_early=0.0, dot_early=0.0)
    assert judge(claim, nothing).verdict == "outside regime"
    assert judge(claim, nothing.query("logits == 'dot'")).verdict == "not measured"
    # two budgets 10x apart: each judged; the longer one's early collapse decides
    both = pd.concat([collapse_rows(0, 1, 0.0), collapse_rows(0, 1, 1.0, steps=3000)])
    result = judge(claim, both)
    assert result.verdict == "fails" and result.points == 2 and "3000 steps" in result.evidence


def test_zhai_bound():
    assert judge(rc.ENTROPY_ABOVE_NORM_BOUND, collapse_rows(30, 32, 0.1)).verdict == "holds"
    broken = collapse_rows(30, 32, 0.1).assign(zhai_margin_min_min=-1e-3)
    assert judge(rc.ENTROPY_ABOVE_NORM_BOUND, broken).verdict == "fails"


def test_rank_correlation_per_setting_and_budget():
    claim = rc.ENTROPY_PREDICTS_FINAL_LOSS
    base = escape_rows().assign(stop="never", final_loss_median=lambda r: r["scale"] / 10)
    result = judge(claim, base)
    assert result.verdict == "holds" and result.measured == pytest.approx(-1.0)
    assert result.points == 7
    mixed = pd.concat(
        [
            base,
            base.assign(
                optimiser="sgd", final_loss_median=base["final_loss_median"][::-1].to_numpy()
            ),
        ]
    )
    assert judge(claim, mixed).verdict == "fails"  # one setting the other way
    assert judge(claim, base.head(3)).verdict == "outside regime"
    # a point measured twice is refused, never "the first" kept (the engine keeps one per point)
    with pytest.raises(ValueError, match="twice"):
        judge(claim, pd.concat([base, base.assign(experiment="q")]))


def test_verdicts_do_not_depend_on_row_order_or_experiment_names():
    rows = pd.concat([escape_rows(exponent=0.9), escape_rows(optimiser="normgd", seed=2)])
    shuffled = rows.sample(frac=1.0, random_state=3).assign(experiment="renamed")
    for claim in rc.CLAIMS:
        if claim.claim_id.startswith(("plateau_law", "escape_time", "one_hot", "normalised")):
            one, two = judge(claim, rows), judge(claim, shuffled)
            assert (one.verdict, one.measured, one.ci_low, one.ci_high) == pytest.approx(
                (two.verdict, two.measured, two.ci_low, two.ci_high), nan_ok=True
            ), claim.claim_id


def test_no_claim_of_the_kind_sets_a_verdict():
    import inspect

    source = inspect.getsource(rc)
    for forbidden in (".verdict =", "verdict=", ".evidence +=", ".replace("):
        assert forbidden not in source


def tiny_store(root) -> dict:
    """Two tiny recall_training experiments sharing a point (scale 1), in a store at `root`."""
    from attnsim.config.load import load
    from attnsim.jobs.collect import collect
    from attnsim.jobs.simulate import run_chunk
    from attnsim.plan.sweep import experiment_json, plan_experiment
    from attnsim.store import parquet as store

    grid = {"n": [6], "d": [4], "batch": [4], "optimiser": ["adam"], "lr": [0.5], "steps": [10]}
    settings = load(
        {
            "seed": 3,
            "chunk_size": 2,
            "experiments": {
                "a": {"kind": "recall_training", "trials": 5, "grid": grid | {"scale": [1.0, 3.0]}},
                "b": {"kind": "recall_training", "trials": 7, "grid": grid | {"scale": [1.0]}},
            },
        }
    )
    for name in settings.experiments:
        plan = plan_experiment(settings, name, root)
        paths = [
            run_chunk(plan.spec(c), store.chunk_path(root, plan.kind, plan.name, c))
            for c in plan.pending
        ]
        collect(experiment_json(settings, name), paths, store.summary_path(root, plan.kind, name))
    return {name: "recall_training" for name in settings.experiments}


def test_the_claims_read_every_run_of_the_summarised_chunks(tmp_path):
    """The escape times the fits use are the trial rows of the chunks each summary records: one
    array per point with n_trials runs, in trial order; a chunk gone is one clear StoreError."""
    from attnsim.errors import StoreError
    from attnsim.report import claims as io
    from attnsim.store import parquet as store

    experiments = tiny_store(tmp_path)
    frames = io.load_summaries(tmp_path, experiments)
    for name, frame in frames.items():
        for _, row in frame.iterrows():
            assert set(row["runs"]) == set(rc.RUN_COLUMNS)
            assert len(row["runs"]["escape_step"]) == row["n_trials"]
        trials = pd.concat(
            store.read_table(p).to_pandas()
            for p in store.experiment_chunks(tmp_path, "recall_training", name)
        )
        point = trials[trials["scale"] == 1.0].sort_values("trial")
        np.testing.assert_array_equal(
            frame.loc[frame["scale"] == 1.0, "runs"].iloc[0]["escape_step"],
            point["escape_step"].to_numpy(),
        )
    # the shared point: the claims see one row (the experiment with the most runs), any order
    one = io.evaluate(frames, experiments)
    two = io.evaluate(dict(reversed(list(frames.items()))), dict(reversed(experiments.items())))
    assert io.table(one).equals(io.table(two))
    store.experiment_chunks(tmp_path, "recall_training", "a")[0].unlink()
    with pytest.raises(StoreError, match="no longer in the store"):
        io.load_summaries(tmp_path, experiments)


def test_near_tie_density_and_the_refined_exponent():
    """kappa_n against scipy's quadrature (kappa_16 = 1.766, docs/science.md §9.3); the refined
    exponent is 1/2 when every sigma is below the crossover B kappa_n, 1 when every one is above,
    and in between otherwise, falling with the batch."""
    integrate = pytest.importorskip("scipy.integrate")
    stats = pytest.importorskip("scipy.stats")
    from attnsim.kinds.recall_training.plateau import near_tie_density, refined_exponent

    for n in (2, 16, 64):
        exact = integrate.quad(
            lambda z, n=n: n * (n - 1) * stats.norm.pdf(z) ** 2 * stats.norm.cdf(z) ** (n - 2),
            -np.inf,
            np.inf,
        )[0]
        assert near_tie_density(n) == pytest.approx(exact, rel=1e-7)
    assert near_tie_density(16) == pytest.approx(1.766, abs=5e-4)
    sigmas = [4.0, 10.0, 40.0, 150.0]
    assert refined_exponent(sigmas, 1000, 16) == pytest.approx(0.5)
    assert refined_exponent(np.array(sigmas) * 1e3, 1, 16) == pytest.approx(1.0)
    slopes = [refined_exponent(sigmas, b, 16) for b in (8, 32, 128)]
    assert slopes[2] == pytest.approx(0.5)  # 128 x 1.766 = 226 > 150: all below the crossover
    assert 0.5 < slopes[1] < slopes[0] < 1.0


def test_plateau_map_draws_the_claims_exponents():
    """The figure fits every cell as the claims do (law_fits on the runs of the summarised
    points) and draws one line per learning rate; a grid with one cell has no map."""
    from attnsim.figures.common import NotApplicable
    from attnsim.kinds.recall_training import figures

    rows = map_rows("adam", {(8, 0.01): 0.9, (128, 0.01): 0.5, (8, 0.03): 0.9, (128, 0.03): 0.5})
    rows["point_id"] = [f"{i:016x}" for i in range(len(rows))]
    trials = pd.concat(
        pd.DataFrame({"point_id": p, "trial": range(len(r["escaped"]))} | r)
        for p, r in zip(rows["point_id"], rows["runs"])
    )
    summary = rows.drop(columns="runs")
    fig = figures.plateau_map(summary, trials)
    lines = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert lines == ["lr 0.01", "lr 0.03"]
    cells, _ = rc.law_fits(rows[rows["logit_std"] >= 4])
    drawn = np.concatenate(
        [line.get_ydata() for line in fig.axes[0].lines if line.get_marker() in ("o", "s")]
    )
    np.testing.assert_allclose(
        np.sort(drawn.astype(float)), np.sort(cells["value"].to_numpy(float))
    )
    with pytest.raises(NotApplicable):
        one = summary[(summary["batch"] == 8) & (summary["lr"] == 0.01)]
        figures.plateau_map(one, trials)


def divergence_rows(plain: list[int], cured: list[int], runs: int = 16, lr: float = 32.0):
    """SGD points from scale 1, plain softmax and QK-norm on the same seeds: `plain` and `cured`
    list the seeds (trials) that diverged."""
    rows = []
    for logits, gone in (("dot", plain), ("qk_norm", cured)):
        diverged = np.isin(np.arange(runs), gone).astype(float)
        rows.append(
            SETTING
            | dict(experiment="v", n_trials=runs, scale=1.0, optimiser="sgd", lr=lr, steps=300)
            | dict(stop="never", logits=logits, logit_std=1.0, init_entropy_mean=2.3)
            | dict(diverged_count=len(gone), diverged_mean=len(gone) / runs)
            | dict(collapsed_early_ci_low=0.9, zhai_margin_min_min=0.0)
            | dict(runs={"diverged": diverged, "escape_step": np.full(runs, 300.0)})
        )
    return pd.DataFrame(rows)


def test_remedy_judged_on_the_seeds_plain_softmax_loses():
    claim = rc.remedy_prevents_divergence("qk_norm")
    every = list(range(16))
    lost = judge(claim, divergence_rows(every, every))
    assert lost.verdict == "fails" and "100% [81%, 100%] of the 16 seeds" in lost.evidence
    assert judge(claim, divergence_rows(every, [])).verdict == "holds"
    assert judge(claim, divergence_rows(every, list(range(8)))).verdict == "inconclusive"
    # paired by seed: the remedy losing four *other* seeds does not count against it here
    # (McNemar's discordant pairs are reported beside the share)
    other = judge(claim, divergence_rows(list(range(12)), [12, 13, 14, 15]))
    assert other.verdict == "holds" and "saved 12, lost 4" in other.evidence, other.evidence
    # plain softmax diverging in half the runs or fewer: nothing to prevent
    assert judge(claim, divergence_rows([0, 1, 2], every)).verdict == "outside regime"
    plain_only = divergence_rows(every, every).query("logits == 'dot'")
    assert judge(claim, plain_only).verdict == "not measured"


@pytest.mark.parametrize(
    "remedy, inside, outside",
    [
        ("qk_norm", (13.7, 32.0, 64.0), (8.0, 13.6, 65.0, 80.0, 128.0)),
        ("softcap30", (16.0, 64.0), (12.0, 66.0, 128.0)),
        ("ssmax", (16.0, 52.0), (53.0, 64.0, 128.0)),
        ("sigmoid", (16.0, 32.0), (33.0, 64.0, 128.0)),
    ],
)
def test_remedies_judged_only_in_their_window(remedy, inside, outside):
    """§9.6: above the start's almost-sure threshold (80 softmax, QK-norm, soft-caps; 65 SSMax;
    40 sigmoid) SGD diverges through W_v from step 1, outside the remedies' premise; below 1.2 x
    the one-hot head's 11.4 no head is unstable. The window keeps 20% off each threshold."""
    every = list(range(16))
    column, value = rc.REMEDIES[remedy]
    for lr in (*inside, *outside):
        rows = divergence_rows(every, every, lr=lr).assign(normaliser="softmax")
        if column == "normaliser":
            cured = rows.query("logits == 'qk_norm'").assign(logits="dot", normaliser=value)
            rows = pd.concat([rows.query("logits == 'dot'"), cured])
        verdict = judge(rc.remedy_prevents_divergence(remedy), rows).verdict
        assert verdict == ("fails" if lr in inside else "outside regime"), (lr, verdict)
    assert rc.divergence_window(remedy)[1] == pytest.approx(0.8 * rc.START_THRESHOLD[remedy])


def test_window_only_in_the_setting_its_thresholds_were_computed_for():
    """The thresholds are numbers for n = d = 16, batch 32, scale 1 with a trained W_v: any
    other setting has no number, so the remedy claims are outside regime there."""
    every = list(range(16))
    claim = rc.remedy_prevents_divergence("qk_norm")
    for change in (dict(n=32), dict(batch=8), dict(values="identity"), dict(optimiser="adam")):
        rows = divergence_rows(every, every).assign(**change)
        assert judge(claim, rows).verdict == "outside regime", change


def test_early_collapse_claim_needs_a_start_stable_on_the_value_path():
    """SGD with a trained W_v above 0.8 x the start's threshold (64) is unstable from step 1:
    a collapse there is not the logits' own (§9.6), even where plain softmax does not diverge."""
    claim = rc.QK_NORM_PREVENTS_EARLY_COLLAPSE
    rows = collapse_rows(0, 1, 0.1, optimiser="sgd", lr=30.0).assign(diverged_count=0)
    assert judge(claim, rows).verdict == "holds"
    above = collapse_rows(0, 1, 0.1, optimiser="sgd", lr=70.0).assign(diverged_count=0)
    assert judge(claim, above).verdict == "outside regime"
    identity = above.assign(values="identity")  # no value path: any learning rate
    assert judge(claim, identity).verdict == "holds"


def test_early_collapse_claim_leaves_diverging_points_to_the_remedies():
    """A collapse while the value path blows up is not Adam's collapse before learning (§9.6)."""
    rows = divergence_rows(list(range(16)), list(range(16))).assign(
        collapsed_early_share=[1.0, 1.0], collapsed_early_ci_high=[1.0, 1.0]
    )
    assert judge(rc.QK_NORM_PREVENTS_EARLY_COLLAPSE, rows).verdict == "outside regime"


def test_value_path_threshold_in_mean_square():
    """docs/science.md §9.6: for unit r (a one-hot head) and fresh minibatches of B examples,
    E||(I - lr H_b) e||^2 = (1 - 4 lr / d + 4 lr^2 (d + B - 1) / (B d^2)) ||e||^2 with
    H_b = (2/B) sum r_b^T r_b: unstable in mean square above lr = B d / (d + B - 1), 10.9 at
    d = 16, B = 32. Monte Carlo on 4000 batches, within 4 standard errors."""
    d, batch, draws = 16, 32, 4000
    rng = np.random.default_rng(20261203)
    e = np.zeros(d)
    e[0] = 1.0
    r = rng.standard_normal((draws, batch, d))
    r /= np.linalg.norm(r, axis=-1, keepdims=True)
    hessian_e = (2.0 / batch) * np.einsum("kbi,kb->ki", r, r @ e)
    for lr in (8.0, 10.9, 14.0):
        growth = np.sum((e - lr * hessian_e) ** 2, axis=-1)
        predicted = 1 - 4 * lr / d + 4 * lr**2 * (d + batch - 1) / (batch * d**2)
        se = growth.std(ddof=1) / math.sqrt(draws)
        assert abs(growth.mean() - predicted) < 4 * se, (lr, growth.mean(), predicted, se)
    assert batch * d / (d + batch - 1) == pytest.approx(10.894, abs=1e-3)


def test_normaliser_remedies_and_the_collapse_claim_keep_to_their_rows():
    """softcap30 is judged against plain softmax (dot, softmax) on the same seeds; its runs do not
    count in the collapse claim, which is about softmax's collapse (§9.6)."""
    every = list(range(16))
    rows = divergence_rows(every, every).assign(normaliser="softmax")
    capped = rows.query("logits == 'qk_norm'").assign(logits="dot", normaliser="softcap30")
    plain = rows.query("logits == 'dot'")
    both = pd.concat([plain, capped.assign(diverged_count=0, runs=[{"diverged": np.zeros(16)}])])
    assert judge(rc.remedy_prevents_divergence("softcap30"), both).verdict == "holds"
    assert judge(rc.remedy_prevents_divergence("qk_norm"), both).verdict == "not measured"
    first = dict(collapse_first_share=1.0, collapse_first_ci_low=0.8, collapse_first_ci_high=1.0)
    counted = judge(rc.COLLAPSE_PRECEDES_DIVERGENCE, pd.concat([plain, capped]).assign(**first))
    assert counted.points == 1 and counted.n == 16, counted.evidence


# --------------------------------------------------------------- the normaliser comparison (§12.7)


def claim(claim_id: str):
    return next(c for c in rc.CLAIMS if c.claim_id == claim_id)


@pytest.mark.parametrize(
    "exponent, relu, sigmoid",
    [(0.5, "holds", "holds"), (1.1, "fails", "fails"), (0.72, "inconclusive", "inconclusive")],
)
def test_travel_law_of_the_maps_without_near_ties(exponent, relu, sigmoid):
    for name, verdict in (("relu", relu), ("sigmoid", sigmoid)):
        rows = escape_rows(exponent=exponent, steps=3000, normaliser=name, threshold=0.5)
        result = judge(claim(f"escape_exponent_{name}"), rows)
        assert result.verdict == verdict, (name, result.evidence)
        assert result.ci_low <= exponent <= result.ci_high


def test_escape_growth_per_normaliser_and_no_row_crosses_over():
    """Each normaliser's growth claim reads its own rows at threshold 0.5; §9's claims read
    softmax at the default threshold only, so a comparison row never changes them."""
    grows_fast = escape_rows(exponent=0.8, steps=3000, normaliser="sparsemax", threshold=0.5)
    flat = escape_rows(exponent=0.0, steps=3000, normaliser="relu", threshold=0.5, seed=1)
    reference = escape_rows(exponent=0.5, steps=3000, normaliser="softmax", threshold=0.1)
    comparison = escape_rows(exponent=1.5, steps=3000, normaliser="softmax", threshold=0.5)
    rows = pd.concat([grows_fast, flat, reference, comparison], ignore_index=True)
    assert judge(claim("escape_time_grows_with_scale_sparsemax"), rows).verdict == "holds"
    assert judge(claim("escape_time_grows_with_scale_relu"), rows).verdict != "holds"
    assert judge(claim("escape_exponent_relu"), rows).verdict == "fails"
    assert judge(claim("escape_time_grows_with_scale_entmax15"), rows).verdict == "not measured"
    softmax = judge(claim("escape_time_grows_with_scale_softmax"), rows)
    assert softmax.ci_low <= 1.5 <= softmax.ci_high  # the comparison's softmax, not §9's
    for old in (law("adam"), grows("adam"), rc.ONE_HOT_START_IMPOSSIBLE):
        alone, mixed = judge(old, reference), judge(old, rows)
        assert (alone.verdict, alone.measured, alone.trials, alone.evidence) == (
            mixed.verdict,
            mixed.measured,
            mixed.trials,
            mixed.evidence,
        )


# ------------------------------------------------------------ the logit path (§9.6, issue 49)


def logit_rows(plain_early: float, qk_early: float, lr=3.0, loss=0.9) -> pd.DataFrame:
    """Logit-path points (W_v = I, Adam, scale 1): plain softmax and QK-norm, each run's losses
    `loss` x chance at every checkpoint."""
    rows = collapse_rows(0, 1, qk_early, dot_early=plain_early, lr=lr).assign(
        values="identity", diverged_count=0
    )
    losses = {c: np.full(40, loss) for c in rc.LOSSES}
    rows["runs"] = [dict(losses) for _ in range(len(rows))]
    return rows


def test_value_weights_bounded_by_the_values():
    """§9.6: with W_v = I and weights summing to one the loss is at most 4 / (1 - 1/n) x chance;
    a run above it is a bug (the sanity claim fails), and the claim reads only the set-up's rows."""
    claim = rc.VALUE_WEIGHTS_BOUNDED
    assert judge(claim, logit_rows(0.9, 0.1)).verdict == "holds"
    bound = 4 / (1 - 1 / 16)
    assert judge(claim, logit_rows(0.9, 0.1, loss=bound * 1.01)).verdict == "fails"
    trained = logit_rows(0.9, 0.1).assign(values="trainable")
    assert judge(claim, trained).verdict == "outside regime"


def test_logit_collapse_claims_on_the_logit_path():
    """Plain softmax collapsing before learning at the largest lr is the set-up's own test; a
    remedy is judged where plain collapses in most runs, on the same seeds."""
    assert judge(rc.LOGIT_PATH_COLLAPSES, logit_rows(0.9, 0.1)).verdict == "holds"
    assert judge(rc.LOGIT_PATH_COLLAPSES, logit_rows(0.05, 0.1)).verdict == "fails"
    smaller = pd.concat([logit_rows(0.05, 0.1), logit_rows(0.9, 0.1, lr=0.1)])
    assert judge(rc.LOGIT_PATH_COLLAPSES, smaller).verdict == "fails"  # judged at lr 3 only
    claim = rc.remedy_prevents_logit_collapse("qk_norm")
    assert judge(claim, logit_rows(0.9, 0.1)).verdict == "holds"
    assert judge(claim, logit_rows(0.9, 0.95)).verdict == "fails"
    assert judge(claim, logit_rows(0.3, 0.95)).verdict == "outside regime"  # nothing to prevent
    assert judge(claim, logit_rows(0.9, 0.1).assign(values="trainable")).verdict == ("not measured")
    for remedy in rc.REMEDIES:
        spec = rc.remedy_prevents_logit_collapse(remedy)
        assert rc.LOGIT_PREDICTION[remedy] in spec.regime.reason
