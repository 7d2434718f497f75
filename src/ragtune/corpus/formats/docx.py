"""Word files (DOCX, Word 2007+): the body in document order, headings by style or outline level, tables, lists.

The package (zip, content types, relationships, the main document part, styles, numbering, notes and core
properties) is read here, each XML part parsed as it is unpacked: python-docx, whose constants name the parts, would
read every part whole and build each one's full tree, about 30 times the XML in memory. The body is walked over its
XML elements directly, which is also what makes the loader fast and faithful: python-docx's own ``Paragraph.style``
looks each style up again per paragraph (6-7 s for the 813 k-character DOJ handbook, against about 0.5 s for this
whole loader), and its ``Paragraph.text`` reads only the runs directly in a paragraph or a hyperlink, so it drops the
text of tracked insertions, content controls, smart tags and simple fields.

**Memory.** A part is parsed as a stream (``lxml.etree.iterparse``): the tree holds one body paragraph, one table
cell's paragraph or nested table, one style, list definition or note at a time, and each is dropped once read. What
is kept is the text and one location per paragraph, so loading a file takes, whatever the shape of its XML, at
most about 6 times its unpacked XML plus about 1 KB per paragraph kept (its location, here and in the Document: at
most about 100 MB, by :data:`MAX_ENTRIES`), measured over the whole folder load, the worker that parses the file and
the process that receives the Document (``tests/corpus/formats/test_docx_memory.py``); a parsed tree alone would be
about 30 times the XML. A file over one of these limits is refused with one line (in a folder: skipped with a
warning, the rest loads): :data:`MAX_UNPACKED_BYTES` unpacked (declared sizes, checked before anything is
unpacked); :data:`MAX_PART_ELEMENTS` XML elements in a part; :data:`MAX_HELD_ELEMENTS` elements and attributes, or
:data:`MAX_HELD_BYTES` of XML, held at once (one paragraph, nested table, style or note); :data:`MAX_ENTRIES`
paragraphs, table rows, notes, styles, list levels and relationships; :data:`MAX_TEXT_CHARS` characters of text;
:data:`MAX_COLUMNS` columns in a table row; and the XML parser's own limits (no ``huge_tree``): a text node or a
tag over 10,000,000 bytes, a nesting deeper than 256 levels. No DTD is loaded and no entity resolved.

- **Headings**: a paragraph whose style is ``Heading 1`` … ``Heading 9`` (or ``Title``, level 1), or whose outline
  level (``w:outlineLvl`` in the paragraph, else in its style or the styles that style is based on) is 0-8, is a
  heading of that level. Word gives no heading ids, so anchors are the builder's slug of the title
  (``A.<tab>PURPOSE`` -> ``purpose``).
- **Tables** become pipe tables, the first row their header. A merged cell's text is written once, in the
  top-left grid cell of its span; the other grid cells it covers are left empty, so every row keeps the table's
  width and no word is counted twice. A table nested in a cell is flattened into that cell's text.
- **Lists**: a paragraph with numbering (``w:numPr``, in the paragraph or its style) is a list item, its depth
  the numbering level ``w:ilvl``, ordered unless the level's format is a bullet; ``List Bullet 2`` and the like
  without numbering give their depth by name.
- **Footnotes and endnotes**: a reference is written ``[n]`` in the text and the note's text follows the
  paragraph (or table) that refers to it as its own paragraph ``[n] ...``, so a chunk holds the note beside
  what it annotates.
- **Left out**: headers and footers (page furniture, repeated on every page), comments, deleted text (tracked
  changes), hidden runs, the field codes behind fields (their results are kept), images, a table of contents
  (``TOC 1`` … paragraphs: a copy of the headings).

Locations: each paragraph is ``{"paragraph": N}``, N counting the body's paragraphs in document order (content
controls unwrapped), so ``Document(path).paragraphs[N]`` in python-docx is that paragraph in a body without
content controls; each table is ``{"table": T}``, ``Document(path).tables[T]``.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ...config import Config
from ...errors import CorpusError
from ...registry import LOADERS
from ...types import Document
from . import missing_library
from .builder import DocumentBuilder

__all__ = ["DocxLoader", "DocxLoaderConfig"]

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_P, _TBL, _TR, _TC, _R, _T = (_W + t for t in ("p", "tbl", "tr", "tc", "r", "t"))
_SDT, _SDT_CONTENT, _CUSTOM_XML = _W + "sdt", _W + "sdtContent", _W + "customXml"
_BLOCKS = (_P, _TBL)
_VAL, _ID, _TYPE = _W + "val", _W + "id", _W + "type"
_TABS = {_W + "tab", _W + "ptab"}
_BREAKS = {_W + "br", _W + "cr"}
# subtrees with no text of the document as it reads: deleted and moved-away text, the pictures Word writes for
# old readers beside the drawing (mc:Fallback repeats the text of a text box), run and paragraph properties
# (field codes, w:instrText, and deleted text, w:delText, are never read: only w:t is text)
_SKIP = {_W + "del", _W + "moveFrom", _MC_FALLBACK, _W + "rPr", _W + "pPr"}
_NOTE_REFS = {_W + "footnoteReference": "footnotes", _W + "endnoteReference": "endnotes"}
_HEADING_STYLE_RE = re.compile(r"heading\s*([1-9])\Z")
_LIST_STYLE_RE = re.compile(r"list\s+(bullet|number)(?:\s+([2-9]))?\Z")
_TOC_STYLE_RE = re.compile(r"toc\s*[1-9]\Z")
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_BODY = _W + "body"
_WRAPPERS = (_SDT, _SDT_CONTENT, _CUSTOM_XML)
_CT = "{http://schemas.openxmlformats.org/package/2006/content-types}"
_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_NOT_DOCX = "not a readable DOCX (Word 2007+) file"
_TOO_BIG = "over the limits of what ragtune reads from one DOCX file"

MAX_UNPACKED_BYTES = 1 << 30
"""The most a DOCX file may unpack to, all its parts together, by the sizes its zip directory declares (checked
before anything is unpacked; a part that unpacks to more than it declares is a damaged zip)."""
MAX_PART_ELEMENTS = 10_000_000
"""The most XML elements read from one part (``word/document.xml``, the styles, ...): about 100 times the 872-page
DOJ handbook's body. Bounds the time a file takes."""
MAX_HELD_ELEMENTS = 100_000
"""The most XML elements and attributes held at once: one body paragraph, one paragraph or nested table of a table
cell, one style, list definition or note, with the elements that contain it (the handbook's whole body is 100,000
elements, its largest paragraph a few hundred). About 20 MB of parsed tree at most."""
MAX_HELD_BYTES = 16 << 20
"""The most XML held at once, in bytes (what the elements held were read from: it bounds their text and namespace
declarations, about 1 and 20 times their bytes in the tree)."""
MAX_ENTRIES = 100_000
"""The most body paragraphs, table rows, notes, styles, list definitions and levels, and relationships read from
one file: 12 times the handbook's 8,152 paragraphs. Each paragraph kept costs up to about 1 KB besides its text (its
location, in the worker that parses the file and again in the process that receives the Document), whatever its
XML, so this bounds what a file of one-letter paragraphs takes to about 100 MB."""
MAX_TEXT_CHARS = 64 << 20
"""The most characters of text (body, cells, notes, titles; a note as often as it is referred to) read from one
file: as much as the largest markdown file a corpus folder reads (64 MiB), 80 times the handbook."""
MAX_COLUMNS = 1_000
"""The most grid columns in one table row, spans included (Word makes at most 63)."""


