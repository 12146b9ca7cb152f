"""A boundary's points in the store (`report.boundaries`, issue 53.3-4): rows bit-identical to a
fresh run at the same grid and trials, read back instead of computed; a run's boundary located in
rounds, each computing one request, gives what one uninterrupted locate gives (a killed locate
resumes); `recompute` (what `verify` runs) finds it again from the store, and says when it no
longer follows; a config's `boundaries:` entry is checked in one line."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers.configs import NOISY_GRID, small_config

from attnsim.config.load import load
from attnsim.errors import ConfigError
from attnsim.jobs.simulate import simulate_points, stored_trials
from attnsim.kinds import get_kind
from attnsim.plan.sweep import boundaries_json
from attnsim.records import state
from attnsim.records.chunk import ChunkSpec
from attnsim.records.experiment import TrialSettings
from attnsim.report import boundaries as b
from attnsim.store import parquet

AT = {"n": 16, "logit_scale": 0.0, "noise": "gaussian"}
BUDGET = 0.00015  # CPU-hours by the cost model: a first look of 7 points x a few rounds


def config(**entry) -> dict:
    out = small_config()
    grid = copy.deepcopy(NOISY_GRID) | {"noise_scale": [0.2, 1.0], "d": [16]}
    out["experiments"]["robustness"] |= {"trials": 200, "grid": grid}
    base = {"claim": "delta_method_gaussian", "axis": "noise_scale", "edge": "lower"}
    out["boundaries"] = {"demo": base | {"at": AT, "budget": BUDGET} | entry}
    return out


@pytest.fixture(scope="module")
def settings():
    return load(config())


def test_stored_rows_are_a_fresh_runs_and_are_read_back(settings, tmp_path):
    target = b.target_of(settings, "demo", settings.boundaries["demo"])
    points = b.StoredPoints(target, tmp_path, "demo")
    x = np.array([0.3, 0.6])
    points.evaluate(x, 0, 400)
    later = points.evaluate(x, 400, 800)  # a top-up of the chunk: rounds 2 and 3 computed
    _grid, members = points.points(x)
    fresh = simulate_points(
        get_kind("noisy_attention"), TrialSettings(settings.seed, 200, max_trials=800), members
    )
    files = parquet.experiment_chunks(tmp_path, "noisy_attention", "locate_demo")
    assert len(files) == 2
    newest = max(files, key=lambda p: parquet.read_meta(p).get("topped_up") is not None)
    spec = ChunkSpec.from_json(parquet.read_meta(newest)["spec"])
    known, _ = stored_trials(spec, newest)
    for member in members:
        for metric, values in fresh[member.id].items():
            assert np.array_equal(known[member.id][0][metric], values), metric
    # a second evaluator computes nothing and gets the same statistic, bit for bit
    again = b.StoredPoints(target, tmp_path, "demo", computable=0)
    assert np.array_equal(again.evaluate(x, 400, 800).values, later.values)
    with pytest.raises(b.Pending):
        again.evaluate(x, 800, 1000)


def test_the_jackknife_on_slices_of_one_table_is_the_statistic_on_the_kept_trials(settings):
    """`Points.evaluate` leaves each group out by slicing one table of the trials: bit for bit
    the pseudo-values of the statistic on the kept trials' own table (`statistic`)."""
    target = b.target_of(settings, "demo", settings.boundaries["demo"])
    points = b.Points(target)
    x = np.array([0.6, 0.3, 0.45])  # not in order: the values come back in the order asked
    grid, members = points.points(x)
    results = points.trials(members, 200, 600)
    count, groups = 400, b.GROUPS
    whole = points.statistic(grid, members, results, np.ones(count, dtype=bool), x)
    expected = np.empty((len(x), groups))
    for g, cut in enumerate(np.array_split(np.arange(count), groups)):
        keep = np.ones(count, dtype=bool)
        keep[cut] = False
        left = points.statistic(grid, members, results, keep, x)
        expected[:, g] = groups * whole - (groups - 1) * left
    got = points.evaluate(x, 200, 600)
    assert got.values.tobytes() == expected.tobytes()


def test_a_round_reads_only_the_chunks_of_its_own_request(settings, tmp_path, monkeypatch):
    """A chunk whose spec lists none of a request's points is not read: a round that resumes
    from the last round's evaluations reads the chunk it writes, no earlier one, and none to
    find the next request pending."""
    from attnsim.jobs import simulate

    assert b.round_job(settings, "demo", tmp_path, 0, tmp_path / "0.json")["status"] == "pending"
    before = set(parquet.experiment_chunks(tmp_path, "noisy_attention", "locate_demo"))
    read: list = []
    real = simulate.stored_trials
    monkeypatch.setattr(simulate, "stored_trials", lambda *a: read.append(a[1]) or real(*a))
    out = b.round_job(settings, "demo", tmp_path, 1, tmp_path / "1.json", tmp_path / "0.json")
    assert out["status"] == "pending" and len(out["computed"]) == 1
    written = set(parquet.experiment_chunks(tmp_path, "noisy_attention", "locate_demo")) - before
    assert len(written) == 1 and read == list(written)


