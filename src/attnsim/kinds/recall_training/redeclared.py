"""The verdicts of recall_training's claims re-declared in issue 49, as judged at 9b9a604 (the
previous default run, results/claims.parquet there): each re-declared claim carries its entry in
`redeclared_from`, counted apart for one release. Copied once, never recomputed."""

from attnsim.kinds.training_runs import redeclared

WAS = {
    "escape_time_grows_with_scale_sgd": (
        "holds",
        "recall_training runs, sgd, no QK-norm, initial logit std >= 4; per setting (lr, W_v, "
        "n, d, batch), every run of every budget",
    ),
    "escape_time_grows_with_scale_adam": (
        "holds",
        "recall_training runs, adam, no QK-norm, initial logit std >= 4; per setting (lr, W_v, "
        "n, d, batch), every run of every budget",
    ),
    "escape_time_grows_with_scale_normgd": (
        "holds",
        "recall_training runs, normgd, no QK-norm, initial logit std >= 4; per setting (lr, "
        "W_v, n, d, batch), every run of every budget",
    ),
    "escape_time_grows_with_scale_softmax": (
        "holds",
        "recall_training runs at threshold 0.5 (the comparison across normalisers), no QK-norm,"
        " initial logit std >= 4; per setting (optimiser, lr, W_v, n, d, batch), every run of "
        "every budget; normaliser softmax",
    ),
    "escape_time_grows_with_scale_sigmoid": (
        "inconclusive",
        "recall_training runs at threshold 0.5 (the comparison across normalisers), no QK-norm,"
        " initial logit std >= 4; per setting (optimiser, lr, W_v, n, d, batch), every run of "
        "every budget; normaliser sigmoid",
    ),
    "escape_time_grows_with_scale_ssmax": (
        "not measured",
        "recall_training runs at threshold 0.5 (the comparison across normalisers), no QK-norm,"
        " initial logit std >= 4; per setting (optimiser, lr, W_v, n, d, batch), every run of "
        "every budget; normaliser ssmax",
    ),
    "escape_time_grows_with_scale_softcap50": (
        "not measured",
        "recall_training runs at threshold 0.5 (the comparison across normalisers), no QK-norm,"
        " initial logit std >= 4; per setting (optimiser, lr, W_v, n, d, batch), every run of "
        "every budget; normaliser softcap50",
    ),
    "escape_time_grows_with_scale_softcap30": (
        "not measured",
        "recall_training runs at threshold 0.5 (the comparison across normalisers), no QK-norm,"
        " initial logit std >= 4; per setting (optimiser, lr, W_v, n, d, batch), every run of "
        "every budget; normaliser softcap30",
    ),
    "escape_time_grows_with_scale_sink": (
        "not measured",
        "recall_training runs at threshold 0.5 (the comparison across normalisers), no QK-norm,"
        " initial logit std >= 4; per setting (optimiser, lr, W_v, n, d, batch), every run of "
        "every budget; normaliser sink",
    ),
    "escape_time_grows_with_scale_softpick": (
        "not measured",
        "recall_training runs at threshold 0.5 (the comparison across normalisers), no QK-norm,"
        " initial logit std >= 4; per setting (optimiser, lr, W_v, n, d, batch), every run of "
        "every budget; normaliser softpick",
    ),
    "escape_time_grows_with_scale_sparsemax": (
        "holds",
        "recall_training runs at threshold 0.5 (the comparison across normalisers), no QK-norm,"
        " initial logit std >= 4; per setting (optimiser, lr, W_v, n, d, batch), every run of "
        "every budget; normaliser sparsemax",
    ),
    "escape_time_grows_with_scale_entmax15": (
        "not measured",
        "recall_training runs at threshold 0.5 (the comparison across normalisers), no QK-norm,"
        " initial logit std >= 4; per setting (optimiser, lr, W_v, n, d, batch), every run of "
        "every budget; normaliser entmax15",
    ),
    "escape_time_grows_with_scale_relu": (
        "holds",
        "recall_training runs at threshold 0.5 (the comparison across normalisers), no QK-norm,"
        " initial logit std >= 4; per setting (optimiser, lr, W_v, n, d, batch), every run of "
        "every budget; normaliser relu",
    ),
    "gradient_direction_beats_random": (
        "holds",
        "recall_training one-hot points (mean initial entropy < 0.1 nats), no QK-norm, measured"
        " by both normgd and randdir at the same scale, lr, W_v, batch and budget",
    ),
    "plateau_exponent_falls_with_batch_adam": (
        "outside regime",
        "as plateau_law_adam, in settings (lr, W_v, n, d) measured at two or more batch sizes; "
        "the extreme batch sizes compared",
    ),
    "plateau_exponent_falls_with_batch_normgd": (
        "outside regime",
        "as plateau_law_normgd, in settings (lr, W_v, n, d) measured at two or more batch "
        "sizes; the extreme batch sizes compared",
    ),
    "entropy_collapse_precedes_divergence": (
        "holds",
        "recall_training runs of a fixed budget from a healthy start (scale <= 1), plain "
        "softmax (no QK-norm, normaliser softmax), at least 8 per point; the diverged ones, all"
        " learning rates pooled",
    ),
    "qk_norm_prevents_early_collapse": (
        "holds",
        "recall_training runs of a fixed budget from a healthy start (scale <= 1) with QK-norm,"
        " at least 8 per point, at the optimiser, learning rate and budget where without QK-"
        "norm the share collapsed before learning has its interval above 50%",
    ),
    "remedy_prevents_divergence_qk_norm": (
        "fails",
        "recall_training runs of a fixed budget from a healthy start (scale <= 1), at least 8 "
        "per point, with qk_norm alone and without it, at the optimiser, learning rate and "
        "budget where without it most runs diverge (Wilson interval of the share above 50%); "
        "paired by seed",
    ),
    "remedy_prevents_divergence_softcap50": (
        "not measured",
        "recall_training runs of a fixed budget from a healthy start (scale <= 1), at least 8 "
        "per point, with softcap50 alone and without it, at the optimiser, learning rate and "
        "budget where without it most runs diverge (Wilson interval of the share above 50%); "
        "paired by seed",
    ),
    "remedy_prevents_divergence_softcap30": (
        "fails",
        "recall_training runs of a fixed budget from a healthy start (scale <= 1), at least 8 "
        "per point, with softcap30 alone and without it, at the optimiser, learning rate and "
        "budget where without it most runs diverge (Wilson interval of the share above 50%); "
        "paired by seed",
    ),
    "remedy_prevents_divergence_ssmax": (
        "fails",
        "recall_training runs of a fixed budget from a healthy start (scale <= 1), at least 8 "
        "per point, with ssmax alone and without it, at the optimiser, learning rate and budget"
        " where without it most runs diverge (Wilson interval of the share above 50%); paired "
        "by seed",
    ),
    "remedy_prevents_divergence_sigmoid": (
        "fails",
        "recall_training runs of a fixed budget from a healthy start (scale <= 1), at least 8 "
        "per point, with sigmoid alone and without it, at the optimiser, learning rate and "
        "budget where without it most runs diverge (Wilson interval of the share above 50%); "
        "paired by seed",
    ),
    "entropy_predicts_final_loss": (
        "inconclusive",
        "recall_training runs of a fixed budget (no stop at the threshold), no QK-norm; per run"
        " setting and budget, its distinct initial scales, at least 4",
    ),
}


def redeclared_from(claim_id: str) -> str:
    """The `redeclared_from` text of a re-declared claim (its old verdict, regime and commit); ""
    for a claim with no earlier declaration (e.g. of a normaliser registered since)."""
    return redeclared(*WAS[claim_id]) if claim_id in WAS else ""