@dataclass(frozen=True)
class DocxLoaderConfig(Config):
    pass


@dataclass
class _Style:
    name: str  # lowercased, as styles.xml spells it ("heading 1", "list bullet 2")
    based_on: str | None
    outline: int | None  # w:outlineLvl, 0-8 a heading level, 9 body text
    num: tuple[str, int] | None  # (numId, ilvl) of the style's own numbering


@dataclass
class _Numbering:
    """The list definitions of numbering.xml, looked up by (numId, ilvl): each ``w:num`` names an abstract
    definition (its levels' formats and starts) and may override a level's start."""

    abstract: dict[str, dict[int, tuple[str, int]]] = field(default_factory=dict)  # id -> ilvl -> (numFmt, start)
    nums: dict[str, tuple[str, dict[int, int]]] = field(default_factory=dict)  # numId -> (abstract id, overrides)

    def get(self, key: tuple[str, int]) -> tuple[str, int] | None:
        """(numFmt, start) of level ``ilvl`` of list ``numId``, or None when the document does not define it."""
        num = self.nums.get(key[0])
        spec = self.abstract.get(num[0], {}).get(key[1]) if num is not None else None
        if num is None or spec is None:
            return None
        start = num[1].get(key[1])
        return spec if start is None else (spec[0], start)