def test_stored_points_on_two_threads_are_the_same_numbers(settings, tmp_path):
    """`attnsim locate --threads 2` computes a request's blocks side by side (the store's chunk
    job on its threads): the same statistic, bit for bit."""
    target = b.target_of(settings, "demo", settings.boundaries["demo"])
    x = np.array([0.3, 0.6])
    one = b.StoredPoints(target, tmp_path / "one", "demo").evaluate(x, 0, 400)
    two = b.StoredPoints(target, tmp_path / "two", "demo", threads=2).evaluate(x, 0, 400)
    assert one.values.tobytes() == two.values.tobytes()


def test_the_price_follows_the_requests_not_the_store(settings, tmp_path):
    target = b.target_of(settings, "demo", settings.boundaries["demo"])
    points = b.StoredPoints(target, tmp_path, "demo")
    x = np.array([0.3, 0.6])
    first = points.cost(x, 0, 400)
    points.evaluate(x, 0, 400)
    assert points.cost(x, 0, 400) == 0.0  # asked for already
    assert points.cost(x, 400, 800) == pytest.approx(first)
    # a new evaluator on the same store prices as a fresh store does: a replay decides the same
    assert b.StoredPoints(target, tmp_path, "demo").cost(x, 0, 400) == first


def price(target, x: np.ndarray, trials: int, klass: str) -> float:
    """The cost model's CPU-seconds of `trials` trials at the points `x`, priced on `klass`."""
    from attnsim.plan.sweep import grid_costs
    from attnsim.records import cost

    costs = grid_costs(target.kind, b.Points(target).grid(x), trials, trials, klass)
    return cost.expected_seconds(cost.chunk_cost(target.kind, costs, slice(None), trials))


@pytest.mark.parametrize("klass", ["X86_V3-Haswell", "X86_V4-SkylakeX"])
def test_the_price_and_so_the_design_is_the_same_on_any_cpu_class(settings, klass, monkeypatch):
    """The budget fixes the trials of each look: priced on the machine's class, the default run's
    n = 16 boundary took 171,000 trials a look on AVX-512 and 129,000 on AVX2."""
    from attnsim.records import cost

    target = b.target_of(settings, "demo", settings.boundaries["demo"])
    x = np.array([0.3, 0.6])
    by_class = {c: price(target, x, 400, c) for c in cost.calibration()["classes"]}
    assert len(set(by_class.values())) == len(by_class)  # the classes' prices do differ
    # the workflow's rounds take the priced class as a param: a change of it reruns them
    assert json.loads(boundaries_json(settings))["priced_on"] == cost.DESIGN_CLASS
    monkeypatch.setenv(cost.CLASS_VARIABLE, klass)
    cost.cost_class.cache_clear()
    try:
        assert cost.cost_class() == klass
        priced = b.StoredPoints(target, Path("unused"), "demo").cost(x, 0, 400)
        assert priced == pytest.approx(by_class[cost.DESIGN_CLASS], rel=1e-12)
    finally:
        cost.cost_class.cache_clear()


def test_rounds_resume_to_the_uninterrupted_answer_and_verify_recomputes_it(settings, tmp_path):
    rounds, record = [], None
    for r in range(30):
        previous = tmp_path / f"round-{r - 1}.json" if r else None
        output = tmp_path / f"round-{r}.json"
        out = b.round_job(settings, "demo", tmp_path / "store", r, output, previous)
        rounds.append(out)
        if out["status"] == "done":
            record = out["record"]
            break
    assert record is not None and len(rounds) >= 2
    assert all(len(o["computed"]) == 1 for o in rounds)  # one request per round
    assert all(o["next"]["trials"][1] > o["next"]["trials"][0] for o in rounds[:-1])
    entry = settings.boundaries["demo"]
    found, points, target = b.locate_stored(settings, "demo", entry, tmp_path / "once")
    assert b.record("demo", target, found, entry) == record
    assert record["store_experiment"] == "locate_demo" and record["theory"]["reason"]
    assert "exact" not in record  # the delta method's ratio has no exact expectation coded
    # the workflow's record, what `verify` replays, and what the claims show beside the claim
    (tmp_path / "plan").mkdir()
    (tmp_path / "plan" / "boundaries.json").write_text(boundaries_json(settings))
    last = tmp_path / f"round-{len(rounds) - 1}.json"
    b.record_rounds(tmp_path, [last], tmp_path / "boundaries.json")
    assert state.read(tmp_path).boundaries["demo"] == record
    assert b.verify_lines(tmp_path / "store") == []
    section = b.markdown_section(b.recorded(tmp_path))
    assert "**delta_method_gaussian**: boundary noise_scale*" in section and "theory" in section
    moved = copy.deepcopy(record)
    moved["crossings"][0]["estimate"] += 1e-9
    state.write(tmp_path, state.WorkspaceState(boundaries={"demo": moved}))
    lines = b.verify_lines(tmp_path / "store")
    assert lines == ["boundary demo: no longer follows from the store (crossings changed)"]
    for path in parquet.experiment_chunks(tmp_path / "store", "noisy_attention", "locate_demo"):
        path.unlink()
    assert "missing" in b.recompute(settings, "demo", record, tmp_path / "store")[0]


