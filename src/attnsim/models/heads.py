"""The trained model's attention rows for experiment kinds (docs/science.md §5.5).

A trial is one attention row: a window of `n` corpus tokens (`corpus.TokenStream.windows`:
[CLS], n - 2 consecutive word pieces, [SEP]) and a query position in it, both drawn from the
trial block's generator. One forward pass of a block's windows serves every layer and head
(and, in the kinds, every noise law and scale): the windows go through the model in
sub-batches of about `SUB_TOKENS` tokens (fixed by n, so a block is always cut the same way),
and each trial keeps only its query's row of each needed layer: the logits s_i = q·k_i/√d_h
in float64 and the head's values v_i (float32, as the model computes them).

The model and the corpus are loaded once per process (`trained`, `stream`) from the verified
asset (`attnsim.models.assets.path`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Iterator
from functools import cache

import numpy as np

from attnsim.kernels.softmax import from_top
from attnsim.models import assets, corpus
from attnsim.models.minilm import Bert, BertConfig, Output, WordPiece

CONFIG = BertConfig()  # all-MiniLM-L6-v2: 6 layers, 12 heads, d_h = 32, hidden 384
LAYERS, HEADS, HEAD_SIZE = CONFIG.layers, CONFIG.heads, CONFIG.head_size
SUB_TOKENS = 2048  # tokens per forward sub-batch: big enough for BLAS, small enough for the caches


@cache
def trained() -> Bert:
    return Bert.load(assets.path("minilm"))


@cache
def tokenizer() -> WordPiece:
    return WordPiece(assets.path("minilm") / "tokenizer.json")


@cache
def stream() -> corpus.TokenStream:
    return corpus.TokenStream(tokenizer())


def provenance() -> dict:
    """The model asset's and the corpus' provenance (for every file computed from them)."""
    return {**assets.asset_provenance("minilm"), **corpus.corpus_provenance()}


def draw_trials(rng: np.random.Generator, n: int, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids (T, n), query positions (T,)): each trial's window and query, i.i.d. uniform."""
    ids = stream().windows(n, trials, rng)
    return ids, rng.integers(n, size=trials)


def sub_batch(n: int) -> int:
    return max(1, SUB_TOKENS // n)


def truncated(bert: Bert, depth: int) -> Bert:
    """The same model with only its first `depth` layers (the later ones change no earlier row)."""
    shallow = copy.copy(bert)
    shallow.layers = bert.layers[:depth]
    return shallow


def _forward(bert: Bert, ids: np.ndarray, layers: list[int]) -> Iterator[tuple[slice, Output]]:
    """Per sub-batch of trials: their slice and the forward pass (as deep as the last of `layers`,
    sorted) that captured those layers' attention."""
    model = truncated(bert, layers[-1] + 1)
    trials, n = ids.shape
    step = sub_batch(n)
    for start in range(0, trials, step):
        part = slice(start, min(trials, start + step))
        batch = ids[part]
        yield part, model.forward(batch, np.ones(batch.shape, dtype=bool), capture=layers)


def rows(
    bert: Bert, ids: np.ndarray, positions: np.ndarray, layers: Iterable[int]
) -> Iterator[tuple[slice, dict[int, tuple[np.ndarray, np.ndarray]]]]:
    """Per sub-batch of trials: (their slice, layer -> (logits (t, H, n) float64, values (t, H, n,
    d_h) float32))."""
    layers = sorted(set(layers))
    scale = 1.0 / math.sqrt(bert.config.head_size)
    for part, out in _forward(bert, ids, layers):
        index = np.arange(part.stop - part.start)
        found = {}
        for layer in layers:
            a = out.attention[layer]
            q = a.q[index, :, positions[part]].astype(np.float64)[:, :, None, :]  # (t, H, 1, d)
            k = a.k.astype(np.float64).transpose(0, 1, 3, 2)  # (t, H, d, n)
            found[layer] = ((q @ k)[:, :, 0, :] * scale, np.ascontiguousarray(a.v))
        yield part, found


def query_key_rows(
    bert: Bert, ids: np.ndarray, positions: np.ndarray, layers: Iterable[int]
) -> Iterator[tuple[slice, dict[int, tuple[np.ndarray, ...]]]]:
    """Like `rows`, with the query and keys themselves: per sub-batch, layer -> (logits (t, H, n)
    float64 as in `rows`, q (t, H, d_h), k (t, H, n, d_h), v (t, H, n, d_h), float32 as the model
    has them)."""
    layers = sorted(set(layers))
    scale = 1.0 / math.sqrt(bert.config.head_size)
    for part, out in _forward(bert, ids, layers):
        index = np.arange(part.stop - part.start)
        found: dict[int, tuple[np.ndarray, ...]] = {}
        for layer in layers:
            a = out.attention[layer]
            q = np.ascontiguousarray(a.q[index, :, positions[part]])  # (t, H, d)
            logits = (
                q.astype(np.float64)[:, :, None, :] @ a.k.astype(np.float64).transpose(0, 1, 3, 2)
            )[:, :, 0, :] * scale
            found[layer] = (logits, q, np.ascontiguousarray(a.k), np.ascontiguousarray(a.v))
        yield part, found


def row_stats(logits: np.ndarray, values: np.ndarray) -> dict[str, np.ndarray]:
    """Softmax statistics of rows (..., n) with values (..., n, d), in float64 (docs/science.md
    §1.5, §2.4).

    The values are measured from the top key's value v_m (w_i = v_i - v_m, u = o - v_m), so
    v_i - o = w_i - u stays accurate when the weights are one-hot.
    Returns entropy, sum_p2, grad_sq = sum p^2 ||v - o||^2, spread = sum p ||v - o||^2, log_p and
    dev = v - o (float64, for the noisy outputs)."""
    top, gaps, z, p, entropy = from_top(logits)
    v = values.astype(np.float64)
    v_top = np.take_along_axis(v, top[..., None, None], axis=-2)
    w = v - v_top
    u = np.einsum("...n,...nd->...d", p, w)
    dev = w - u[..., None, :]
    dist2 = np.einsum("...nd,...nd->...n", dev, dev)
    return {
        "entropy": entropy,
        "sum_p2": np.sum(p * p, axis=-1),
        "grad_sq": np.sum(p * p * dist2, axis=-1),
        "spread": np.sum(p * dist2, axis=-1),
        "max_weight": np.max(p, axis=-1),
        "p": p,
        "log_p": -gaps - np.log(z),
        "dev": dev,
    }


def check_windows(grid) -> None:
    """Refuse an n the corpus cannot fill (it has at least as many word pieces as words), before
    anything runs."""
    from attnsim.errors import ConfigError

    words = sum(len(s.split()) for s in corpus.sentences())
    longest = max(grid["n"])
    if longest - 2 > words:
        raise ConfigError(
            f"grid.n: {longest} tokens exceed the corpus (pydoc_data.topics, {words} words)"
        )


# activations per token if a block went through at once: the planner's cost measure
FORWARD_BYTES_PER_TOKEN = 16 * 1024
