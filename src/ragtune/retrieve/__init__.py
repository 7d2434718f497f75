"""Retrievers: one protocol (``search(query, k) -> Ranking``), one module per method."""

from .base import Retriever, top_k
from .bm25 import BM25Config, BM25Retriever
from .parents import ParentRetriever

__all__ = ["BM25Config", "BM25Retriever", "ParentRetriever", "Retriever", "top_k"]
