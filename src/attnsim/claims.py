"""The claims table: each claim of SCIENCE.md, its prediction, the measurement and a verdict.

Everything is computed from the store's summaries (and, for the entropy bounds, every trial)
and the theory module; nothing is typed in. A verdict changes only through data: the
thresholds that turn numbers into verdicts all live in `THRESHOLDS` below.

Verdicts: `holds` (the 95% interval of the measurement meets the prediction's tolerance band),
`fails` (it does not), `outside regime` (the sweep measured the kind but no point lies in the
claim's regime), `not measured` (the config has no experiment of the kind).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from attnsim import store
from attnsim.stats import mean_ci
from attnsim.theory.entropy import asymptotic_gap


@dataclass(frozen=True)
class Thresholds:
    delta_kappa_p2: float = 0.01  # kappa * sum p^2 below this: the delta method's regime ("<< 1")
    ratio_tolerance: float = 0.05  # measured/predicted error may differ from 1 by this much
    rate_kappa_over_n: float = 0.1  # a series tests the n^-1/2 rate if kappa/n stays below this at its smallest n
    slope_tolerance: float = 0.05  # fitted log-log slope may differ from -1/2 by this much
    breakdown_slope: float = -0.25  # with kappa = inf the error must fall slower than n^-1/4 ("does not fall")
    entropy_rounding: float = 1e-12  # relative slack on H <= log n for floating-point rounding
    small_sigma: float = 0.3  # effective logit std up to which log n - sigma^2/2 is tested
    entropy_tolerance: float = 0.01  # nats, for the small-scale prediction
    rem_max_x: float = 0.7  # the collapse onto 1 - x^2 is tested for x up to this, at the largest n
    rem_tolerance: float = 0.05  # allowed |H/log n - (1 - x^2)| on average there
    one_hot_entropy: float = 0.1  # nats: weights count as one-hot below this mean entropy ...
    vanished_gradient: float = 0.01  # ... and the gradient as vanished below this fraction of its peak over the sweep's scales
    breakdown_min_sigma: float = 0.25  # heavy tails show within n <= 1e4 once sigma n^(1/3) >> 1; smaller sigma needs far larger n


THRESHOLDS = Thresholds()
VERDICTS = ("holds", "fails", "outside regime", "not measured")

SCHEMA = pa.schema(
    [
        pa.field("claim_id", pa.string(), metadata={"description": "short stable id of the claim"}),
        pa.field("claim", pa.string(), metadata={"description": "the claim in one sentence"}),
        pa.field("condition", pa.string(), metadata={"description": "the regime of parameters it was tested in"}),
        pa.field("predicted", pa.float64(), metadata={"description": "the theory's value"}),
        pa.field("measured", pa.float64(), metadata={"description": "the measured value"}),
        pa.field("ci_low", pa.float64(), metadata={"description": "lower end of the measurement's 95% interval"}),
        pa.field("ci_high", pa.float64(), metadata={"description": "upper end of the measurement's 95% interval"}),
        pa.field("rel_deviation", pa.float64(), metadata={"description": "(measured - predicted) / |predicted|"}),
        pa.field("verdict", pa.string(), metadata={"description": "holds, fails, outside regime or not measured"}),
        pa.field("evidence", pa.string(), metadata={"description": "what the numbers are: points, experiments, the worst case"}),
    ]
)


@dataclass
class Claim:
    claim_id: str
    claim: str
    condition: str
    predicted: float = math.nan
    measured: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    rel_deviation: float = math.nan
    verdict: str = "not measured"
    evidence: str = ""

    def judge(self, predicted: float, stats: dict, tolerance: float, evidence: str) -> Claim:
        """holds when the measurement's 95% interval meets [predicted - tolerance, predicted + tolerance]."""
        self.predicted, self.measured = predicted, stats["mean"]
        self.ci_low, self.ci_high = stats["ci_low"], stats["ci_high"]
        self.rel_deviation = (self.measured - predicted) / abs(predicted) if predicted else math.nan
        meets = self.ci_low <= predicted + tolerance and self.ci_high >= predicted - tolerance
        self.verdict = "holds" if meets else "fails"
        self.evidence = evidence
        return self


