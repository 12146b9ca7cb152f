"""Located points never move a verdict (issue 53.3): an experiment of role `locate` in the same
store, here the declared grid's points at three times the trials, is left out of the map the
claims read (`Settings.kinds`), so every claim is judged on the declared grid at its declared
trials, number for number, as in a store without it."""

from __future__ import annotations

import copy

import pytest
from helpers.configs import small_config
from helpers.small_store import simulate

from attnsim.config.load import load
from attnsim.report import claims as io

MEASURED = ("measured", "trials", "verdict", "ci_low", "ci_high", "experiments")


def config(located: bool) -> dict:
    out = small_config()
    if located:
        grid = copy.deepcopy(out["experiments"]["robustness"])
        out["experiments"]["robustness_located"] = grid | {"role": "locate", "max_trials": 60}
    return out


def judged(tmp_path, located: bool, everything: bool = False) -> dict:
    root = tmp_path / ("with" if located else "without") / "store"
    settings = load(config(located))
    simulate(config(located), root)
    experiments = settings.kinds()
    if everything:  # what the claims would see were located points read
        experiments |= settings.located()
    claims = io.evaluate(io.load_summaries(root, experiments), experiments)
    return {c.claim_id: tuple(getattr(c, k) for k in MEASURED) for c in claims}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("located")
    return judged(tmp, False), judged(tmp, True), judged(tmp, True, everything=True)


def test_the_role_leaves_an_experiment_out_of_the_claims_map():
    settings = load(config(True))
    assert settings.kinds() == {"robustness": "noisy_attention"}
    assert settings.located() == {"robustness_located": "noisy_attention"}
    assert settings.experiments["robustness_located"].config()["role"] == "locate"
    assert "role" not in settings.experiments["robustness"].config()  # a grid's hash as before


def test_located_points_never_move_a_verdict(stores):
    without, with_located, _ = stores
    assert with_located == without  # every claim's value, SE, interval and verdict


def test_read_they_would_move_numbers(stores):
    """The control: the same store with the located experiment read (its points have more trials,
    so `canonical_rows` takes them) gives other numbers: the test above can fail."""
    without, _, everything = stores
    moved = [c for c in without if everything[c][:2] != without[c][:2]]
    assert moved
