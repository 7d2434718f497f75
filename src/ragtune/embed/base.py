"""The embedder protocol (:class:`ragtune.stages.Embedder`, re-exported) and what embedders share."""

from __future__ import annotations

import numpy as np

from ..stages import Embedder

__all__ = ["DEFAULT_EMBEDDER", "Embedder", "l2_normalize"]

DEFAULT_EMBEDDER = "minilm"  # all-MiniLM-L6-v2, int8 ONNX, bundled (offline); measured in docs/concepts/defaults.md


def l2_normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
