"""Chunking strategies: one module each, one protocol (``chunk(document) -> list[Chunk]``)."""

from __future__ import annotations

from typing import Any

from .base import Chunker, SizedConfig, chunk_corpus, chunk_documents, make_chunk, prefix_for
from .document import DocumentChunker, DocumentChunkerConfig
from .fixed import FixedChunker, FixedChunkerConfig
from .markdown import MarkdownChunker, MarkdownChunkerConfig
from .recursive import RecursiveChunker, RecursiveChunkerConfig
from .section import SectionChunker, SectionChunkerConfig
from .semantic import SemanticChunker, SemanticChunkerConfig
from .small_to_big import SmallToBigChunker, SmallToBigChunkerConfig
from .tokens import get_tokenizer

__all__ = [
    "CHUNKERS",
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

from ..registry import CHUNKERS

for _name, _config, _cls, _summary in (
    ("fixed", FixedChunkerConfig, FixedChunker, "token windows with overlap"),
    ("recursive", RecursiveChunkerConfig, RecursiveChunker, "split on headings, paragraphs, lines, sentences"),
    ("markdown", MarkdownChunkerConfig, MarkdownChunker, "heading-aware; tables and code blocks atomic"),
    ("semantic", SemanticChunkerConfig, SemanticChunker, "cut where neighbouring sentences diverge"),
    ("small_to_big", SmallToBigChunkerConfig, SmallToBigChunker, "search small children, return their parent"),
    ("section", SectionChunkerConfig, SectionChunker, "one chunk per heading section"),
    ("document", DocumentChunkerConfig, DocumentChunker, "one chunk per document"),
):
    if _name not in CHUNKERS._entries:
        CHUNKERS.register(_name, _config, _cls, summary=_summary, uses_embedder=_name == "semantic",
                          fixed=("overlap",) if _name == "semantic" else ())


def make_chunker(name: str, **options: Any) -> Chunker:
    """Build a chunker by name; options are validated by its config class."""
    return CHUNKERS.build(name, options=options)
