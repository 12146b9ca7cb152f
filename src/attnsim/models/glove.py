"""GloVe 6B 50-d word vectors from the `glove` asset: static embeddings of real words.

Why: real, non-contextual vectors (400,000 lower-case words, 50 dimensions) give
experiments keys and values with the geometry of natural language, next to the
contextual ones of MiniLM. The array is memory-mapped, so loading costs little.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

VECTORS = "glove_6B_50d_emb.npy"
VOCABULARY = "glove_6B_index.parquet"


class Glove:
    def __init__(self, asset_dir: Path):
        asset_dir = Path(asset_dir)
        # (400000, 50) float32, row i = words[i]
        self.vectors = np.load(asset_dir / VECTORS, mmap_mode="r")
        # ParquetFile, not pq.read_table: its dataset layer imports pandas (~0.27 s a process)
        vocabulary = pq.ParquetFile(asset_dir / VOCABULARY).read(columns=["index"])
        self.words = vocabulary.column("index").to_pylist()
        if len(self.words) != len(self.vectors):
            raise ValueError(
                f"{asset_dir}: {len(self.words)} words but {len(self.vectors)} vectors"
            )
        self.index = {word: row for row, word in enumerate(self.words)}

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def lookup(
        self, words: Sequence[str], skip_missing: bool = False
    ) -> tuple[list[str], np.ndarray]:
        """(the words found, their vectors as a (len, 50) float32 array); GloVe is lower-case, so
        callers lower-case first. A missing word is a KeyError unless `skip_missing`."""
        missing = [w for w in words if w not in self.index]
        if missing and not skip_missing:
            more = " ..." if len(missing) > 5 else ""
            raise KeyError(f"not in GloVe's vocabulary: {', '.join(map(repr, missing[:5]))}{more}")
        found = [w for w in words if w in self.index]
        return found, np.asarray(
            self.vectors[[self.index[w] for w in found]], dtype=np.float32
        ).reshape(len(found), self.vectors.shape[1])