def _pooled(values) -> dict:
    """Mean over points with a between-point standard error (points differ for real, not only by noise)."""
    values = np.asarray(values, dtype=float)
    if values.size == 1:
        return {"mean": float(values[0]), "se": math.nan, "ci_low": float(values[0]), "ci_high": float(values[0])}
    return mean_ci(values)


def _slope(frame: pd.DataFrame, y: str, se: str) -> tuple[float, float]:
    """Weighted least-squares slope of log y on log n, and its standard error (weights from the SE of log y)."""
    x = np.log(frame["n"].to_numpy(float))
    logy = np.log(frame[y].to_numpy(float))
    w = (frame[y] / frame[se]).to_numpy(float) ** 2  # 1 / Var(log y) ~ (y / se)^2
    xm = np.sum(w * x) / np.sum(w)
    sxx = np.sum(w * (x - xm) ** 2)
    slope = np.sum(w * (x - xm) * logy) / sxx
    return float(slope), float(1 / math.sqrt(sxx))


SERIES = ["noise", "noise_scale", "d", "noise_draws"]  # a curve of rel_err against n


def _series_slopes(s: pd.DataFrame) -> dict[tuple, float]:
    """Series key -> fitted slope of log rel_err on log n, for series with >= 3 values of n."""
    return {
        key: _slope(series, "rel_err_mean", "rel_err_se")[0]
        for key, series in s.groupby(SERIES)
        if series["n"].nunique() >= 3
    }


# --- claim 1: robustness ---------------------------------------------------------------------


def delta_method(s: pd.DataFrame | None, family: str) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        f"delta_method_{family}",
        f"With {family} logit noise the mean squared change of the output equals kappa * sum p^2 ||v - o||^2 (delta method).",
        f"{family} noise, kappa finite, 0 < kappa * sum p^2 < {t.delta_kappa_p2}",
    )
    if s is None:
        return claim
    rows = s[(s["noise"] == family) & s["kappa_finite"] & (s["kappa"] > 0) & (s["kappa_sum_p2"] < t.delta_kappa_p2) & s["err_ratio"].notna()]
    if rows.empty:
        claim.verdict = "outside regime"
        return claim
    worst = rows.loc[(rows["err_ratio"] - 1).abs().idxmax()]
    return claim.judge(
        1.0,
        _pooled(rows["err_ratio"]),
        t.ratio_tolerance,
        f"ratio measured/predicted over {len(rows)} points; worst {worst['err_ratio']:.3f} at n={worst['n']}, sigma={worst['noise_scale']:g}, kappa={worst['kappa']:.3g}",
    )


def error_rate(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "error_rate_sqrt_n",
        "The relative error falls like 1/sqrt(n_eff): log-log slope -1/2 in n at uniform weights.",
        f"logit_scale = 0, kappa finite, kappa / n < {t.rate_kappa_over_n} at the smallest n, >= 3 values of n",
    )
    if s is None:
        return claim
    finite = s[(s["logit_scale"] == 0) & s["kappa_finite"] & (s["kappa"] > 0)]
    worst = (finite["kappa"] / finite["n"]).groupby([finite[k] for k in SERIES]).transform("max")  # kappa / n at the series' smallest n
    finite = finite[worst < t.rate_kappa_over_n]
    slopes = list(_series_slopes(finite).values())
    if not slopes:
        claim.verdict = "outside regime"
        return claim
    return claim.judge(-0.5, _pooled(slopes), t.slope_tolerance, f"mean of {len(slopes)} fitted slopes (one per noise family and scale); range {min(slopes):.3f} to {max(slopes):.3f}")


def breakdown(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "heavy_tail_breakdown",
        "With heavy-tailed noise (kappa = inf: student_t, laplace and gumbel beyond their thresholds) the error does not fall with n.",
        f"kappa = inf, noise_scale >= {t.breakdown_min_sigma}, logit_scale = 0, >= 3 values of n; 'does not fall' = every slope above {t.breakdown_slope}",
    )
    if s is None:
        return claim
    slopes = _series_slopes(s[(s["logit_scale"] == 0) & ~s["kappa_finite"] & (s["noise_scale"] >= t.breakdown_min_sigma)])
    if not slopes:
        claim.verdict = "outside regime"
        return claim
    values = np.array(list(slopes.values()))
    steepest = min(slopes, key=slopes.get)
    claim.predicted, claim.measured = 0.0, float(values.max())
    claim.ci_low, claim.ci_high = float(values.min()), float(values.max())
    claim.verdict = "holds" if values.min() > t.breakdown_slope else "fails"
    claim.evidence = (
        f"{len(values)} series; measured = flattest slope, interval = range of slopes; steepest {slopes[steepest]:.3f} "
        f"({steepest[0]}, sigma={steepest[1]:g}) vs {-0.5} for finite kappa"
    )
    return claim


