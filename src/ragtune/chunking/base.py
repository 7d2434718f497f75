"""The chunker protocol and the helpers every strategy uses to make chunks."""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Protocol, runtime_checkable

from ..config import Config, Opt, check_range
from ..corpus.corpus import Corpus
from ..errors import ConfigError
from ..types import Chunk, Document
from .tokens import TokenSpans

__all__ = ["Chunker", "SizedConfig", "make_chunk", "chunk_corpus", "chunk_documents", "prefix_for", "trim_span", "windows",
           "apply_overlap"]


@runtime_checkable
class Chunker(Protocol):
    name: str

    def chunk(self, document: Document) -> list[Chunk]: ...


@dataclass(frozen=True)
class SizedConfig(Config):
    """Options shared by the size-bounded strategies; sizes are in tokens."""

    size: Annotated[int, Opt("chunk size in tokens")] = 256
    overlap: Annotated[int | None, Opt(
        "tokens shared by neighbouring chunks (default: an eighth of the size for fixed and recursive, 0 for the "
        "others)")] = None
    prefix: Annotated[bool, Opt("start every chunk with 'Title > Heading path'")] = False
    tokenizer: Annotated[str, Opt(
        "what a token is for sizes: regex (words and punctuation) or an embedder's tokenizer (default: the "
        "embedder's when the retriever embeds, as hybrid and dense do; regex otherwise)")] = "regex"

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_range(owner, "size", self.size, lo=1, integer=True)
        if self.overlap is None:
            object.__setattr__(self, "overlap", self.size // 8)
        check_range(owner, "overlap", self.overlap, lo=0, integer=True)
        if self.overlap >= self.size:
            raise ConfigError(f"{owner}: overlap={self.overlap} must be smaller than size={self.size}")
        if not isinstance(self.prefix, bool):
            raise ConfigError(f"{owner}: prefix must be true or false, got {self.prefix!r}")
        if not isinstance(self.tokenizer, str):
            raise ConfigError(f"{owner}: tokenizer must be a name or path, got {self.tokenizer!r}")


def chunk_id(doc_id: str, start: int, end: int, text: str) -> str:
    h = hashlib.sha1(f"{doc_id}\x00{start}\x00{end}\x00".encode() + text.encode("utf-8"))
    return h.hexdigest()[:16]


def prefix_for(document: Document, heading_path: tuple[str, ...]) -> str:
    """``"Title > Heading > Subheading"`` (a leading heading equal to the title is not repeated)."""
    parts = list(heading_path)
    if parts and document.title and parts[0] == document.title:
        parts = parts[1:]
    return " > ".join(p for p in (document.title, *parts) if p)


_STARTS: tuple[tuple[object, ...], list[int]] = ((), [])


def _section_starts(sections: tuple) -> list[int]:
    """The start of every section, computed once per document rather than once per chunk (50,000 headings
    made that quadratic: 96 s for one file)."""
    global _STARTS
    cached = _STARTS  # one read: another thread may replace it
    if cached[0] is not sections:
        cached = (sections, [s.start for s in sections])
        _STARTS = cached
    return cached[1]


def make_chunk(document: Document, start: int, end: int, *, prefix: bool = False, parent_id: str | None = None,
               tokens: int | None = None, lead: str = "", tail: str = "") -> Chunk:
    """A chunk for ``document.text[start:end]`` with its heading path and anchors.

    ``lead``/``tail`` are context added to the indexed text only (a repeated
    table header, a reopened code fence); ``text`` and the span stay the source's.
    """
    text = document.text[start:end]
    sections = document.sections
    anchors: tuple[str, ...] = ()
    heading_path: tuple[str, ...] = ()
    if sections:
        starts = _section_starts(sections)
        stop = max(end, start + 1)
        i = bisect.bisect_right(starts, start) - 1  # section whose own span holds `start`
        j = bisect.bisect_left(starts, stop)
        anchors = tuple(s.anchor for s in sections[max(i, 0):j] if s.own_end > start)
        if i >= 0:
            heading_path = sections[i].heading_path
    embed_text = f"{lead}{text}{tail}"
    if prefix:
        p = prefix_for(document, heading_path)
        if p:
            embed_text = f"{p}\n\n{embed_text}"
    metadata = document.metadata
    if document.locations:  # a converted format: where in the source the chunk is (a page, a line, an element)
        metadata = {**metadata, "location": document.location(start, end)}
    return Chunk(
        id=chunk_id(document.id, start, end, text), doc_id=document.id, text=text, start=start, end=end,
        embed_text=embed_text, heading_path=heading_path, anchors=anchors, parent_id=parent_id,
        metadata=metadata, tokens=tokens,
    )


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` to exclude leading and trailing whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def windows(ts: TokenSpans, start: int, end: int, size: int, overlap: int = 0) -> list[tuple[int, int]]:
    """Cut ``[start, end)`` into windows of at most ``size`` tokens, consecutive
    windows sharing ``overlap`` tokens. Windows start at token starts and run
    to the next window's first token, so no character is lost."""
    a = ts.index_at(start)
    n = ts.index_at(end)
    if a >= n:
        return [(start, end)]
    step = size - overlap
    out = []
    while True:
        b = min(a + size, n)
        s = start if not out else int(ts.starts[a])
        e = end if b >= n else int(ts.starts[b])
        out.append((s, e))
        if b >= n:
            return out
        a += step


def apply_overlap(ts: TokenSpans, pieces: list[tuple[int, int]], overlap: int) -> list[tuple[int, int]]:
    """Extend each piece after the first back by ``overlap`` tokens (never past the previous piece's start)."""
    if overlap <= 0 or len(pieces) < 2:
        return pieces
    out = [pieces[0]]
    for (ps, _), (s, e) in zip(pieces, pieces[1:]):
        i = ts.index_at(s)
        lo = ts.index_at(ps)
        j = max(i - overlap, lo)
        out.append((min(s, int(ts.starts[j])) if j < len(ts) else s, e))
    return out


def emit(document: Document, spans: Iterable[tuple[int, int]], ts: TokenSpans, *, prefix: bool,
         parent_id: str | None = None) -> list[Chunk]:
    """Trim each span, drop empty ones, and make chunks with their token counts."""
    out = []
    text = document.text
    for s, e in spans:
        s, e = trim_span(text, s, e)
        if s < e:
            out.append(make_chunk(document, s, e, prefix=prefix, parent_id=parent_id, tokens=ts.count(s, e)))
    return out


def chunk_corpus(corpus: Corpus | Iterable[Document], chunker: Chunker) -> list[Chunk]:
    """Chunk every document, in corpus order (for small-to-big: the children)."""
    out: list[Chunk] = []
    for doc in corpus:
        out.extend(chunker.chunk(doc))
    return out


def chunk_documents(docs: Iterable[Document], chunker: Chunker) -> tuple[list[Chunk], list[Chunk]]:
    """(chunks to index, parents to return): parents are empty except for small-to-big chunkers."""
    chunks: list[Chunk] = []
    parents: list[Chunk] = []
    with_parents = getattr(chunker, "chunk_with_parents", None)
    for doc in docs:
        if with_parents is not None:
            ps, cs = with_parents(doc)
            parents.extend(ps)
            chunks.extend(cs)
        else:
            chunks.extend(chunker.chunk(doc))
    return chunks, parents
