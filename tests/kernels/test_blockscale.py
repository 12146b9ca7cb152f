"""Block-scaled quantisation (`attnsim.kernels.blockscale`, docs/science.md §11.9): the vectorised
kernel against the plain per-group oracle, the block model against brute force over many small
blocks, and the new axes leaving today's point ids alone."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from oracles import blockscale as oracle
from oracles.points import digest

from attnsim.kernels import blockscale
from attnsim.kernels.rounding import F32, FORMAT_NAMES, FORMATS, MX_ELEMENT_NAMES
from attnsim.kinds import get_kind
from attnsim.records.grid import row_ids

SCALED = [g for g in blockscale.GRANULARITIES if g != "none"]


def _awkward(shape, seed=0) -> np.ndarray:
    """Gaussian values with an outlier column, exact zeros and a 40-column row (a short block)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(F32)
    x[..., 1] *= F32(30)
    x[0, 0, :5] = 0
    return x


@pytest.mark.parametrize("scale_type", blockscale.SCALE_TYPES)
@pytest.mark.parametrize("granularity", blockscale.GRANULARITIES)
@pytest.mark.parametrize("name", FORMAT_NAMES)
def test_quantise_equals_the_per_group_oracle(name, granularity, scale_type):
    x = _awkward((2, 3, 40))
    kept, scale = blockscale.quantise(x, FORMATS[name], granularity, scale_type)
    expected = oracle.quantise(x, name, granularity, scale_type)
    assert np.array_equal(kept, expected)
    if scale_type.startswith("e8m0") and granularity != "none":  # powers of two
        assert np.all(np.frexp(scale)[0] == 0.5)
    if scale_type == "e8m0_ceil" and granularity != "none":  # never saturating
        assert np.all(np.abs(x) / scale <= FORMATS[name].max)
    assert not np.isnan(kept).any()  # the saturating casts: never e4m3fn's NaN


@pytest.mark.parametrize("rule", ["e8m0_ceil", "e8m0_ocp"])
@pytest.mark.parametrize("name", MX_ELEMENT_NAMES + ("float8_e4m3fn", "float8_e5m2"))
def test_mx_rules_equal_the_per_block_recipe(name, rule):
    """Both E8M0 rules on rows of Gaussian values with wide blocks maxima (so that OCP's clips
    happen): the kernel's values equal the per-block recipe written from the spec, block by
    block, and the blocks it clips are those whose maximum has a significand above
    max / 2^emax (none under round-up)."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((3, 4, 96)) * np.exp(rng.uniform(-3, 3, (3, 4, 1)))).astype(F32)
    fmt = FORMATS[name]
    kept, scale = blockscale.quantise(x, fmt, "block32", rule)
    clipped = 0
    for t in range(3):
        for r in range(4):
            expected, count = oracle.mx_blocks(x[t, r], name, rule)
            assert np.array_equal(kept[t, r], expected)
            clipped += count
    blocks = np.abs(x).reshape(3, 4, 3, 32).max(axis=-1)
    significand = blocks / 2.0 ** np.floor(np.log2(blocks))
    m = blockscale.ocp_saturation_significand(fmt)
    assert clipped == (int((significand > m).sum()) if rule == "e8m0_ocp" else 0)
    assert rule == "e8m0_ceil" or clipped > 0


def test_the_two_rules_differ_only_on_the_blocks_ocp_clips():
    """§11.9: round-up's scale is OCP's where the block maximum's significand is at most
    max / 2^emax, twice it where OCP clips."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((50, 1, 256)).astype(F32)
    for name in MX_ELEMENT_NAMES + ("float8_e4m3fn", "float8_e5m2"):
        fmt = FORMATS[name]
        _, ceil = blockscale.quantise(x, fmt, "block32", "e8m0_ceil")
        _, ocp = blockscale.quantise(x, fmt, "block32", "e8m0_ocp")
        saturates = blockscale.group_maxima(x, "block32") / ocp > fmt.max
        assert np.array_equal(ceil, np.where(saturates, 2 * ocp, ocp))


def test_ocp_emax_is_the_spec_table():
    """emax_elem of OCP MX v1.0 (E4M3 8, E5M2 15, E2M3 2, E3M2 4, E2M1 2) and the significand
    beyond which a block maximum saturates (1.75, 1.75, 1.875, 1.75, 1.5)."""
    for name, emax in oracle.EMAX.items():
        assert blockscale.ocp_emax(FORMATS[name]) == emax
    m = {n: blockscale.ocp_saturation_significand(FORMATS[n]) for n in MX_ELEMENT_NAMES}
    assert m == {"float6_e2m3fn": 1.875, "float6_e3m2fn": 1.75, "float4_e2m1fn": 1.5}
    assert blockscale.ocp_saturation_significand(FORMATS["float8_e4m3fn"]) == 1.75