@dataclass
class _Budget:
    """What one file has used of :data:`MAX_ENTRIES` and :data:`MAX_TEXT_CHARS`."""

    entries: int = 0
    chars: int = 0

    def entry(self, n: int = 1) -> None:
        self.entries += n
        if self.entries > MAX_ENTRIES:
            raise CorpusError(f"{_TOO_BIG}: more than {MAX_ENTRIES:,} paragraphs, table rows, notes, styles and "
                              "other entries (a generated or hostile file?); split it into smaller documents")

    def text(self, n: int) -> None:
        self.chars += n
        if self.chars > MAX_TEXT_CHARS:
            raise CorpusError(f"{_TOO_BIG}: more than {MAX_TEXT_CHARS:,} characters of text (a generated or "
                              "hostile file?); split it into smaller documents")


@dataclass
class _Walk:
    """What the walk over a document needs besides the builder: styles, numbering, notes and counters."""

    styles: dict[str, _Style]
    default_style: str | None
    formats: _Numbering
    notes: dict[str, dict[str, str]]  # "footnotes"/"endnotes" -> note id -> text
    budget: _Budget
    resolved: dict[str | None, tuple[int | None, tuple[str, int] | None, str]] = field(default_factory=dict)
    chains: dict[str, tuple[int | None, tuple[str, int] | None]] = field(default_factory=dict)
    counters: dict[str, list[int]] = field(default_factory=dict)
    pending_notes: list[str] = field(default_factory=list)  # "[n] text" of notes referred to in the current block
    note_count: int = 0
    paragraphs: int = 0
    tables: int = 0


def _int(value: str | None, default: int | None = None) -> int | None:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _num_pr(ppr: Any) -> tuple[str, int] | None:
    num = ppr.find(_W + "numPr") if ppr is not None else None
    if num is None:
        return None
    num_id = num.find(_W + "numId")
    ilvl = num.find(_W + "ilvl")
    return (num_id.get(_VAL, "0") if num_id is not None else "0",
            (_int(ilvl.get(_VAL), 0) or 0) if ilvl is not None else 0)


def _outline(ppr: Any) -> int | None:
    lvl = ppr.find(_W + "outlineLvl") if ppr is not None else None
    return _int(lvl.get(_VAL)) if lvl is not None else None


# -- the package: each XML part parsed as a stream --------------------------------------------------------------------

class _Counted:
    """A part's bytes as the parser reads them, counted."""

    def __init__(self, f: Any):
        self.f, self.pos = f, 0

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.pos += len(data)
        return data


