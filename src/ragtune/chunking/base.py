"""The chunker protocol and the helper every strategy uses to make chunks."""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from ..corpus.corpus import Corpus
from ..types import Chunk, Document

__all__ = ["Chunker", "make_chunk", "chunk_corpus", "prefix_for"]


@runtime_checkable
class Chunker(Protocol):
    name: str

    def chunk(self, document: Document) -> list[Chunk]: ...


def chunk_id(doc_id: str, start: int, end: int, text: str) -> str:
    h = hashlib.sha1(f"{doc_id}\x00{start}\x00{end}\x00".encode() + text.encode("utf-8"))
    return h.hexdigest()[:16]


def prefix_for(document: Document, heading_path: tuple[str, ...]) -> str:
    """``"Title > Heading > Subheading"`` (a leading heading equal to the title is not repeated)."""
    parts = list(heading_path)
    if parts and document.title and parts[0] == document.title:
        parts = parts[1:]
    return " > ".join(p for p in (document.title, *parts) if p)


def make_chunk(document: Document, start: int, end: int, *, prefix: bool = False,
               parent_id: str | None = None) -> Chunk:
    """A chunk for ``document.text[start:end]`` with its heading path and anchors."""
    text = document.text[start:end]
    sections = document.sections
    anchors: tuple[str, ...] = ()
    heading_path: tuple[str, ...] = ()
    if sections:
        starts = [s.start for s in sections]
        # own spans partition the text after the first heading: find those overlapping [start, end)
        i = bisect.bisect_right(starts, start) - 1
        first = max(i, 0)
        j = bisect.bisect_left(starts, max(end, start + 1))
        overlapping = [s for s in sections[first:j] if s.start < max(end, start + 1) and s.own_end > start]
        anchors = tuple(s.anchor for s in overlapping)
        if i >= 0:
            heading_path = sections[i].heading_path
    embed_text = text
    if prefix:
        p = prefix_for(document, heading_path)
        if p:
            embed_text = f"{p}\n\n{text}"
    return Chunk(
        id=chunk_id(document.id, start, end, text), doc_id=document.id, text=text, start=start, end=end,
        embed_text=embed_text, heading_path=heading_path, anchors=anchors, parent_id=parent_id,
        metadata=document.metadata,
    )


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` to exclude leading and trailing whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def chunk_corpus(corpus: Corpus | Iterable[Document], chunker: Chunker) -> list[Chunk]:
    """Chunk every document, in corpus order."""
    out: list[Chunk] = []
    for doc in corpus:
        out.extend(chunker.chunk(doc))
    return out