@pytest.mark.parametrize("name", MX_ELEMENT_NAMES)
def test_mx_elements_are_the_ml_dtypes_grids(name):
    """Every value of an FP6/FP4 grid is kept exactly, and nothing else is a value (ml-dtypes'
    own enumeration of the format)."""
    import ml_dtypes

    dtype = getattr(ml_dtypes, name)
    grid = np.arange(256 if "6" in name else 16, dtype=np.uint8)
    grid = grid[grid < (64 if "6" in name else 16)].view(dtype).astype(F32)
    kept, _ = blockscale.quantise(grid[None, None, :], FORMATS[name], "none", "fp32")
    assert np.array_equal(kept[0, 0], grid)


def test_fp16_accumulation_equals_the_step_by_step_oracle():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 24)).astype(F32) * F32(8)
    b = rng.standard_normal((2, 5, 24)).astype(F32) * F32(8)
    total, variance = blockscale.accumulate(a, b, "fp16")
    for t in range(2):
        assert np.array_equal(total[t], oracle.accumulate_fp16(a[t], b[t]))
    assert np.all(variance > 0)
    exact, none = blockscale.accumulate(a, b, "fp32")
    assert not none.any()
    # the measured accumulation error against the model, over the 10 sums: within 4 SE of a
    # sum of d uniform errors (each SE of a squared uniform error is 2/sqrt(5) of its mean)
    err = (total.astype(np.float64) - exact) ** 2
    assert abs(err.sum() / variance.sum() - 1) < 4 * math.sqrt(0.8 / (10 * 24))


@pytest.mark.parametrize(
    ("name", "granularity", "scale_type"),
    [
        ("float8_e4m3fn", "block32", "e8m0_ceil"),
        ("float8_e4m3fn", "row", "fp32"),
        ("float6_e2m3fn", "block32", "e8m0_ceil"),
        ("float6_e3m2fn", "channel", "fp32"),
        ("float4_e2m1fn", "block32", "e8m0_ceil"),
        ("float8_e4m3fn", "block32", "e8m0_ocp"),
        ("float4_e2m1fn", "block16", "e8m0_ocp"),
        ("float6_e2m3fn", "row", "e8m0_ocp"),
        ("float4_e2m1fn", "block16", "e4m3"),
        ("float4_e2m1fn", "tensor", "fp32"),
        ("float4_e2m1fn", "channel", "e4m3"),
        ("float6_e3m2fn", "block16", "e4m3"),
        ("float8_e4m3fn", "tensor", "e4m3"),
    ],
)
def test_block_model_against_brute_force(name, granularity, scale_type):
    """The model's mean squared error (variance plus known errors, docs/science.md §11.9) against
    the brute-force quantisation of 4096 small Gaussian blocks: within the model's own
    within-bin tolerance plus 4 standard errors of the measured mean (SE from the blocks'
    spread)."""
    fmt = FORMATS[name]
    x = np.random.default_rng(2).standard_normal((4096, 2, 32)).astype(F32)
    kept, scale = blockscale.quantise(x, fmt, granularity, scale_type)
    variance, known = blockscale.error_moments(x, scale, fmt, granularity, scale_type)
    measured = ((kept.astype(np.float64) - x) ** 2).sum(axis=(1, 2))
    model = (variance + known**2).sum(axis=(1, 2))
    se = measured.std(ddof=1) / math.sqrt(len(measured))
    slack = blockscale.within_bin_tolerance(fmt.bits) * model.mean()
    assert abs(measured.mean() - model.mean()) < 4 * se + slack


def test_block_model_knows_the_block_maximum_and_the_flushed():
    """With an fp32 scale the group's maximum lands on the format's largest value (error 0 up to
    float32), and a value flushed to 0 has the known error -x."""
    fmt = FORMATS["float4_e2m1fn"]
    x = np.array([[[6.0, 0.2, 1.1, -3.0]]], dtype=F32)
    kept, scale = blockscale.quantise(x, fmt, "row", "fp32")
    variance, known = blockscale.error_moments(x, scale, fmt, "row", "fp32")
    assert kept[0, 0, 0] == 6.0 and variance[0, 0, 0] == 0
    assert kept[0, 0, 1] == 0 and known[0, 0, 1] == pytest.approx(-0.2) and variance[0, 0, 1] == 0
    assert variance[0, 0, 2] == pytest.approx(0.5**2 / 12)