# --- claim 2: information content ------------------------------------------------------------


def entropy_bounds(trials_dir: Path, experiments: dict[str, str]) -> Claim:
    claim = Claim("entropy_in_bounds", "The entropy of the attention weights lies in [0, log n] for every trial.", "every trial of every kind, all parameters")
    files = [f for name, kind in experiments.items() for f in store.experiment_chunks(trials_dir, kind, name)]
    if not files:
        return claim
    import duckdb

    listed = ", ".join("'" + str(f).replace("'", "''") + "'" for f in files)
    low, high, count = duckdb.sql(f"SELECT min(entropy), max(entropy / ln(n)), count(*) FROM read_parquet([{listed}], union_by_name = true)").fetchall()[0]
    inside = low >= 0 and high <= 1 + THRESHOLDS.entropy_rounding
    claim.predicted, claim.measured, claim.ci_low, claim.ci_high = 1.0, float(high), float(low), float(high)
    claim.verdict = "holds" if inside else "fails"
    claim.evidence = f"{count:,} trials; smallest H = {low:.3g} nats, largest H / log n = {high:.15g}"
    return claim


def small_scale_entropy(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim("small_scale_entropy", "For gaussian logits of small std sigma the entropy is log n - sigma^2/2.", f"logit_entropy, gaussian logits, 0 < sigma <= {t.small_sigma}, n >= 256")
    if s is None:
        return claim
    rows = s[(s["logits"] == "gaussian") & (s["sigma_eff"] > 0) & (s["sigma_eff"] <= t.small_sigma) & (s["n"] >= 256)]
    if rows.empty:
        claim.verdict = "outside regime"
        return claim
    deviation = rows["entropy_mean"] - rows["entropy_small_scale"]
    worst = rows.loc[deviation.abs().idxmax()]
    return claim.judge(
        0.0, _pooled(deviation), t.entropy_tolerance, f"H - (log n - sigma^2/2) in nats over {len(rows)} points; worst {deviation.abs().max():.4f} at n={worst['n']}, sigma={worst['sigma_eff']:g}"
    )


def rem_collapse(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim("rem_collapse", "H / log n collapses onto 1 - x^2 with x = sigma / sqrt(2 log n) (random energy model).", f"logit_entropy, gaussian logits, largest n of the sweep, 0 < x <= {t.rem_max_x}")
    if s is None:
        return claim
    gaussian = s[s["logits"] == "gaussian"]
    rows = gaussian[(gaussian["n"] == gaussian["n"].max()) & (gaussian["rem_x"] > 0) & (gaussian["rem_x"] <= t.rem_max_x)]
    if rows.empty:
        claim.verdict = "outside regime"
        return claim
    deviation = rows["entropy_norm_mean"] - (1 - rows["rem_x"] ** 2)
    return claim.judge(0.0, _pooled(deviation), t.rem_tolerance, f"H/log n - (1 - x^2) over {len(rows)} points at n = {rows['n'].iloc[0]}; largest |deviation| {deviation.abs().max():.3f}")


def one_hot_vanishing_gradient(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "one_hot_vanishing_gradient",
        "Large logits at initialisation make the weights one-hot and the gradient vanish.",
        f"init_gradient; one-hot: mean H < {t.one_hot_entropy} nats; vanished: mean grad_sq < {t.vanished_gradient} x its peak over the scales swept (same n, d)",
    )
    if s is None:
        return claim
    onset = {}
    for (n, d), series in s.groupby(["n", "d"]):
        series = series.sort_values("scale")
        both = (series["entropy_mean"] < t.one_hot_entropy) & (series["grad_sq_mean"] < t.vanished_gradient * series["grad_sq_mean"].max())
        # smallest scale from which on both hold at every larger scale of the sweep
        tail = both[::-1].cumprod()[::-1].astype(bool)
        onset[(n, d)] = float(series.loc[tail, "scale"].min()) if tail.any() else math.inf
    found = [v for v in onset.values() if math.isfinite(v)]
    claim.measured = max(found) if found else math.nan
    claim.ci_low, claim.ci_high = (min(found), max(found)) if found else (math.nan, math.nan)
    claim.verdict = "holds" if len(found) == len(onset) else ("outside regime" if not found else "fails")
    claim.evidence = "; ".join(f"n={n}, d={d}: from scale {v:g}" for (n, d), v in onset.items()) + " (measured = the largest onset scale)"
    return claim


def tau_one_bound(s: pd.DataFrame | None) -> Claim:
    g1 = float(asymptotic_gap(1.0))
    claim = Claim("tau_one_gap", f"At tau = 1 cosine logits keep the entropy within {g1:.4f} nats of log n.", "temperature_entropy, tau = 1, every trial")
    if s is None:
        return claim
    rows = s[np.isclose(s["tau"], 1.0)]
    if rows.empty:
        claim.verdict = "outside regime"
        return claim
    claim.predicted, claim.measured = g1, float(rows["gap_max"].max())
    claim.ci_low, claim.ci_high = float(rows["gap_mean"].min()), float(rows["gap_max"].max())
    claim.rel_deviation = (claim.measured - g1) / g1
    claim.verdict = "holds" if claim.measured <= g1 else "fails"
    claim.evidence = f"largest gap over {int(rows['n_trials'].sum()):,} trials ({len(rows)} points); interval = smallest mean gap to largest trial gap"
    return claim


def exact_bound(s: pd.DataFrame | None) -> Claim:
    claim = Claim("exact_gap_bound", "No trial's gap log n - H exceeds the exact finite-n worst case.", "temperature_entropy, every point and trial")
    if s is None:
        return claim
    excess = s["gap_max"] - s["gap_exact"]
    claim.predicted, claim.measured = 0.0, float(excess.max())
    claim.ci_low, claim.ci_high = float(excess.min()), float(excess.max())
    claim.verdict = "holds" if bool(s["gap_within_bound"].all()) else "fails"
    claim.evidence = f"largest gap_max - gap_exact over {len(s)} points: {excess.max():.3g} (<= 0 means within the bound)"
    return claim


def smaller_tau_widens(s: pd.DataFrame | None) -> Claim:
    g1 = float(asymptotic_gap(1.0))
    claim = Claim("smaller_tau_widens", "Smaller tau widens the range of entropies beyond what tau = 1 allows.", "temperature_entropy, the smallest tau < 1 of the sweep")
    if s is None:
        return claim
    below = s[s["tau"] < 1]
    if below.empty:
        claim.verdict = "outside regime"
        return claim
    rows = below[below["tau"] == below["tau"].min()]
    tau = float(rows["tau"].iloc[0])
    claim.predicted, claim.measured = float(asymptotic_gap(tau)), float(rows["gap_max"].max())
    claim.ci_low, claim.ci_high = float(rows["gap_mean"].min()), float(rows["gap_max"].max())
    claim.rel_deviation = (claim.measured - claim.predicted) / claim.predicted
    claim.verdict = "holds" if claim.measured > g1 else "fails"
    claim.evidence = f"largest gap at tau = {tau:g} vs g(1) = {g1:.4f}; predicted = g({tau:g}), the widest range possible"
    return claim


# --- the table ---------------------------------------------------------------------------------


def load_summaries(root: Path, experiments: dict[str, str]) -> dict[str, pd.DataFrame]:
    """kind -> the summaries of the config's experiments of that kind (those with results)."""
    frames: dict[str, list[pd.DataFrame]] = {}
    for name, kind in experiments.items():
        path = store.summary_path(root, kind, name)
        if path.exists():
            frame = store.read_table(path).to_pandas()
            frame.insert(0, "experiment", name)
            frames.setdefault(kind, []).append(frame)
    return {kind: pd.concat(parts, ignore_index=True) for kind, parts in frames.items()}


def evaluate(root: Path, experiments: dict[str, str]) -> list[Claim]:
    """All claims for the config's experiments (name -> kind) from the store under `root`."""
    s = load_summaries(root, experiments)
    noisy = s.get("noisy_attention")
    return [
        *(delta_method(noisy, family) for family in ("gaussian", "uniform", "laplace", "gumbel")),
        error_rate(noisy),
        breakdown(noisy),
        entropy_bounds(root, experiments),
        small_scale_entropy(s.get("logit_entropy")),
        rem_collapse(s.get("logit_entropy")),
        one_hot_vanishing_gradient(s.get("init_gradient")),
        tau_one_bound(s.get("temperature_entropy")),
        exact_bound(s.get("temperature_entropy")),
        smaller_tau_widens(s.get("temperature_entropy")),
    ]


def table(claims: list[Claim]) -> pa.Table:
    rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(c).items()} for c in claims]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _number(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.4g}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(claims: list[Claim]) -> str:
    lines = ["| claim | condition | predicted | measured [95% CI] | rel. dev. | verdict |", "|---|---|---|---|---|---|"]
    for c in claims:
        measured = _number(c.measured)
        if not math.isnan(c.ci_low):
            measured += f" [{_number(c.ci_low)}, {_number(c.ci_high)}]"
        verdict = f"**{c.verdict}**"
        lines.append(f"| `{c.claim_id}`: {_cell(c.claim)} | {_cell(c.condition)} | {_number(c.predicted)} | {measured} | {_number(c.rel_deviation)} | {verdict} |")
    lines += ["", "Evidence:", ""] + [f"- `{c.claim_id}`: {c.evidence or 'no data'}" for c in claims]
    return "\n".join(lines) + "\n"


