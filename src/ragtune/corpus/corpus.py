"""The Corpus: documents plus anchor resolution."""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import CorpusError, UnknownAnchorError
from ..types import Document, Section
from .formats.builder import is_auto_id
from .metadata import normalise_metadata

__all__ = ["Corpus", "AnchorSpan"]

CorpusKind = Literal["markdown", "documents", "beir", "text", "memory"]  # documents: HTML, PDF, ... or mixed


@dataclass(frozen=True, slots=True)
class AnchorSpan:
    """Where an anchor points: a document, a section span within it, or a page of it (``doc.pdf#page=3``)."""

    anchor: str
    doc_id: str
    start: int
    end: int
    section: Section | None = None
    page: int | None = None

    @property
    def is_document(self) -> bool:
        """The anchor names a whole document (any chunk of it covers the anchor)."""
        return self.section is None and self.page is None


def _plain_metadata(doc: Document) -> Document:
    """``doc`` with its metadata as bounded JSON with string keys (the one place every corpus goes through)."""
    if not doc.metadata and type(doc.metadata) is dict:
        return doc
    meta = normalise_metadata(doc.metadata, source=doc.source or doc.id)
    return doc if meta is doc.metadata else dataclasses.replace(doc, metadata=meta)


class Corpus:
    """An ordered, immutable collection of documents with unique ids.

    Every document's metadata is made plain here (:func:`~ragtune.corpus.metadata.normalise_metadata`): string
    keys, JSON values, bounded size. ``skipped`` lists what a folder loader left out, as (path, reason).
    """

    def __init__(self, documents: Iterable[Document], *, kind: CorpusKind = "memory", root: str | None = None,
                 skipped: Iterable[tuple[str, str]] = ()):
        docs = tuple(_plain_metadata(d) for d in documents)
        by_id: dict[str, Document] = {}
        for d in docs:
            if d.id in by_id:
                raise CorpusError(f"duplicate document id {d.id!r}; document ids must be unique")
            by_id[d.id] = d
        self.documents = docs
        self.kind = kind
        self.root = root
        self.skipped: tuple[tuple[str, str], ...] = tuple(skipped)
        self._by_id = by_id
        self._sections: dict[str, Section] = {s.anchor: s for d in docs for s in d.sections}
        self._n_sections = len(self._sections)
        for d in docs:  # other ids of a section (a reStructuredText label) resolve to it too, never over an id
            for s in d.sections:
                for a in s.aliases:
                    self._sections.setdefault(f"{d.id}#{a}", s)
        self._fingerprint: str | None = None
        self._starts: dict[str, list[int]] = {}
        self._by_stem: dict[str, list[str]] | None = None

    def __len__(self) -> int:
        return len(self.documents)

    def __iter__(self) -> Iterator[Document]:
        return iter(self.documents)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._by_id

    def __getitem__(self, doc_id: str) -> Document:
        try:
            return self._by_id[doc_id]
        except KeyError:
            raise UnknownAnchorError(f"no document {doc_id!r} in the corpus") from None

    @property
    def n_sections(self) -> int:
        return self._n_sections

    @property
    def fingerprint(self) -> str:
        """sha256 over every document's id, title, text and metadata, in order."""
        if self._fingerprint is None:
            import json

            h = hashlib.sha256()
            for d in self.documents:
                meta = json.dumps(dict(d.metadata), sort_keys=True, default=str)
                for part in (d.id, d.title, d.text, meta):
                    b = part.encode("utf-8")
                    h.update(len(b).to_bytes(8, "little"))
                    h.update(b)
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def section_at(self, doc_id: str, pos: int) -> str:
        """The anchor of the section whose own text (heading to the next heading) holds character ``pos`` of
        ``doc_id``; the document id before its first heading or for a document unknown here."""
        import bisect

        doc = self._by_id.get(doc_id)
        if doc is None or not doc.sections:
            return doc_id
        starts = self._starts.get(doc_id)
        if starts is None:
            starts = self._starts[doc_id] = [s.start for s in doc.sections]
        i = bisect.bisect_right(starts, pos) - 1
        if i < 0:
            return doc_id
        sec = doc.sections[i]
        return sec.anchor if pos < max(sec.own_end, sec.start + 1) else doc_id

    def anchors(self) -> list[str]:
        """Every anchor: each document id, then each section anchor, in corpus order."""
        out: list[str] = []
        for d in self.documents:
            out.append(d.id)
            out.extend(s.anchor for s in d.sections)
        return out

    def anchor_table(self, doc: str | None = None) -> list[dict[str, Any]]:
        """Every anchor (of document ``doc`` only, when given) with its title and heading path."""
        rows: list[dict[str, Any]] = []
        for d in [self[doc]] if doc else self.documents:
            rows.append({"anchor": d.id, "title": d.title, "heading_path": []})
            rows.extend({"anchor": s.anchor, "title": s.title, "heading_path": list(s.heading_path),
                         **({"aliases": [f"{d.id}#{a}" for a in s.aliases]} if s.aliases else {})}
                        for s in d.sections)
        return rows

    def describe(self, doc_id: str) -> dict[str, Any]:
        """One document as its loader extracted it: format, title, source, metadata, the text, and each section
        with its anchor, aliases, span and source location (``ragtune corpus show``)."""
        d = self[doc_id]
        return {"id": d.id, "title": d.title, "format": d.format, "source": d.source, "metadata": dict(d.metadata),
                "characters": len(d.text), "text": d.text,
                "sections": [{"anchor": s.anchor, "level": s.level, "title": s.title, "aliases": list(s.aliases),
                              "start": s.start, "end": s.end, "location": d.location(s.start, s.own_end)}
                             for s in d.sections]}

    def has_anchor(self, anchor: str) -> bool:
        try:
            return self._find(anchor) is not None
        except UnknownAnchorError:  # ambiguous without its extension
            return False

    def _stems(self) -> dict[str, list[str]]:
        """Document id without its file extension -> the ids it stands for (files only)."""
        if self._by_stem is None:
            by_stem: dict[str, list[str]] = {}
            for d in self.documents:
                head, dot, ext = d.id.rpartition(".")
                if d.format is not None and dot and head and "/" not in ext and "#" not in d.id:
                    by_stem.setdefault(head, []).append(d.id)
            self._by_stem = by_stem
        return self._by_stem

    def _find(self, anchor: str) -> AnchorSpan | None:
        """The span ``anchor`` names, trying it as written, then with its document's extension left out
        (``controlflow#if-statements`` names ``controlflow.rst``, ``.html`` or ``.pdf``, whichever the corpus
        holds: one golden set serves every format of a document). Two documents of one stem are an error."""
        span = self._exact(anchor)
        if span is not None or not self.documents:
            return span
        doc_part, sep, frag = anchor.partition("#")
        ids = self._stems().get(doc_part, [])
        if len(ids) > 1:
            raise UnknownAnchorError(f"anchor {anchor!r} leaves out the extension of a document the corpus holds "
                                     f"in {len(ids)} formats ({', '.join(ids)}); write the one meant")
        if not ids:
            return None
        found = self._exact(ids[0] + sep + frag)
        return None if found is None else dataclasses.replace(found, anchor=anchor)

    def _exact(self, anchor: str) -> AnchorSpan | None:
        doc = self._by_id.get(anchor)
        if doc is not None:
            return AnchorSpan(anchor, doc.id, 0, len(doc.text))
        section = self._sections.get(anchor)
        if section is not None:
            return AnchorSpan(anchor, section.doc_id, section.start, section.end, section)
        return self._page(anchor)

    def _page(self, anchor: str) -> AnchorSpan | None:
        """``doc.pdf#page=3``: the span of page 3 of a document whose loader recorded pages (a PDF)."""
        doc_id, sep, frag = anchor.rpartition("#")
        if not sep or not frag.startswith("page=") or not frag[5:].isdigit():
            return None
        doc = self._by_id.get(doc_id)
        if doc is None or not doc.locations:
            return None
        n = int(frag[5:])
        starts = [at for at, loc in doc.locations if loc.get("page") == n]
        if not starts:
            return None
        later = [at for at, loc in doc.locations if at > starts[0] and loc.get("page") != n]
        return AnchorSpan(anchor, doc_id, starts[0], later[0] if later else len(doc.text), page=n)

    def readable_anchor(self, anchor: str) -> str | None:
        """The section's own anchor when ``anchor`` names it by an id a tool made up (``quickstart.rst#id5``, an
        alias of ``quickstart.rst#sessions``: see :func:`~ragtune.corpus.formats.builder.is_auto_id`), written with
        the document part as given; None for any other anchor, and for one the corpus does not hold."""
        doc_part, sep, frag = anchor.rpartition("#")
        if not sep or not is_auto_id(frag):
            return None
        try:
            span = self._find(anchor)
        except UnknownAnchorError:
            return None
        if span is None or span.section is None or span.section.id == frag or frag not in span.section.aliases:
            return None
        return f"{doc_part}#{span.section.id}"

    def resolve(self, anchor: str) -> AnchorSpan:
        """Resolve ``doc_id`` or ``doc_id#section`` to a span.

        A document id may itself contain ``#`` (SQuAD paragraph ids do), so a
        whole-string document match wins over splitting at ``#``.
        """
        span = self._find(anchor)
        if span is not None:
            return span
        hint = self.suggest(anchor)
        more = f"; did you mean: {', '.join(hint)}?" if hint else ""
        raise UnknownAnchorError(f"unknown anchor {anchor!r}{more}")

    def suggest(self, anchor: str, n: int = 3) -> list[str]:
        """The existing anchors closest to ``anchor`` (same document first)."""
        doc_id, sep, frag = anchor.rpartition("#")
        if sep and doc_id in self._by_id:
            doc = self._by_id[doc_id]
            by_frag = {s.id: s.anchor for s in doc.sections}
            close = difflib.get_close_matches(frag, list(by_frag), n=n, cutoff=0.4)
            if close:
                return [by_frag[c] for c in close]
        return difflib.get_close_matches(anchor, self.anchors(), n=n, cutoff=0.5)
