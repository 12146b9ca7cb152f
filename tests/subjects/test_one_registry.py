"""One registry per subject (attnsim.subjects): an unknown name fails loudly wherever it is looked
up (config, kernels, theory, claims), and one new record appears in every kind that has a
`normaliser` parameter, in its theory, its claims and the verdict matrix, with nothing else
edited (docs/adding-a-kind.md, "Adding a normaliser")."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from helpers.configs import REPO

from attnsim.config.load import load
from attnsim.errors import ConfigError
from attnsim.kernels.noise import standard_noise32
from attnsim.kinds.normaliser_attention import claims as attention_claims
from attnsim.kinds.normaliser_attention import kernel as attention_kernel
from attnsim.kinds.normaliser_temperature import claims as temperature_claims
from attnsim.kinds.normaliser_temperature import kernel as temperature_kernel
from attnsim.kinds.recall_training import claims as recall_claims
from attnsim.kinds.recall_training import kernel as recall_kernel
from attnsim.subjects import noise_families, normalisers
from attnsim.theory import delta_next
from attnsim.theory import normalisers as theory
from attnsim.theory.noise import kappa

RECALL_POINT = {
    "n": 4,
    "d": 4,
    "batch": 4,
    "scale": 1.0,
    "optimiser": "adam",
    "lr": 0.01,
    "steps": 2,
}


def unknown_normaliser_calls():
    draws = attention_kernel.draw(np.random.default_rng(0), 2, 8, 4, 2)
    s, v = np.zeros((2, 8)), np.ones((2, 8, 4))
    return {
        "the registry": lambda: normalisers.get("tanh"),
        "the kernel of normaliser_attention": lambda: attention_kernel.simulate(
            draws, "tanh", 1.0, 0.1
        ),
        "the kernel of normaliser_temperature": lambda: temperature_kernel.simulate(
            np.zeros((2, 8), dtype=np.float32), "tanh", 1.0
        ),
        "the training kernel": lambda: recall_kernel.simulate(
            np.random.default_rng(0), 2, [RECALL_POINT | {"normaliser": "tanh"}]
        ),
        "the cosine floor": lambda: theory.cosine_floor("tanh", 16),
        "the mean field": lambda: theory.cosine_gap_mean_field("tanh", 256, 3),
        "the error prediction": lambda: theory.predicted_error("tanh", s, v, 0.1),
        "the entropy limit": lambda: theory.large_scale_entropy("tanh", 64),
        "the gradient law": lambda: theory.mean_grad_sq("tanh", 64, 8, 16.0),
        "a bias claim": lambda: attention_claims.bias_claim("tanh"),
        "a floor claim": lambda: temperature_claims.floor_claim("tanh"),
        "an escape claim": lambda: recall_claims.normaliser_escape_grows("tanh"),
    }


@pytest.mark.parametrize("where", list(unknown_normaliser_calls()))
def test_an_unknown_normaliser_fails_loudly_everywhere(where):
    with pytest.raises((ValueError, ConfigError), match="tanh"):
        unknown_normaliser_calls()[where]()


def test_an_unknown_normaliser_in_a_config_is_one_line_naming_the_key():
    experiment = {
        "kind": "normaliser_temperature",
        "trials": 10,
        "grid": {"normaliser": ["softmax", "tanh"], "n": [16], "d": [3], "tau": [1.0]},
    }
    with pytest.raises(ConfigError, match="normaliser") as info:
        load({"seed": 1, "experiments": {"x": experiment}})
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda: noise_families.get("cauchy"),
        lambda: kappa("cauchy", 0.5),
        lambda: delta_next.moment_order("cauchy", 0.5),
        lambda: delta_next.u_moments("cauchy", 0.5),
        lambda: standard_noise32(np.random.default_rng(0), "cauchy", 4),
    ],
    ids=["registry", "kappa", "moment order", "moments", "sampler"],
)
def test_an_unknown_noise_family_fails_loudly_everywhere(call):
    with pytest.raises(ValueError, match="unknown noise family 'cauchy'"):
        call()


def test_every_noise_family_has_a_sampler_and_one_name():
    from attnsim.kernels.noise import SAMPLERS

    names = noise_families.names()
    assert len(set(names)) == len(names) and set(SAMPLERS) == set(noise_families.NOISE_FAMILIES)
    for name in names:
        x = standard_noise32(np.random.default_rng(1), name, 20000).astype(np.float64)
        assert abs(x.std() - 1) < 0.05, name  # standardised: sigma is the std of eps


# A subprocess registers two records before anything imports the kinds: `softcap20`, of a known
# form (another cap), and `cube`, a map of a form no law is written for (every property Unknown).
NEW_RECORDS = """
import dataclasses
import json
import numpy as np
from attnsim.subjects import Unknown, normalisers

