"""One way from any file format to ragtune's Document: text written as markdown, sections given, not guessed.

A format's loader walks its parsed file and calls :class:`DocumentBuilder`: ``heading``, ``paragraph``, ``code``,
``table``, ``item`` and ``locate``. The builder writes the document's text as markdown (``#`` headings, fenced code,
pipe tables, list items), so every chunker sees code blocks and tables as the atomic blocks it sees in a markdown
file; and it records each heading *as the loader saw it* (its level, title, id and other ids), so sections never
depend on re-reading that markdown: a paragraph that begins with ``#`` in a PDF is text, not a heading.

Anchors: a heading's id is the one the source gives (an HTML ``id``, a reStructuredText section id) when there is
one, else the GitHub slug of its title with a leading section number (``4.1.``) removed, so that a chapter printed
to PDF and the same chapter in reStructuredText or HTML give the same anchors. Ids are de-duplicated within a
document (``-1``, ``-2``). Other ids of a section (a reStructuredText ``.. _label:``, the ``<span id>`` Sphinx
writes for it) are its ``aliases``: a golden set may name a section by any of them.

An id a tool made up (:func:`is_auto_id`: docutils and Sphinx give ``id1``, ``id5`` to a section whose title is
another section's or a label's, or has no ASCII letter) is never the anchor: it says nothing of the section and
moves when a section is added above it. The section is anchored by its first readable id (the label, ``#sessions``),
else by the slug of its title (``#routing-1``, ``#快速开始``), and the made-up id stays an alias, so a link or a
golden set that uses it still resolves (and ``golden check`` suggests the readable anchor).

Locations: ``locate({"page": 3})`` says that the text written from here on comes from page 3 (or a source line, an
HTML element id); each chunk carries the location of its start (and end, when it differs) in
``chunk.metadata["location"]``, so a citation leads back into the source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...types import Document, Section
from ..headings import clip_heading
from ..markdown import Slugger, slugify

__all__ = ["DocumentBuilder", "heading_slug", "strip_section_number", "build_sections", "is_auto_id"]

_SECTION_NUMBER_RE = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[IVXLC]+\.|[A-Z]\.)(?:\s+|$)")
_FENCE_RE = re.compile(r"`{3,}|~{3,}")
_BLOCK_START_RE = re.compile(r"^( {0,3})(#{1,6}(?:\s|$)|>|[-*+]\s|\d{1,9}[.)]\s|`{3,}|~{3,}|[=\-*_]{3,}\s*$|\|)",
                             re.M)
_WS_RE = re.compile(r"[ \t\r\f\v]+")
_AUTO_ID_RE = re.compile(r"id[0-9]+")


def is_auto_id(id: str) -> bool:
    """Whether ``id`` is one docutils and Sphinx make up for a section (``id1``, ``id5``; their ``auto_id_prefix``
    is ``id``) rather than one derived from its title or given by a label."""
    return _AUTO_ID_RE.fullmatch(id) is not None


def strip_section_number(title: str) -> str:
    """``title`` without a leading section number: ``4.1. if Statements`` -> ``if Statements``; ``A.\\tPURPOSE`` ->
    ``PURPOSE``. A title that is only a number is kept."""
    out = _SECTION_NUMBER_RE.sub("", title, count=1).strip()
    return out or title.strip()


def heading_slug(title: str) -> str:
    """The anchor of a heading without an id of its own: the GitHub slug of its title, section number removed."""
    return slugify(strip_section_number(title)) or "section"


@dataclass(frozen=True, slots=True)
class _Heading:
    offset: int
    level: int
    title: str
    id: str | None
    aliases: tuple[str, ...]


def build_sections(doc_id: str, length: int, headings: Sequence[_Heading]) -> tuple[Section, ...]:
    """Sections from headings in text order: a section runs to the next heading of its level or higher (``end``)
    and its own text to the next heading (``own_end``). Ids are de-duplicated; an alias taken by a section's id
    is dropped from the others."""
    slugger = Slugger()
    for h in headings:
        if h.id:
            slugger.reserve(h.id)
    ids: list[str] = []
    claimed: set[str] = set()
    for h in headings:
        if h.id and h.id not in claimed:
            ids.append(h.id)
        else:
            ids.append(slugger.unique(h.id or heading_slug(clip_heading(h.title))))
        claimed.add(ids[-1])
    ends = [length] * len(headings)
    waiting: list[int] = []
    for i, h in enumerate(headings):
        while waiting and headings[waiting[-1]].level >= h.level:
            ends[waiting.pop()] = h.offset
        waiting.append(i)
    sections: list[Section] = []
    stack: list[tuple[int, Section]] = []
    used_aliases: set[str] = set(ids)
    for i, h in enumerate(headings):
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        aliases = tuple(a for a in dict.fromkeys(h.aliases) if a and a not in used_aliases)
        used_aliases.update(aliases)
        own_end = headings[i + 1].offset if i + 1 < len(headings) else length
        title = clip_heading(h.title)  # repeated in every heading path and prefix under it (corpus.headings)
        section = Section(doc_id=doc_id, id=ids[i], title=title, level=h.level,
                          heading_path=tuple(s.title for _, s in stack) + (title,),
                          parent=stack[-1][1].anchor if stack else None, start=h.offset, end=ends[i],
                          own_end=own_end, explicit_id=h.id, aliases=aliases)
        sections.append(section)
        stack.append((h.level, section))
    return tuple(sections)


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass
class DocumentBuilder:
    """Collects a document's blocks as markdown text with its headings and locations; :meth:`build` makes the
    :class:`~ragtune.types.Document`.

    Block texts are written as given, except that a paragraph line which markdown would read as a block marker
    (``# x``, ``> x``, ``| x``, a fence) is escaped with a backslash, so the text reads back as the paragraph it
    was. Whitespace inside a paragraph is collapsed; code keeps its own.
    """

    doc_id: str
    source: str | None = None
    format: str | None = None
    parts: list[str] = field(default_factory=list)
    length: int = 0
    headings: list[_Heading] = field(default_factory=list)
    locations: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    _last_item: bool = False
    _pending: dict[str, Any] | None = None

    # -- writing --------------------------------------------------------------------------------------------------
    def _write(self, block: str, *, item: bool = False) -> int:
        """Append one block, after a blank line (a line break only between two list items); returns its start."""
        if self.parts:
            sep = "\n" if item and self._last_item else "\n\n"
            self.parts.append(sep)
            self.length += len(sep)
        self._last_item = item
        start = self.length
        if self._pending is not None:  # a location said before this block: it starts here
            if self.locations and self.locations[-1][0] == start:
                self.locations[-1] = (start, self._pending)
            elif not self.locations or self.locations[-1][1] != self._pending:
                self.locations.append((start, self._pending))
            self._pending = None
        self.parts.append(block)
        self.length += len(block)
        return start

    def locate(self, location: Mapping[str, Any]) -> None:
        """The text written from here on comes from ``location`` (``{"page": 3}``, ``{"line": 40}``,
        ``{"element_id": "install"}``); a location equal to the current one is not repeated."""
        self._pending = {k: v for k, v in location.items() if v is not None}  # recorded where the next block starts

    def heading(self, level: int, title: str, *, id: str | None = None, aliases: Iterable[str] = ()) -> None:
        """A heading of ``level`` (1-6; deeper levels are written as 6 but keep their level as a section), with the
        ``id`` its source gives and its other ids (``aliases``); a made-up ``id`` (:func:`is_auto_id`) becomes an
        alias and a readable one the anchor (see the module docstring)."""
        title = _one_line(title)
        if not title:
            return
        level = max(1, int(level))
        aliases = tuple(a for a in aliases if a)
        if id and is_auto_id(id):  # a made-up id: the first readable alias is the anchor, else the title's slug
            readable = next((a for a in aliases if not is_auto_id(a)), None)
            id, aliases = readable, (id, *(a for a in aliases if a != readable))
        start = self._write("#" * min(level, 6) + " " + title)
        self.headings.append(_Heading(start, level, title, id or None, aliases))

    def paragraph(self, text: str) -> None:
        """A paragraph: whitespace runs collapsed, line breaks kept, block markers at a line start escaped."""
        lines = [_WS_RE.sub(" ", line).strip() for line in text.split("\n")]
        text = "\n".join(line for line in lines if line)
        if text:
            self._write(_BLOCK_START_RE.sub(lambda m: m.group(1) + "\\" + m.group(2), text))

    def code(self, text: str, language: str = "") -> None:
        """A fenced code block (its fence longer than any run of backticks inside)."""
        text = text.strip("\n")
        if not text.strip():
            return
        longest = max((len(m.group()) for m in _FENCE_RE.finditer(text) if m.group()[0] == "`"), default=0)
        fence = "`" * max(3, longest + 1)
        self._write(f"{fence}{_one_line(language)}\n{text}\n{fence}")

    def table(self, rows: Sequence[Sequence[str]], *, header: bool = True) -> None:
        """A pipe table; the first row is its header (an empty header row is added when ``header`` is false)."""
        grid = [[_one_line(str(c)).replace("|", "\\|") for c in row] for row in rows if row]
        if not grid:
            return
        width = max(len(r) for r in grid)
        grid = [r + [""] * (width - len(r)) for r in grid]
        if not header:
            grid.insert(0, [""] * width)
        lines = ["| " + " | ".join(grid[0]) + " |", "|" + "|".join(["---"] * width) + "|"]
        lines.extend("| " + " | ".join(r) + " |" for r in grid[1:])
        self._write("\n".join(lines))

    def item(self, text: str, *, depth: int = 0, ordered: bool = False, number: int = 1) -> None:
        """One list item; consecutive items are written on consecutive lines."""
        text = _one_line(text)
        if text:
            self._write("  " * max(depth, 0) + (f"{number}. " if ordered else "- ") + text, item=True)

    # -- result ---------------------------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        return "".join(self.parts)

    def build(self, *, title: str | None = None, metadata: Mapping[str, Any] | None = None,
              fallback_title: str | None = None) -> Document:
        text = self.text
        sections = build_sections(self.doc_id, len(text), self.headings)
        if not title or not title.strip():
            first = next((s for s in sections if s.level == min(x.level for x in sections)), None)
            title = strip_section_number(first.title) if first else (fallback_title or self.doc_id)
        return Document(id=self.doc_id, title=clip_heading(_one_line(title)), text=text, metadata=dict(metadata or {}),
                        sections=sections, source=self.source, format=self.format,
                        locations=tuple((at, dict(loc)) for at, loc in self.locations))
