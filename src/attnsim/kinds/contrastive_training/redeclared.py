"""The verdicts of contrastive_training's claims re-declared in issue 49, as judged at 9b9a604 (the
previous default run, results/claims.parquet there): each re-declared claim carries its entry in
`redeclared_from`, counted apart for one release. Copied once, never recomputed."""

from attnsim.kinds.training_runs import redeclared

WAS = {
    "tau_one_worse_probe": (
        "inconclusive",
        "contrastive_training, class positives, fixed tau, the 16 settings of the declared map "
        "(n 32, 128 x classes 4, 16 x view noise 0.5, 1, 2, 3; 300 Adam steps at lr 0.01): tau "
        "= 1 against the best tau < 1 per setting; a declared setting not run counts as a point"
        " without an interval",
    ),
    "instance_tau_one_worse_knn": (
        "fails",
        "contrastive_training, instance positives with instance_noise > 0, fixed tau; per "
        "setting: tau = 1 against the best tau < 1",
    ),
    "tau_one_floor_binds": (
        "fails",
        "contrastive_training, class positives, fixed tau = 1, every setting (the setting's "
        "other fixed temperatures only for the evidence)",
    ),
    "learned_tau_settles_at_best": (
        "fails",
        "contrastive_training, learnt tau from tau = 1, in settings that also ran at least two "
        "fixed temperatures (those fixed rows are the comparison)",
    ),
    "tau_one_reaches_optimum_gap": (
        "outside regime",
        "contrastive_training, InfoNCE, class positives, fixed tau = 1, every setting whose "
        "optimum is attainable (classes <= embed_dim + 1)",
    ),
    "debiased_tau_one_worse_below_flip": (
        "outside regime",
        "contrastive_training, debiased InfoNCE, instance positives, instance noise 1.5, view "
        "noise 0.375 and 0.75, 8 and 16 classes (n 64, 400 Adam steps at lr 0.01), fixed tau; "
        "tau = 1 against the best tau < 1 per declared setting; a declared setting not run "
        "counts as a point without an interval",
    ),
    "siglip_tau_one_worse": (
        "outside regime",
        "contrastive_training, loss siglip, fixed tau, every setting that ran tau = 1 and a "
        "smaller tau (instance positives with instance noise > 0)",
    ),
    "siglip_learned_tau_settles_at_best": (
        "outside regime",
        "contrastive_training, loss siglip, learnt tau (learned or learned_clamped) from tau = "
        "0.1, in settings that also ran at least two fixed temperatures with that loss",
    ),
}


def redeclared_from(claim_id: str) -> str:
    """The `redeclared_from` text of a re-declared claim (its old verdict, regime and commit); ""
    for a claim with no earlier declaration (e.g. of a normaliser registered since)."""
    return redeclared(*WAS[claim_id]) if claim_id in WAS else ""