class _Stream:
    """The elements of one XML part of the package, each as it ends, parsed while the part is unpacked.

    The consumer reads the element just yielded and may ``drop`` it from the tree. What the tree holds (every
    element started and not dropped, the open ones included, with their attributes, and the XML they were read
    from) is counted as it is parsed, against :data:`MAX_HELD_ELEMENTS` and :data:`MAX_HELD_BYTES`; the part's
    elements against :data:`MAX_PART_ELEMENTS`. A missing part, a damaged zip entry, bad XML and XML past the
    parser's limits are each a one-line CorpusError.
    """

    def __init__(self, z: zipfile.ZipFile, name: str, kind: Callable[[str, str], str | None] | None = None):
        self.z, self.name = z, name
        self.kind = kind or _entry_kind  # what an element's children are, from its tag and what it is
        self.held = 0  # elements and attributes in the tree
        self._dropped = 0  # bytes read whose elements were dropped
        self._reader: _Counted | None = None
        self._mark: tuple[int, int, str | None, str | None] = (0, 0, None, None)  # of the element just yielded

    def ends(self) -> Iterator[tuple[Any, str]]:
        """Each element whose parent's children are of some kind, as it ends, with that kind (``document`` for
        the root; ``kind(tag, kind of the parent)`` says what an element's children are, None for what is read
        whole with the element)."""
        from lxml import etree

        kind = self.kind
        try:
            with self.z.open(self.name) as f:
                self._reader = reader = _Counted(f)
                # (held, held bytes) when each open element started, what its children are, what it is
                marks: list[tuple[int, int, str | None, str | None]] = [(0, 0, "document", None)]
                push, pop = marks.append, marks.pop
                count, held, dropped = 0, self.held, self._dropped
                max_count, max_held, max_bytes = MAX_PART_ELEMENTS, MAX_HELD_ELEMENTS, MAX_HELD_BYTES
                for event, el in etree.iterparse(reader, events=("start", "end"), resolve_entities=False,
                                                 no_network=True, load_dtd=False, huge_tree=False,
                                                 remove_blank_text=True, remove_comments=True, remove_pis=True):
                    if event == "end":
                        mark = pop()
                        if mark[3] is not None:
                            self._mark, self.held = mark, held
                            yield el, mark[3]
                            held, dropped = self.held, self._dropped  # (as drop left them)
                        continue
                    parent = marks[-1][2]
                    held_bytes = reader.pos - dropped
                    push((held, held_bytes, None if parent is None else kind(el.tag, parent), parent))
                    count += 1
                    held += 1 + len(el.attrib)
                    if count > max_count:
                        raise CorpusError(f"{_TOO_BIG}: {self.name} has more than {max_count:,} XML "
                                          "elements (a generated or hostile file?); split it into smaller documents")
                    if held > max_held or held_bytes > max_bytes:
                        raise CorpusError(f"{_TOO_BIG}: one paragraph or entry of {self.name} has more than "
                                          f"{max_held:,} XML elements and attributes, or {max_bytes >> 20} MiB of "
                                          "XML (a generated or hostile file?)")
        except KeyError:
            raise CorpusError(f"{_NOT_DOCX}: a zip file without {self.name} (a Word document's text is in "
                              "word/document.xml): another kind of zip, or a damaged file") from None
        except etree.XMLSyntaxError as e:
            if "amplification" in str(e):
                raise CorpusError(f"{_TOO_BIG}: {self.name} declares entities that would expand past what the XML "
                                  "parser allows (a billion-laughs file?)") from None
            if "XML_PARSE_HUGE" in str(e):
                raise CorpusError(f"{_TOO_BIG}: {self.name} holds a text, a tag or a nesting larger than the XML "
                                  f"parser reads ({str(e).split(',')[0]}; a hostile file?)") from None
            raise CorpusError(f"{_NOT_DOCX}: damaged ({self.name}: {e}); check that it opens in Word") from None
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as e:
            raise CorpusError(f"{_NOT_DOCX}: damaged ({type(e).__name__}: {e}); check that it opens in "
                              "Word") from None

    def drop(self, el: Any) -> None:
        """Remove ``el``, the element just yielded, from the tree, with all it holds."""
        parent = el.getparent()
        el.clear()
        if parent is not None:
            parent.remove(el)
        self.held, held_bytes = self._mark[:2]
        if self._reader is not None:
            self._dropped = self._reader.pos - held_bytes

    def entries(self) -> Iterator[Any]:
        """The children of the part's root element, each once it has ended, dropped after it is read."""
        for el, parent in self.ends():
            if parent == "root":
                yield el
                self.drop(el)


def _entry_kind(tag: str, parent: str) -> str | None:
    return "root" if parent == "document" else None  # below the root's children: read whole with the child


def _content_type(z: zipfile.ZipFile, name: str, budget: _Budget) -> str:
    """The content type ``[Content_Types].xml`` gives the part ``name`` (its override, else its extension's)."""
    override, default = None, None
    ext = name.rsplit(".", 1)[-1].lower() if "." in name.rsplit("/", 1)[-1] else ""
    for el in _Stream(z, "[Content_Types].xml").entries():
        budget.entry()
        if el.tag == _CT + "Override" and el.get("PartName", "").lower() == "/" + name.lower():
            override = el.get("ContentType", "")
        elif el.tag == _CT + "Default" and el.get("Extension", "").lower() == ext:
            default = el.get("ContentType", "")
    return override if override is not None else default or "no content type"


def _rels(z: zipfile.ZipFile, part: str, budget: _Budget) -> list[tuple[str, str]]:
    """(type, zip entry name) of each relationship of ``part`` ("" for the package) to a part inside the package,
    in order; none when the part has no relationships file."""
    folder, _, base = part.rpartition("/")
    stream = _Stream(z, f"{folder + '/' if folder else ''}_rels/{base}.rels")
    if stream.name not in z.NameToInfo:
        return []
    out = []
    for el in stream.entries():
        budget.entry()
        if el.tag == _RELS + "Relationship" and el.get("TargetMode") != "External":
            target = posixpath.normpath(posixpath.join("/" + folder, el.get("Target", "")))
            out.append((el.get("Type", ""), target.lstrip("/")))
    return out


def _read_styles(stream: _Stream, budget: _Budget) -> tuple[dict[str, _Style], str | None]:
    styles: dict[str, _Style] = {}
    default = None
    for s in stream.entries():
        if s.tag != _W + "style" or s.get(_TYPE) not in (None, "paragraph"):
            continue
        budget.entry()
        sid = s.get(_W + "styleId") or ""
        name = s.find(_W + "name")
        based = s.find(_W + "basedOn")
        ppr = s.find(_W + "pPr")
        styles[sid] = _Style(" ".join((name.get(_VAL, "") if name is not None else sid).lower().split()),
                             based.get(_VAL) if based is not None else None, _outline(ppr), _num_pr(ppr))
        if s.get(_W + "default") in ("1", "true", "on"):
            default = sid
    return styles, default


