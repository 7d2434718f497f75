"""One chunk per document (the BEIR convention)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from ..config import Config, Opt
from ..errors import ConfigError
from ..types import Chunk, Document
from .base import make_chunk, trim_span
from .tokens import RegexTokenizer

__all__ = ["DocumentChunkerConfig", "DocumentChunker"]


@dataclass(frozen=True)
class DocumentChunkerConfig(Config):
    prefix: Annotated[bool, Opt("start every chunk with 'Title > Heading path'")] = False

    def __post_init__(self) -> None:
        if not isinstance(self.prefix, bool):
            raise ConfigError(f"DocumentChunkerConfig: prefix must be true or false, got {self.prefix!r}")


class DocumentChunker:
    """The whole document is one chunk. With ``prefix``, its title is indexed with it."""

    name = "document"

    def __init__(self, config: DocumentChunkerConfig | None = None):
        self.config = config or DocumentChunkerConfig()

    def chunk(self, document: Document) -> list[Chunk]:
        a, b = trim_span(document.text, 0, len(document.text))
        if a == b and not (self.config.prefix and document.title):
            return []
        tokens = len(RegexTokenizer().spans(document.text[a:b]))
        return [make_chunk(document, a, b, prefix=self.config.prefix, tokens=tokens)]


from ..registry import CHUNKERS  # noqa: E402 - registered where it is defined

CHUNKERS.register("document", DocumentChunkerConfig, DocumentChunker, summary="one chunk per document", replace=True)
