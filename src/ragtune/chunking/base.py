"""The chunker protocols (:mod:`ragtune.stages`, re-exported) and the helpers every strategy uses to make chunks."""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated

from ..config import Config, Opt, check_range
from ..corpus.corpus import Corpus
from ..corpus.headings import MAX_HEADING_CHARS, clip_heading
from ..errors import ConfigError
from ..stages import Chunker, ParentChunker
from ..types import Chunk, Document
from .tokens import Tokenizer, TokenSpans

__all__ = ["CHUNKING_REVISION", "Chunker", "ParentChunker", "SizedConfig", "Prefixes", "make_chunk", "chunk_corpus", "chunk_documents", "prefix_for", "trim_span",
           "windows", "apply_overlap", "refit", "Budget", "inside_word", "word_start"]


# Raised whenever one config starts to cut the same text differently, so that chunks cached on disk by an
# earlier build are not taken for this one's (2: a size counts the prefix; long headings clipped).
CHUNKING_REVISION = 2


@dataclass(frozen=True)
class SizedConfig(Config):
    """Options shared by the size-bounded strategies; sizes are in tokens."""

    size: Annotated[int, Opt("chunk size in tokens (with prefix: the prefix's tokens included)")] = 256
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


def _clipped(path: tuple[str, ...]) -> tuple[str, ...]:
    """``path`` with every heading longer than the bound clipped (:mod:`ragtune.corpus.headings`); the same
    tuple when none is, which is every path a loader of this version makes."""
    if all(len(h) <= MAX_HEADING_CHARS for h in path):
        return path
    return tuple(clip_heading(h) for h in path)


def prefix_for(document: Document, heading_path: tuple[str, ...]) -> str:
    """``"Title > Heading > Subheading"`` (a leading heading equal to the title is not repeated). Each part is
    clipped to :data:`~ragtune.corpus.headings.MAX_HEADING_CHARS` characters, so a prefix costs the same
    whatever the length of a heading: it is repeated in every chunk of its section."""
    title = clip_heading(document.title or "")
    parts = list(_clipped(heading_path))
    if parts and title and parts[0] == title:
        parts = parts[1:]
    return " > ".join(p for p in (title, *parts) if p)


PREFIX_SHARE = 2  # a prefix takes at most 1/PREFIX_SHARE of the size: every piece keeps at least half of it


