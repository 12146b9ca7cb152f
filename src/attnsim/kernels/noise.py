"""Standardised logit noise: unit standard deviation, scaled by noise_scale later."""

from __future__ import annotations

import math

import numpy as np

from attnsim.theory.noise import NOISE_FAMILIES, STUDENT_T_DOF


def standard_noise(rng: np.random.Generator, family: str, shape) -> np.ndarray:
    """i.i.d. draws with mean 0 (up to a shift, irrelevant to softmax) and variance 1."""
    if family == "gaussian":
        return rng.standard_normal(shape)
    if family == "uniform":
        return rng.uniform(-math.sqrt(3), math.sqrt(3), shape)
    if family == "laplace":
        return rng.laplace(0.0, 1 / math.sqrt(2), shape)
    if family == "gumbel":
        return rng.gumbel(0.0, math.sqrt(6) / math.pi, shape)
    if family == "student_t":
        dof = STUDENT_T_DOF
        return rng.standard_t(dof, shape) / math.sqrt(dof / (dof - 2))
    raise ValueError(f"unknown noise family {family!r}; expected one of {', '.join(NOISE_FAMILIES)}")
