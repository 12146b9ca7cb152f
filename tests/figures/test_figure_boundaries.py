"""A claim's located boundaries drawn in the claim's own figure (issue 53.4): a line at x* over its
95% interval and the theory's prediction over its tolerance, each in the legend; a boundary not
located is named, never drawn; the same records in any order draw the same figure; and a figure
given no boundary is the same bytes as one drawn without the option. Checked on the artists, not
on pixels: delta_shortfall puts sigma* at its predicted first correction, which at uniform
weights (logit scale 0) is kappa (2 kappa + 3) / n with kappa = e^(sigma^2) - 1 for gaussian
noise (docs/science.md §2.8: mu3 = kappa^2 (kappa + 3))."""

from __future__ import annotations

import copy
import json
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from attnsim.errors import AttnsimError  # noqa: E402
from attnsim.figures import boundaries as marks  # noqa: E402
from attnsim.figures import style  # noqa: E402
from attnsim.kinds import get_kind  # noqa: E402
from attnsim.report.figures import render  # noqa: E402
from attnsim.testing import example_config, run_experiment  # noqa: E402

AT = {"d": 16, "logit_scale": 0.0, "n": 16, "noise": "gaussian", "noise_draws": 8}


def record(name="delta_n16", status="located", theory=True, **change) -> dict:
    """A boundary's record as the workspace keeps it (`report.boundaries.record`), the fields a
    figure reads."""
    out = {
        "name": name,
        "claim": "delta_method_gaussian",
        "axis": "noise_scale",
        "edge": "lower",
        "edge_value": 0.95,
        "at": dict(AT),
        "experiment": "noisy_attention",
        "status": status,
        "range": [0.2, 1.0],
        "crossings": [{"estimate": 0.4715, "low": 0.4697, "high": 0.4732, "status": status}],
    }
    if theory:
        out["theory"] = {"predicted": 0.4768, "tolerance": 0.0056, "verdict": "inconclusive"}
    return out | change


def spans(ax) -> list[float]:
    """The x extents of the panel's shaded bands (axvspan), flat: low, high, low, high, ..."""
    ends = sorted((p.get_x(), p.get_x() + p.get_width()) for p in ax.patches)
    return [x for pair in ends for x in pair]


def vertical(ax) -> list[tuple[float, str]]:
    """(x, line style) of each vertical line of the panel (axvline: the same x at both ends)."""
    out = []
    for line in ax.lines:
        x = list(line.get_xdata())
        if len(x) == 2 and x[0] == x[1] and list(line.get_ydata()) == [0, 1]:
            out.append((float(x[0]), line.get_linestyle()))
    return sorted(out)


def test_a_located_boundary_is_a_line_over_its_interval_beside_the_theory():
    fig, ax = plt.subplots()
    handles = marks.draw(ax, [record()], keys=("n",), symbol="σ")
    assert vertical(ax) == [(0.4715, "-"), (0.4768, "--")]
    assert spans(ax) == pytest.approx([0.4697, 0.4732, 0.4768 - 0.0056, 0.4768 + 0.0056])
    labels = [h.get_label() for h in handles]
    assert labels == [
        "boundary σ* = 0.4715 [0.4697, 0.4732] (n = 16)",
        "theory σ* 0.4768 ± 0.0056: inconclusive",
    ]
    plt.close(fig)


@pytest.mark.parametrize("status", ["not located within budget", "none in range"])
def test_a_boundary_not_located_is_named_never_drawn(status):
    fig, ax = plt.subplots()
    rec = record(status=status)
    rec["status"] = status  # its crossing keeps an estimate: still never a line
    handles = marks.draw(ax, [rec], keys=("n",), symbol="σ")
    assert vertical(ax) == [] and spans(ax) == []
    assert [h.get_label() for h in handles] == [f"σ* (n = 16): {status}"]
    plt.close(fig)


