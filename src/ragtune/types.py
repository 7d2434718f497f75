"""Core data types: documents, sections, chunks and rankings.

All are frozen dataclasses. Character spans are ``[start, end)`` offsets into
``Document.text``; a chunk's ``text`` is always ``document.text[start:end]``.
For a document loaded from a file, ``Document.text`` has the length of the
file's text and differs from it only where front matter was blanked out, so
spans are offsets into the source file as well (see :class:`Document`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

__all__ = ["Section", "Document", "Chunk", "Hit", "Ranking"]


@dataclass(frozen=True, slots=True)
class Section:
    """A heading and the text under it.

    ``start``/``end`` span the section *including* its subsections (up to the
    next heading of the same or a higher level); ``own_end`` stops at the next
    heading of any level.
    """

    doc_id: str
    id: str
    title: str
    level: int
    heading_path: tuple[str, ...]
    parent: str | None  # anchor of the enclosing section, None at top level
    start: int
    end: int
    own_end: int
    explicit_id: str | None = None  # the id written in the heading (``{#id}``), before de-duplication
    aliases: tuple[str, ...] = ()  # other ids of the section (a reStructuredText label): anchors that resolve here

    @property
    def anchor(self) -> str:
        return f"{self.doc_id}#{self.id}"


@dataclass(frozen=True, slots=True)
class Document:
    """One source document.

    ``text`` is what gets indexed. For a markdown file it is the file's text
    with its YAML front matter blanked out (each character of the block but
    line endings replaced by a space), so every span ``[start, end)`` into
    ``text`` is also a span into the file: ``source_span`` opens and
    highlights the right characters, and line numbers match. The file's text
    here is its bytes decoded as UTF-8 with a leading byte-order mark dropped
    and line endings kept (``open(path, encoding="utf-8-sig", newline="")``).

    ``text_offset`` is added to a span to get file offsets; it is 0 for every
    document ragtune loads now, and non-zero only in indexes built by
    versions that cut the front matter off instead of blanking it.

    ``format`` names the file format the document was loaded from (``markdown``, ``text``, ``html``, ``pdf``,
    ``docx``, ``rst``, ``ipynb``; None for a document made in memory or read from a BEIR file). A document of a
    format other than markdown or text has as ``text`` what its loader extracted, written as markdown; spans are
    offsets into that text, and ``locations`` maps them back to the source: ``(offset, {"page": 3})`` says the
    text from ``offset`` on comes from page 3 (or ``{"line": 40}``, ``{"element_id": "install"}``). See
    :meth:`location`.
    """

    id: str
    title: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    sections: tuple[Section, ...] = ()
    source: str | None = None
    text_offset: int = 0
    format: str | None = None
    locations: tuple[tuple[int, Mapping[str, Any]], ...] = ()

    def location(self, start: int, end: int | None = None) -> dict[str, Any]:
        """Where ``[start, end)`` is in the source: the location of its start, and ``{key}_end`` for each value
        the end's location differs in (``{"page": 3, "page_end": 4}``). A markdown or text file (whose text is
        the file's) gives the 1-based ``line`` (and ``line_end``); a document made in memory, nothing."""
        if not self.locations:
            if self.format not in ("markdown", "text"):
                return {}
            out: dict[str, Any] = {"line": self.text.count("\n", 0, start) + 1}
            if end is not None and end > start:
                last = self.text.count("\n", start, max(start, end - 1)) + out["line"]
                if last != out["line"]:
                    out["line_end"] = last
            return out
        import bisect

        offsets = [at for at, _ in self.locations]
        i = bisect.bisect_right(offsets, start) - 1
        out = dict(self.locations[i][1]) if i >= 0 else {}
        if end is not None and end > start:
            j = bisect.bisect_right(offsets, end - 1) - 1
            if j > i >= -1 and j >= 0:
                for k, v in self.locations[j][1].items():
                    if out.get(k) != v:
                        out[f"{k}_end"] = v
        return out

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The span ``[start, end)`` of ``text`` as offsets into the source file."""
        return start + self.text_offset, end + self.text_offset

    def section_at(self, pos: int) -> Section | None:
        """The most specific section containing character ``pos``."""
        best = None
        for s in self.sections:
            if s.start <= pos < s.end and (best is None or s.level > best.level):
                best = s
        return best


@dataclass(frozen=True, slots=True)
class Chunk:
    """A span of a document that is indexed and retrieved as one unit."""

    id: str
    doc_id: str
    text: str
    start: int
    end: int
    embed_text: str
    heading_path: tuple[str, ...] = ()
    anchors: tuple[str, ...] = ()  # section anchors the span overlaps, most specific first
    parent_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    tokens: int | None = None  # size in the chunker's tokens, when it counted them

    @property
    def anchor(self) -> str:
        """The anchor to show for this chunk: its first section, else its document."""
        return self.anchors[0] if self.anchors else self.doc_id

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "doc_id": self.doc_id,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "embed_text": self.embed_text,
            "heading_path": list(self.heading_path),
            "anchors": list(self.anchors),
            "parent_id": self.parent_id,
            "tokens": self.tokens,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Chunk":
        return cls(
            id=d["id"],
            doc_id=d["doc_id"],
            text=d["text"],
            start=int(d["start"]),
            end=int(d["end"]),
            embed_text=d.get("embed_text", d["text"]),
            heading_path=tuple(d.get("heading_path", ())),
            anchors=tuple(d.get("anchors", ())),
            parent_id=d.get("parent_id"),
            metadata=dict(d.get("metadata", {})),
            tokens=d.get("tokens"),
        )


@dataclass(frozen=True, slots=True)
class Hit:
    chunk: Chunk
    score: float


@dataclass(frozen=True, slots=True)
class Ranking:
    """What a retriever returns for one query, best first.

    ``timings`` holds seconds spent per stage (``"bm25"``, ...). ``searches``: when the retriever searched more
    than once (an agent's tool calls, a second hop along the corpus's links, a conversation's rewritten query),
    each search in the order it was made, its own query and hits; ``hits`` is then what reached the model, the
    searches' hits in that order without repeats (:meth:`from_searches`). Empty for one search.
    """

    query: str
    hits: tuple[Hit, ...]
    timings: Mapping[str, float] = field(default_factory=dict)
    searches: tuple[Ranking, ...] = ()

    def __len__(self) -> int:
        return len(self.hits)

    @classmethod
    def from_searches(cls, query: str, searches: Sequence[Ranking], timings: Mapping[str, float] | None = None
                      ) -> Ranking:
        """The ranking of a question searched several times: every search's hits in the order they were made, a
        chunk seen before left out (the model reads it once), and the searches kept. ``timings`` default to the
        sum of the searches' per stage."""
        seen: set[str] = set()
        hits = []
        for s in searches:
            for h in s.hits:
                if h.chunk.id not in seen:
                    seen.add(h.chunk.id)
                    hits.append(h)
        if timings is None:
            total: dict[str, float] = {}
            for s in searches:
                for k, v in s.timings.items():
                    total[k] = total.get(k, 0.0) + v
            timings = total
        return cls(query, tuple(hits), dict(timings), tuple(searches))

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "hits": [
                {
                    "chunk_id": h.chunk.id,
                    "doc_id": h.chunk.doc_id,
                    "anchor": h.chunk.anchor,
                    "score": h.score,
                    "start": h.chunk.start,
                    "end": h.chunk.end,
                    **({"location": dict(h.chunk.metadata["location"])} if "location" in h.chunk.metadata else {}),
                }
                for h in self.hits
            ],
            "timings_ms": {k: v * 1000.0 for k, v in self.timings.items()},
            **({"searches": [s.to_dict() for s in self.searches]} if self.searches else {}),
        }