def _read_numbering(stream: _Stream, budget: _Budget) -> _Numbering:
    out = _Numbering()
    for el in stream.entries():
        if el.tag == _W + "abstractNum":
            levels = out.abstract.setdefault(el.get(_W + "abstractNumId", ""), {})
            for lvl in el.iterchildren(_W + "lvl"):
                budget.entry()
                fmt, start = lvl.find(_W + "numFmt"), lvl.find(_W + "start")
                levels[_int(lvl.get(_W + "ilvl"), 0) or 0] = (
                    fmt.get(_VAL, "decimal") if fmt is not None else "decimal",
                    _int(start.get(_VAL), 1) if start is not None else 1)  # type: ignore[assignment]
        elif el.tag == _W + "num":
            budget.entry()
            ref = el.find(_W + "abstractNumId")
            overrides: dict[int, int] = {}
            for override in el.iterchildren(_W + "lvlOverride"):
                budget.entry()
                start = override.find(_W + "startOverride")
                if start is not None:
                    overrides[_int(override.get(_W + "ilvl"), 0) or 0] = _int(start.get(_VAL), 1) or 1
            out.nums[el.get(_W + "numId", "")] = (ref.get(_VAL, "") if ref is not None else "", overrides)
    return out


def _read_notes(stream: _Stream, kind: str, budget: _Budget) -> dict[str, str]:
    """Note id -> its text, for the footnotes or endnotes part of the document (separators left out)."""
    walk = _Walk({}, None, _Numbering(), {"footnotes": {}, "endnotes": {}}, budget)
    out = {}
    for note in stream.entries():
        if note.tag == _W + kind:
            budget.entry()
            if note.get(_TYPE) in (None, "normal"):
                text = " ".join(t for p in note.iter(_P) if (t := _paragraph_text(p, walk)))
                if text:
                    out[note.get(_ID, "")] = text
    return out


def _core_title(z: zipfile.ZipFile, package: list[tuple[str, str]], reltype: str, budget: _Budget) -> str | None:
    """The title in the file's core properties; None when it has none."""
    name = next((n for t, n in package if t == reltype), None)
    if name is None:
        return None
    for el in _Stream(z, name).entries():
        if el.tag == _DC_TITLE:
            title = (el.text or "").strip()
            budget.text(len(title))
            return title or None
    return None


# -- the body ---------------------------------------------------------------------------------------------------------

def _style_info(walk: _Walk, sid: str | None) -> tuple[int | None, tuple[str, int] | None, str]:
    """(outline level, numbering, name) of a paragraph style, each from the first style up its basedOn chain that
    sets it; an unknown style id is the default paragraph style, as in Word. Each style's chain is resolved once,
    so a long chain costs its length once, not once per style on it."""
    if sid in walk.resolved:
        return walk.resolved[sid]
    key = sid
    if sid not in walk.styles:
        sid = walk.default_style
    name = walk.styles[sid].name if sid in walk.styles else ""
    path: list[str] = []  # styles up the chain whose values are not known yet
    seen: set[str] = set()
    cur = sid
    while cur in walk.styles and cur not in seen and cur not in walk.chains:
        seen.add(cur)
        path.append(cur)
        cur = walk.styles[cur].based_on
    outline, num = walk.chains.get(cur, (None, None)) if cur is not None and cur not in seen else (None, None)
    for s in reversed(path):  # from the top of the chain down: a style's own value wins over what it is based on
        style = walk.styles[s]
        outline = style.outline if style.outline is not None else outline
        num = style.num if style.num is not None else num
        walk.chains[s] = (outline, num)
    if sid is not None and sid in walk.chains:
        outline, num = walk.chains[sid]
    walk.resolved[key] = (outline, num, name)
    return walk.resolved[key]