class Prefixes:
    """Each chunk's prefix, and for a size that counts it, what it leaves of the size.

    With ``size``, a piece and its prefix together fit ``size`` tokens (counted with ``tokenizer``, the
    chunker's): a piece that starts at character ``pos`` may take :meth:`budget` ``(pos)`` tokens, the size
    less the tokens of the prefix it will carry (the heading path of the section holding its first token). A
    prefix longer than half the size is cut to half at a token boundary, ``…`` marking the cut. Without
    ``prefix`` the budget is the size everywhere and :meth:`text` is empty. Each distinct heading path is
    counted once per document.
    """

    def __init__(self, document: Document, ts: TokenSpans | None, *, prefix: bool, size: int | None = None,
                 tokenizer: Tokenizer | None = None):
        self.document = document
        self.prefix = prefix
        self.size = size
        self._ts = ts
        self._tok = tokenizer
        self._starts = _section_starts(document.sections) if document.sections else []
        self._seen: dict[tuple[str, ...], tuple[str, int]] = {}

    def _entry(self, heading_path: tuple[str, ...]) -> tuple[str, int]:
        got = self._seen.get(heading_path)
        if got is None:
            text = prefix_for(self.document, heading_path)
            n = 0
            if text and self.size is not None and self._tok is not None:
                spans = self._tok.spans(text)
                n = len(spans)
                cap = self.size // PREFIX_SHARE
                if n > cap:  # cut to the cap, the mark included
                    keep = max(cap - 1, 0)
                    text = (text[: int(spans[keep - 1][1])] + "\u2026") if keep else ""
                    n = len(self._tok.spans(text)) if text else 0
            got = (text, n)
            self._seen[heading_path] = got
        return got

    def heading_path_at(self, pos: int) -> tuple[str, ...]:
        i = bisect.bisect_right(self._starts, pos) - 1
        return self.document.sections[i].heading_path if i >= 0 else ()

    def text(self, heading_path: tuple[str, ...]) -> str:
        """The prefix of a chunk with this heading path ('' when the prefix is off)."""
        return self._entry(heading_path)[0] if self.prefix else ""

    def budget(self, pos: int) -> int:
        """Tokens left for a piece starting at ``pos`` (at its first token: a chunk is trimmed) once its
        prefix is counted; at least 1."""
        size = int(self.size or 0)
        if not self.prefix:
            return size
        ts = self._ts
        if ts is not None:
            i = ts.index_at(pos)
            if i < len(ts):
                pos = int(ts.starts[i])
        return max(size - self._entry(self.heading_path_at(pos))[1], 1)


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
               tokens: int | None = None, lead: str = "", tail: str = "", prefixes: Prefixes | None = None) -> Chunk:
    """A chunk for ``document.text[start:end]`` with its heading path and anchors.

    ``lead``/``tail`` are context added to the indexed text only (a repeated
    table header, a reopened code fence); ``text`` and the span stay the source's.
    ``prefixes``: where the prefix comes from when a size counts it (the same text the size was fitted to).
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
            heading_path = _clipped(sections[i].heading_path)
    embed_text = f"{lead}{text}{tail}"
    if prefix:
        p = prefixes.text(heading_path) if prefixes is not None else prefix_for(document, heading_path)
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


Budget = Callable[[int], int]  # the tokens a piece starting at a character offset may take (Prefixes.budget)


def inside_word(ts: TokenSpans, i: int) -> bool:
    """Whether token ``i`` continues a word (a sub-word piece such as ``##ization``): a cut there makes the
    two halves count more tokens alone than they did in the text."""
    if i <= 0 or i >= len(ts):
        return False
    at = int(ts.starts[i])
    return at == int(ts.ends[i - 1]) and ts.text[at - 1].isalnum() and ts.text[at].isalnum()


def word_start(ts: TokenSpans, i: int, lo: int) -> int:
    """The first token of the word token ``i`` is in; ``lo`` at the lowest (a word longer than that is cut)."""
    while i > lo and inside_word(ts, i):
        i -= 1
    return i


def windows(ts: TokenSpans, start: int, end: int, size: int, overlap: int = 0, *,
            budget: Budget | None = None) -> list[tuple[int, int]]:
    """Cut ``[start, end)`` into windows of at most ``size`` tokens (and at most ``budget(window start)``),
    consecutive windows sharing ``overlap`` tokens (fewer where a budget leaves no room for them). Windows
    start at token starts and run to the next window's first token, so no character is lost. With a budget
    (a prefix counted), windows also start and end between words where a word boundary is in reach, so that
    a window tokenized alone, as the embedder reads it, is no longer than its count here."""
    a = ts.index_at(start)
    n = ts.index_at(end)
    if a >= n:
        return [(start, end)]
    out = []
    while True:
        s = start if not out else int(ts.starts[a])
        room = size if budget is None else max(min(size, budget(s)), 1)
        b = min(a + room, n)
        if budget is not None and b < n:
            w = word_start(ts, b, a)
            b = w if w > a else b  # a word as long as the window: cut inside it
        e = end if b >= n else int(ts.starts[b])
        out.append((s, e))
        if b >= n:
            return out
        nxt = max(b - overlap, a + 1)
        a = word_start(ts, nxt, a + 1) if budget is not None else nxt


def apply_overlap(ts: TokenSpans, pieces: list[tuple[int, int]], overlap: int, *,
                  budget: Budget | None = None) -> list[tuple[int, int]]:
    """Extend each piece after the first back by ``overlap`` tokens (never past the previous piece's start,
    and with ``budget``, no further than the piece still fits the budget at its new start)."""
    if overlap <= 0 or len(pieces) < 2:
        return pieces
    out = [pieces[0]]
    for (ps, _), (s, e) in zip(pieces, pieces[1:]):
        i = ts.index_at(s)
        lo = ts.index_at(ps)
        j = max(i - overlap, lo)
        if budget is not None:  # at most `overlap` steps: forward to a word's start where the piece fits
            while j < i and j < len(ts) and (inside_word(ts, j)
                                             or ts.count(int(ts.starts[j]), e) > budget(int(ts.starts[j]))):
                j += 1
        out.append((min(s, int(ts.starts[j])) if j < len(ts) else s, e))
    return out


def refit(ts: TokenSpans, spans: Iterable[tuple[int, int]], budget: Budget,
          split: Callable[[int, int, int], list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """Each span longer than ``budget(its start)`` cut again with ``split(start, end, budget)``, until every
    piece fits or cannot be cut further; a span that fits is kept as it is. Linear: a span is only ever cut
    into smaller ones."""
    out: list[tuple[int, int]] = []
    todo = list(reversed(list(spans)))
    while todo:
        s, e = todo.pop()
        room = budget(s)
        if ts.count(s, e) <= room:
            out.append((s, e))
            continue
        sub = split(s, e, room)
        if len(sub) <= 1:
            out.extend(sub)
            continue
        todo.extend(reversed(sub))
    return out


def emit(document: Document, spans: Iterable[tuple[int, int]], ts: TokenSpans, *, prefix: bool,
         parent_id: str | None = None, prefixes: Prefixes | None = None) -> list[Chunk]:
    """Trim each span, drop empty ones, and make chunks with their token counts."""
    out = []
    text = document.text
    for s, e in spans:
        s, e = trim_span(text, s, e)
        if s < e:
            out.append(make_chunk(document, s, e, prefix=prefix, parent_id=parent_id, tokens=ts.count(s, e),
                                  prefixes=prefixes))
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
    with_parents = isinstance(chunker, ParentChunker)
    for doc in docs:
        if with_parents:
            ps, cs = chunker.chunk_with_parents(doc)
            parents.extend(ps)
            chunks.extend(cs)
        else:
            chunks.extend(chunker.chunk(doc))
    return chunks, parents
