"""Chunking strategies: one module each, one protocol (``chunk(document) -> list[Chunk]``)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
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

# name -> (config class, chunker class)
CHUNKERS: dict[str, tuple[type, type]] = {
    "fixed": (FixedChunkerConfig, FixedChunker),
    "recursive": (RecursiveChunkerConfig, RecursiveChunker),
    "markdown": (MarkdownChunkerConfig, MarkdownChunker),
    "semantic": (SemanticChunkerConfig, SemanticChunker),
    "small_to_big": (SmallToBigChunkerConfig, SmallToBigChunker),
    "section": (SectionChunkerConfig, SectionChunker),
    "document": (DocumentChunkerConfig, DocumentChunker),
}


def make_chunker(name: str, **options: Any) -> Chunker:
    """Build a chunker by name; options are validated by its config class."""
    if name not in CHUNKERS:
        raise ConfigError(f"unknown chunker {name!r}; choose one of: {', '.join(CHUNKERS)}")
    config_cls, chunker_cls = CHUNKERS[name]
    return chunker_cls(config_cls.from_dict(options))