def test_an_entropy_boundary_records_the_exact_crossing_beside_its_interval(tmp_path):
    """The small-scale law's boundary along gaussian logits' scale (n = 64): its record carries
    the crossing the quadrature of E[H] gives (`exact_crossing`), which the located 95% interval
    holds at this seed, and the line `attnsim claims` shows names it (a delta-method boundary,
    whose statistic has no exact expectation, carries none: the test above)."""
    from attnsim.theory.entropy import deficit_ratio_exact

    out = small_config()
    grid = {"n": [64], "d": [64], "logits": ["gaussian"], "scale": [0.1, 3.0]}
    out["experiments"]["entropy"] = {"kind": "logit_entropy", "trials": 200, "grid": grid}
    entry = {"claim": "small_scale_entropy", "axis": "scale", "edge": "lower"}
    entry |= {"at": {"n": 64, "logits": "gaussian"}, "range": [0.1, 3.0], "budget": 0.0005}
    out["boundaries"] = {"entropy_n64": entry}
    settings = load(out)
    found, _, target = b.locate_stored(settings, "entropy_n64", entry, tmp_path / "store")
    record = b.record("entropy_n64", target, found, entry)
    assert record["status"] == "located" and "theory" not in record
    exact, crossing = record["exact"], record["crossings"][0]
    assert deficit_ratio_exact(64, exact["x"]) == pytest.approx(0.95, abs=1e-9)
    assert exact["inside"] and crossing["low"] <= exact["x"] <= crossing["high"]
    assert f"exact {exact['x']:.4g} (quadrature), inside the interval" in b.line(record)
    # `verify`: a record from before the check still follows from the store; a changed one not
    older = {k: v for k, v in record.items() if k != "exact"}
    assert b.differences("entropy_n64", older, record) == []
    moved = record | {"exact": exact | {"x": exact["x"] + 1e-9}}
    assert b.differences("entropy_n64", moved, record) == [
        "boundary entropy_n64: no longer follows from the store (exact changed)"
    ]


class MeanOverN:
    """A claim whose statistic is taken over a group of grid points (as the contrastive flip's is,
    over temperatures): the delta method's ratio averaged over n at each noise scale, one row per
    noise scale in its measure's table."""

    def __init__(self, spec) -> None:
        self.spec = spec

    def measure(self, rows):
        import pandas as pd

        values = self.spec.measure(rows).points["value"].to_numpy()
        table = pd.DataFrame({"noise_scale": rows["noise_scale"].to_numpy(), "value": values})
        mean = table.groupby("noise_scale", sort=False, as_index=False)["value"].mean()
        return SimpleNamespace(points=mean)


