"""`attnsim embed`: sentence embeddings of MiniLM to a Parquet file, and their cosine matrix.

Why a command: it is the quickest end-to-end check that the asset, the tokenizer
and the numpy forward pass work on a machine (compare with the model card's
numbers), and it leaves a file with provenance that other tools can read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from attnsim.models.assets import asset_provenance, locate

FORMAT = "attnsim-embeddings/1"


def table(texts: Sequence[str], embeddings: np.ndarray) -> pa.Table:
    """One row per text: `text` (string), `embedding` (fixed-size list of float32)."""
    flat = pa.array(
        np.ascontiguousarray(embeddings, dtype=np.float32).reshape(-1), type=pa.float32()
    )
    return pa.table(
        {
            "text": pa.array(list(texts), type=pa.string()),
            "embedding": pa.FixedSizeListArray.from_arrays(flat, embeddings.shape[1]),
        }
    )


def cosine_text(texts: Sequence[str], embeddings: np.ndarray) -> str:
    unit = embeddings.astype(np.float64)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    cosine = unit @ unit.T
    lines = [
        "cosine similarity (all-MiniLM-L6-v2)",
        "      " + "".join(f"{f'[{j}]':>8}" for j in range(len(texts))),
    ]
    for i, text in enumerate(texts):
        shown = text if len(text) <= 60 else text[:57] + "..."
        lines.append(f"{f'[{i}]':>6}" + "".join(f"{c:8.4f}" for c in cosine[i]) + f"  {shown}")
    return "\n".join(lines)


def embed(
    texts: Sequence[str], resources: Path, model_dir: Path | None = None, output: Path | None = None
) -> str:
    """Embed `texts` (fetching the model into `resources` unless `model_dir` is given); write
    `output` if asked; return the cosine matrix as text."""
    from attnsim.models.minilm import MiniLM
    from attnsim.store.parquet import provenance, write_atomic

    embeddings = MiniLM(locate("minilm", resources, model_dir)).encode(texts)
    if output is not None:
        write_atomic(
            table(texts, embeddings),
            output,
            provenance(format=FORMAT, command="embed", **asset_provenance("minilm")),
        )
    return cosine_text(texts, embeddings)
