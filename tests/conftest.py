"""Shared fixtures: small valid configs and a temporary store."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

NOISY_GRID = {
    "n": [16, 64],
    "d": [4],
    "logit_scale": [0.0, 1.0],
    "noise": ["gaussian", "student_t"],
    "noise_draws": [4],
    "noise_scale": [0.1, 0.5],
}


def small_config(**overrides) -> dict:
    config = {
        "seed": 7,
        "chunk_size": 3,
        "experiments": {"robustness": {"kind": "noisy_attention", "trials": 20, "grid": copy.deepcopy(NOISY_GRID)}},
    }
    config.update(overrides)
    return config


@pytest.fixture
def config() -> dict:
    return small_config()
