"""Small valid configs and grids the tests share."""

from __future__ import annotations

import copy
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

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
        "experiments": {
            "robustness": {
                "kind": "noisy_attention",
                "trials": 20,
                "grid": copy.deepcopy(NOISY_GRID),
            }
        },
    }
    config.update(overrides)
    return config


# small grids of the training kinds: both optimisers, a diverging step size (lr 16, 300)
RECALL = {
    "n": [6],
    "d": [4],
    "batch": [5],
    "scale": [0.3, 3.0],
    "optimiser": ["sgd", "adam"],
    "lr": [0.5, 16.0],
    "steps": [12],
}
CONTRASTIVE = {
    "n": [8],
    "classes": [3],
    "latent_dim": [2],
    "input_dim": [6],
    "embed_dim": [3],
    "view_noise": [0.5],
    "positives": ["class"],
    "instance_noise": [0.0],
    "tau": [0.1, 1.0],
    "tau_mode": ["fixed"],
    "optimiser": ["sgd", "adam"],
    "lr": [0.05, 300.0],
    "steps": [6],
}


def simulated_robustness(root: Path):
    """`small_config()`'s robustness experiment simulated into the store at `root`: (settings,
    root, chunk paths), for the tests that read, damage or collect a real store."""
    from attnsim.config.load import load
    from attnsim.testing import run_experiment

    settings = load(small_config())
    return settings, root, run_experiment(settings, "robustness", root, summarise=False).chunks