unknown = Unknown("no law derived for cube attention")


def cube(s):
    c = np.maximum(s, 0.0) ** 3
    return c / np.maximum(c.sum(axis=-1, keepdims=True), 1e-300)


softcap20 = normalisers.of_form(
    "softcap20", "soft-capping", "softmax(20 tanh(s / 20))", normalisers.CAPPED,
    normalisers.capped_map(20.0), cap=20.0,
)
cube_record = normalisers.Normaliser(
    name="cube", label="cube", source="ReLU(s)^3 / sum ReLU(s)^3", form=unknown,
    forward=cube, forward_jvp=lambda s, ds: ds, forward_vjp=lambda s, g: g,
    forward_gradient=lambda s, v: v, sums_to_one=False, shift_invariant=unknown,
    cancels_noise_mean=unknown, noise_bias=unknown, bounded_ratio=unknown, large_scale=unknown,
    large_scale_gradient=unknown,
)
normalisers.NORMALISERS = (*normalisers.NORMALISERS, softcap20, cube_record)

from attnsim.claims.engine import judge
from attnsim.kinds import all_kinds
from attnsim.kinds.normaliser_attention import kernel as attention
from attnsim.kinds.normaliser_temperature import kernel as temperature
from attnsim.report import normaliser_matrix
from attnsim.theory import normalisers as theory

new = ("softcap20", "cube")
out = {"choices": {}, "claims": {}, "verdicts": {}}
claims = []
for kind in all_kinds().values():
    params = {p.name: p for p in kind.schema.params}
    if "normaliser" in params:
        out["choices"][kind.name] = [n for n in new if n in params["normaliser"].choices]
    for spec in kind.submodule("claims").CLAIMS:
        result = judge(spec, None)
        claims.append(result)
        if result.subject in new:
            out["claims"].setdefault(result.subject, []).append(result.family)
            out["verdicts"][spec.claim_id] = result.verdict
# the matrix shows measured claims: as if each had been judged (here none saw a row)
measured = [dataclasses.replace(c, verdict="holds") for c in claims]
out["matrix_columns"] = normaliser_matrix._columns(normaliser_matrix.families(measured))
out["floor"] = {n: theory.cosine_floor(n, 64) for n in new}
out["entropy_limit"] = {n: theory.large_scale_entropy(n, 64) for n in new}
draws = attention.draw(np.random.default_rng(0), 3, 16, 4, 2)
rows = {n: attention.simulate(draws, n, 1.0, 0.3) for n in new}
out["error_prediction"] = {n: bool(np.isfinite(r["sq_err_pred"]).all()) for n, r in rows.items()}
cosines = temperature.draw(np.random.default_rng(1), 3, 16, 3)
gaps = {n: temperature.simulate(cosines, n, 1.0)["gap"] for n in new}
out["gaps"] = {n: bool(np.isfinite(gap).all()) for n, gap in gaps.items()}
print(json.dumps(out))
"""


def test_one_new_record_appears_in_every_kind_its_theory_claims_and_matrix():
    """Registered and nothing else edited: each kind with a `normaliser` parameter takes both
    names, each kind's per-normaliser claim families declare a claim for each (the unknown form's
    `not predicted`), the verdict matrix has a column for each, the kernels run both, and the
    theory predicts the known form (a floor below log n, the saturated entropy) and answers NaN for
    the unknown one."""
    run = subprocess.run(
        [sys.executable, "-c", NEW_RECORDS], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout)
    assert out["choices"] == {
        kind: ["softcap20", "cube"]
        for kind in ("normaliser_attention", "normaliser_temperature", "recall_training")
    }
    families = {
        "normaliser_bias",
        "normaliser_error",
        "normaliser_entropy",
        "normaliser_floor",
        "normaliser_cosine_gap",
        "escape_time_grows_with_scale",
    }
    assert families <= set(out["claims"]["softcap20"])
    assert families | {"normaliser_gradient"} <= set(out["claims"]["cube"])
    assert "normaliser_gradient" not in out["claims"]["softcap20"]  # capping: no law, like 30/50
    assert out["verdicts"]["normaliser_bias_cube"] == "not predicted"
    assert out["verdicts"]["normaliser_floor_cube"] == "not predicted"
    assert out["verdicts"]["normaliser_bias_softcap20"] == "not measured"  # judged on no rows
    assert out["matrix_columns"][-2:] == ["softcap20", "cube"]
    assert 0 < out["floor"]["softcap20"] < math.log(64) and math.isnan(out["floor"]["cube"])
    assert out["entropy_limit"]["softcap20"] == pytest.approx(math.log(32))
    assert math.isnan(out["entropy_limit"]["cube"])
    assert out["error_prediction"] == {"softcap20": True, "cube": False}
    assert out["gaps"] == {"softcap20": True, "cube": True}
