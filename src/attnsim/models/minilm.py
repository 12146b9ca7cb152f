"""all-MiniLM-L6-v2 (a 6-layer, 12-head BERT) in numpy, with its attention laid open.

Why our own forward pass: the claims are about softmax attention in a real trained
model, so experiment kinds need each head's queries, keys, values and weights, and
the project must not depend on torch. The pass reproduces sentence-transformers'
embeddings (mean pooling over the attention mask, then L2 normalisation) to 1e-3
in float32; `Bert.random` builds the same architecture with BERT's initialisation,
the untrained control.

Tokenisation uses the model's own ``tokenizer.json`` through `tokenizers`, with its
built-in padding and truncation switched off (the file pads and truncates every
text to 128 tokens by itself): sequences are cut like sentence-transformers
(at 256 word pieces, [CLS] and [SEP] included), padded here, and the mask is
always passed on, so padded keys get exactly zero attention weight.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MAX_SEQ_LENGTH = 256  # sentence-transformers' limit for this model (sentence_bert_config.json)


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int = 30522
    hidden: int = 384
    layers: int = 6
    heads: int = 12
    intermediate: int = 1536
    max_positions: int = 512
    type_vocab: int = 2
    eps: float = 1e-12
    pad_id: int = 0

    @property
    def head_size(self) -> int:
        return self.hidden // self.heads

    @classmethod
    def from_json(cls, path: Path) -> BertConfig:
        c = json.loads(Path(path).read_text())
        if (
            c.get("hidden_act", "gelu") != "gelu"
            or c.get("position_embedding_type", "absolute") != "absolute"
        ):
            raise ValueError(
                f"{path}: only BERT with erf GELU and absolute positions is implemented"
            )
        return cls(
            c["vocab_size"],
            c["hidden_size"],
            c["num_hidden_layers"],
            c["num_attention_heads"],
            c["intermediate_size"],
            c["max_position_embeddings"],
            c["type_vocab_size"],
            c["layer_norm_eps"],
            c.get("pad_token_id", 0),
        )


class WordPiece:
    """The model's tokenizer, without its own padding/truncation; pads and masks explicitly."""

    def __init__(self, tokenizer_json: Path):
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(tokenizer_json))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.cls_id, self.sep_id, self.pad_id = (
            self._token_id(t) for t in ("[CLS]", "[SEP]", "[PAD]")
        )

    def _token_id(self, token: str) -> int:
        found = self.tokenizer.token_to_id(token)
        if found is None:
            raise ValueError(f"the tokenizer has no {token} token")
        return int(found)

    def pieces(self, texts: Sequence[str]) -> list[list[int]]:
        """Word-piece ids of each text: no [CLS]/[SEP], no truncation."""
        return [e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def batch(
        self, texts: Sequence[str], max_length: int = MAX_SEQ_LENGTH
    ) -> tuple[np.ndarray, np.ndarray]:
        """(ids, mask) of each text's sequence (`wrap`), right-padded to the longest."""
        return self.pad(self.wrap(self.pieces(texts), max_length))

    def wrap(
        self, pieces: Sequence[Sequence[int]], max_length: int = MAX_SEQ_LENGTH
    ) -> list[list[int]]:
        """``[CLS] pieces[:max_length-2] [SEP]``: sentence-transformers' truncation of one text."""
        return [[self.cls_id, *p[: max_length - 2], self.sep_id] for p in pieces]

    def pad(self, sequences: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        width = max(len(s) for s in sequences)
        ids = np.full((len(sequences), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(sequences), width), dtype=bool)
        for row, seq in enumerate(sequences):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = True
        return ids, mask


def erfc_abs(z: np.ndarray) -> np.ndarray:
    """erfc(|z|) by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, float32's resolution): numpy has
    no erf. Written in place, as GELU runs on the largest arrays of the pass."""
    a = np.abs(z)
    t = a * 0.3275911
    t += 1.0
    np.reciprocal(t, out=t)
    y = t * 1.061405429
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        y += coefficient
        y *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    y *= a
    return y


def erf(x: np.ndarray) -> np.ndarray:
    return np.copysign(1.0 - erfc_abs(x), x)


def gelu(x: np.ndarray) -> np.ndarray:
    """BERT's GELU, the exact (erf) form x·Φ(x), not the tanh approximation; overwrites nothing."""
    half = erfc_abs(x * (1.0 / math.sqrt(2.0)))
    half *= 0.5  # Φ(-|x|)
    np.subtract(1.0, half, out=half, where=x >= 0)  # Φ(x)
    half *= x
    return half


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + eps) * weight + bias


@dataclass
class HeadAttention:
    """One head of one layer: q, k, v of shape (batch, seq, head_size); probs (batch, seq, seq)."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    probs: np.ndarray
    mask: np.ndarray  # (batch, seq) True for real tokens

    def logits(self) -> np.ndarray:
        """q·k/√d in float64, (batch, query, key); padded keys are not masked here (see `mask`)."""
        q, k = self.q.astype(np.float64), self.k.astype(np.float64)
        return q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])


@dataclass
class LayerAttention:
    q: np.ndarray  # (batch, heads, seq, head_size)
    k: np.ndarray
    v: np.ndarray
    probs: np.ndarray  # (batch, heads, query, key); rows sum to 1, padded keys get 0
    mask: np.ndarray

    def head(self, h: int) -> HeadAttention:
        return HeadAttention(self.q[:, h], self.k[:, h], self.v[:, h], self.probs[:, h], self.mask)


@dataclass
class Output:
    hidden: np.ndarray  # (batch, seq, hidden): the last layer's token states
    mask: np.ndarray
    attention: dict[int, LayerAttention] = field(default_factory=dict)  # the captured layers

    def embeddings(self) -> np.ndarray:
        """sentence-transformers' pipeline: mean over real tokens, then L2 normalisation
        (float32)."""
        m = self.mask[..., None].astype(np.float64)
        pooled = (self.hidden.astype(np.float64) * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype(
            np.float32
        )


class Bert:
    """BERT encoder weights, rearranged for one matmul per projection (q, k, v fused)."""

    def __init__(self, weights: dict[str, np.ndarray], config: BertConfig, dtype=np.float32):
        self.config, self.dtype = config, np.dtype(dtype)
        w = {
            k: np.asarray(v, dtype=self.dtype)
            for k, v in weights.items()
            if k.startswith(("embeddings.", "encoder."))
        }
        e = "embeddings."
        self.word, self.position, self.token_type = (
            w[e + "word_embeddings.weight"],
            w[e + "position_embeddings.weight"],
            w[e + "token_type_embeddings.weight"],
        )
        self.embed_norm = (w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"])
        self.layers: list[dict[str, Any]] = []
        for i in range(config.layers):
            p = f"encoder.layer.{i}."
            a = p + "attention.self."
            self.layers.append(
                {
                    "qkv": np.ascontiguousarray(
                        np.concatenate([w[a + n + ".weight"] for n in ("query", "key", "value")]).T
                    ),
                    "qkv_bias": np.concatenate(
                        [w[a + n + ".bias"] for n in ("query", "key", "value")]
                    ),
                    "out": np.ascontiguousarray(w[p + "attention.output.dense.weight"].T),
                    "out_bias": w[p + "attention.output.dense.bias"],
                    "norm1": (
                        w[p + "attention.output.LayerNorm.weight"],
                        w[p + "attention.output.LayerNorm.bias"],
                    ),
                    "up": np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                    "up_bias": w[p + "intermediate.dense.bias"],
                    "down": np.ascontiguousarray(w[p + "output.dense.weight"].T),
                    "down_bias": w[p + "output.dense.bias"],
                    "norm2": (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
                }
            )

    @classmethod
    def load(cls, model_dir: Path, dtype=np.float32) -> Bert:
        from safetensors.numpy import load_file

        model_dir = Path(model_dir)
        return cls(
            load_file(model_dir / "model.safetensors"),
            BertConfig.from_json(model_dir / "config.json"),
            dtype,
        )

    @classmethod
    def random(
        cls,
        rng: np.random.Generator,
        std: float = 0.02,
        config: BertConfig = BertConfig(),
        dtype=np.float32,
    ) -> Bert:
        """Same architecture, BERT's initialisation: linear and embedding weights N(0, std²) (the
        padding token's embedding 0), biases 0, LayerNorm weight 1 and bias 0; drawn in a fixed
        order."""
        weights = {}
        for name, shape in weight_shapes(config):
            if name.endswith("LayerNorm.weight"):
                weights[name] = np.ones(shape)
            elif name.endswith("bias"):
                weights[name] = np.zeros(shape)
            else:
                weights[name] = rng.normal(0.0, std, size=shape)
        weights["embeddings.word_embeddings.weight"][config.pad_id] = 0.0
        return cls(weights, config, dtype)

    def forward(
        self, ids: np.ndarray, mask: np.ndarray, capture: Iterable[int] | bool = ()
    ) -> Output:
        """Token states for a right-padded batch; `capture` (layer indices, or True for all)
        keeps those layers' queries, keys, values and attention probabilities."""
        c = self.config
        ids, mask = np.asarray(ids), np.asarray(mask, dtype=bool)
        batch, seq = ids.shape
        if seq > c.max_positions:
            raise ValueError(
                f"sequences of {seq} tokens exceed the model's {c.max_positions} positions"
            )
        if not mask[:, 0].all():
            raise ValueError(
                "every sequence needs at least its first token unmasked (right padding)"
            )
        keep = set(range(c.layers)) if capture is True else set(capture or ())
        heads, d = c.heads, c.head_size
        x = self.word[ids] + self.position[:seq] + self.token_type[0]
        x = layer_norm(x.reshape(batch * seq, c.hidden), *self.embed_norm, c.eps)
        # exp(-inf) = 0: padded keys get no weight
        key_bias = np.where(mask, 0.0, -np.inf).astype(self.dtype)[:, None, None, :]
        attention = {}
        for i, L in enumerate(self.layers):
            qkv = (
                (x @ L["qkv"] + L["qkv_bias"])
                .reshape(batch, seq, 3, heads, d)
                .transpose(2, 0, 3, 1, 4)
            )
            q, k, v = qkv[0], qkv[1], qkv[2]  # (batch, heads, seq, d)
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= self.dtype.type(1.0 / math.sqrt(d))
            scores += key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores, out=scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch * seq, c.hidden)
            (w1, b1), (w2, b2) = L["norm1"], L["norm2"]
            x = layer_norm(x + context @ L["out"] + L["out_bias"], w1, b1, c.eps)
            x = layer_norm(
                x + gelu(x @ L["up"] + L["up_bias"]) @ L["down"] + L["down_bias"], w2, b2, c.eps
            )
            if i in keep:
                attention[i] = LayerAttention(q, k, v, probs, mask)
        return Output(x.reshape(batch, seq, c.hidden), mask, attention)


