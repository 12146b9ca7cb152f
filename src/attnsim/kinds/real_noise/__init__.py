"""Kind `real_noise`: i.i.d. logit noise on the trained heads of all-MiniLM-L6-v2 (docs/science.md §5.6).

The same metrics, theory and summary as `noisy_attention` (§2, `attnsim.kinds.logit_noise`), but each trial's logits and
values are one real attention row: a corpus window of n tokens, a query position, and the
queries, keys and values of one head of one layer of the trained model.
"""

from __future__ import annotations

from attnsim.kinds import real_model
from attnsim.kinds.base import Kind, Param
from attnsim.kinds.columns import F64, I64, STR
from attnsim.kinds.logit_noise import EXTRA, METRICS, THEORY, extra_summary, theory, trial_metrics
from attnsim.kinds.real_noise import kernel
from attnsim.models import heads
from attnsim.theory.noise import NOISE_FAMILIES

PARAMS = (
    real_model.n_param(),
    Param("noise_draws", I64, "noisy outputs K per trial, each with fresh noise", minimum=1, maximum=4096),
    *real_model.layer_head_params(),
    Param(
        "noise",
        STR,
        "noise family: gaussian, uniform, laplace, gumbel or student_t (3 dof), standardised to std noise_scale (docs/science.md §2.3)",
        choices=NOISE_FAMILIES,
    ),
    Param("noise_scale", F64, "std sigma of the logit noise", minimum=0, maximum=100),
)


def bytes_per_trial(p) -> int:
    """The noise of up to every family (float32 K x n each) and the forward pass's activations per
    token as if the block went through at once (it goes in sub-batches: this is its cost)."""
    n, k = int(p["n"]), int(p["noise_draws"])
    return n * (4 * k * len(NOISE_FAMILIES) + heads.FORWARD_BYTES_PER_TOKEN)


def simulate_block(rng, trials, points):
    first = points[0]
    return [trial_metrics(out, p, trials) for p, out in zip(points, kernel.simulate(rng, trials, first["n"], first["noise_draws"], points))]


def headline(s) -> str:
    """Measured over predicted error per layer where the delta method applies."""
    ok = s[s["kappa_finite"] & (s["kappa"] > 0) & (s["kappa_sum_p2"] < 0.01) & s["err_ratio"].notna()]
    if ok.empty:
        return "no point in the delta method's regime (0 < κΣp² < 0.01)"
    per_layer = ok.groupby("layer")["err_ratio"].mean()
    return "trained heads, measured/predicted sq_err where κΣp² < 0.01, mean per layer: " + ", ".join(f"L{k} {v:.3f}" for k, v in per_layer.items())


KIND = Kind(
    name="real_noise",
    package=__name__,
    figures=("real_noise_map", "real_noise_rate"),
    headline=headline,
    extreme_metrics=("entropy",),
    description="attention output of trained MiniLM heads under i.i.d. logit noise vs the delta-method prediction",
    params=PARAMS,
    stream_params=("n", "noise_draws"),  # the windows; every layer, head, family and scale shares them
    metrics=METRICS,
    theory_columns=THEORY,
    algorithm_version=1,
    bytes_per_trial=bytes_per_trial,
    simulate_block=simulate_block,
    theory=theory,
    main_metric="rel_err",
    extra_columns=EXTRA,
    extra_summary=extra_summary,
    constant_metrics=("kappa",),
    infinite_metrics=("kappa", "rel_err_pred", "sq_err_pred", "sq_err_next"),  # +inf where kappa is (no finite moment)
    block_factor=8,
    check_grid=heads.check_windows,
    assets=("minilm",),
    provenance=heads.provenance,
)