def test_a_boundary_off_the_panels_axis_is_named_not_drawn():
    fig, ax = plt.subplots()
    handles = marks.draw(ax, [record()], x_of=lambda rec, x: math.nan)
    assert vertical(ax) == [] and spans(ax) == []
    assert [h.get_label() for h in handles] == [
        "boundary noise_scale* = 0.4715 [0.4697, 0.4732]: not on this x axis"
    ]
    plt.close(fig)


def test_the_records_draw_the_same_in_any_order():
    drawn = []
    for order in (1, -1):
        fig, ax = plt.subplots()
        both = [record("a_first"), record("b_second", theory=False, at=AT | {"n": 64})][::order]
        handles = marks.draw(ax, both, keys=("n",))
        drawn.append([(h.get_label(), h.get_edgecolor()) for h in handles])
        plt.close(fig)
    assert drawn[0] == drawn[1]
    assert "(n = 16)" in drawn[0][0][0] and "(n = 64)" in drawn[0][2][0]


@pytest.fixture(scope="module")
def summaries(tmp_path_factory):
    """The noisy_attention and logit_entropy examples, a few trials each."""
    root = tmp_path_factory.mktemp("store")
    return {
        k: run_experiment(example_config(get_kind(k), trials=6, seed=3), k, root).summary
        for k in ("noisy_attention", "logit_entropy")
    }


def panel(fig, title: str):
    return next(ax for ax in fig.axes if ax.get_title() == title)


def test_delta_shortfall_draws_sigma_star_at_its_predicted_correction(summaries):
    from attnsim.kinds.noisy_attention import figures
    from attnsim.report.figure_data import read

    frame = read(summaries["noisy_attention"], get_kind("noisy_attention"))
    at = dict(AT, d=16, noise_draws=8)  # the example's d and draws
    fig = figures.delta_shortfall(frame, boundaries=[record(at=at)])
    gaussian = next(ax for ax in fig.axes if ax.get_title() == "noise: gaussian")
    kappa = {s: math.exp(s * s) - 1 for s in (0.4715, 0.4768)}
    x = {s: k * (2 * k + 3) / 16 for s, k in kappa.items()}
    lines = [line for line in vertical(gaussian) if line[1] != "-."]  # not the regime's edge
    assert [style for _, style in lines] == ["-", "--"]
    assert [x for x, _ in lines] == pytest.approx([x[0.4715], x[0.4768]], rel=1e-9)
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "boundary σ* = 0.4715 [0.4697, 0.4732] (n = 16, logit_scale = 0)" in labels
    assert "theory σ* 0.4768 ± 0.0056: inconclusive" in labels
    others = [ax for ax in fig.axes if ax is not gaussian]
    assert all(vertical(ax) == [] or all(s == "-." for _, s in vertical(ax)) for ax in others)
    plt.close(fig)


def entropy_record(**change) -> dict:
    """A located boundary of the small-scale law along gaussian logits' scale (n = 64)."""
    return record(
        "small_n64",
        theory=False,
        claim="small_scale_entropy",
        axis="scale",
        at={"n": 64, "d": 64, "logits": "gaussian"},
        crossings=[{"estimate": 2.02, "low": 2.0, "high": 2.04, "status": "located"}],
        **change,
    )


def test_entropy_vs_scale_draws_the_boundary_in_its_logits_panel(summaries):
    from attnsim.kinds.logit_entropy import figures
    from attnsim.report.figure_data import read

    frame = read(summaries["logit_entropy"], get_kind("logit_entropy"))
    fig = figures.entropy_vs_scale(frame, boundaries=[entropy_record()])
    gaussian = next(ax for ax in fig.axes if ax.get_title().startswith("gaussian logits"))
    assert [x for x, _ in vertical(gaussian)] == [2.02]
    assert spans(gaussian) == pytest.approx([2.0, 2.04])
    dot = next(ax for ax in fig.axes if ax.get_title().startswith("dot-product"))
    assert vertical(dot) == []
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "boundary scale* = 2.02 [2, 2.04] (n = 64)" in labels
    plt.close(fig)


