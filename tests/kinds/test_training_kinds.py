"""The training kinds as kinds: determinism through the driver, summaries of diverged runs, claims
on synthetic summaries (holding and failing), bad grids refused in one line, and one end-to-end run.
(The kernels' numerics: test_training_recall.py, test_training_contrastive.py.)"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.configs import CONTRASTIVE, RECALL
from helpers.points import make_point
from helpers.workflow import point_rows, snakemake, tree, write_config
from oracles.summaries import summarise_points

from attnsim.cli.main import main
from attnsim.jobs.simulate import simulate_points
from attnsim.kernels.training import quantiles
from attnsim.kinds import get_kind
from attnsim.kinds.recall_training import claims as recall_claims
from attnsim.kinds.recall_training import wilson


def grid_points(kind: str, grid: dict, **change) -> list:
    import itertools

    grid = grid | change
    params = get_kind(kind).schema.params
    lists = [
        grid[p.name] if p.name in grid else [p.default] for p in params
    ]  # a parameter left out takes its default
    return [
        make_point(kind, dict(zip([p.name for p in params], values)))
        for values in itertools.product(*lists)
    ]


CONTRASTIVE_INSTANCE_LEARNED = CONTRASTIVE | {
    "positives": ["instance"],
    "instance_noise": [0.5],
    "tau_mode": ["fixed", "learned"],
}


@pytest.mark.parametrize(
    "kind, grid",
    [
        ("recall_training", RECALL),
        ("contrastive_training", CONTRASTIVE),
        ("contrastive_training", CONTRASTIVE_INSTANCE_LEARNED),
    ],
)
def test_numbers_do_not_depend_on_threads_siblings_or_order(kind, grid, monkeypatch):
    """Bit for bit: 1, 2 or 3 threads; the points alone, reversed or together; small blocks (many
    per point); with diverging runs among them (SGD at a huge step) so the +inf/NaN paths run
    too."""
    from attnsim.kinds import base

    monkeypatch.setattr(base, "TARGET_BLOCK_BYTES", 60_000)
    pts = grid_points(kind, grid)
    other = grid_points(
        kind,
        grid,
        n=[grid["n"][0] + 1],
        **({"scale": [1.0]} if kind == "recall_training" else {"tau": [0.5]}),
    )[:2]
    pts += other  # a second stream
    reference = simulate_points(kind, 11, 13, pts, threads=1)
    assert get_kind(kind).block_trials(pts[0].params) < 13  # several blocks per point
    if (
        kind == "recall_training"
    ):  # (a normalised encoder does not diverge: its gradient shrinks as W grows)
        assert any(reference[p.id]["diverged"].any() for p in pts) and any(
            not reference[p.id]["diverged"].any() for p in pts
        )
    runs = [
        simulate_points(kind, 11, 13, pts, threads=2),
        simulate_points(kind, 11, 13, pts[::-1], threads=3),
    ]
    runs += [simulate_points(kind, 11, 13, [p]) for p in pts[::5]]
    for run in runs:
        for pid, metrics in run.items():
            for name, values in metrics.items():
                assert np.array_equal(values, reference[pid][name], equal_nan=True), (pid, name)


# --------------------------------------------------------------------------- summaries of diverged
# runs


def test_quantiles_rank_inf_last_and_never_nan():
    assert quantiles(np.array([3.0, 1.0, 2.0, 4.0])) == [1.75, 2.5, 3.25]
    assert quantiles(np.array([1.0, np.inf, 2.0, np.inf])) == [1.75, np.inf, np.inf]
    assert quantiles(np.array([np.inf, np.inf])) == [np.inf, np.inf, np.inf]
    assert quantiles(np.array([5.0]), (0.5,)) == [5.0]


def test_wilson_interval():
    low, high = wilson(0, 48)
    assert low == 0 and 0.07 < high < 0.08
    low, high = wilson(48, 48)
    assert 0.92 < low < 0.93 and high == 1
    assert wilson(0, 0)[0] != wilson(0, 0)[0]  # NaN


def diverge(kind, metrics: dict, trials) -> None:
    """Mark `trials` of one point's results as diverged, by the kernels' conventions."""
    for name in get_kind(kind).summary.finite_metrics:
        metrics[name][trials] = (
            5.0
            if name == "diverged_step"
            else (
                np.inf
                if "loss" in name or name in ("steps_to_threshold", "collapse_step")
                else np.nan
            )
        )
    metrics["diverged"][trials] = 1.0
    metrics["probe_accuracy" if "probe_accuracy" in metrics else "final_accuracy"][trials] = 0.0


@pytest.mark.parametrize(
    "kind, grid", [("recall_training", RECALL), ("contrastive_training", CONTRASTIVE)]
)
def test_summary_of_diverged_runs_has_no_nan_means(kind, grid):
    """Diverged runs (+inf losses, NaN entropies) stay out of every mean, are counted, and rank last
    in the medians; the divergence rate is the mean of `diverged`; a point whose runs all diverged
    has no mean (NaN, count 0)."""
    k = get_kind(kind)
    pts = grid_points(kind, grid, lr=[grid["lr"][0]])[
        :3
    ]  # the small step: no run diverges by itself
    trials = simulate_points(kind, 3, 16, pts)
    assert not any(trials[p.id]["diverged"].any() for p in pts)
    diverge(kind, trials[pts[0].id], slice(0, 3))
    diverge(kind, trials[pts[1].id], slice(0, 12))
    diverge(kind, trials[pts[2].id], slice(None))
    table = summarise_points(kind, "x", trials, pts).to_pandas()
    assert table["diverged_mean"].tolist() == [3 / 16, 12 / 16, 1.0]
    assert (
        table["final_loss_median"] == [np.median(trials[pts[0].id]["final_loss"]), np.inf, np.inf]
    ).all()
    for name in k.summary.finite_metrics:
        assert table[f"{name}_finite"].tolist() == [
            int(np.isfinite(trials[p.id][name]).sum()) for p in pts
        ], name
        if name in (
            "diverged_step",
            "steps_to_threshold",
            "collapse_step",
        ):  # +inf = never: finite only where it happened
            continue
        assert table[f"{name}_finite"].tolist() == [13, 4, 0], name
        stats = table[
            [f"{name}_mean", f"{name}_se", f"{name}_ci_low", f"{name}_ci_high"]
        ].to_numpy()
        assert np.isfinite(stats[:2]).all() and np.isnan(stats[2]).all(), name
        assert table[f"{name}_mean"].iloc[0] == pytest.approx(np.mean(trials[pts[0].id][name][3:]))
    assert (table["diverged_step_mean"] == 5.0).all() and table[
        "diverged_step_finite"
    ].tolist() == [3, 12, 16]
    other = [
        c
        for c in table.columns
        if c.endswith("_mean") and c.removesuffix("_mean") not in k.summary.finite_metrics
    ]
    assert np.isfinite(table[other].to_numpy()).all()


# --------------------------------------------------------------------------- claims on synthetic
# summaries


SETTING = dict(
    n=16, d=16, batch=32, values="trainable", logits="dot", log_n=math.log(16), escape_exponent=0.5
)


def escape_rows(
    optimiser="adam", exponent=0.5, half_width=0.1, shares=None, steps=10000, lr=0.03, **extra
) -> pd.DataFrame:
    """Synthetic escape points: median escape time 100 logit_std^exponent with a 95% interval of
    +-half_width in log10, and the share escaped by the budget (Wilson, 16 runs)."""
    scales = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0]
    rows = []
    for i, scale in enumerate(scales):
        sigma = scale**2 * math.sqrt(1.09)
        entropy = 2.7 * math.exp(-sigma / 3)
        med = 100 * sigma**exponent
        share = 1.0 if shares is None else shares[i]
        low, high = wilson(round(share * 16), 16)
        rows.append(
            SETTING
            | dict(
                experiment="p",
                n_trials=16,
                scale=scale,
                optimiser=optimiser,
                lr=lr,
                steps=steps,
                stop="threshold",
                logit_std=sigma,
            )
            | dict(
                init_logit_std_mean=sigma,
                init_entropy_mean=entropy,
                init_grad_qk_mean=1 / sigma,
                escape_exponent=exponent,
            )
            | dict(
                escape_median=med,
                escape_median_ci_low=med / 10**half_width,
                escape_median_ci_high=med * 10**half_width,
            )
            | dict(
                escaped_ckpt_7=share,
                escaped_ckpt_7_ci_low=low,
                escaped_ckpt_7_ci_high=high,
                zhai_margin_min_min=0.01,
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
    claim = recall_claims.one_hot_start_impossible(rows)
    assert claim.verdict == verdict, claim.evidence  # 0 of 16 cannot show <= 5%: never holds
    many = escape_rows(shares=[1, 1, 1, 0, 0, 0, 0]).assign(
        escaped_ckpt_7_ci_high=0.01
    )  # e.g. 0 of 400
    assert recall_claims.one_hot_start_impossible(many).verdict == "holds"
    assert recall_claims.one_hot_start_impossible(rows.head(2)).verdict == "outside regime"
    assert recall_claims.one_hot_start_impossible(None).verdict == "not measured"


@pytest.mark.parametrize(
    "exponent, half_width, verdict",
    [(0.5, 0.05, "holds"), (1.2, 0.05, "fails"), (0.5, 1.5, "inconclusive")],
)
def test_plateau_law_against_its_prediction(exponent, half_width, verdict):
    rows = escape_rows(exponent=exponent, half_width=half_width)
    claim = recall_claims.plateau_law(rows, "adam")
    assert claim.verdict == verdict, claim.evidence
    in_regime = rows[rows["logit_std"] >= 4]
    assert claim.measured == pytest.approx(exponent, abs=1e-9) and claim.points == len(in_regime)
    assert "out of sample" in claim.evidence
    grows = recall_claims.escape_time_grows(rows, "adam")
    assert grows.verdict == ("inconclusive" if half_width > 1 else "holds")
    shrinking = rows.assign(
        escape_median=1e5 / rows["logit_std"],
        escape_median_ci_low=0.9e5 / rows["logit_std"],
        escape_median_ci_high=1.1e5 / rows["logit_std"],
    )
    assert recall_claims.escape_time_grows(shrinking, "adam").verdict == "fails"
    censored = rows.assign(escape_median=math.inf)  # measured, but every median beyond the budget
    assert recall_claims.plateau_law(censored, "adam").verdict == "inconclusive"
    assert recall_claims.escape_time_grows(censored, "adam").verdict == "inconclusive"
    assert recall_claims.plateau_law(rows, "sgd").verdict == "outside regime"


def test_out_of_sample_comparison_prefers_the_true_predictor():
    from attnsim.kinds.recall_training.plateau import out_of_sample

    rows = escape_rows(exponent=0.5, half_width=0.05)
    rows["init_entropy_mean"] = [2.7, 2.0, 1.5, 1.45, 0.3, 0.28, 0.05]  # not a power law in H0
    cv = out_of_sample(rows)
    assert cv["logit_std"] < 1e-9 and cv["entropy"] > 0.01 and cv["points"] == len(rows)


def test_separating_claim():
    escaping = escape_rows(optimiser="normgd", shares=[1, 1, 1, 1, 0.75, 0.5, 0.3])
    assert recall_claims.information_story(escaping).verdict == "fails"
    stalled = escape_rows(optimiser="normgd", shares=[1, 1, 1, 0, 0, 0, 0]).assign(
        escaped_ckpt_7_ci_high=0.01
    )
    assert recall_claims.information_story(stalled).verdict == "holds"
    assert recall_claims.information_story(escape_rows(optimiser="sgd")).verdict == "outside regime"


def collapse_rows(first_collapsed: int, diverged: int, qk_collapsed: float) -> pd.DataFrame:
    rows = []
    for logits, collapsed in (("dot", 0.9), ("qk_norm", qk_collapsed)):
        low, high = wilson(round(collapsed * 40), 40)
        f_low, f_high = wilson(first_collapsed, diverged)
        rows.append(
            SETTING
            | dict(
                experiment="c",
                n_trials=40,
                scale=1.0,
                optimiser="adam",
                lr=1.0,
                steps=3000,
                stop="never",
                logits=logits,
                logit_std=1.0,
            )
            | dict(
                collapsed_share=collapsed,
                collapsed_ci_low=low,
                collapsed_ci_high=high,
                diverged_mean=diverged / 40,
                zhai_margin_min_min=0.0,
            )
            | dict(collapsed_early_share=collapsed / 2)
            | dict(
                diverged_count=diverged if logits == "dot" else 0,
                collapse_first_share=first_collapsed / diverged if logits == "dot" else math.nan,
            )
            | dict(collapse_first_ci_low=f_low, collapse_first_ci_high=f_high)
        )
    return pd.DataFrame(rows)


def test_collapse_claims():
    assert recall_claims.collapse_precedes_divergence(collapse_rows(30, 32, 0.1)).verdict == "holds"
    assert recall_claims.collapse_precedes_divergence(collapse_rows(2, 32, 0.1)).verdict == "fails"
    assert (
        recall_claims.collapse_precedes_divergence(collapse_rows(9, 16, 0.1)).verdict
        == "inconclusive"
    )
    assert recall_claims.qk_norm_prevents_collapse(collapse_rows(30, 32, 0.1)).verdict == "holds"
    assert recall_claims.qk_norm_prevents_collapse(collapse_rows(30, 32, 0.9)).verdict == "fails"
    calm = collapse_rows(0, 1, 0.1).assign(diverged_count=0)
    assert recall_claims.collapse_precedes_divergence(calm).verdict == "inconclusive"
    assert (
        recall_claims.qk_norm_prevents_collapse(calm.assign(collapsed_ci_low=0.0)).verdict
        == "inconclusive"
    )
    assert (
        recall_claims.qk_norm_prevents_collapse(calm.query("logits == 'dot'")).verdict
        == "outside regime"
    )
    assert recall_claims.zhai_bound(collapse_rows(30, 32, 0.1)).verdict == "holds"
    assert (
        recall_claims.zhai_bound(
            collapse_rows(30, 32, 0.1).assign(zhai_margin_min_min=-1e-3)
        ).verdict
        == "fails"
    )


def test_rank_correlation_claim_per_setting_over_distinct_scales():
    base = escape_rows().assign(stop="never", final_loss_median=lambda r: r["scale"] / 10)
    claim = recall_claims.entropy_predicts_final_loss(base)
    assert claim.verdict == "holds" and claim.measured == pytest.approx(-1.0) and claim.points == 7
    # the same points twice (two experiments) are still 7 initial conditions, not 14
    twice = recall_claims.entropy_predicts_final_loss(
        pd.concat([base, base.assign(experiment="q")])
    )
    assert twice.points == 7 and "over 7 scales" in twice.evidence
    mixed = pd.concat(
        [
            base,
            base.assign(
                optimiser="sgd", final_loss_median=base["final_loss_median"].to_numpy()[::-1]
            ),
        ]
    )
    assert (
        recall_claims.entropy_predicts_final_loss(mixed).verdict == "fails"
    )  # one setting the other way
    assert recall_claims.entropy_predicts_final_loss(base.head(3)).verdict == "outside regime"
    lo, hi = recall_claims.fisher_interval(0.0, 12)
    assert lo == pytest.approx(-hi) and 0.5 < hi < 0.6


# --------------------------------------------------------------------------- bad grids: one line
# naming the key


def tiny_config(**grids) -> dict:
    return {
        "seed": 5,
        "chunk_size": 2,
        "experiments": {
            "recall": {
                "kind": "recall_training",
                "trials": 6,
                "grid": RECALL
                | {"scale": [0.3, 30.0], "optimiser": ["sgd"], "lr": [2.0]}
                | grids.get("recall", {}),
            },
            "contrastive": {
                "kind": "contrastive_training",
                "trials": 6,
                "grid": CONTRASTIVE
                | {"optimiser": ["adam"], "lr": [0.05]}
                | grids.get("contrastive", {}),
            },
        },
    }


BAD = {
    "lr zero": ({"recall": {"lr": [0.0]}}, "experiments.recall.grid.lr[0]"),
    "lr negative": ({"contrastive": {"lr": [-1.0]}}, "experiments.contrastive.grid.lr[0]"),
    "steps zero": ({"recall": {"steps": [0]}}, "experiments.recall.grid.steps[0]"),
    "tau zero": ({"contrastive": {"tau": [1.0, 0.0]}}, "experiments.contrastive.grid.tau[1]"),
    "unknown optimiser": (
        {"recall": {"optimiser": ["sgd", "rmsprop"]}},
        "experiments.recall.grid.optimiser[1]",
    ),
    "classes over n": (
        {"contrastive": {"classes": [3, 9]}},
        "experiments.contrastive.grid.classes: 9 classes but batches of n = 8",
    ),
    "input below latent": (
        {"contrastive": {"latent_dim": [4], "input_dim": [6, 3]}},
        "experiments.contrastive.grid.input_dim: 3 is below latent_dim = 4",
    ),
    "scale zero": ({"recall": {"scale": [0.0]}}, "experiments.recall.grid.scale[0]"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_grid_is_one_line_naming_the_key(case, tmp_path, capsys):
    grids, key = BAD[case]
    path = write_config(tmp_path, tiny_config(**grids))
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"attnsim: error: {key}") and err.count("\n") == 1, err


@pytest.mark.slow
def test_bad_grid_stops_snakemake_before_anything_is_written(tmp_path):
    write_config(tmp_path, tiny_config(contrastive={"classes": [9]}))
    result = snakemake(tmp_path, "-n", "--cores", "1", check=False)
    lines = result.stderr.strip().splitlines()
    assert (
        result.returncode != 0
        and len(lines) == 1
        and "experiments.contrastive.grid.classes" in lines[0]
    ), result.stderr
    assert tree(tmp_path) == {}


# --------------------------------------------------------------------------- end to end


@pytest.mark.slow
def test_workflow_runs_both_training_kinds_and_rows_do_not_depend_on_cores_or_chunks(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    write_config(first, tiny_config())
    snakemake(first, "--cores", "2")
    for figure in (
        "recall/trainability.png",
        "recall/learning_curves.png",
        "contrastive/temperature_sweep.png",
    ):
        assert (first / "results/figures" / figure).stat().st_size > 10_000
    for figure in (
        "escape_survival",
        "escape_law",
        "separating",
        "training_entropy",
    ):  # nothing to show: a stand-in
        assert (first / "results/figures/recall" / f"{figure}.png").stat().st_size > 1_000
    claims = (first / "results/claims.md").read_text()
    for claim in (
        "one_hot_start_impossible",
        "plateau_law_sgd",
        "entropy_predicts_final_loss",
        "tau_one_training_entropy_floor",
        "tau_one_worse_probe",
    ):
        assert claim in claims
    config = tiny_config()
    config["chunk_size"] = 64
    (second).mkdir()
    (second / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    snakemake(second, "--cores", "1")
    rows = point_rows(first)
    assert rows == point_rows(second) and len(rows) == 4
