"""Kind `real_temperature`: cosine attention at temperature tau over real embeddings
(docs/science.md §5.8).

A query and n keys are members of a fixed population of real embeddings (MiniLM sentence
embeddings of corpus sentences, or GloVe word vectors); the logits are cos theta_i / tau. The
gap log n - H is compared with the worst cases of §4 (g(tau), the exact finite-n bound), with
the random-direction value 1/(2 d tau^2), and with the small-spread prediction Var_i(cos)/(2 tau^2)
measured per trial.
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.errors import ConfigError
from attnsim.kinds.base import (
    Assets,
    Column,
    Compute,
    Kind,
    Param,
    Presentation,
    Schema,
    Summary,
    Theory,
)
from attnsim.kinds.columns import BOOL, ENTROPY, F64, I64, LOG_N, STR, with_ci
from attnsim.kinds.real_temperature import kernel
from attnsim.models import corpus
from attnsim.stats import ratio_of_means
from attnsim.theory.entropy import asymptotic_gap, exact_gap, gap_tolerance, random_direction_gap

PARAMS = (
    Param(
        "embeddings",
        STR,
        "minilm: MiniLM sentence embeddings of corpus sentences (d = 384); glove: GloVe 6B word "
        "vectors of corpus words (d = 50)",
        choices=("minilm", "glove"),
    ),
    Param(
        "n",
        I64,
        "number of keys (other members of the population)",
        minimum=2,
        maximum=max(kernel.POPULATION.values()) - 1,
    ),
    Param("tau", F64, "temperature: logits are cos(theta_i) / tau", minimum=0.0001, maximum=10000),
)

METRICS = (
    ENTROPY,
    Column("gap", F64, "log n - H, nats, >= 0"),
    Column("var_cos", F64, "Var_i(cos theta_i) over the trial's n keys"),
    Column(
        "gap_var_pred",
        F64,
        "Var_i(cos theta_i) / (2 tau^2): the small-spread prediction of the gap (§4.5)",
    ),
    Column("mean_cos", F64, "mean_i cos theta_i over the trial's n keys"),
    Column(
        "d_eff",
        F64,
        "participation ratio (tr S)^2 / tr S^2 of the population's covariance (constant)",
    ),
)

THEORY = (
    LOG_N,
    Column("dim", I64, "dimension d of the embeddings"),
    Column(
        "gap_exact", F64, "exact finite-n worst case of log n - H over all cosine configurations"
    ),
    Column("gap_asymptotic", F64, "g(tau): the n -> inf worst case; g(1) = 0.4745"),
    Column(
        "gap_random_direction",
        F64,
        "1 / (2 d tau^2): the gap of random directions in R^d while small",
    ),
)

EXTRA = (
    Column("gap_max", F64, "largest gap over all trials of the point"),
    Column(
        "gap_within_bound",
        BOOL,
        "gap_max <= gap_exact + float64 tolerance (as temperature_entropy)",
    ),
    *with_ci("gap_var_ratio", "mean(gap) / mean(gap_var_pred), paired over trials"),
    Column("d_eff", F64, "participation ratio of the population"),
    Column(
        "gap_random_direction_eff",
        F64,
        "1 / (2 d_eff tau^2): the random-direction value with d_eff for d",
    ),
    Column(
        "var_cos_d",
        F64,
        "mean var_cos x d: 1 for random directions; how much 1/d misses the real spread",
    ),
)


def check_grid(grid) -> None:
    """n keys plus the query must fit in every population named."""
    for embeddings in grid["embeddings"]:
        size = kernel.POPULATION[embeddings]
        if max(grid["n"]) > size - 1:
            raise ConfigError(
                f"grid.n: {max(grid['n'])} keys exceed the {size - 1} other members of the "
                f"{embeddings} population (embeddings: {embeddings})"
            )


def bytes_per_trial(p) -> int:
    # the permutation's uniforms and indices (16 bytes per member), the drawn keys (8 d per key),
    # cosines and weights
    size = kernel.POPULATION[p["embeddings"]]
    return 16 * size + int(p["n"]) * (8 * kernel.DIMENSION[p["embeddings"]] + 32)


def simulate_block(rng, trials, points):
    first = points[0]
    cosines = kernel.draw_cosines(rng, trials, first["n"], first["embeddings"])
    d_eff = kernel.participation_ratio(first["embeddings"])
    results = kernel.statistics(cosines, [p["tau"] for p in points])
    for r in results:
        r["d_eff"] = np.full(trials, d_eff)
    return results


def theory(p) -> dict[str, object]:
    n, tau, d = p["n"], p["tau"], kernel.DIMENSION[p["embeddings"]]
    return {
        "log_n": math.log(n),
        "dim": d,
        "gap_exact": float(exact_gap(n, tau)),
        "gap_asymptotic": float(asymptotic_gap(tau)),
        "gap_random_direction": float(random_direction_gap(d, tau)),
    }


def extra_summary(metrics, p) -> dict[str, object]:
    gap_max = float(np.max(metrics["gap"]))
    ratio = ratio_of_means(metrics["gap"], metrics["gap_var_pred"])
    d_eff = float(metrics["d_eff"][0])
    none = lambda v: None if math.isnan(v) else v  # noqa: E731
    return {
        "gap_max": gap_max,
        "gap_within_bound": bool(
            gap_max <= float(exact_gap(p["n"], p["tau"])) + gap_tolerance(p["n"], p["tau"])
        ),
        "gap_var_ratio": none(ratio["mean"]),
        "gap_var_ratio_ci_low": none(ratio["ci_low"]),
        "gap_var_ratio_ci_high": none(ratio["ci_high"]),
        "d_eff": d_eff,
        "gap_random_direction_eff": 1 / (2 * d_eff * p["tau"] ** 2),
        "var_cos_d": float(np.mean(metrics["var_cos"])) * kernel.DIMENSION[p["embeddings"]],
    }


def provenance() -> dict:
    from attnsim.models.assets import asset_provenance

    return {**asset_provenance("minilm"), **asset_provenance("glove"), **corpus.corpus_provenance()}


def headline(s) -> str:
    """Largest gap at tau = 1 against g(1), and how far the real spread is from 1/d."""
    parts = [f"every trial within its exact bound: {bool(s['gap_within_bound'].all())}"]
    at_one = s[np.isclose(s["tau"], 1.0)]
    if len(at_one):
        parts.append(f"largest gap at τ = 1: {at_one['gap_max'].max():.4f} (g(1) = 0.4745)")
    for emb, part in s.groupby("embeddings"):
        parts.append(
            f"{emb}: Var(cos)·d = {part['var_cos_d'].mean():.2f}, d_eff = "
            f"{part['d_eff'].iloc[0]:.1f} of d = {part['dim'].iloc[0]}"
        )
    return "; ".join(parts)


KIND = Kind(
    name="real_temperature",
    description=(
        "entropy gap of cosine attention at temperature tau over real embeddings (MiniLM, GloVe) "
        "vs the bounds and the spread prediction"
    ),
    package=__name__,
    algorithm_version=1,
    schema=Schema(
        params=PARAMS,
        stream_params=("embeddings", "n"),
        metrics=METRICS,
        main_metric="gap",
        check_grid=check_grid,
    ),
    compute=Compute(
        bytes_per_trial=bytes_per_trial,
        simulate_block=simulate_block,
        counts=lambda p: kernel.counts(int(p["n"]), p["embeddings"]),
    ),
    theory=Theory(columns=THEORY, point=theory),
    summary=Summary(
        extreme_metrics=("entropy",),
        extra_columns=EXTRA,
        extra=extra_summary,
        constant_metrics=("d_eff",),
    ),
    presentation=Presentation(figures=("real_temperature_gap",), headline=headline),
    assets=Assets(names=("minilm", "glove"), provenance=provenance),
    example={
        "trials": 100,
        "grid": {"embeddings": ["minilm", "glove"], "n": [16, 128], "tau": [0.1, 1.0]},
    },
)
