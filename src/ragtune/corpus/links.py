"""The corpus's own cross-references, per section, read offline: where each document links to another part of the
corpus, resolved to corpus anchors (what the ``links`` strategy follows as a second search).

What is read, by the document's format:

- **markdown** (and documents made in memory, and notebooks, whose text keeps the markdown): inline links
  ``[text](other.md#section)``, reference links ``[text][ref]`` with their ``[ref]: target`` definition, and
  ``<a href="...">`` in the text; images and fenced code are left out. Positions are exact offsets of the text.
- **HTML**: ``<a href>`` in the page's main content, found as the html loader finds it (navigation, sidebars and
  footers are not read, so a site's menu does not link every page to every other). A link belongs to the section
  whose id (or alias) was seen last before it.
- **reStructuredText**: ``:ref:`label``` and ``:ref:`text <label>``` (a Sphinx label: a section's alias, anywhere
  in the corpus), ``:doc:`path``` (relative to the file, or to the corpus root with a leading ``/``) and
  embedded hyperlinks ``` `text <other.rst>`_ ```, and the entries of a ``.. toctree::`` (documents, as Sphinx
  links them). A link is placed at the block of its line (the document's line locations).

HTML and reStructuredText are read from the source files (``corpus.root`` joined with the document id, else the
document's ``source``); a document whose file is gone (an index store moved elsewhere) is listed in ``unread``.

A target resolves through :meth:`Corpus.resolve` rules: relative paths are taken from the linking document's
folder; a document is found with another extension too (``controlflow.html`` in a corpus of ``.rst`` files, a
Rust book's ``ch04-00.html`` for ``ch04-00.md``); a folder means its ``index`` or ``README``; a fragment must name a
section (its id or an alias). URLs with a scheme (``https:``, ``mailto:``) are counted as ``external``; anything
else that names no anchor is dropped and counted in ``unresolved`` (with examples), never guessed.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UnknownAnchorError
from ..types import Document
from .corpus import Corpus

__all__ = ["Link", "CorpusLinks", "find_links"]

_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_FENCE_RE = re.compile(r"^[ \t]{0,3}(```+|~~~+)", re.M)
_INLINE_RE = re.compile(r"(?<!!)\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\(\s*<?([^()\s<>]+(?:\([^()\s]*\))?)>?(?:\s+[\"'(][^)]*)?\)")
_REF_USE_RE = re.compile(r"(?<![!\]])\[((?:[^\[\]\n]|\[[^\[\]\n]*\])+)\]\[([^\[\]\n]*)\]")
_REF_DEF_RE = re.compile(r"^[ \t]{0,3}\[([^\]\n]+)\]:[ \t]*<?(\S+?)>?(?:[ \t]+.*)?$", re.M)
_A_HREF_RE = re.compile(r"<a\s[^>]*?href\s*=\s*[\"']([^\"']+)[\"']", re.I)
_RST_ROLE_RE = re.compile(r":(?:std:)?(ref|doc):`([^`]+)`")
_RST_LINK_RE = re.compile(r"`[^`<]*<([^<>`]+)>`__?")
_TOCTREE_RE = re.compile(r"^([ \t]*)\.\.[ \t]+toctree::[^\n]*\n((?:(?:\1[ \t]+[^\n]*)?\n)*)", re.M)
_ROLE_TARGET_RE = re.compile(r"^(?:.*?)<([^<>]+)>\s*$", re.S)
_MARKDOWN = ("markdown", "ipynb", None)
_INDEX_NAMES = ("index", "README", "readme")
MAX_EXAMPLES = 20


@dataclass(frozen=True)
class Link:
    """One cross-reference: written in ``doc_id`` at offset ``at`` of its text (``exact``: at the link itself;
    otherwise at the start of the section it sits in), inside section ``source`` (the document id before the first
    heading), pointing at corpus anchor ``target``. ``kind``: markdown, html, ref, doc, toctree or rst-link."""

    doc_id: str
    at: int
    source: str
    target: str
    kind: str
    written: str
    exact: bool = True


@dataclass(frozen=True)
class CorpusLinks:
    """Every resolved link of a corpus, with what could not be resolved counted.

    ``unresolved`` counts links that named no anchor (``examples``: up to :data:`MAX_EXAMPLES` of them as
    ``(source anchor, kind, as written)``), ``external`` links to URLs outside the corpus, ``unread`` the documents
    whose source file could not be read (HTML and reStructuredText are read from their files)."""

    links: tuple[Link, ...]
    unresolved: int = 0
    external: int = 0
    examples: tuple[tuple[str, str, str], ...] = ()
    unread: tuple[str, ...] = ()
    _by_doc: dict[str, list[Link]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_doc: dict[str, list[Link]] = {}
        for link in sorted(self.links, key=lambda x: (x.doc_id, x.at)):
            by_doc.setdefault(link.doc_id, []).append(link)
        self._by_doc.update(by_doc)

    @property
    def resolved(self) -> int:
        return len(self.links)

    def by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for link in self.links:
            out[link.kind] = out.get(link.kind, 0) + 1
        return out

    def within(self, doc_id: str, start: int, end: int, sections: Mapping[str, tuple[int, int]] | None = None
               ) -> list[Link]:
        """The links written in ``[start, end)`` of ``doc_id``, in the order written. A link placed only by its
        section (``exact`` False) counts when that section's span, given in ``sections`` (anchor -> (start,
        end)), overlaps ``[start, end)``, or else when the section starts inside it."""
        out = []
        for link in self._by_doc.get(doc_id, ()):
            if start <= link.at < end:
                out.append(link)
            elif not link.exact and sections and link.source in sections:
                s, e = sections[link.source]
                if s < end and e > start:
                    out.append(link)
        return out

    def targets(self, anchor: str) -> list[str]:
        """The anchors linked from section ``anchor`` (a document id: its text before the first heading), in
        the order written, without repeats."""
        seen: dict[str, None] = {}
        for links in self._by_doc.values():
            for link in links:
                if link.source == anchor:
                    seen.setdefault(link.target, None)
        return list(seen)

    def summary(self) -> dict[str, Any]:
        """Counts for reports: resolved (by kind), unresolved (with examples), external, unread documents."""
        return {"resolved": self.resolved, "by_kind": self.by_kind(), "unresolved": self.unresolved,
                "external": self.external, "unread": list(self.unread),
                "examples": [list(e) for e in self.examples]}


class _Resolver:
    """Turns a link as written in one document into a corpus anchor (None: names nothing in the corpus)."""

    def __init__(self, corpus: Corpus):
        self.corpus = corpus
        self._labels: dict[str, list[str]] | None = None

    def labels(self) -> dict[str, list[str]]:
        """Sphinx labels: a section's alias (``.. _tut-if:``), lower case, -> the section anchors holding it; a
        section id counts where no alias has the name."""
        if self._labels is None:
            aliases: dict[str, list[str]] = {}
            ids: dict[str, list[str]] = {}
            for d in self.corpus:
                for s in d.sections:
                    for a in s.aliases:
                        aliases.setdefault(a.lower(), []).append(s.anchor)
                    ids.setdefault(s.id.lower(), []).append(s.anchor)
            self._labels = {**{k: v for k, v in ids.items()}, **aliases}
        return self._labels

    def document(self, path: str) -> str | None:
        """The document a path (from the corpus root) names: as written, with another extension, or a folder's
        index."""
        path = path.rstrip("/")
        if not path:
            tries = list(_INDEX_NAMES)
        else:
            head, dot, ext = path.rpartition(".")
            tries = [path] + ([head] if dot and head and "/" not in ext else []) + \
                [f"{path}/{n}" for n in _INDEX_NAMES]
        for t in tries:
            if t in self.corpus:
                return t
            try:
                span = self.corpus.resolve(t) if self.corpus.has_anchor(t) else None
            except UnknownAnchorError:
                span = None
            if span is not None and span.is_document:
                return span.doc_id
        return None

    def section(self, doc_id: str, fragment: str) -> str | None:
        anchor = f"{doc_id}#{fragment}"
        if not self.corpus.has_anchor(anchor):
            return None
        span = self.corpus.resolve(anchor)
        return span.section.anchor if span.section is not None else None

    def path(self, doc_id: str, written: str) -> str | None | bool:
        """A relative or absolute path with an optional fragment: the anchor, None (unresolved), or False for an
        external URL."""
        written = written.strip()
        if not written or _SCHEME_RE.match(written) or written.startswith("//"):
            return False
        path, _, fragment = written.partition("#")
        path = path.split("?", 1)[0]
        if not path:
            doc: str | None = doc_id
        else:
            from urllib.parse import unquote

            path = unquote(path)
            joined = path.lstrip("/") if path.startswith("/") else posixpath.join(posixpath.dirname(doc_id), path)
            joined = posixpath.normpath(joined) if joined else ""
            if joined == ".." or joined.startswith("../"):
                return None  # out of the corpus
            doc = self.document("" if joined == "." else joined)
        if doc is None:
            return None
        return self.section(doc, fragment) if fragment else doc

    def role(self, doc_id: str, kind: str, written: str) -> str | None:
        m = _ROLE_TARGET_RE.match(written)
        target = (m.group(1) if m else written).strip().lstrip("~!")
        if kind == "ref":
            found = self.labels().get(target.lower(), [])
            return found[0] if len(found) == 1 else None
        path = target.lstrip("/") if target.startswith("/") else posixpath.join(posixpath.dirname(doc_id), target)
        return self.document(posixpath.normpath(path))


def _fences(text: str) -> list[tuple[int, int]]:
    """Spans of fenced code blocks (links there are code, not links)."""
    spans, open_at, marker = [], None, ""
    for m in _FENCE_RE.finditer(text):
        fence = m.group(1)
        if open_at is None:
            open_at, marker = m.start(), fence
        elif fence[0] == marker[0] and len(fence) >= len(marker):
            spans.append((open_at, m.end()))
            open_at = None
    if open_at is not None:
        spans.append((open_at, len(text)))
    return spans


def _markdown_links(doc: Document) -> Iterator[tuple[int, str, str]]:
    """(offset, kind, target as written) of each markdown link of ``doc.text``."""
    text = doc.text
    fences = _fences(text)
    starts = [s for s, _ in fences]

    def in_code(pos: int) -> bool:
        i = bisect.bisect_right(starts, pos) - 1
        return i >= 0 and pos < fences[i][1]

    defs = {m.group(1).strip().lower(): m.group(2) for m in _REF_DEF_RE.finditer(text) if not in_code(m.start())}
    found: list[tuple[int, str, str]] = []
    for m in _INLINE_RE.finditer(text):
        found.append((m.start(), "markdown", m.group(1)))
    for m in _REF_USE_RE.finditer(text):
        ref = (m.group(2) or m.group(1)).strip().lower()
        if ref in defs:
            found.append((m.start(), "markdown", defs[ref]))
    for m in _A_HREF_RE.finditer(text):
        found.append((m.start(), "html", m.group(1)))
    for at, kind, target in sorted(found):
        if not in_code(at):
            yield at, kind, target


def _source_text(corpus: Corpus, doc: Document) -> bytes | None:
    for path in ([Path(corpus.root) / doc.id] if corpus.root else []) + ([Path(doc.source)] if doc.source else []):
        try:
            if path.is_file():
                return path.read_bytes()
        except OSError:
            continue
    return None


def _rst_links(doc: Document, data: bytes) -> Iterator[tuple[int, str, str]]:
    """(offset, kind, target) of each role and embedded link of a reStructuredText source, placed at the start of
    the block its line falls in (the document's line locations)."""
    lines = [(at, loc["line"]) for at, loc in doc.locations if isinstance(loc.get("line"), int)]
    lines.sort(key=lambda x: x[1])
    numbers = [n for _, n in lines]
    text = data.decode("utf-8-sig", errors="replace")
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def offset(pos: int) -> int:
        line = bisect.bisect_right(line_starts, pos)  # 1-based line of pos
        i = bisect.bisect_right(numbers, line) - 1
        return lines[i][0] if i >= 0 else 0

    found = [(m.start(), m.group(1), m.group(2)) for m in _RST_ROLE_RE.finditer(text)]
    found += [(m.start(), "rst-link", m.group(1)) for m in _RST_LINK_RE.finditer(text)]
    for m in _TOCTREE_RE.finditer(text):
        pos = m.start(2)
        for line in m.group(2).splitlines(keepends=True):
            entry = line.strip()
            if entry and not entry.startswith(":") and not entry.startswith(".."):
                found.append((pos, "toctree", entry))
            pos += len(line)
    for pos, kind, target in sorted(found):
        yield offset(pos), kind, target


def _html_links(corpus: Corpus, doc: Document, data: bytes) -> Iterator[tuple[int, str, str, str | None]]:
    """(section start, "html", href, section anchor) of each ``<a href>`` in the page's main content."""
    from lxml import etree

    from .formats.html import _anchor_id, _containers, _dropped, _parse, decode_html

    root = _parse(etree, decode_html(data))
    if root is None:
        return
    _, container = next(_containers(root))
    keep_header = container.tag not in ("body", "html")
    stack, current, at = [container], None, 0
    while stack:
        el = stack.pop()
        if _dropped(el, keep_header):
            continue
        ident = _anchor_id(el)
        if ident:
            anchor = f"{doc.id}#{ident}"
            if corpus.has_anchor(anchor):
                span = corpus.resolve(anchor)
                if span.section is not None:
                    current, at = span.section.anchor, span.section.start
        if el.tag == "a" and el.get("href"):
            yield at, "html", el.get("href"), current
        stack.extend(reversed(list(el)))


def _document_links(corpus: Corpus, doc: Document, resolver: _Resolver, counts: dict[str, Any]) -> list[Link]:
    written: list[tuple[int, str, str, str | None, bool]] = []
    if doc.format in ("html", "rst"):
        data = _source_text(corpus, doc)
        if data is None:
            counts["unread"].append(doc.id)
            return []
        if doc.format == "html":
            written = [(at, kind, t, source, False) for at, kind, t, source in _html_links(corpus, doc, data)]
        else:
            written = [(at, kind, t, None, True) for at, kind, t in _rst_links(doc, data)]
    elif doc.format in _MARKDOWN:
        written = [(at, kind, t, None, True) for at, kind, t in _markdown_links(doc)]
    out = []
    for at, kind, target, source, exact in written:
        source = source or corpus.section_at(doc.id, at)
        anchor = resolver.role(doc.id, kind, target) if kind in ("ref", "doc", "toctree") else \
            resolver.path(doc.id, target)
        if anchor is False:
            counts["external"] += 1
        elif anchor is None:
            counts["unresolved"] += 1
            if len(counts["examples"]) < MAX_EXAMPLES:
                counts["examples"].append((source, kind, target))
        elif anchor not in (source, doc.id):  # a section's link to itself or to the top of its own page
            out.append(Link(doc.id, at, source, str(anchor), kind, target, exact))
    return out


def find_links(corpus: Corpus) -> CorpusLinks:
    """Every cross-reference of ``corpus`` resolved to its anchors (see the module docstring); links a section
    makes to itself are left out."""
    resolver = _Resolver(corpus)
    counts: dict[str, Any] = {"unresolved": 0, "external": 0, "examples": [], "unread": []}
    links: list[Link] = []
    for doc in corpus:
        links.extend(_document_links(corpus, doc, resolver, counts))
    return CorpusLinks(tuple(links), counts["unresolved"], counts["external"], tuple(counts["examples"]),
                       tuple(counts["unread"]))
