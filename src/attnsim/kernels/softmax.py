"""Numerically stable softmax statistics shared by all kernels (last axis = keys)."""

from __future__ import annotations

import numpy as np


def softmax_stats(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weights p and entropy H of softmax(logits) along the last axis.

    H = log Z + sum_i p_i (m - s_i) with m = max s and Z = sum e^{s_i - m}:
    both terms are >= 0, so there is no cancellation even for logits of 1e4,
    and H >= 0 exactly. Rounding can push H a hair above log n; it is clipped.
    """
    peak = logits.max(axis=-1, keepdims=True)
    gap = peak - logits  # >= 0
    weights = np.exp(-gap)
    total = weights.sum(axis=-1, keepdims=True)
    weights /= total
    entropy = np.log(total[..., 0]) + np.einsum("...n,...n->...", weights, gap)
    np.minimum(entropy, np.log(logits.shape[-1]), out=entropy)
    return weights, entropy
