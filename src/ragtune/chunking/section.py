"""One chunk per section: from a heading to the next heading of any level."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from ..config import Config, Opt
from ..errors import ConfigError
from ..types import Chunk, Document
from .base import make_chunk, trim_span
from .tokens import RegexTokenizer

__all__ = ["SectionChunkerConfig", "SectionChunker"]


@dataclass(frozen=True)
class SectionChunkerConfig(Config):
    prefix: Annotated[bool, Opt("start every chunk with 'Title > Heading path'")] = False

    def __post_init__(self) -> None:
        if not isinstance(self.prefix, bool):
            raise ConfigError(f"SectionChunkerConfig: prefix must be true or false, got {self.prefix!r}")


class SectionChunker:
    """Each section's own text is a chunk; text before the first heading is one too.

    A document without headings is a single chunk.
    """

    name = "section"

    def __init__(self, config: SectionChunkerConfig | None = None):
        self.config = config or SectionChunkerConfig()

    def chunk(self, document: Document) -> list[Chunk]:
        text = document.text
        bounds: list[tuple[int, int]] = []
        if not document.sections:
            bounds.append((0, len(text)))
        else:
            bounds.append((0, document.sections[0].start))
            bounds.extend((s.start, s.own_end) for s in document.sections)
        chunks = []
        for a, b in bounds:
            a, b = trim_span(text, a, b)
            if a < b:
                tokens = len(RegexTokenizer().spans(text[a:b]))
                chunks.append(make_chunk(document, a, b, prefix=self.config.prefix, tokens=tokens))
        return chunks


from ..registry import CHUNKERS  # noqa: E402 - registered where it is defined

CHUNKERS.register("section", SectionChunkerConfig, SectionChunker, summary="one chunk per heading section", replace=True)
