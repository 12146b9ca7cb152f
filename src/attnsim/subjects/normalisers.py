"""The attention normalisers, one frozen record each (docs/science.md §12): the map from a row of
logits s to weights p, its Jacobian-vector and vector-Jacobian products (the backward pass of
training), the output's gradient through it, its functional form with the form's parameters, and
the properties §12's theory and the claims ask about. `NORMALISERS` is the one registry, in the
order tables and figures show; `get(name)` finds a record and refuses an unknown name.

Each normaliser maps a row of logits s to weights p, and the attention output is o = sum p_i v_i
as the normaliser's paper defines it (no renormalisation: sigmoid, softpick and ReLU weights need
not sum to one; the sink's weights sum to less than one, its null key having a zero value).
Constants as the papers use them:

- `softmax`: e^{s_i} / sum_j e^{s_j};
- `sigmoid`: p_i = sigma(s_i - log n) (Ramapuram et al. 2024, b = -log n);
- `ssmax`: softmax(SSMAX_B log(n) s) (Nakanishi 2025; b is learnt there, SSMAX_B = 0.43 is the
  value in its examples);
- `softcap50`, `softcap30`: softmax(c tanh(s / c)) with c = 50 and 30 (Gemma 2);
- `sink`: e^{s_i} / (e^{s_0} + sum_j e^{s_j}) with a fixed null logit s_0 = SINK_LOGIT = 0;
- `softpick`: ReLU(e^{s_i} - 1) / sum_j |e^{s_j} - 1| (Zuhri et al. 2025; 0 where every s_j = 0);
- `sparsemax`: the Euclidean projection of s onto the simplex (Martins & Astudillo 2016);
- `entmax15`: alpha-entmax with alpha = 1.5, p = ReLU(s/2 - tau)^2 (Peters et al. 2019);
- `relu`: ReLU(s_i) / n (Wortsman et al. 2023).

The kinds keep their own softmax paths (kernels/softmax.py), so softmax rows are untouched by this
module; its softmax record is for the theory, the tests and the kinds that compare maps.

**The form** is the functional shape §12's formulas are written for, with its parameters; the
theory computes a law from the form (`theory.normalisers`), so a new normaliser of a known form
(another cap, another SSMax constant, another null logit) is one record here and gets every
prediction and claim. A map of a new form brings its own functions and `Unknown` for what nobody
has derived: its laws then answer "not predicted".

| form | weights | parameters |
|---|---|---|
| `exponential` | softmax(b log(n) s) | `log_gain` b (None: softmax, no gain) |
| `capped` | softmax(c tanh(s / c)) | `cap` |
| `null key` | e^{s_i} / (e^{s_0} + sum e^{s_j}) | `null_logit` |
| `logistic` | sigma(s_i - log n) | |
| `hinge` | ReLU(s_i) / n | |
| `rectified exponential` | ReLU(e^{s_i} - 1) / sum_j abs(e^{s_j} - 1) | |
| `threshold` | (s_i / power - t)_+^power, t fixing sum p = 1 | `power` |

**The properties** (§12.2-§12.4), fields of every record: a known form's are its row of
`FORM_PROPERTIES` (derived once per form), a new form's are stated with the record; each is
checked against the map itself in tests/subjects:

- `sums_to_one`: sum_i p_i = 1 on every row (else the mass is a measurement);
- `shift_invariant`: p(s + c) = p(s) for a common shift c;
- `cancels_noise_mean`: "yes", "partly" or "no": does the normalisation divide out the factor
  E[e^eps] that i.i.d. logit noise puts on every key (§12.2's property X; the sink only its
  keys' share);
- `noise_bias`: the bias along o that §12.2 predicts, in units of E[e^eps] - 1, where it is one
  number for every logit (0 where the mean cancels, 1 for sigmoid's kept factor); None where it
  depends on the logits (the sink's share, the keys of ReLU and softpick near 0);
- `bounded_ratio`: weights strictly positive with g(u) / g(-u) finite (§12.4's property for an
  entropy floor under cosine logits);
- `large_scale`: what the weights do as the logit scale grows (§12.3): "freezes" (onto the top
  key, H -> 0), "saturates" (every key past a threshold alike, H -> log(n/2)) or "scale-free"
  (p / sum p does not depend on the scale);
- `large_scale_gradient`: what carries the mean gradient at large scale (§12.3): "near ties" (the
  two-key law), "exact" (an elementwise law exact at every scale) or "none" (no law: soft-capping's
  top keys saturate together).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from attnsim.subjects import Unknown

SSMAX_B = 0.43
SINK_LOGIT = 0.0

# the functional forms §12's laws are written for (see the module docstring)
EXPONENTIAL = "exponential"
CAPPED = "capped"
NULL_KEY = "null key"
LOGISTIC = "logistic"
HINGE = "hinge"
RECTIFIED_EXPONENTIAL = "rectified exponential"
THRESHOLD = "threshold"
FORMS = (EXPONENTIAL, CAPPED, NULL_KEY, LOGISTIC, HINGE, RECTIFIED_EXPONENTIAL, THRESHOLD)
ELEMENTWISE = (LOGISTIC, HINGE)  # p_i depends on s_i alone: the noise's moments are exact

CANCELS = ("yes", "partly", "no")
LARGE_SCALE = ("freezes", "saturates", "scale-free")
LARGE_SCALE_GRADIENT = ("near ties", "exact", "none")

Rows = np.ndarray  # logits (..., n), float64
Weights = Callable[[Rows], np.ndarray]
Product = Callable[[Rows, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Normaliser:
    """One map from logits to attention weights (see the module docstring for every field)."""

    name: str
    label: str  # as prose names it ("SSMax", "soft-capping", "1.5-entmax")
    source: str  # the paper and its constants
    form: str | Unknown
    forward: Weights  # p of logits s (..., n), float64
    forward_jvp: Product  # (s, ds) -> (dp/ds) ds
    forward_vjp: Product  # (s, g) -> (dp/ds)^T g: the backward pass
    forward_gradient: Product  # (s (T, n), v (T, n, d)) -> do/ds_j (T, n, d), o = sum p_i v_i
    sums_to_one: bool
    shift_invariant: bool | Unknown
    cancels_noise_mean: str | Unknown
    noise_bias: float | None | Unknown
    bounded_ratio: bool | Unknown
    large_scale: str | Unknown
    large_scale_gradient: str | Unknown
    log_gain: float | None = None  # exponential: logits times b log n (SSMax's b)
    cap: float | None = None  # capped: c
    null_logit: float | None = None  # null key: s_0
    power: float | None = None  # threshold: 1 sparsemax, 2 1.5-entmax

    def __post_init__(self) -> None:
        for field, value, allowed in (
            ("form", self.form, FORMS),
            ("cancels_noise_mean", self.cancels_noise_mean, CANCELS),
            ("large_scale", self.large_scale, LARGE_SCALE),
            ("large_scale_gradient", self.large_scale_gradient, LARGE_SCALE_GRADIENT),
        ):
            if not isinstance(value, Unknown) and value not in allowed:
                raise ValueError(f"normaliser {self.name}: {field} {value!r} not one of {allowed}")

    @property
    def sorts_rows(self) -> bool:
        """Whether its threshold sorts each row (a `power` map: sparsemax, 1.5-entmax): what its
        kernel's cost counts."""
        return self.power is not None

    def weights(self, s) -> np.ndarray:
        """The weights p (..., n) of logits s (..., n)."""
        return self.forward(np.asarray(s, dtype=np.float64))

    def jvp(self, s, ds) -> np.ndarray:
        """dp = (dp/ds) ds per row: the Jacobian-vector product at logits s."""
        return self.forward_jvp(*_rows(s, ds))

    def vjp(self, s, g) -> np.ndarray:
        """ds = (dp/ds)^T g per row: the backward pass from dl/dp = g to dl/ds."""
        return self.forward_vjp(*_rows(s, g))

    def output_gradient(self, s: np.ndarray, v: np.ndarray) -> np.ndarray:
        """do/ds_j = sum_i (dp_i/ds_j) v_i per key (T, n, d), for logits s (T, n) and values v
        (T, n, d): the output's first-order sensitivity to each logit, in closed form."""
        return self.forward_gradient(s, v)

    def __str__(self) -> str:
        return self.name