def _text(el: Any, walk: _Walk, out: list[str]) -> None:
    """The text of the runs under ``el``, in order, into ``out``; a note reference is written ``[n]`` and its text
    queued on ``walk.pending_notes``."""
    for child in el:
        tag = child.tag
        if tag == _T:
            out.append(child.text or "")
        elif tag in _TABS:
            out.append("\t")
        elif tag in _BREAKS:
            out.append("\n" if child.get(_TYPE) in (None, "textWrapping") else " ")
        elif tag == _W + "noBreakHyphen":
            out.append("-")
        elif tag in _NOTE_REFS:
            note = walk.notes[_NOTE_REFS[tag]].get(child.get(_ID, ""))
            if note:
                walk.budget.text(len(note))  # a note referred to many times is written as many times
                walk.note_count += 1
                out.append(f"[{walk.note_count}]")
                walk.pending_notes.append(f"[{walk.note_count}] {note}")
        elif tag in _SKIP or not isinstance(tag, str) or not len(child):
            continue  # (an XML comment or processing instruction has a tag that is not a string)
        elif tag == _R and _hidden(child):
            continue
        else:
            if tag == _P and out:  # a paragraph inside this one (a text box): keep the words apart
                out.append("\n")
            _text(child, walk, out)


def _hidden(run: Any) -> bool:
    """Whether a run is hidden text (``w:vanish`` in its properties, which come first in a run)."""
    if run[0].tag != _W + "rPr":
        return False
    vanish = run[0].find(_W + "vanish")
    return vanish is not None and vanish.get(_VAL) not in ("0", "false", "off")


def _paragraph_text(p: Any, walk: _Walk) -> str:
    out: list[str] = []
    _text(p, walk, out)
    text = "".join(out).strip()
    walk.budget.text(len(text))
    return text


def _children(el: Any, tags: tuple[str, ...]) -> Iterator[Any]:
    """The children of ``el`` with one of ``tags`` (paragraphs and tables of a body or cell, rows of a table,
    cells of a row), in order, looking through content controls and custom XML that wrap them."""
    for child in el:
        if child.tag in tags:
            yield child
        elif child.tag == _CUSTOM_XML:
            yield from _children(child, tags)
        elif child.tag == _SDT and (content := child.find(_SDT_CONTENT)) is not None:
            yield from _children(content, tags)


def _columns(n: int) -> int:
    if n > MAX_COLUMNS:
        raise CorpusError(f"{_TOO_BIG}: a table row of more than {MAX_COLUMNS:,} columns (Word makes at most 63; a "
                          "generated or hostile file?)")
    return n


def _grid_before(trpr: Any) -> int:
    """The empty grid columns before a row's first cell (``w:gridBefore``)."""
    before = trpr.find(_W + "gridBefore") if trpr is not None else None
    return _columns(_int(before.get(_VAL), 0) or 0 if before is not None else 0)


def _span(tcpr: Any) -> tuple[int, bool]:
    """(grid columns, whether it continues a merged cell) of a table cell, from its properties."""
    if tcpr is None:
        return 1, False
    gs, vm, hm = tcpr.find(_W + "gridSpan"), tcpr.find(_W + "vMerge"), tcpr.find(_W + "hMerge")
    span = max(1, _int(gs.get(_VAL), 1) or 1) if gs is not None else 1
    merged = (vm is not None and vm.get(_VAL, "continue") == "continue") or \
             (hm is not None and hm.get(_VAL, "continue") == "continue")
    return _columns(span), merged


def _add_cell(row: list[str], text: str, span: int) -> None:
    """A cell's text in the top-left grid cell of its span, the other grid cells it covers left empty."""
    row.append(text)
    row.extend([""] * (span - 1))
    _columns(len(row))


def _cell_text(tc: Any, walk: _Walk) -> str:
    parts = []
    for block in _children(tc, _BLOCKS):
        if block.tag == _P:
            parts.append(_paragraph_text(block, walk))
        else:  # a nested table, flattened
            parts.extend(cell for row in _table_rows(block, walk) for cell in row)
    return " ".join(p for p in parts if p)


def _table_rows(tbl: Any, walk: _Walk) -> list[list[str]]:
    """The rows of a table held whole (one nested in a cell)."""
    rows = []
    for tr in _children(tbl, (_TR,)):
        walk.budget.entry()
        row = [""] * _grid_before(tr.find(_W + "trPr"))
        for tc in _children(tr, (_TC,)):
            span, merged = _span(tc.find(_W + "tcPr"))
            _add_cell(row, "" if merged else _cell_text(tc, walk), span)
        rows.append(row)
    return rows


_CONTAINER_OF = {(_BODY, "root"): "blocks", (_TBL, "blocks"): "rows", (_TR, "rows"): "cells", (_TC, "cells"): "content"}


