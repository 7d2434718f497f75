"""Retrievers: one protocol (``search(query, k) -> Ranking``), one module per method."""

from .base import Retriever, top_k
from .bm25 import BM25Config, BM25Retriever

__all__ = ["BM25Config", "BM25Retriever", "Retriever", "top_k"]