def _rows(s, v) -> tuple[np.ndarray, np.ndarray]:
    """Logits and a vector per row as float64."""
    return np.asarray(s, dtype=np.float64), np.asarray(v, dtype=np.float64)


def mass_and_entropy(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Total mass sum p and the entropy of p / sum p (0 log 0 = 0) per row; nan where the mass is
    zero (ReLU or softpick with no positive logit: no distribution to measure)."""
    mass = p.sum(axis=-1)
    safe = np.where(mass > 0, mass, 1.0)[..., None]
    q = p / safe
    logq = np.log(np.where(q > 0, q, 1.0))
    entropy = -np.sum(q * logq, axis=-1)
    return mass, np.where(mass > 0, entropy, np.nan)


def _output(p: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.einsum("tn,tnd->td", p, v)


# --- the softmax family: exponential, capped, null key -------------------------------------------


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_jvp(p: np.ndarray, ds: np.ndarray) -> np.ndarray:
    """(diag p - p p^T) ds, row by row; also right for a sink (p summing to less than one)."""
    return p * (ds - np.sum(p * ds, axis=-1, keepdims=True))


def _softmax_vjp(p: np.ndarray, g: np.ndarray, null: np.ndarray | float = 0.0) -> np.ndarray:
    """J^T g = p (g - sum p g) (J symmetric), with a null key of weight `null` and g = 0 (the
    sink's zero value), centred on the heaviest key's g: with c = g - g_top,
    p (c - sum p c - null (0 - g_top)) is the same algebra (the weights and the null's sum to
    one), and at one-hot weights it is accurate instead of a rounding residue of g_top (as a
    training kernel's softmax backward must be, docs/science.md §12.7)."""
    top = np.argmax(p, axis=-1)[..., None]
    ref = np.take_along_axis(g, top, axis=-1)
    ref = np.where(np.take_along_axis(p, top, axis=-1) >= null, ref, 0.0)  # the null key on top
    c = g - ref
    return p * (c - (np.sum(p * c, axis=-1, keepdims=True) - null * ref))


def _softmax_family_gradient(p: np.ndarray, slope, v: np.ndarray) -> np.ndarray:
    """do/ds_j = p_j slope_j (v_j - o) for weights softmax(f(s)), slope = f'(s) (J = diag(p) - p
    p^T times diag(f'), also right for a sink's keys)."""
    o = _output(p, v)
    return (p * slope)[..., None] * (v - o[:, None, :])


def exponential_map(b: float | None):
    """softmax(b log(n) s): (forward, jvp, vjp, output gradient); b None is softmax itself."""
    if b is None:
        return (
            _softmax,
            lambda s, ds: _softmax_jvp(_softmax(s), ds),
            lambda s, g: _softmax_vjp(_softmax(s), g),
            lambda s, v: _softmax_family_gradient(_softmax(s), np.ones_like(s), v),
        )

    def forward(s):
        return _softmax(b * math.log(s.shape[-1]) * s)

    def jvp(s, ds):
        scale = b * math.log(s.shape[-1])
        return _softmax_jvp(_softmax(scale * s), scale * ds)

    def vjp(s, g):
        scale = b * math.log(s.shape[-1])
        return scale * _softmax_vjp(_softmax(scale * s), g)

    def gradient(s, v):
        slope = np.ones_like(s)
        slope *= b * math.log(s.shape[-1])
        return _softmax_family_gradient(forward(s), slope, v)

    return forward, jvp, vjp, gradient


def capped_map(c: float):
    """softmax(c tanh(s / c)): soft-capping. Its Jacobian is softmax's times diag(sech^2(s/c)) on
    the right, so its transpose puts the slope after the softmax product."""

    def forward(s):
        return _softmax(c * np.tanh(s / c))

    def jvp(s, ds):
        t = np.tanh(s / c)
        return _softmax_jvp(_softmax(c * t), (1.0 - t**2) * ds)

    def vjp(s, g):
        t = np.tanh(s / c)
        return (1.0 - t**2) * _softmax_vjp(_softmax(c * t), g)

    def gradient(s, v):
        return _softmax_family_gradient(forward(s), 1.0 - np.tanh(s / c) ** 2, v)

    return forward, jvp, vjp, gradient


def null_key_map(null_logit: float):
    """e^{s_i} / (e^{s_0} + sum_j e^{s_j}): a sink, a null key of logit s_0 and zero value."""

    def parts(s):
        """The keys' weights and the null key's own weight e^{s_0} / (e^{s_0} + sum_j e^{s_j})."""
        peak = np.maximum(s.max(axis=-1, keepdims=True), null_logit)
        e = np.exp(s - peak)
        null = np.exp(null_logit - peak)
        total = null + e.sum(axis=-1, keepdims=True)
        return e / total, null / total

    def forward(s):
        return parts(s)[0]

    def vjp(s, g):
        p, null = parts(s)
        return _softmax_vjp(p, g, null)

    return (
        forward,
        lambda s, ds: _softmax_jvp(forward(s), ds),
        vjp,
        lambda s, v: _softmax_family_gradient(forward(s), np.ones_like(s), v),
    )


# --- elementwise: logistic, hinge ------------------------------------------------------------


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))


def _diagonal_gradient(jvp: Product) -> Product:
    """do/ds_j = p'(s_j) v_j: the Jacobian of an elementwise map is diagonal."""
    return lambda s, v: jvp(s, np.ones_like(s))[..., None] * v


def _logistic():
    """sigma(s_i - log n); its Jacobian is diagonal, so J^T g = J g."""

    def forward(s):
        return _sigmoid(s - math.log(s.shape[-1]))

    def jvp(s, ds):
        p = _sigmoid(s - math.log(s.shape[-1]))
        return p * (1.0 - p) * ds

    return forward, jvp, jvp, _diagonal_gradient(jvp)


def _hinge():
    """ReLU(s_i) / n; diagonal, so J^T g = J g."""

    def forward(s):
        return np.maximum(s, 0.0) / s.shape[-1]

    def jvp(s, ds):
        return np.where(s > 0, ds, 0.0) / s.shape[-1]

    return forward, jvp, jvp, _diagonal_gradient(jvp)


# --- softpick: the rectified exponential -----------------------------------------------------


def softpick_parts(s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(e^{s} - 1) and e^{s} scaled by e^{-m}, m = max(0, max s) (no overflow), and the scale."""
    m = np.maximum(s.max(axis=-1, keepdims=True), 0.0)
    shift = np.exp(-m)
    # expm1 keeps e^s - 1 accurate near s = 0; beyond m = 700 e^{-m} is negligible anyway
    small = m < 700.0
    d = np.where(small, np.expm1(np.minimum(s, 700.0)) * shift, np.exp(s - m) - shift)
    return d, np.exp(s - m), shift


def _softpick(s: np.ndarray) -> np.ndarray:
    d, _, _ = softpick_parts(s)
    total = np.abs(d).sum(axis=-1, keepdims=True)
    return np.divide(np.maximum(d, 0.0), total, out=np.zeros_like(d), where=total > 0)


def _softpick_jvp(s: np.ndarray, ds: np.ndarray) -> np.ndarray:
    d, e, _ = softpick_parts(s)
    total = np.abs(d).sum(axis=-1, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    p = np.maximum(d, 0.0) / safe
    d_num = np.where(d > 0, e * ds, 0.0)
    d_total = np.sum(np.sign(d) * e * ds, axis=-1, keepdims=True)
    return np.where(total > 0, (d_num - p * d_total) / safe, 0.0)


def _softpick_vjp(s: np.ndarray, g: np.ndarray) -> np.ndarray:
    """J^T g for softpick, whose Jacobian is not symmetric: with d_i = e^{s_i} - 1, T = sum |d_j|,
    dp_i/ds_j = ([d_i > 0] e^{s_i} delta_ij - p_i sign(d_j) e^{s_j}) / T, so
    (J^T g)_j = e^{s_j} ([d_j > 0] g_j - sign(d_j) sum_i p_i g_i) / T (every factor scaled by
    e^{-m} as in the forward, which cancels in e/T)."""
    d, e, _ = softpick_parts(s)
    total = np.abs(d).sum(axis=-1, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    p = np.maximum(d, 0.0) / safe
    # g_j - sum p g on the positive keys, centred on the top key m: (g_j - g_m) + g_m (1 - mass)
    # + sum_i p_i (g_m - g_i), with 1 - mass = sum_{d<0} |d| / T exact (no 1 - p_m cancellation
    # at one-hot weights)
    ref = np.take_along_axis(g, np.argmax(s, axis=-1)[..., None], axis=-1)
    rest = np.sum(np.where(d < 0, -d, 0.0), axis=-1, keepdims=True) / safe
    top_minus_mean = ref * rest + np.sum(p * (ref - g), axis=-1, keepdims=True)
    positive = (g - ref) + top_minus_mean
    negative = ref - top_minus_mean  # -sign(d_j) sum p g with sign -1: sum p g
    back = e * np.where(d > 0, positive, np.where(d < 0, negative, 0.0))
    return np.where(total > 0, back / safe, 0.0)


def _softpick_gradient(s: np.ndarray, v: np.ndarray) -> np.ndarray:
    p = _softpick(s)
    o = _output(p, v)
    d, e, _ = softpick_parts(s)
    total = np.abs(d).sum(axis=-1)[:, None, None]
    return (np.where(d > 0, e, 0.0)[..., None] * v - (np.sign(d) * e)[..., None] * o[:, None]) / (
        total
    )


# --- threshold maps: sparsemax, 1.5-entmax ---------------------------------------------------


def sparsemax_threshold(z: np.ndarray) -> np.ndarray:
    """tau per row with sum_i max(z_i - tau, 0) = 1 (sort, cumulative sums, the support size)."""
    zs = -np.sort(-z, axis=-1)
    k = np.arange(1, z.shape[-1] + 1)
    cum = np.cumsum(zs, axis=-1)
    support = (1.0 + k * zs > cum).sum(axis=-1, keepdims=True)
    return (np.take_along_axis(cum, support - 1, axis=-1) - 1.0) / support


def entmax15_threshold(z: np.ndarray) -> np.ndarray:
    """tau per row with sum_i max(z_i - tau, 0)^2 = 1, z = s/2 (the exact sort-based algorithm
    of Peters et al. 2019)."""
    zs = -np.sort(-z, axis=-1)
    k = np.arange(1, z.shape[-1] + 1)
    mean = np.cumsum(zs, axis=-1) / k
    mean_sq = np.cumsum(zs**2, axis=-1) / k
    delta = (1.0 - k * (mean_sq - mean**2)) / k
    tau = mean - np.sqrt(np.maximum(delta, 0.0))
    support = (tau <= zs).sum(axis=-1, keepdims=True)
    return np.take_along_axis(tau, support - 1, axis=-1)


def _support_gradient(forward: Weights, slope: Callable[[np.ndarray], np.ndarray]) -> Product:
    """J = c (diag g - g g^T / sum g) with g the support's indicator (sparsemax, c = 1) or sqrt(p)
    (entmax, c = 1: 2 from the square times 1/2 from z = s/2): do/ds_j = g_j (v_j - v_g)."""

    def gradient(s, v):
        gw = slope(forward(s))
        centre = np.einsum("tn,tnd->td", gw, v) / gw.sum(axis=-1, keepdims=True)
        return gw[..., None] * (v - centre[:, None, :])

    return gradient


def _sparsemax():
    """The projection onto the simplex; on its support J = I - 1 1^T / |S|, symmetric."""

    def forward(s):
        return np.maximum(s - sparsemax_threshold(s), 0.0)

    def jvp(s, ds):
        on = s > sparsemax_threshold(s)
        mean = np.sum(ds * on, axis=-1, keepdims=True) / on.sum(axis=-1, keepdims=True)
        return np.where(on, ds - mean, 0.0)

    return forward, jvp, jvp, _support_gradient(forward, lambda p: (p > 0).astype(float))


def _entmax15():
    """1.5-entmax, p = ReLU(s/2 - tau)^2; J = 2 g (I - g g^T / sum g) / 2 with g = sqrt(p),
    symmetric."""

    def forward(s):
        z = s / 2.0
        return np.maximum(z - entmax15_threshold(z), 0.0) ** 2

    def jvp(s, ds):
        z = s / 2.0
        g = np.maximum(z - entmax15_threshold(z), 0.0)  # sqrt(p), the weights' slope
        dz = ds / 2.0
        return 2.0 * g * (dz - np.sum(g * dz, axis=-1, keepdims=True) / g.sum(-1, keepdims=True))

    return forward, jvp, jvp, _support_gradient(forward, np.sqrt)


# --- the registry --------------------------------------------------------------------------------


class _Functions(TypedDict):
    forward: Weights
    forward_jvp: Product
    forward_vjp: Product
    forward_gradient: Product


def _functions(forward, jvp, vjp, gradient) -> _Functions:
    return {
        "forward": forward,
        "forward_jvp": jvp,
        "forward_vjp": vjp,
        "forward_gradient": gradient,
    }


# §12.2-§12.4's properties of each form, derived once for the form (the module docstring): a
# record of a known form takes its row; a map of a new form states its own (Unknown until derived).
# A capped map is shift-invariant only while |s| << c; a null key's weight does not carry the
# noise's factor (a partial cancellation); the logistic form keeps the factor whole (E o~ = m o at
# e^s/n << 1); the hinge's p / sum p has no scale; the rectified exponential's -1 breaks the
# factorisation; a threshold map reaches exact zeros and a one-key support.
PROPERTIES = (
    "sums_to_one",
    "shift_invariant",
    "cancels_noise_mean",
    "noise_bias",
    "bounded_ratio",
    "large_scale",
    "large_scale_gradient",
)
FORM_PROPERTIES: dict[str, tuple] = {
    EXPONENTIAL: (True, True, "yes", 0.0, True, "freezes", "near ties"),
    CAPPED: (True, False, "yes", 0.0, True, "saturates", "none"),
    NULL_KEY: (False, False, "partly", None, True, "freezes", "near ties"),
    LOGISTIC: (False, False, "no", 1.0, True, "saturates", "exact"),
    HINGE: (False, False, "no", None, False, "scale-free", "exact"),
    RECTIFIED_EXPONENTIAL: (False, False, "no", None, False, "freezes", "near ties"),
    THRESHOLD: (True, True, "yes", 0.0, False, "freezes", "near ties"),
}


def of_form(name: str, label: str, source: str, form: str, functions, **parameters) -> Normaliser:
    """A normaliser of a known form: its functions (forward, jvp, vjp, output gradient), the
    form's parameters and the form's properties (`FORM_PROPERTIES`)."""
    properties: dict = dict(zip(PROPERTIES, FORM_PROPERTIES[form], strict=True))
    return Normaliser(
        name=name,
        label=label,
        source=source,
        form=form,
        **_functions(*functions),
        **properties,
        **parameters,
    )


SOFTMAX = of_form(
    "softmax", "softmax", "e^{s_i} / sum_j e^{s_j}", EXPONENTIAL, exponential_map(None)
)
SIGMOID = of_form(
    "sigmoid",
    "sigmoid",
    "sigma(s_i - log n) (Ramapuram et al. 2024, b = -log n)",
    LOGISTIC,
    _logistic(),
)
SSMAX = of_form(
    "ssmax",
    "SSMax",
    f"softmax(b log(n) s), b = {SSMAX_B} (Nakanishi 2025; b learnt there, {SSMAX_B} in its "
    "examples)",
    EXPONENTIAL,
    exponential_map(SSMAX_B),
    log_gain=SSMAX_B,
)
SOFTCAP50 = of_form(
    "softcap50",
    "soft-capping",
    "softmax(c tanh(s / c)), c = 50 (Gemma 2)",
    CAPPED,
    capped_map(50.0),
    cap=50.0,
)
SOFTCAP30 = of_form(
    "softcap30",
    "soft-capping",
    "softmax(c tanh(s / c)), c = 30 (Gemma 2)",
    CAPPED,
    capped_map(30.0),
    cap=30.0,
)
SINK = of_form(
    "sink",
    "a sink",
    f"e^{{s_i}} / (e^{{s_0}} + sum_j e^{{s_j}}), a null key of zero value, s_0 = {SINK_LOGIT:g}",
    NULL_KEY,
    null_key_map(SINK_LOGIT),
    null_logit=SINK_LOGIT,
)
SOFTPICK = of_form(
    "softpick",
    "softpick",
    "ReLU(e^{s_i} - 1) / sum_j |e^{s_j} - 1| (Zuhri et al. 2025; 0 if every s_j = 0)",
    RECTIFIED_EXPONENTIAL,
    (_softpick, _softpick_jvp, _softpick_vjp, _softpick_gradient),
)
SPARSEMAX = of_form(
    "sparsemax",
    "sparsemax",
    "the Euclidean projection of s onto the simplex (Martins & Astudillo 2016)",
    THRESHOLD,
    _sparsemax(),
    power=1.0,
)
ENTMAX15 = of_form(
    "entmax15",
    "1.5-entmax",
    "ReLU(s_i/2 - tau)^2 with sum p = 1 (1.5-entmax, Peters et al. 2019)",
    THRESHOLD,
    _entmax15(),
    power=2.0,
)
RELU = of_form("relu", "ReLU", "ReLU(s_i) / n (Wortsman et al. 2023)", HINGE, _hinge())

# The registry: every normaliser, in the order tables, figures and the claims show them.
NORMALISERS = (
    SOFTMAX,
    SIGMOID,
    SSMAX,
    SOFTCAP50,
    SOFTCAP30,
    SINK,
    SOFTPICK,
    SPARSEMAX,
    ENTMAX15,
    RELU,
)


def names() -> tuple[str, ...]:
    """The registered names, in the registry's order (a parameter's choices)."""
    return tuple(record.name for record in NORMALISERS)


def get(name: str) -> Normaliser:
    """The record of `name`; an unknown name is a ValueError naming the choices."""
    for record in NORMALISERS:
        if record.name == name:
            return record
    raise ValueError(f"unknown normaliser {name!r} (one of {', '.join(names())})")
