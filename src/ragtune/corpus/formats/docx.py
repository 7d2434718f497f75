"""Word files (DOCX, Word 2007+): the body in document order, headings by style or outline level, tables, lists.

python-docx opens the package (zip, content types, relationships, the main document part, styles, numbering and
core properties); the body is then walked over its XML elements directly. That walk is what makes the loader fast
and faithful: python-docx's own ``Paragraph.style`` looks each style up again per paragraph (6-7 s for the
813 k-character DOJ handbook, against about 0.5 s for this whole loader), and its ``Paragraph.text`` reads only the runs
directly in a paragraph or a hyperlink, so it drops the text of tracked insertions, content controls, smart tags
and simple fields.

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
import re
import zipfile
import zlib
from collections.abc import Iterator
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
_MAX_UNPACKED_BYTES = 1 << 30  # what python-docx reads into memory: every part of the package, unpacked
_NOT_DOCX = "not a readable DOCX (Word 2007+) file"


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
class _Walk:
    """What the walk over a document needs besides the builder: styles, numbering, notes and counters."""

    styles: dict[str, _Style]
    default_style: str | None
    formats: dict[tuple[str, int], tuple[str, int]]  # (numId, ilvl) -> (numFmt, start)
    notes: dict[str, dict[str, str]]  # "footnotes"/"endnotes" -> note id -> text
    resolved: dict[str | None, tuple[int | None, tuple[str, int] | None, str]] = field(default_factory=dict)
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


def _read_styles(root: Any) -> tuple[dict[str, _Style], str | None]:
    styles: dict[str, _Style] = {}
    default = None
    for s in root.iterchildren(_W + "style"):
        if s.get(_TYPE) not in (None, "paragraph"):
            continue
        sid = s.get(_W + "styleId") or ""
        name = s.find(_W + "name")
        based = s.find(_W + "basedOn")
        ppr = s.find(_W + "pPr")
        styles[sid] = _Style(" ".join((name.get(_VAL, "") if name is not None else sid).lower().split()),
                             based.get(_VAL) if based is not None else None, _outline(ppr), _num_pr(ppr))
        if s.get(_W + "default") in ("1", "true", "on"):
            default = sid
    return styles, default


def _read_numbering(root: Any) -> dict[tuple[str, int], tuple[str, int]]:
    abstract: dict[str, dict[int, tuple[str, int]]] = {}
    for a in root.iterchildren(_W + "abstractNum"):
        levels = abstract.setdefault(a.get(_W + "abstractNumId", ""), {})
        for lvl in a.iterchildren(_W + "lvl"):
            fmt, start = lvl.find(_W + "numFmt"), lvl.find(_W + "start")
            levels[_int(lvl.get(_W + "ilvl"), 0) or 0] = (fmt.get(_VAL, "decimal") if fmt is not None else "decimal",
                                                         _int(start.get(_VAL), 1) if start is not None else 1)
    out: dict[tuple[str, int], tuple[str, int]] = {}
    for n in root.iterchildren(_W + "num"):
        ref = n.find(_W + "abstractNumId")
        num_id = n.get(_W + "numId", "")
        for ilvl, spec in abstract.get(ref.get(_VAL, "") if ref is not None else "", {}).items():
            out[(num_id, ilvl)] = spec
        for override in n.iterchildren(_W + "lvlOverride"):
            start = override.find(_W + "startOverride")
            ilvl = _int(override.get(_W + "ilvl"), 0) or 0
            if start is not None and (num_id, ilvl) in out:
                out[(num_id, ilvl)] = (out[(num_id, ilvl)][0], _int(start.get(_VAL), 1) or 1)
    return out


def _style_info(walk: _Walk, sid: str | None) -> tuple[int | None, tuple[str, int] | None, str]:
    """(outline level, numbering, name) of a paragraph style, each from the first style up its basedOn chain that
    sets it; an unknown style id is the default paragraph style, as in Word."""
    if sid in walk.resolved:
        return walk.resolved[sid]
    key = sid
    if sid not in walk.styles:
        sid = walk.default_style
    outline: int | None = None
    num: tuple[str, int] | None = None
    name = walk.styles[sid].name if sid in walk.styles else ""
    seen: set[str] = set()
    while sid in walk.styles and sid not in seen:
        seen.add(sid)
        style = walk.styles[sid]
        outline = style.outline if outline is None else outline
        num = style.num if num is None else num
        sid = style.based_on
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
    return "".join(out).strip()


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


def _cell_text(tc: Any, walk: _Walk) -> str:
    parts = []
    for block in _children(tc, _BLOCKS):
        if block.tag == _P:
            parts.append(_paragraph_text(block, walk))
        else:  # a nested table, flattened
            parts.extend(cell for row in _table_rows(block, walk) for cell in row)
    return " ".join(p for p in parts if p)


def _table_rows(tbl: Any, walk: _Walk) -> list[list[str]]:
    rows = []
    for tr in _children(tbl, (_TR,)):
        trpr = tr.find(_W + "trPr")
        before = trpr.find(_W + "gridBefore") if trpr is not None else None
        row = [""] * (_int(before.get(_VAL), 0) or 0 if before is not None else 0)
        for tc in _children(tr, (_TC,)):
            tcpr = tc.find(_W + "tcPr")
            span, merged = 1, False
            if tcpr is not None:
                gs, vm, hm = tcpr.find(_W + "gridSpan"), tcpr.find(_W + "vMerge"), tcpr.find(_W + "hMerge")
                span = max(1, _int(gs.get(_VAL), 1) or 1) if gs is not None else 1
                merged = (vm is not None and vm.get(_VAL, "continue") == "continue") or \
                         (hm is not None and hm.get(_VAL, "continue") == "continue")
            row.append("" if merged else _cell_text(tc, walk))
            row.extend([""] * (span - 1))
        rows.append(row)
    return rows


def _notes(part: Any, reltype: str, kind: str, parse_xml: Any) -> dict[str, str]:
    """Note id -> its text, for the footnotes or endnotes part of the document (separators left out)."""
    for rel in part.rels.values():
        if rel.reltype == reltype and not rel.is_external:
            root = parse_xml(rel.target_part.blob)
            walk = _Walk({}, None, {}, {"footnotes": {}, "endnotes": {}})
            out = {}
            for note in root.iterchildren(_W + kind):
                if note.get(_TYPE) in (None, "normal"):
                    text = " ".join(t for p in note.iter(_P) if (t := _paragraph_text(p, walk)))
                    if text:
                        out[note.get(_ID, "")] = text
            return out
    return {}


def _ole_problem(data: bytes) -> str:
    """What an OLE compound file named .docx is: its stream names are stored in UTF-16 in its directory."""
    if "EncryptedPackage".encode("utf-16-le") in data:
        return ("a password-protected (encrypted) DOCX file: open it in Word, remove the password "
                "(File > Info > Protect Document) and save it again")
    if "WordDocument".encode("utf-16-le") in data:
        return ("an old binary Word document (.doc, Word 97-2003), not DOCX: save it as .docx in Word, or convert "
                "it with: soffice --headless --convert-to docx FILE")
    return f"{_NOT_DOCX}: an OLE compound file (an old Office format?), not a zip package; save it as .docx"


def _open(data: bytes) -> Any:
    """The python-docx Document of ``data``, or a CorpusError saying why it is not one."""
    import docx
    from lxml import etree

    if data.startswith(_OLE_MAGIC):
        raise CorpusError(_ole_problem(data))
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            unpacked = sum(i.file_size for i in z.infolist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as e:
        raise CorpusError(f"{_NOT_DOCX}: not a zip package ({e}); a DOCX file is one, check that it opens in "
                          "Word") from None
    if unpacked > _MAX_UNPACKED_BYTES:
        raise CorpusError(f"{_NOT_DOCX}: it unpacks to {unpacked / 2**20:,.0f} MiB, over the "
                          f"{_MAX_UNPACKED_BYTES >> 20} MiB read from one DOCX file (a zip bomb?)")
    try:
        return docx.Document(io.BytesIO(data))
    except KeyError as e:
        missing = m.group(1) if (m := re.search(r"'([^']+)'", str(e))) else str(e)
        raise CorpusError(f"{_NOT_DOCX}: a zip file without {missing} (a Word document's text is in "
                          "word/document.xml): another kind of zip, or a damaged file") from None
    except ValueError as e:
        if "content type" in str(e):
            ctype = str(e).rsplit(" ", 1)[-1].strip("'")
            raise CorpusError(f"{_NOT_DOCX}: its main part is {ctype}, not a Word document (an Excel or PowerPoint "
                              "file renamed .docx? a macro-enabled .docm?); save it as .docx") from None
        raise CorpusError(f"{_NOT_DOCX}: {e}") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, etree.XMLSyntaxError) as e:
        raise CorpusError(f"{_NOT_DOCX}: damaged ({type(e).__name__}: {e}); check that it opens in Word") from None


class DocxLoader:
    """A Word document's body: headings by style or outline level, tables, lists and footnotes (module docstring)."""

    name = "docx"
    version = "1"
    cache = True

    def __init__(self, config: DocxLoaderConfig | None = None):
        self.config = config or DocxLoaderConfig()

    def load(self, data: bytes, doc_id: str, source: str) -> Document:
        try:
            from docx.opc.constants import RELATIONSHIP_TYPE as RT
            from docx.oxml.parser import parse_xml
        except ImportError:
            raise missing_library("DOCX", "python-docx", "docx") from None
        document = _open(data)
        part = document.part
        styles, default = _read_styles(part.styles.element) if _has_rel(part, RT.STYLES) else ({}, None)
        formats = _read_numbering(part.numbering_part.element) if _has_rel(part, RT.NUMBERING) else {}
        walk = _Walk(styles, default, formats, {"footnotes": _notes(part, RT.FOOTNOTES, "footnote", parse_xml),
                                                "endnotes": _notes(part, RT.ENDNOTES, "endnote", parse_xml)})
        builder = DocumentBuilder(doc_id, source=source, format=self.name)
        for block in _children(document.element.body, _BLOCKS):
            if block.tag == _P:
                _paragraph(block, walk, builder, {"paragraph": walk.paragraphs})
                walk.paragraphs += 1
            else:
                rows = _table_rows(block, walk)
                if any(cell for row in rows for cell in row):
                    builder.locate({"table": walk.tables})
                    builder.table(rows)
                walk.tables += 1
            for note in walk.pending_notes:
                builder.paragraph(note)
            walk.pending_notes.clear()
        if not builder.text.strip():
            raise CorpusError("no text: the document has no paragraph or table with text in its body (only "
                              "images, or empty?)")
        stem = doc_id.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        # no title in the core properties: the builder takes the first top-level heading, else the file's stem
        return builder.build(title=_core_title(part.package, RT.CORE_PROPERTIES), fallback_title=stem,
                             metadata={"paragraphs": walk.paragraphs, "tables": walk.tables})


def _has_rel(part: Any, reltype: str) -> bool:
    return any(r.reltype == reltype and not r.is_external for r in part.rels.values())


def _core_title(package: Any, reltype: str) -> str | None:
    """The title in the file's core properties; None when it has none (python-docx would make one up)."""
    if not _has_rel(package, reltype):
        return None
    title = package.core_properties.title
    return title.strip() or None if isinstance(title, str) else None


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
        fmt, start = walk.formats.get(num, ("bullet", 1))
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