def test_a_group_of_points_is_one_located_point_of_a_statistic_taken_over_it():
    """`at: {n: [64, 16, 16]}` makes each located point the grid points at n = 16 and 64 (sorted,
    once each): their trials are each point's own (the same rows as alone), and the statistic
    is the claim's measure over the group, one value per value of the axis."""
    settings = load(config(at=AT | {"n": [64, 16, 16]}))
    target = b.target_of(settings, "demo", settings.boundaries["demo"])
    assert target.fixed["n"] == (16, 64) and b.grouped(target) == {"n": (16, 64)}
    over = replace(target, spec=MeanOverN(target.spec))
    x = np.array([0.6, 0.3])
    grid, members = b.Points(over).points(x)
    assert len(members) == 4 and {m.params["n"] for m in members} == {16, 64}
    got = b.Points(over).evaluate(x, 0, 400).values
    alone = [b.Points(replace(target, fixed=target.fixed | {"n": n})) for n in (16, 64)]
    mean = (alone[0].evaluate(x, 0, 400).values + alone[1].evaluate(x, 0, 400).values) / 2
    np.testing.assert_allclose(got, mean, rtol=1e-12, atol=1e-15)
    rec = {"axis": "noise_scale", "edge": "lower", "edge_value": 0.95, "status": "none in range"}
    assert "n=[16, 64]" in b.line(rec | {"at": {"n": [16, 64], "noise": "gaussian"}})
    with pytest.raises(ConfigError, match="a list names two or more values of n"):
        b.check(load(config(at=AT | {"n": [16]})))

    # a claim whose measure's table does not name the axis cannot be located on groups
    class Unnamed(MeanOverN):
        def measure(self, rows):
            mean = super().measure(rows).points
            return SimpleNamespace(points=mean.drop(columns="noise_scale"))

    with pytest.raises(ConfigError, match="does not give a value at each noise_scale"):
        b.Points(replace(target, spec=Unnamed(target.spec))).evaluate(x, 0, 400)


def test_the_contrastive_flip_is_located_on_groups_of_temperatures(tmp_path):
    """The real case (the temperature preset's flip_knn_8, scaled down to 20 training steps): the
    claim's measure gives one value per view noise from the group of temperatures there; the
    record, its line and its own figure name the group."""
    import matplotlib

    matplotlib.use("Agg")
    out = small_config()
    grid = {
        "n": [32], "classes": [8], "latent_dim": [8], "input_dim": [32], "embed_dim": [8],
        "view_noise": [0.375, 2.25], "positives": ["instance"], "instance_noise": [1.5],
        "tau": [0.1, 0.5, 1.0], "loss": ["infonce"], "optimiser": ["adam"], "lr": [0.01],
        "steps": [20],
    }  # fmt: skip
    out["experiments"] = {"flip": {"kind": "contrastive_training", "trials": 16, "grid": grid}}
    entry = {"claim": "instance_tau_one_worse_knn", "axis": "view_noise", "edge": "bound"}
    entry |= {"at": {"tau": [0.1, 0.5, 1.0]}, "budget": 0.002}
    out["boundaries"] = {"flip": entry}
    settings = load(out)
    found, points, target = b.locate_stored(settings, "flip", entry, tmp_path / "store")
    record = b.record("flip", target, found, entry)
    assert record["at"]["tau"] == [0.1, 0.5, 1.0] and "theory" not in record
    first = points.evaluated[0]
    assert len(first["x"]) == 7 and len(first["values"]) == 7  # a value per view noise
    assert "tau=[0.1, 0.5, 1.0]" in b.line(record)
    assert b.draw(record, points.evaluated, tmp_path / "flip.png")[0].exists()


def test_a_boundarys_own_figure_shows_the_searched_range_and_the_theorys_marks():
    """A wide located interval zooms out no further than the range searched (the flip's
    [0.869, 1.625] in [0.375, 2.25] showed negative view noise before), unless the theory's
    band or the exact crossing lies beyond it."""
    rec = {"range": [0.375, 2.25]}
    assert b._window(rec, -2.1, 3.9) == pytest.approx((0.375 - 0.05625, 2.25 + 0.05625))
    assert b._window(rec, 0.8, 0.9) == (0.8, 0.9)  # a narrow window is kept as it is
    theory = {"predicted": 2.5, "tolerance": 0.2}
    assert b._window(rec | {"theory": theory}, -2.1, 3.9)[1] == pytest.approx(2.7)
    assert b._window(rec | {"exact": {"x": 0.1}}, -2.1, 3.9)[0] == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"edge": "upside"}, "boundaries.demo.edge: 'upside' is not one of"),
        ({"budget": 0}, "boundaries.demo.budget"),
        ({"claim": "no_such_claim"}, "boundaries.demo: no_such_claim: no claim of that id"),
        ({"at": {"n": 16}}, "boundaries.demo: give at for logit_scale, noise"),
        ({"range": [0.5, 0.1]}, "boundaries.demo: range 0.5 0.1: LO must be below HI"),
        ({"edge": "bound"}, "boundaries.demo: delta_method_gaussian: its band has no bound edge"),
    ],
)
def test_a_bad_entry_is_one_line(entry, message):
    with pytest.raises(ConfigError) as error:
        b.check(load(config(**entry)))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_boundary_whose_experiment_name_is_taken_is_one_line():
    taken = config()
    taken["experiments"]["locate_demo"] = copy.deepcopy(taken["experiments"]["robustness"])
    with pytest.raises(ConfigError, match="^boundaries.demo: its points go to the experiment"):
        b.check(load(taken))