def test_new_axes_at_their_defaults_keep_todays_point_ids():
    """A point at granularity none, scale fp32, accumulation fp32, no smoothing and key_mean 0
    has the id it had before the axes existed; any other value of them makes a new point."""
    kind = get_kind("precision_attention")
    today = {
        "n": 64,
        "d": 16,
        "logit_scale": 1.0,
        "outlier_channels": 2,
        "outlier_scale": 4.0,
        "format": "bfloat16",
        "site": "logits",
    }
    old_id = digest({"kind": kind.name, "params": today})
    names = kind.param_names
    defaults = {p.name: p.default for p in kind.schema.params if p.id_omits_default}
    row = tuple({**defaults, **today}[n] for n in names)
    scaled = tuple({**defaults, **today, "granularity": "block32"}[n] for n in names)
    ids = row_ids(kind, [row, scaled])
    assert ids[0] == old_id
    assert ids[1] == digest({"kind": kind.name, "params": {**today, "granularity": "block32"}})


def test_a_spec_stored_before_the_axes_existed_is_read_with_their_defaults():
    """A chunk spec written by the kind before it gained the block-scaled axes (its `params`
    lack them) reads as the same points, at the axes' defaults, with the same ids; a spec lacking
    a parameter without `id_omits_default` is still refused in one line."""
    from attnsim.errors import ConfigError
    from attnsim.records.chunk import ChunkSpec

    kind = get_kind("precision_attention")
    old = ["n", "d", "logit_scale", "outlier_channels", "outlier_scale", "format", "site"]
    row = [64, 16, 1.0, 2, 4.0, "bfloat16", "logits"]
    text = json.dumps(
        {
            "experiment": "e",
            "kind": kind.name,
            "seed": 1,
            "trials": 10,
            "params": old,
            "points": [row],
        }
    )
    spec = ChunkSpec.from_json(text)
    (point,) = spec.points
    assert point.params["granularity"] == "none" and point.params["smoothing"] == "none"
    assert point.id == digest({"kind": kind.name, "params": dict(zip(old, row))})
    broken = json.loads(text)
    broken["params"] = old[1:]
    broken["points"] = [row[1:]]
    with pytest.raises(ConfigError, match="do not match kind"):
        ChunkSpec.from_json(json.dumps(broken))


def test_the_renamed_round_up_rule_keeps_its_point_ids_and_streams():
    """e8m0_ceil is the rule stored as e8m0: its points hash the old name (the ids and streams
    of the rows stored before the rename), as the oracle's definition of ids writes it, and a
    chunk spec stored with the old name reads as the same points under the new name. The OCP
    rule is a new value: new ids."""
    from oracles.points import point_id, reference_point

    from attnsim.records.chunk import ChunkSpec
    from attnsim.records.grid import points_from_rows

    kind = get_kind("precision_attention")
    params = {
        "n": 256,
        "d": 16,
        "logit_scale": 1.0,
        "outlier_channels": 2,
        "outlier_scale": 4.0,
        "format": "float8_e4m3fn",
        "site": "logits",
        "granularity": "block32",
        "scale_type": "e8m0",
    }
    # a point id of the base run's store (results/store at 9b9a604, experiment precision_blocks)
    stored = digest({"kind": kind.name, "params": params})
    assert stored == "3fae569df75729c9"
    names = kind.param_names
    full = {p.name: p.default for p in kind.schema.params if p.id_omits_default} | params
    now = tuple({**full, "scale_type": "e8m0_ceil"}[n] for n in names)
    old = tuple(full[n] for n in names)
    ocp = tuple({**full, "scale_type": "e8m0_ocp"}[n] for n in names)
    assert row_ids(kind, [now, old]) == [stored, stored]
    assert point_id(kind.name, dict(zip(names, now))) == stored
    assert row_ids(kind, [ocp])[0] not in (stored, point_id(kind.name, dict(zip(names, old))))
    (a, b) = points_from_rows(kind, [now, old])
    assert a.params["scale_type"] == b.params["scale_type"] == "e8m0_ceil"
    assert a.id == b.id == stored and a.stream == b.stream == reference_point(kind, full).stream
    text = json.dumps(
        {
            "experiment": "e",
            "kind": kind.name,
            "seed": 1,
            "trials": 10,
            "params": list(names),
            "points": [list(old)],
        }
    )
    (point,) = ChunkSpec.from_json(text).points
    assert point.params["scale_type"] == "e8m0_ceil" and point.id == stored
