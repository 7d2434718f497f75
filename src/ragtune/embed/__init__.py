"""Embedders: one protocol, an offline ONNX default, and an on-disk cache."""

from __future__ import annotations

from ..errors import ConfigError
from .base import Embedder, l2_normalize
from .cache import CachedEmbedder, EmbeddingCache, default_cache_dir
from .onnx import OnnxEmbedder

__all__ = ["EMBEDDERS", "CachedEmbedder", "Embedder", "EmbeddingCache", "OnnxEmbedder", "default_cache_dir",
           "get_embedder", "l2_normalize"]

EMBEDDERS = ("minilm", "onnx:<folder>")


def get_embedder(name: str = "minilm") -> Embedder:
    """``minilm`` (bundled, offline) or ``onnx:<folder with model.onnx + tokenizer.json>``.

    Constructing loads no model: weights load on first ``embed``.
    """
    if name == "minilm":
        return OnnxEmbedder.minilm()
    if name.startswith("onnx:"):
        return OnnxEmbedder.from_folder(name[5:])
    raise ConfigError(f"unknown embedder {name!r}; choose one of: {', '.join(EMBEDDERS)}")
