"""The embedder protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["DEFAULT_EMBEDDER", "Embedder", "l2_normalize"]

DEFAULT_EMBEDDER = "minilm"  # all-MiniLM-L6-v2, int8 ONNX, bundled (offline); measured in docs/concepts/defaults.md


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``model_id`` names the model; ``cache_key`` also pins its exact weights
    (model id + file hash), so cached vectors never mix models.
    """

    model_id: str
    dim: int
    max_tokens: int

    @property
    def cache_key(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


def l2_normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
