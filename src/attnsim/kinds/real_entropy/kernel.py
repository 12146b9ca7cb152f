"""Entropy of real attention rows for trained and re-initialised weights (docs/science.md §5.7).

Draw order per block: the trials' windows and query positions (`heads.draw_trials`); then, only
if a point of the block is re-initialised, one standard draw of every weight of the
architecture (`Bert.random(rng, std=1)`, BERT's initialisation at std 1: LayerNorm weights 1,
biases 0, the [PAD] embedding 0). Each init_std uses those draws times init_std (common random
numbers: the scales differ, the directions do not). A block thus holds one re-initialised
model per init_std; its trials are rows of that model, and a point with several blocks averages
over initialisations too. Trained points never depend on the random weights (drawn after them).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from attnsim.kinds import real_model
from attnsim.kinds.base import Counts, Work
from attnsim.models import heads
from attnsim.models.minilm import Bert

PUNCTUATION = (".", ",")
# a layer's linear weights (its biases are 0, its LayerNorms 1 and 0)
SCALED = ("qkv", "out", "up", "down")


def scaled(unit: Bert, std: float) -> Bert:
    """The model `unit` (weights N(0, 1)) with every linear and embedding weight times `std`."""
    model = copy.copy(unit)
    s = np.float32(std)
    model.word, model.position, model.token_type = (
        unit.word * s,
        unit.position * s,
        unit.token_type * s,
    )
    model.layers = [
        {k: (v * s if k in SCALED else v) for k, v in layer.items()} for layer in unit.layers
    ]
    return model


def punctuation_ids() -> np.ndarray:
    """Word-piece ids of "." and "," (the punctuation Clark et al. 2019 find heads attending to)."""
    return np.array(
        [heads.tokenizer().tokenizer.token_to_id(t) for t in PUNCTUATION], dtype=np.int64
    )


def row_metrics(
    logits: np.ndarray, values: np.ndarray, n: int, punctuation: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Per row (t, H, n): entropy, n_eff, max_weight, grad_sq, grad_rel, sink_weight, logit_std and,
    given the window's punctuation mask (t, n), the weight on [CLS], on [SEP] and on "." and ","."""
    stats = heads.row_stats(logits, values)
    v = values.astype(np.float64)
    centred = v - v.mean(axis=-2, keepdims=True)
    # mean_i ||v_i - mean v||^2: uniform weights' spread
    value_spread = np.einsum("...nd,...nd->...", centred, centred) / n
    p = stats["p"]
    return {
        "entropy": stats["entropy"],
        "n_eff": 1.0 / stats["sum_p2"],
        "max_weight": stats["max_weight"],
        "grad_sq": stats["grad_sq"],
        "grad_rel": np.divide(
            stats["grad_sq"], value_spread, out=np.zeros_like(value_spread), where=value_spread > 0
        ),
        "sink_weight": p[..., 0] + p[..., -1],
        "logit_std": logits.std(axis=-1),
        "cls_weight": p[..., 0],
        "sep_weight": p[..., -1],
        "punct_weight": np.zeros(p.shape[:-1])
        if punctuation is None
        else np.einsum("thn,tn->th", p, punctuation),
    }


def simulate(rng: np.random.Generator, trials: int, n: int, points: Sequence, record: bool = False):
    """Per point (dicts with init_std, layer, head): metric -> (T,). With `record`, also (ids,
    positions, models)."""
    ids, positions = heads.draw_trials(rng, n, trials)
    stds = sorted({float(p["init_std"]) for p in points})
    unit = Bert.random(rng, std=1.0) if any(s > 0 for s in stds) else None
    models = {s: heads.trained() if unit is None or s == 0 else scaled(unit, s) for s in stds}
    # std -> layer -> point indices
    wanted: dict[float, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for i, p in enumerate(points):
        wanted[float(p["init_std"])][p["layer"]].append(i)
    punctuation = np.isin(ids, punctuation_ids()).astype(np.float64)
    out: list[dict[str, np.ndarray]] = [{} for _ in points]
    for std, by_layer in wanted.items():
        for part, layers in heads.rows(models[std], ids, positions, by_layer):
            for layer, members in by_layer.items():
                logits, values = layers[layer]
                chosen = sorted({points[i]["head"] for i in members})
                metrics = row_metrics(logits[:, chosen], values[:, chosen], n, punctuation[part])
                for i in members:
                    column = chosen.index(points[i]["head"])
                    for name, value in metrics.items():
                        out[i].setdefault(name, np.empty(trials))[part] = value[:, column]
    if record:
        return out, (ids, positions, models)
    return out


def counts(n: int) -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `simulate`: per stream the
    window's forward pass through the trained model (`real_model.forward_counts`) and, per block,
    a random model (~22 M float32 normals and its scaled copies); per point one head's row
    statistics (n exps, ~20 passes over n d_h doubles) and its share of the forward pass through
    the model of its init_std (each init_std its own pass, shared by its layers and heads: a share
    of 1 / (layers x heads), exact for a grid of every layer and head). Points of the trained model
    (init_std = 0) are charged the same: the planner then need not evaluate the counts once per
    init_std (a million-point grid has tens of thousands). Setup: the trained model's weights."""
    row = Counts(exps=n, bytes=160 * n * heads.HEAD_SIZE + 100 * n)
    share = 1.0 / (heads.LAYERS * heads.HEADS)
    return Work(
        own=row + real_model.forward_counts(n) * share,
        shared=real_model.forward_counts(n),
        own_block=Counts(calls=30),
        shared_block=Counts(normals64=22e6, bytes=3 * 8 * 22e6, calls=400),
        setup=real_model.MODEL_SETUP,
    )
