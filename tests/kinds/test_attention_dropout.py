"""`attention_dropout`: the kernel against a naive per-row, per-mask oracle; transformers' form is
unbiased with the exact law p/(1-p) sum w^2 ||v||^2 (statistical, fixed seed); the Bernoulli
moments;
claims on constructed summaries."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from oracles import attention_dropout as oracle

from attnsim.kernels import precision
from attnsim.kinds import get_kind
from attnsim.kinds.attention_dropout import claims, kernel
from attnsim.theory import dropout

KIND = get_kind("attention_dropout")


@pytest.mark.parametrize("form", kernel.FORMS)
@pytest.mark.parametrize("rate", [0.1, 0.6])
def test_kernel_matches_the_naive_oracle(form, rate):
    logits, values, u = kernel.draw(np.random.default_rng(4), 6, 12, 3, 1.5, 2.0, 5)
    clean = precision.clean_rows(logits, values)
    got = kernel.point_metrics(clean, kernel.sums(clean), u, rate, form)
    for t in range(6):
        for name, value in oracle.row(logits[t], values[t], u[t], rate, form).items():
            assert got[name][t] == pytest.approx(value, rel=1e-9, abs=1e-12), (name, t)


def test_bernoulli_moments():
    rate = 0.3
    q = 1 - rate
    u = np.array([1 / q - 1, -1.0])  # kept, dropped
    w = np.array([q, rate])
    kappa, mu3, mu4 = dropout.u_moments(rate)
    assert (
        kappa == pytest.approx(np.sum(w * u**2))
        and mu3 == pytest.approx(np.sum(w * u**3))
        and mu4 == pytest.approx(np.sum(w * u**4))
    )
    assert dropout.kappa(rate) == pytest.approx(rate / q)


def test_transformers_form_is_unbiased_with_the_exact_law():
    """6000 rows x 8 masks, fixed seed: the mean per-row ratio to the exact law is 1 within 4 SE
    (and
    the SE is small), and the bias estimate is 0 within 4 SE."""
    p = dict(
        n=64, d=4, logit_scale=1.0, value_mean=3.0, noise_draws=8, rate=0.2, form="transformers"
    )
    rows = [
        KIND.compute.simulate_block(np.random.default_rng(50 + b), 600, [p])[0] for b in range(10)
    ]
    ratio = np.concatenate([r["ratio_exact"] for r in rows])
    se = ratio.std(ddof=1) / math.sqrt(ratio.size)
    assert abs(ratio.mean() - 1) < 4 * se and se < 0.01
    bias = np.concatenate([r["bias_sq"] for r in rows])
    assert abs(bias.mean()) < 4 * bias.std(ddof=1) / math.sqrt(bias.size)
    iid = np.concatenate([r["ratio_iid"] for r in rows])
    # ||v||^2 = d + 9 against ||v - o||^2 ~ d: the essay's formula falls far short
    assert iid.mean() > 1.5


def summary(**columns) -> pd.DataFrame:
    base = dict(
        experiment="e",
        n_trials=1000,
        n=256,
        d=16,
        logit_scale=0.5,
        value_mean=0.0,
        noise_draws=8,
        rate=0.1,
        form="logit",
        ratio_iid_mean=1.0,
        ratio_iid_ci_low=0.98,
        ratio_iid_ci_high=1.02,
        ratio_next_mean=1.0,
        ratio_exact_mean=np.nan,
        ratio_exact_ci_low=np.nan,
        ratio_exact_ci_high=np.nan,
        value_factor=1.0,
        delta_correction=0.01,
    )
    return pd.DataFrame([{**base, **columns}])


def test_claims_judge_by_equivalence_in_their_regimes():
    assert claims.LOGIT_DELTA(summary()).verdict == "holds"
    assert claims.LOGIT_DELTA(summary(delta_correction=0.1)).verdict == "outside regime"
    assert claims.LOGIT_DELTA(summary(ratio_iid_ci_low=0.9)).verdict == "inconclusive"
    t = summary(
        form="transformers",
        ratio_exact_mean=1.0,
        ratio_exact_ci_low=0.99,
        ratio_exact_ci_high=1.01,
        ratio_iid_mean=1.3,
        ratio_iid_ci_low=1.28,
        ratio_iid_ci_high=1.32,
        value_factor=1.3,
    )
    assert (
        claims.TRANSFORMERS_EXACT(t).verdict == "holds"
        and claims.TRANSFORMERS_EXACT(t).role == "sanity"
    )
    iid = claims.TRANSFORMERS_IID(t)
    assert iid.verdict == "fails" and "1.300" in iid.evidence
    for judge in claims.CLAIMS:
        assert judge(None).verdict == "not measured" and judge(None).reason.startswith(
            "docs/science.md §11.6"
        )
