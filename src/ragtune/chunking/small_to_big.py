"""Small-to-big: search small children, return their parents.

Parents come from the markdown or recursive chunker at ``parent_size``, or
are whole sections (``parent="section"``, one per heading: the section
chunker's chunks); children are recursive pieces of ``size`` tokens cut inside
each parent (of a section: pieces cut at block boundaries so that each
child, its prefix and two special tokens included, fits ``size`` tokens: an
embedder window), and carry ``parent_id``. ``chunk`` returns the children (what gets indexed);
``chunk_with_parents`` returns both. Retrieval through
:class:`ragtune.retrieve.ParentRetriever` ranks parents by their best child.
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass
from typing import Annotated

from ..config import Opt, check_choice, check_range
from ..errors import ConfigError
from ..types import Chunk, Document
from .base import Prefixes, SizedConfig, emit
from .markdown import MarkdownChunker, MarkdownChunkerConfig
from .recursive import RecursiveChunker, RecursiveChunkerConfig, fit_recursive, split_recursive
from .tokens import TokenSpans, get_tokenizer

__all__ = ["SmallToBigChunkerConfig", "SmallToBigChunker"]


@dataclass(frozen=True)
class SmallToBigChunkerConfig(SizedConfig):
    """``size``/``overlap`` are the children's; ``parent_size`` and ``parent`` shape the parents."""

    size: int = 128
    overlap: int = 0
    parent_size: Annotated[int, Opt("parent chunk size in tokens (what is returned)")] = 2048
    parent: Annotated[str, Opt("chunker that makes the parents: markdown, recursive, or section (whole sections; "
                               "parent_size does not apply)")] = "markdown"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range("SmallToBigChunkerConfig", "parent_size", self.parent_size, lo=1, integer=True)
        check_choice("SmallToBigChunkerConfig", "parent", self.parent, ("markdown", "recursive", "section"))
        if self.parent == "section" and self.overlap:
            raise ConfigError("SmallToBigChunkerConfig: overlap does not apply to parent=section (its pieces are cut "
                              "at block boundaries); leave it out")
        if self.parent_size <= self.size and self.parent != "section":
            raise ConfigError(f"SmallToBigChunkerConfig: parent_size={self.parent_size} must be larger than "
                              f"the child size={self.size}")


class SmallToBigChunker:
    name = "small_to_big"

    def __init__(self, config: SmallToBigChunkerConfig | None = None):
        self.config = config or SmallToBigChunkerConfig()
        cfg = self.config
        if cfg.parent == "section":
            from .section import SectionChunker, SectionChunkerConfig  # here: the registry lists section after us

            self._parent = SectionChunker(SectionChunkerConfig(prefix=cfg.prefix, max_tokens=cfg.size,
                                                               tokenizer=cfg.tokenizer))
        elif cfg.parent == "markdown":
            self._parent = MarkdownChunker(MarkdownChunkerConfig(size=cfg.parent_size, overlap=0, prefix=cfg.prefix,
                                                                 tokenizer=cfg.tokenizer))
        else:
            self._parent = RecursiveChunker(RecursiveChunkerConfig(size=cfg.parent_size, overlap=0, prefix=cfg.prefix,
                                                                   tokenizer=cfg.tokenizer))

    def chunk_with_parents(self, document: Document) -> tuple[list[Chunk], list[Chunk]]:
        cfg = self.config
        if cfg.parent == "section":
            return self._sections(document)
        parents = self._parent.chunk(document)
        tok = get_tokenizer(cfg.tokenizer)
        ts = TokenSpans(document.text, tok)
        pre = Prefixes(document, ts, prefix=cfg.prefix, size=cfg.size, tokenizer=tok)
        children: list[Chunk] = []
        for p in parents:
            if ts.count(p.start, p.end) <= pre.budget(p.start):
                pieces = [(p.start, p.end)]
            else:
                pieces = fit_recursive(ts, split_recursive(ts, p.start, p.end, cfg.size - cfg.overlap), pre,
                                       cfg.overlap)
            children.extend(emit(document, pieces, ts, prefix=cfg.prefix, parent_id=p.id, prefixes=pre))
        return parents, children

    def _sections(self, document: Document) -> tuple[list[Chunk], list[Chunk]]:
        """Whole sections as parents; their window-sized pieces (the section chunker's, cut to ``size``) as
        children, each pointing at the section it was cut from."""
        whole = dataclasses.replace(self._parent.config, max_tokens=0)
        parents = type(self._parent)(whole).chunk(document)
        starts = [p.start for p in parents]
        children = []
        for c in self._parent.chunk(document):
            p = parents[bisect.bisect_right(starts, c.start) - 1]
            children.append(dataclasses.replace(c, parent_id=p.id))
        return parents, children

    def chunk(self, document: Document) -> list[Chunk]:
        return self.chunk_with_parents(document)[1]


from ..registry import CHUNKERS  # noqa: E402 - registered where it is defined

CHUNKERS.register("small_to_big", SmallToBigChunkerConfig, SmallToBigChunker, summary="search small children, return their parent", replace=True)