def weight_shapes(c: BertConfig) -> list[tuple[str, tuple[int, ...]]]:
    """The encoder's tensors in the checkpoint's naming, in a fixed order (the random init's draw
    order)."""
    shapes = [
        ("embeddings.word_embeddings.weight", (c.vocab_size, c.hidden)),
        ("embeddings.position_embeddings.weight", (c.max_positions, c.hidden)),
        ("embeddings.token_type_embeddings.weight", (c.type_vocab, c.hidden)),
        ("embeddings.LayerNorm.weight", (c.hidden,)),
        ("embeddings.LayerNorm.bias", (c.hidden,)),
    ]
    for i in range(c.layers):
        p = f"encoder.layer.{i}."
        for name, out, inp in (
            ("attention.self.query", c.hidden, c.hidden),
            ("attention.self.key", c.hidden, c.hidden),
            ("attention.self.value", c.hidden, c.hidden),
            ("attention.output.dense", c.hidden, c.hidden),
            ("intermediate.dense", c.intermediate, c.hidden),
            ("output.dense", c.hidden, c.intermediate),
        ):
            shapes += [(p + name + ".weight", (out, inp)), (p + name + ".bias", (out,))]
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes += [(p + name + ".weight", (c.hidden,)), (p + name + ".bias", (c.hidden,))]
    return shapes


class MiniLM:
    """all-MiniLM-L6-v2 from an asset directory: texts in, sentence embeddings out."""

    def __init__(self, model_dir: Path, dtype=np.float32):
        self.tokenizer = WordPiece(Path(model_dir) / "tokenizer.json")
        self.bert = Bert.load(model_dir, dtype)

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """(len(texts), 384) float32 unit vectors, like ``SentenceTransformer.encode``."""
        sequences = self.tokenizer.wrap(self.tokenizer.pieces(texts))
        # similar lengths share a batch
        order = np.argsort([len(s) for s in sequences], kind="stable")
        out = np.empty((len(texts), self.bert.config.hidden), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            ids, mask = self.tokenizer.pad([sequences[r] for r in rows])
            out[rows] = self.bert.forward(ids, mask).embeddings()
        return out
