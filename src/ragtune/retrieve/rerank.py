"""Rerankers: rescore the shortlist of any retriever.

One protocol, ``rerank(query, ranking) -> Ranking``. Two kinds:

- ``EmbeddingReranker``: rescore with a second, different embedder (works
  offline; each chunk text is embedded once thanks to the cache);
- ``CrossEncoderReranker``: a sentence-transformers ``CrossEncoder`` (any
  model id or local folder, e.g. ``cross-encoder/ms-marco-MiniLM-L-6-v2``).
  No trained cross-encoder ships in a package reachable offline; the tests
  build a tiny random one to check the plumbing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from ..config import Config, check_range
from ..errors import ConfigError, MissingDependencyError
from ..types import Hit, Ranking
from .base import Retriever

__all__ = ["Reranker", "EmbeddingReranker", "EmbeddingRerankerConfig", "CrossEncoderReranker", "CrossEncoderConfig",
           "RerankedRetriever"]


@runtime_checkable
class Reranker(Protocol):
    name: str

    def rerank(self, query: str, ranking: Ranking) -> Ranking: ...


def _reorder(query: str, ranking: Ranking, scores: Sequence[float], stage: str, seconds: float) -> Ranking:
    order = sorted(range(len(ranking.hits)), key=lambda i: -scores[i])  # stable on ties
    hits = tuple(Hit(ranking.hits[i].chunk, float(scores[i])) for i in order)
    return Ranking(query, hits, {**ranking.timings, stage: seconds})


class EmbeddingReranker:
    name = "embedding"

    def __init__(self, embedder):
        self.embedder = embedder
        self.config = {"embedder": embedder.model_id}

    def rerank(self, query: str, ranking: Ranking) -> Ranking:
        t0 = time.perf_counter()
        if not ranking.hits:
            return Ranking(query, (), {**ranking.timings, "rerank": 0.0})
        q = self.embedder.embed_queries([query])[0]
        p = self.embedder.embed([h.chunk.embed_text for h in ranking.hits])
        return _reorder(query, ranking, (p @ q).tolist(), "rerank", time.perf_counter() - t0)


class CrossEncoderReranker:
    """Scores (query, chunk) pairs jointly. The model loads on first use, under a spinner on a terminal.

    A model that is not a local folder nor in the Hugging Face cache fails in about a second when the
    hub is unreachable (:func:`ragtune.embed.hub.require_model`), instead of a minute of network retries."""

    name = "cross-encoder"

    def __init__(self, model: str, *, batch_size: int = 32, max_length: int = 512, device: str = "cpu"):
        self.model_name = model
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self._model = None
        self.config = {"model": model}

    def warm_up(self) -> None:
        if self._model is not None:
            return
        import importlib.util

        from ..embed.hub import require_model
        from ..progress import status

        if importlib.util.find_spec("sentence_transformers") is None:
            raise MissingDependencyError("the cross-encoder reranker needs: pip install 'ragtune[st]'")
        local_only = require_model(self.model_name, what="cross-encoder", flag="--rerank-model ")
        try:
            with status(f"loading {self.model_name}"):
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(self.model_name, max_length=self.max_length, device=self.device,
                                           local_files_only=local_only)
        except OSError as e:
            raise ConfigError(f"cannot load cross-encoder {self.model_name!r}: {e}") from None

    def rerank(self, query: str, ranking: Ranking) -> Ranking:
        self.warm_up()
        t0 = time.perf_counter()
        if not ranking.hits:
            return Ranking(query, (), {**ranking.timings, "rerank": 0.0})
        pairs = [(query, h.chunk.embed_text) for h in ranking.hits]
        scores = np.asarray(self._model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False),  # type: ignore[union-attr]
                            dtype=np.float64).reshape(len(pairs), -1)
        col = scores[:, -1] if scores.shape[1] > 1 else scores[:, 0]
        return _reorder(query, ranking, col.tolist(), "rerank", time.perf_counter() - t0)


class RerankedRetriever:
    """``base`` retrieves ``candidates`` chunks; ``reranker`` reorders them.

    Below the reranked shortlist, the rest of the base ranking follows in its
    own order (so metrics deeper than ``candidates`` still see it).
    """

    def __init__(self, base: Retriever, reranker: Reranker, *, candidates: int = 50):
        if candidates < 1:
            raise ConfigError(f"candidates must be >= 1, got {candidates}")
        self.base = base
        self.reranker = reranker
        self.candidates = candidates
        self.name = f"{base.name}+{reranker.name}"
        self.config = {"base": getattr(base, "config", None), "reranker": getattr(reranker, "config", None),
                       "candidates": candidates}

    def search(self, query: str, k: int = 10, filters=None) -> Ranking:
        base = self.base.search(query, k=max(k, self.candidates), filters=filters)
        head = Ranking(query, base.hits[: self.candidates], base.timings)
        reranked = self.reranker.rerank(query, head)
        return Ranking(query, (reranked.hits + base.hits[self.candidates:])[:k], reranked.timings)


@dataclass(frozen=True)
class EmbeddingRerankerConfig(Config):
    """Rescore the shortlist with a second embedder (offline default: e5-small)."""

    model: str = "e5-small"

    def __post_init__(self) -> None:
        from ..registry import EMBEDDERS

        EMBEDDERS.get(self.model)


@dataclass(frozen=True)
class CrossEncoderConfig(Config):
    """A sentence-transformers CrossEncoder: a Hugging Face id or a local folder."""

    model: str = "cross-encoder/ms-marco-MiniLM-L-6-v2"
    max_length: int = 512
    batch_size: int = 32

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError(f"CrossEncoderConfig: model must be a model id or folder, got {self.model!r}")
        check_range("CrossEncoderConfig", "max_length", self.max_length, lo=1, integer=True)
        check_range("CrossEncoderConfig", "batch_size", self.batch_size, lo=1, integer=True)


def _embedding(config: EmbeddingRerankerConfig, **_: object) -> EmbeddingReranker:
    from ..embed import CachedEmbedder, get_embedder

    return EmbeddingReranker(CachedEmbedder(get_embedder(config.model)))


def _cross_encoder(config: CrossEncoderConfig, **_: object) -> CrossEncoderReranker:
    return CrossEncoderReranker(config.model, max_length=config.max_length, batch_size=config.batch_size)


from ..registry import RERANKERS  # noqa: E402

RERANKERS.register("embedding", EmbeddingRerankerConfig, _embedding,
                   summary="a second embedder rescores the shortlist (weak offline fallback)")
RERANKERS.register("cross-encoder", CrossEncoderConfig, _cross_encoder,
                   summary="a cross-encoder scores (query, chunk) pairs jointly")
