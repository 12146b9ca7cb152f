"""Real English text without a download: the help topics every Python carries (`pydoc_data.topics`).

Why this text: it is present on every machine that runs the project, is written
English prose (the language reference), and is pinned by the Python version; its
sha256 goes into the provenance of every file computed from it (`corpus_provenance`),
because another Python version ships slightly different topics.

Sentence rule (``RULE``; bump it when this changes):

1. topics in sorted key order; each topic cut into paragraphs at blank lines;
2. a paragraph is prose, and kept, if all its lines share one indentation, it ends
   in ``.``, ``!`` or ``?``, does not start with ``>>>`` or ``...`` and contains a
   word of 3+ lower-case letters (this drops code, grammar, tables and headings);
3. its lines are joined and runs of whitespace become one space;
4. it is cut after ``.``, ``!`` or ``?`` (optionally followed by a closing quote or
   parenthesis) where whitespace and then a capital letter follow (optionally after
   an opening quote or parenthesis): mechanical, so "E.g. This" is cut too;
5. pieces of fewer than 3 words (list numbers such as "2.") are dropped.

Token windows (`TokenStream.windows`) count [CLS] and [SEP]: a window of ``n``
tokens is ``[CLS]``, ``n - 2`` consecutive word pieces of the text and ``[SEP]``,
exactly the ``n`` positions the model attends over; ``n <= 512`` (its position table).
"""

from __future__ import annotations

import hashlib
import platform
import re
from functools import cache

import numpy as np

from attnsim.errors import ConfigError

RULE = "pydoc-topics-sentences/1"
MAX_POSITIONS = 512
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')]))\s+(?=[\"'(]?[A-Z])")
_WORD = re.compile(r"[a-z]{3}")


def _prose(paragraph: str) -> str | None:
    lines = [line for line in paragraph.split("\n") if line.strip()]
    if not lines or len({len(line) - len(line.lstrip()) for line in lines}) != 1:
        return None
    text = " ".join(" ".join(lines).split())
    if text[-1] not in ".!?" or text.startswith((">>>", "...")) or not _WORD.search(text):
        return None
    return text


@cache
def sentences() -> tuple[str, ...]:
    """The corpus as sentences, by the rule in the module docstring."""
    from pydoc_data.topics import topics

    out = []
    for key in sorted(topics):
        for paragraph in _PARAGRAPHS.split(topics[key]):
            text = _prose(paragraph)
            if text is not None:
                out += [s for s in _SENTENCE_END.split(text) if len(s.split()) >= 3]
    return tuple(out)


def text_sha256(texts: tuple[str, ...]) -> str:
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()


def corpus_provenance() -> dict:
    """Source, Python version, rule and sha256 of the sentences used ("\\n"-joined, UTF-8)."""
    texts = sentences()
    return {
        "corpus": {
            "source": "pydoc_data.topics",
            "python_version": platform.python_version(),
            "rule": RULE,
            "sentences": len(texts),
            "sha256": text_sha256(texts),
        }
    }


class TokenStream:
    """The corpus as one stream of word pieces, cut into windows of exactly `n` tokens."""

    def __init__(self, tokenizer, texts: tuple[str, ...] | None = None):
        """`tokenizer`: a `minilm.WordPiece` (anything with `pieces`, `cls_id`, `sep_id`)."""
        self.tokenizer = tokenizer
        pieces = tokenizer.pieces(sentences() if texts is None else texts)
        lengths = np.array([len(p) for p in pieces], dtype=np.int64)
        self.ids = np.fromiter(
            (i for p in pieces for i in p), dtype=np.int64, count=int(lengths.sum())
        )
        # where each sentence begins
        self.starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])[lengths > 0]

    def windows(self, n: int, count: int, rng: np.random.Generator) -> np.ndarray:
        """(count, n) ids: [CLS], n-2 consecutive pieces starting at a sentence start drawn
        uniformly by `rng` (among those with room for n-2 pieces), [SEP]."""
        if n > MAX_POSITIONS:
            raise ConfigError(f"n: {n} tokens exceed MiniLM's {MAX_POSITIONS} positions")
        if n < 3:
            raise ConfigError(
                f"n: {n} tokens leave no room for text between [CLS] and [SEP] (need n >= 3)"
            )
        body = n - 2
        valid = self.starts[self.starts + body <= len(self.ids)]
        if len(valid) == 0:
            raise ConfigError(f"n: {n} tokens exceed the text ({len(self.ids)} word pieces)")
        starts = valid[rng.integers(len(valid), size=count)]
        out = np.empty((count, n), dtype=np.int64)
        out[:, 0], out[:, -1] = self.tokenizer.cls_id, self.tokenizer.sep_id
        out[:, 1:-1] = self.ids[starts[:, None] + np.arange(body)]
        return out
