"""Cosine attention over real embeddings at temperature tau (docs/science.md §5.8).

Populations (fixed, loaded once per process): `minilm`, the MiniLM sentence embeddings of every
k-th corpus sentence (k = number of sentences // MINILM_POPULATION, the first MINILM_POPULATION
of them); `glove`, the GloVe vectors of the GLOVE_POPULATION most frequent lower-case words of
the corpus that GloVe knows (ties in order of first occurrence), normalised to unit length.

Per trial (the block's generator): a query and n keys, distinct members of the population, drawn
uniformly (the first n + 1 of a uniformly random permutation, from one float64 uniform per
member); cos theta_i = query . key_i. Every tau of the stream shares these draws.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import cache

import numpy as np

from attnsim.kinds import real_model
from attnsim.kinds.base import Counts, Work
from attnsim.models import assets, corpus

# sentences: each embedding is a forward pass, so the population is kept small
MINILM_POPULATION = 256
GLOVE_POPULATION = 2048  # words
POPULATION = {"minilm": MINILM_POPULATION, "glove": GLOVE_POPULATION}
DIMENSION = {"minilm": 384, "glove": 50}
_WORD = re.compile(r"[a-z]+")


def minilm_sentences() -> list[str]:
    texts = corpus.sentences()
    step = len(texts) // MINILM_POPULATION
    return [texts[i * step] for i in range(MINILM_POPULATION)]


def glove_words(vocabulary) -> list[str]:
    counts = Counter(
        w for s in corpus.sentences() for w in _WORD.findall(s.lower()) if w in vocabulary
    )
    # most_common keeps first-occurrence order among ties
    return [w for w, _ in counts.most_common(GLOVE_POPULATION)]


@cache
def population(embeddings: str) -> np.ndarray:
    """(P, d) float64 unit vectors of the population."""
    if embeddings == "minilm":
        from attnsim.models.minilm import MiniLM

        vectors = MiniLM(assets.path("minilm")).encode(minilm_sentences())
    else:
        from attnsim.models.glove import Glove

        glove = Glove(assets.path("glove"))
        _, vectors = glove.lookup(glove_words(glove.index))
    vectors = vectors.astype(np.float64)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@cache
def participation_ratio(embeddings: str) -> float:
    """d_eff = (tr S)^2 / tr S^2 of the population's covariance S (docs/science.md §4.6)."""
    x = population(embeddings)
    eig = np.linalg.eigvalsh(np.cov(x, rowvar=False))
    eig = np.clip(eig, 0, None)
    return float(eig.sum() ** 2 / np.sum(eig**2))


def first_of_permutation(u: np.ndarray, k: int) -> np.ndarray:
    """The first k columns of np.argsort(u, axis=1, kind="stable"), without sorting whole rows:
    the k smallest by argpartition, then sorted by (value, index); a row whose k-th smallest
    value has a tie outside them (probability ~P^2 2^-53) is sorted whole."""
    if k >= u.shape[1]:
        return np.argsort(u, axis=1, kind="stable")[:, :k]
    part = np.argpartition(u, k - 1, axis=1)[:, :k]
    values = np.take_along_axis(u, part, axis=1)
    ranks = np.lexsort((part, values), axis=1)
    order = np.take_along_axis(part, ranks, axis=1)
    kth = np.take_along_axis(values, ranks[:, -1:], axis=1)
    tied = np.count_nonzero(u <= kth, axis=1) != k
    if tied.any():
        order[tied] = np.argsort(u[tied], axis=1, kind="stable")[:, :k]
    return order


def draw_cosines(
    rng: np.random.Generator, trials: int, n: int, embeddings: str, record: bool = False
):
    """(T, n) float64 cosines between each trial's query and its n keys (and the members drawn, if
    `record`)."""
    x = population(embeddings)
    order = first_of_permutation(rng.random((trials, len(x))), n + 1)
    query, keys = x[order[:, 0]], x[order[:, 1:]]
    cosines = np.einsum("td,tnd->tn", query, keys)
    return (cosines, order) if record else cosines


def statistics(cosines: np.ndarray, taus: Sequence[float]) -> list[dict[str, np.ndarray]]:
    """Per tau: entropy, gap = log n - H, var_cos, gap_var_pred = var_cos / (2 tau^2), mean_cos."""
    n = cosines.shape[1]
    gaps0 = cosines.max(axis=1, keepdims=True) - cosines  # >= 0, exactly 0 at the top key
    var = cosines.var(axis=1)
    mean = cosines.mean(axis=1)
    out = []
    for tau in taus:
        g = gaps0 / tau
        e = np.exp(np.maximum(-g, -700.0))
        z = e.sum(axis=1)
        entropy = np.clip(np.log(z) + np.einsum("tn,tn->t", e, g) / z, 0.0, math.log(n))
        out.append(
            {
                "entropy": entropy,
                "gap": math.log(n) - entropy,
                "var_cos": var,
                "gap_var_pred": var / (2 * tau * tau),
                "mean_cos": mean,
            }
        )
    return out


# Building a population once per process: MiniLM encodes its sentences (~25 tokens each, after
# reading the model's weights); GloVe's is a count of the corpus's words in Python (~1 call per
# word) and a lookup.
SETUP = {
    "minilm": real_model.forward_counts(25) * MINILM_POPULATION + real_model.MODEL_SETUP,
    "glove": Counts(calls=3e6, bytes=4 * 400_000 * 50),
}


def counts(n: int, embeddings: str) -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `draw_cosines` and
    `statistics`: per stream one float64 uniform per member of the population, the partial sort
    choosing n + 1 of them, the keys gathered and their cosines (float64); per tau one float64 exp
    per key and ~8 passes of 8 bytes. Setup: the population (`SETUP`)."""
    size, dim = POPULATION[embeddings], DIMENSION[embeddings]
    return Work(
        own=Counts(exps=n, bytes=64 * n),
        shared=Counts(normals64=size, flops64=2 * n * dim, bytes=24 * size + 16 * n * dim),
        own_block=Counts(calls=12),
        shared_block=Counts(calls=25),
        setup=SETUP[embeddings],
    )
