"""Chunking strategies: one module each, one protocol (``chunk(document) -> list[Chunk]``)."""

from __future__ import annotations

from typing import Any

from .base import CHUNKING_REVISION, Chunker, SizedConfig, chunk_corpus, chunk_documents, make_chunk, prefix_for
# each module registers its chunker on import; this order is the order names are listed in (help, errors)
from .fixed import FixedChunker, FixedChunkerConfig  # isort: skip
from .recursive import RecursiveChunker, RecursiveChunkerConfig  # isort: skip
from .markdown import MarkdownChunker, MarkdownChunkerConfig  # isort: skip
from .semantic import SemanticChunker, SemanticChunkerConfig  # isort: skip
from .small_to_big import SmallToBigChunker, SmallToBigChunkerConfig  # isort: skip
from .section import SectionChunker, SectionChunkerConfig  # isort: skip
from .document import DocumentChunker, DocumentChunkerConfig  # isort: skip
from .tokens import get_tokenizer

__all__ = [
    "CHUNKERS",
    "CHUNKING_REVISION",
    "Chunker",
    "DocumentChunker",
    "DocumentChunkerConfig",
    "FixedChunker",
    "FixedChunkerConfig",
    "MarkdownChunker",
    "MarkdownChunkerConfig",
    "RecursiveChunker",
    "RecursiveChunkerConfig",
    "SemanticChunker",
    "SemanticChunkerConfig",
    "SizedConfig",
    "SmallToBigChunker",
    "SmallToBigChunkerConfig",
    "get_tokenizer",
    "SectionChunker",
    "SectionChunkerConfig",
    "chunk_corpus",
    "chunk_documents",
    "make_chunk",
    "make_chunker",
    "prefix_for",
]

from ..registry import CHUNKERS  # noqa: E402 - each chunker module registers itself


def make_chunker(name: str, **options: Any) -> Chunker:
    """Build a chunker by name; options are validated by its config class."""
    return CHUNKERS.build(name, options=options)