def _body_kind(tag: str, parent: str) -> str | None:
    """What the children of an element of ``word/document.xml`` are, when the body is read one piece at a time:
    ``blocks`` (of the body), ``rows`` (of a table in the body), ``cells`` (of such a row), ``content`` (of such a
    cell), looking through content controls and custom XML; None inside a paragraph or a nested table, which are
    read whole. ``parent`` is what its parent's children are."""
    if parent == "document":
        return "root"
    if tag in _WRAPPERS:
        return parent if parent in ("blocks", "rows", "cells", "content") else None
    return _CONTAINER_OF.get((tag, parent))


def _body(stream: _Stream, walk: _Walk, builder: DocumentBuilder) -> None:
    """The body of ``word/document.xml`` into ``builder``, read as it is parsed: each paragraph of the body, each
    paragraph or nested table of a cell of a body table, is read when it ends and then dropped, so the tree never
    holds more than one of them (and the elements that contain it)."""
    rows: list[list[str]] = []  # of the body table being read
    row: list[str] = []
    before = 0
    cell: list[str] = []
    span, merged = 1, False
    for el, kind in stream.ends():  # (not inside a paragraph or nested table: read whole when that ends)
        tag = el.tag
        if kind == "blocks":
            if tag == _P:
                walk.budget.entry()
                _paragraph(el, walk, builder, {"paragraph": walk.paragraphs})
                walk.paragraphs += 1
            elif tag == _TBL:
                _table(rows, walk, builder)
                rows = []
            if tag in _BLOCKS:
                for note in walk.pending_notes:
                    builder.paragraph(note)
                walk.pending_notes.clear()
        elif kind == "rows" and tag == _TR:
            walk.budget.entry()
            rows.append([""] * before + row)
            row, before = [], 0
        elif kind == "cells":
            if tag == _W + "trPr" and el.getparent().tag == _TR:
                before = _grid_before(el)
            elif tag == _TC:
                _add_cell(row, "" if merged else " ".join(p for p in cell if p), span)
                cell, span, merged = [], 1, False
        elif kind == "content":
            if tag == _W + "tcPr" and el.getparent().tag == _TC:
                span, merged = _span(el)
            elif merged:
                pass  # a cell that continues a merged one: its text is the first cell's
            elif tag == _P:
                cell.append(_paragraph_text(el, walk))
            elif tag == _TBL:  # a nested table, flattened
                cell.extend(c for r in _table_rows(el, walk) for c in r)
        stream.drop(el)


def _table(rows: list[list[str]], walk: _Walk, builder: DocumentBuilder) -> None:
    if any(cell for row in rows for cell in row):
        walk.budget.text(3 * len(rows) * max(len(r) for r in rows))  # the pipes of the padded grid
        builder.locate({"table": walk.tables})
        builder.table(rows)
    walk.tables += 1


def _ole_problem(data: bytes) -> str:
    """What an OLE compound file named .docx is: its stream names are stored in UTF-16 in its directory."""
    if "EncryptedPackage".encode("utf-16-le") in data:
        return ("a password-protected (encrypted) DOCX file: open it in Word, remove the password "
                "(File > Info > Protect Document) and save it again")
    if "WordDocument".encode("utf-16-le") in data:
        return ("an old binary Word document (.doc, Word 97-2003), not DOCX: save it as .docx in Word, or convert "
                "it with: soffice --headless --convert-to docx FILE")
    return f"{_NOT_DOCX}: an OLE compound file (an old Office format?), not a zip package; save it as .docx"


