"""Rerankers: one protocol (``rerank(query, ranking) -> Ranking``), one module per strategy.

:mod:`.base` holds what they share (:class:`RerankerConfig`, the ``replace``/``fuse`` modes) and
:class:`RerankedRetriever`; :mod:`.embedding`, :mod:`.cross_encoder` (ONNX runtime in :mod:`.onnx`) and
:mod:`.llm` each register one reranker when imported (``ragtune.registry.RERANKERS`` imports them on first lookup).
"""

from .base import DEFAULT_MODE, MODES, RerankedRetriever, Reranker, RerankerConfig, fuse_with_first_stage

__all__ = ["DEFAULT_MODE", "MODES", "RerankedRetriever", "Reranker", "RerankerConfig", "fuse_with_first_stage"]