def short_from_table(claims_table: pa.Table) -> str:
    return short([Claim(**{k: (math.nan if v is None else v) for k, v in row.items()}) for row in claims_table.to_pylist()])


def short(claims: list[Claim]) -> str:
    """One line per claim, for the terminal."""
    width = max(len(c.claim_id) for c in claims)
    out = []
    for c in claims:
        value = "" if math.isnan(c.measured) else f"measured {c.measured:.4g}" + ("" if math.isnan(c.predicted) else f" vs predicted {c.predicted:.4g}")
        out.append(f"  {c.claim_id:<{width}}  {c.verdict:<14} {value}")
    return "\n".join(out)


def html(claims: list[Claim], provenance: dict) -> str:
    """A self-contained page of the table (for the Snakemake report), with the run's provenance."""
    from html import escape

    colour = {"holds": "#1a7f37", "fails": "#cf222e", "outside regime": "#9a6700", "not measured": "#6e7781"}
    rows = []
    for c in claims:
        measured = _number(c.measured) + ("" if math.isnan(c.ci_low) else f" [{_number(c.ci_low)}, {_number(c.ci_high)}]")
        rows.append(
            f"<tr><td><code>{escape(c.claim_id)}</code><br>{escape(c.claim)}</td><td>{escape(c.condition)}</td>"
            f"<td>{_number(c.predicted)}</td><td>{measured}</td><td>{_number(c.rel_deviation)}</td>"
            f"<td style='color:{colour[c.verdict]};font-weight:bold'>{escape(c.verdict)}</td><td>{escape(c.evidence)}</td></tr>"
        )
    meta = "".join(f"<li><b>{escape(k)}</b>: {escape(str(v))}</li>" for k, v in provenance.items())
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>attnsim claims</title>"
        "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top;font-size:90%}</style>"
        "</head><body><h2>Claims: prediction vs measurement</h2><table><tr><th>claim</th><th>condition</th><th>predicted</th>"
        "<th>measured [95% CI]</th><th>rel. dev.</th><th>verdict</th><th>evidence</th></tr>"
        + "".join(rows)
        + f"</table><h3>Provenance</h3><ul>{meta}</ul></body></html>"
    )


def write(claims: list[Claim], results: Path, provenance: dict) -> list[Path]:
    """results/claims.parquet (typed, with provenance), claims.md and claims.html, each atomic."""
    import json
    import os

    results = Path(results)
    parquet = results / "claims.parquet"
    store.write_atomic(table(claims), parquet, store.provenance(table="claims", **provenance))
    written = [parquet]
    for name, text in (("claims.md", markdown(claims)), ("claims.html", html(claims, provenance))):
        path = results / name
        tmp = path.with_name(f".{name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
        written.append(path)
    json.dumps(provenance)  # provenance must stay JSON-serialisable
    return written