def _open(data: bytes) -> zipfile.ZipFile:
    """The zip package of ``data``, its declared size checked, or a CorpusError saying why it is not one."""
    if data.startswith(_OLE_MAGIC):
        raise CorpusError(_ole_problem(data))
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
        unpacked = sum(i.file_size for i in z.infolist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as e:
        raise CorpusError(f"{_NOT_DOCX}: not a zip package ({e}); a DOCX file is one, check that it opens in "
                          "Word") from None
    if unpacked > MAX_UNPACKED_BYTES:
        z.close()
        raise CorpusError(f"{_NOT_DOCX}: it unpacks to {unpacked / 2**20:,.0f} MiB, over the "
                          f"{MAX_UNPACKED_BYTES >> 20} MiB read from one DOCX file (a zip bomb?)")
    return z


class DocxLoader:
    """A Word document's body: headings by style or outline level, tables, lists and footnotes (module docstring)."""

    name = "docx"
    version = "1"
    cache = True

    def __init__(self, config: DocxLoaderConfig | None = None):
        self.config = config or DocxLoaderConfig()

    def load(self, data: bytes, doc_id: str, source: str) -> Document:
        try:
            from docx.opc.constants import CONTENT_TYPE as CT
            from docx.opc.constants import RELATIONSHIP_TYPE as RT
            from lxml import etree  # noqa: F401 - what _Stream parses with
        except ImportError:
            raise missing_library("DOCX", "python-docx", "docx") from None
        with _open(data) as z:
            budget = _Budget()
            package = _rels(z, "", budget)
            main = next((n for t, n in package if t == RT.OFFICE_DOCUMENT), None)
            if main is None:
                raise CorpusError(f"{_NOT_DOCX}: a zip file without a main document (no officeDocument relationship "
                                  "in _rels/.rels): another kind of zip, or a damaged file")
            ctype = _content_type(z, main, budget)
            if ctype != CT.WML_DOCUMENT_MAIN:
                raise CorpusError(f"{_NOT_DOCX}: its main part is {ctype}, not a Word document (an Excel or "
                                  "PowerPoint file renamed .docx? a macro-enabled .docm?); save it as .docx")
            rels = _rels(z, main, budget)

            def part(reltype: str) -> _Stream | None:
                name = next((n for t, n in rels if t == reltype), None)
                return _Stream(z, name) if name is not None else None

            styles, default = _read_styles(s, budget) if (s := part(RT.STYLES)) else ({}, None)
            numbering = _read_numbering(s, budget) if (s := part(RT.NUMBERING)) else _Numbering()
            notes = {"footnotes": _read_notes(s, "footnote", budget) if (s := part(RT.FOOTNOTES)) else {},
                     "endnotes": _read_notes(s, "endnote", budget) if (s := part(RT.ENDNOTES)) else {}}
            walk = _Walk(styles, default, numbering, notes, budget)
            builder = DocumentBuilder(doc_id, source=source, format=self.name)
            _body(_Stream(z, main, _body_kind), walk, builder)
            if not builder.parts:
                raise CorpusError("no text: the document has no paragraph or table with text in its body (only "
                                  "images, or empty?)")
            title = _core_title(z, package, RT.CORE_PROPERTIES, budget)
        stem = doc_id.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        # no title in the core properties: the builder takes the first top-level heading, else the file's stem
        return builder.build(title=title, fallback_title=stem,
                             metadata={"paragraphs": walk.paragraphs, "tables": walk.tables})


def _paragraph(p: Any, walk: _Walk, builder: DocumentBuilder, where: dict[str, int]) -> None:
    """One body paragraph as a heading, a list item or a paragraph, located at ``where``."""
    ppr = p.find(_W + "pPr")
    pstyle = ppr.find(_W + "pStyle") if ppr is not None else None
    outline, num, name = _style_info(walk, pstyle.get(_VAL) if pstyle is not None else None)
    if _TOC_STYLE_RE.match(name):
        return
    own = _outline(ppr)
    level = None
    if own is not None:
        level = own + 1 if 0 <= own <= 8 else None
    elif m := _HEADING_STYLE_RE.match(name):
        level = int(m.group(1))
    elif name == "title":
        level = 1
    elif outline is not None and 0 <= outline <= 8:
        level = outline + 1
    text = _paragraph_text(p, walk)
    if not text:
        return
    builder.locate(where)
    if level is not None:
        builder.heading(level, text)
        return
    list_style = _LIST_STYLE_RE.match(name)
    named_depth = int(list_style.group(2) or 1) - 1 if list_style else 0  # "List Bullet 2": one level in
    num = _num_pr(ppr) or num
    if num is not None and num[0] != "0":
        fmt, start = walk.formats.get(num) or ("bullet", 1)
        if fmt != "none":
            _item(builder, walk, text, num[0], max(num[1], named_depth), fmt != "bullet", start)
            return
    if list_style:  # a list style without numbering of its own
        _item(builder, walk, text, "style:" + list_style.group(1), named_depth, list_style.group(1) == "number", 1)
        return
    builder.paragraph(text)


def _item(builder: DocumentBuilder, walk: _Walk, text: str, list_id: str, depth: int, ordered: bool,
          start: int) -> None:
    """A list item, numbered as Word counts: per list and level, a deeper level restarting under each item."""
    counts = walk.counters.setdefault(list_id, [])
    depth = max(0, min(depth, 8))
    del counts[depth + 1:]
    while len(counts) <= depth:
        counts.append(0)
    counts[depth] += 1
    builder.item(text, depth=depth, ordered=ordered, number=start + counts[depth] - 1)


LOADERS.register("docx", DocxLoaderConfig, DocxLoader, summary="Word (.docx): heading styles, tables, lists",
                 suffixes=(".docx",), replace=True)