def test_the_exact_crossing_is_drawn_beside_the_located_boundary(summaries):
    """A record with an exact crossing (`report.boundaries.exact_crossing`): a dash-dotted line
    at it, named in the legend with its side of the interval; without a located crossing,
    nothing of it is drawn (a check beside a boundary, never alone)."""
    from attnsim.kinds.logit_entropy import figures
    from attnsim.report.figure_data import read

    frame = read(summaries["logit_entropy"], get_kind("logit_entropy"))
    rec = entropy_record(exact={"x": 2.0231, "by": "quadrature", "inside": True})
    fig = figures.entropy_vs_scale(frame, boundaries=[rec])
    gaussian = next(ax for ax in fig.axes if ax.get_title().startswith("gaussian logits"))
    assert sorted(vertical(gaussian)) == [(2.02, "-"), (2.0231, "-.")]
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "exact scale* 2.023 (quadrature), inside the interval" in labels
    plt.close(fig)
    unlocated = dict(rec, status="not located within budget", crossings=[])
    fig = figures.entropy_vs_scale(frame, boundaries=[unlocated])
    gaussian = next(ax for ax in fig.axes if ax.get_title().startswith("gaussian logits"))
    assert vertical(gaussian) == []
    plt.close(fig)


def located_file(tmp_path, rec) -> str:
    path = tmp_path / rec["name"] / "located.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"boundary": rec["name"], "status": "done", "record": rec}))
    return path


def test_render_draws_boundaries_only_in_the_claims_figure(summaries, tmp_path):
    summary = summaries["noisy_attention"]
    rec = record(at=dict(AT, d=16, noise_draws=8))
    plain = {p.name: p.read_bytes() for p in render(summary, tmp_path / "plain")}
    none = {p.name: p.read_bytes() for p in render(summary, tmp_path / "none", boundaries=[])}
    assert none == plain  # no boundary: the figures the job drew before it had the option
    other = record("delta_n64", at=dict(rec["at"], n=64, logit_scale=1.0))
    files = [located_file(tmp_path, rec), located_file(tmp_path, other)]
    drawn = {p.name: p.read_bytes() for p in render(summary, tmp_path / "shown", boundaries=files)}
    changed = sorted(name for name in plain if drawn[name] != plain[name])
    assert changed == ["delta_shortfall.pdf", "delta_shortfall.png"]
    again = render(summary, tmp_path / "reversed", boundaries=files[::-1])
    assert {p.name: p.read_bytes() for p in again} == drawn  # in any order, the same bytes


def test_a_figure_function_given_no_boundaries_draws_the_same_bytes(summaries, tmp_path):
    from attnsim.kinds.noisy_attention import figures
    from attnsim.report.figure_data import read

    frame = read(summaries["noisy_attention"], get_kind("noisy_attention"))
    without = style.save(figures.delta_shortfall(frame), tmp_path / "a" / "f.png")
    empty = style.save(figures.delta_shortfall(frame, boundaries=()), tmp_path / "b" / "f.png")
    assert [p.read_bytes() for p in without] == [p.read_bytes() for p in empty]
    plt.close("all")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"experiment": "other"}, "(experiment other) is drawn in no figure of the experiment"),
        ({"claim": "next_order_theory"}, "of claim next_order_theory (experiment noisy_attention)"),
    ],
)
def test_a_boundary_no_figure_of_the_experiment_draws_is_one_error(
    summaries, tmp_path, change, message
):
    located = located_file(tmp_path, copy.deepcopy(record()) | change)
    with pytest.raises(AttnsimError) as error:
        render(summaries["noisy_attention"], tmp_path / "out", boundaries=[located])
    assert message in str(error.value) and "\n" not in str(error.value)
    assert not (tmp_path / "out").exists()
