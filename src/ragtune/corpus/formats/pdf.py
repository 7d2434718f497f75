"""PDF files, read with PDFium (the ``pypdfium2`` package): text in reading order, page by page, sections from the
outline or from font sizes, code blocks with their line breaks and indentation.

Why PDFium: measured on the real files of the shared format set (117-page lecture notes, five CPython tutorial
chapters printed by Chromium, a two-column LaTeX paper), it extracts text 18-45 times faster than pypdf or
pdfplumber, keeps a two-column page in column order (pdfplumber interleaves the columns), decomposes ligatures and
marks the hyphens it finds at line ends, gives each character's font, size and position (for headings and code
blocks) and each outline entry's page and position; its licence (BSD-3 / Apache-2.0) suits a library others embed.
It finds no tables: a table's cells are read as lines of text.

How a page becomes blocks:

- **Lines** are PDFium's (it breaks lines where the text moves to a new baseline); a line drawn wholly outside the
  page's box is not text a reader sees and is dropped (ImageMagick writes an invisible ``Background`` there).
- **Code**: consecutive lines set wholly in a monospace font are one code block; each character is put back in its
  column from its position, so indentation the PDF draws as glyph offsets (not spaces) is kept.
- **Paragraphs**: other lines are joined with spaces until a vertical gap, a change of font size, a first-line
  indent, a short line ending a sentence, or a bullet (``•``, which starts a list item); a word that PDFium found
  hyphenated at a line end is joined again. Ligatures and other presentation forms are normalised (NFKC).
- **Headings**: each outline entry is a heading at its destination page, placed where its title is on that page
  (compared without whitespace and case: Chromium's outlines lose the space at a heading's line wrap), its text
  taken from the page; a title not on its page is placed at the destination's position (the page start when it
  has none) with the outline's text. Levels are the outline's depth. Without an outline (or with ``headings =
  "fonts"``) a line clearly larger than the body text, or a whole line in bold, that is short and does not end a
  sentence is a heading, its level the rank of its size. Headings carry no ids: their anchors are slugs without
  the section number, as in the same document's reStructuredText or HTML.

Each page starts with ``locate({"page": N})`` (1-based), so every chunk carries its page (and ``page_end``).
"""

from __future__ import annotations

import ctypes
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from ...config import Config, Opt
from ...errors import ConfigError, CorpusError
from ...registry import LOADERS
from ...types import Document
from . import missing_library
from .builder import DocumentBuilder

__all__ = ["PdfLoader", "PdfLoaderConfig"]

HEADING_SOURCES = ("auto", "outline", "fonts", "none")

_MONO_NAME_RE = re.compile(r"mono|courier|consol|menlo|cmtt|lmtt|typewriter|code|inconsolata|sfmt|cousine", re.I)
_BOLD_NAME_RE = re.compile(r"bold|black|heavy|semibold|demi|cmbx|-bx|\bbx", re.I)
_BULLETS = "•◦▪▫‣●○■□∙·"
_SENTENCE_END = ".!?:;"
_PRESENTATION_FORMS = re.compile("[\ufb00-\ufdff\ufe70-\ufeff]+")  # ligatures; Hebrew and Arabic letter forms
_WS_RE = re.compile(r"\s+")
_HEADING_SIZE_RATIO = 1.15  # a line this much larger than the body text may be a heading
_PAGE_FURNITURE_PAGES = 3  # a "heading" text seen on more pages than this is a running head, not a heading


@dataclass(frozen=True)
class PdfLoaderConfig(Config):
    password: Annotated[str, Opt("password of encrypted PDFs (the one that opens them)")] = ""
    headings: Annotated[str, Opt("where headings come from: outline (bookmarks), fonts (larger or bold lines), "
                                 "none, or auto (the outline when the file has one, else fonts)")] = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.password, str):
            raise ConfigError(f"PdfLoaderConfig: password must be a string, got {type(self.password).__name__}")
        if self.headings not in HEADING_SOURCES:
            raise ConfigError(f"PdfLoaderConfig: headings must be one of {', '.join(HEADING_SOURCES)}, "
                              f"got {self.headings!r}")


@dataclass(slots=True)
class _Line:
    """One line of a page as PDFium reads it, with what block and heading detection need."""

    text: str
    x0: float  # pen position of the first character
    x1: float  # right edge of the last character
    y: float  # baseline (PDF coordinates: up is larger)
    size: float  # font size (PDFium's; only comparable within one file)
    bold: bool  # the whole line (first, middle and last character) in a bold font
    mono: bool  # the whole line in a monospace font
    hyphen: bool = False  # ends in a hyphen PDFium found at the line end: the word goes on in the next line
    columns: list[tuple[float, str]] = field(default_factory=list)  # monospace lines: (pen x, char) per character


@dataclass(frozen=True, slots=True)
class _Mark:
    """A heading to write before line ``line`` of a page, replacing ``consumed`` lines from there."""

    line: int
    level: int
    title: str
    consumed: int
    order: int


def _normalise(text: str) -> str:
    """Ligatures (``ﬂ``) and presentation forms as the letters they stand for; other characters as they are
    (NFKC on all text would turn ``x²`` into ``x2``)."""
    return _PRESENTATION_FORMS.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)


def _squash(text: str) -> str:
    """Text compared without whitespace or case, to find an outline title on its page."""
    return _WS_RE.sub("", _normalise(text)).casefold()


class _PageReader:
    """Reads the lines of PDFium text pages; font facts are looked up once per (flags, name)."""

    def __init__(self, raw: Any):
        self.raw = raw
        self.fonts: dict[tuple[int, bytes], tuple[bool, bool]] = {}
        self._name = ctypes.create_string_buffer(256)
        self._flags = ctypes.c_int()
        self._d = [ctypes.c_double() for _ in range(4)]

    def _font(self, tp: Any, i: int) -> tuple[float, bool, bool]:
        """(size, monospace, bold) of character ``i``."""
        raw = self.raw
        n = raw.FPDFText_GetFontInfo(tp, i, self._name, len(self._name), ctypes.byref(self._flags))
        key = (self._flags.value, self._name.value if n else b"")
        facts = self.fonts.get(key)
        if facts is None:
            name = key[1].decode("latin-1").split("+", 1)[-1]
            facts = (bool(key[0] & 1) or bool(_MONO_NAME_RE.search(name)),  # bit 1: FixedPitch
                     bool(key[0] & (1 << 18)) or bool(_BOLD_NAME_RE.search(name)))  # bit 19: ForceBold
            self.fonts[key] = facts
        weight = raw.FPDFText_GetFontWeight(tp, i)
        return raw.FPDFText_GetFontSize(tp, i), facts[0], facts[1] or weight >= 600

    def _origin(self, tp: Any, i: int) -> tuple[float, float]:
        x, y = self._d[0], self._d[1]
        self.raw.FPDFText_GetCharOrigin(tp, i, ctypes.byref(x), ctypes.byref(y))
        return x.value, y.value

    def _box(self, tp: Any, i: int) -> tuple[float, float, float, float]:
        left, right, bottom, top = self._d
        self.raw.FPDFText_GetCharBox(tp, i, ctypes.byref(left), ctypes.byref(right), ctypes.byref(bottom),
                                     ctypes.byref(top))
        return left.value, bottom.value, right.value, top.value

    def lines(self, textpage: Any, page_box: Sequence[float]) -> list[_Line]:
        """The page's lines in PDFium's order (the order the text is drawn in: column by column)."""
        raw, tp = self.raw, textpage.raw
        n = raw.FPDFText_CountChars(tp)
        text = textpage.get_text_range()
        if len(text) != n:  # characters outside UCS-2, or ones PDFium leaves out of its text: one at a time
            text = "".join(chr(min(raw.FPDFText_GetUnicode(tp, i), 0x10FFFF)) for i in range(n))
        out: list[_Line] = []
        chars: list[tuple[int, str]] = []
        for i, c in enumerate(text):
            if c in "\r\n":
                self._finish(tp, chars, False, page_box, out)
                chars = []
            elif c == "\x02" or c == "\ufffe":  # PDFium's line-end hyphen (its line break is left out)
                chars.append((i, "-"))
                self._finish(tp, chars, True, page_box, out)
                chars = []
            elif c >= " " and not "\ud800" <= c <= "\udfff" and c != "\uffff":
                chars.append((i, c))
            elif c == "\t":
                chars.append((i, " "))
        self._finish(tp, chars, False, page_box, out)
        return out

    def _finish(self, tp: Any, chars: list[tuple[int, str]], hyphen: bool, page_box: Sequence[float],
                out: list[_Line]) -> None:
        ink = [i for i, c in chars if not c.isspace()]
        if not ink:
            return
        first, last = ink[0], ink[-1]
        x0, y = self._origin(tp, first)
        l0, b0, _, t0 = self._box(tp, first)
        l1, b1, r1, t1 = self._box(tp, last)
        left, bottom, right, top = page_box
        if min(l0, l1) > right or max(r1, l0) < left or min(b0, b1) > top or max(t0, t1) < bottom:
            return  # drawn outside the page: no reader sees it
        samples = [self._font(tp, i) for i in dict.fromkeys((first, ink[len(ink) // 2], last))]
        mono = all(s[1] for s in samples)
        text = "".join(c for _, c in chars).strip()
        # the size of the line's prose: inline code is often set smaller
        size = max((s[0] for s in samples if not s[1]), default=max(s[0] for s in samples))
        line = _Line(text=text if mono else _normalise(text), x0=x0, x1=r1, y=y, size=size,
                     bold=all(s[2] for s in samples),
                     mono=mono, hyphen=hyphen)
        if mono:
            line.columns = [(self._origin(tp, i)[0], c) for i, c in chars if not c.isspace()]
        out.append(line)


def _merge_fragments(lines: Sequence[_Line]) -> list[_Line]:
    """Pieces of one printed line that PDFium broke apart (a superscript, a subscript and the text after it) as
    one line: a piece that starts right of where the line before ends, its baseline within half a font size."""
    out: list[_Line] = []
    for line in lines:
        prev = out[-1] if out else None
        if prev is None or prev.hyphen or line.x0 < prev.x1 - 1 or \
                abs(line.y - prev.y) >= 0.5 * max(prev.size, line.size):
            out.append(line)
            continue
        main = prev if len(prev.text) >= len(line.text) else line
        space = " " if line.x0 - prev.x1 > 0.15 * main.size else ""
        mono = prev.mono and line.mono
        out[-1] = _Line(text=prev.text + space + line.text, x0=prev.x0, x1=max(prev.x1, line.x1), y=main.y,
                        size=main.size, bold=prev.bold and line.bold, mono=mono, hyphen=line.hyphen,
                        columns=prev.columns + line.columns if mono else [])
    return out


def _drop_page_furniture(pages: list[list[_Line]]) -> None:
    """Running heads and page numbers out of the text: the top or bottom line of a page (not its only line) that
    is only a number, or whose letters are those of the top (bottom) line of at least two other pages."""
    if len(pages) < 3:
        return

    def key(line: _Line) -> str:
        return re.sub(r"[\W\d_]+", "", line.text.casefold())

    for pick in (max, min):
        ends = [pick(range(len(lines)), key=lambda i, lines=lines: lines[i].y) if lines else None for lines in pages]
        counts = Counter(key(lines[i]) for lines, i in zip(pages, ends) if i is not None and not lines[i].mono)
        for lines, i in zip(pages, ends):
            if i is None or lines[i].mono or len(lines) == 1:  # a page's only line is its text
                continue
            k = key(lines[i])
            if (k and counts[k] >= 3) or re.fullmatch(r"\W*(\d+|[ivxlc]+)\W*", lines[i].text, re.I):
                del lines[i]


def _mode(values: Sequence[float], default: float) -> float:
    counts = Counter(round(v, 1) for v in values)
    return counts.most_common(1)[0][0] if counts else default


@dataclass
class _Layout:
    """Facts of the whole document that page layout is judged against."""

    body_size: float
    gap: dict[bool, float]  # usual baseline distance between consecutive lines, for text (False) and code (True)
    words: Counter[str]  # how often each word (case-folded) occurs: to tell split words from compounds

    @classmethod
    def of(cls, pages: Sequence[Sequence[_Line]]) -> _Layout:
        weights: Counter[float] = Counter()
        words: Counter[str] = Counter()
        gaps: dict[bool, list[float]] = {False: [], True: []}
        for lines in pages:
            for a, b in zip(lines, lines[1:]):
                if a.mono == b.mono and abs(a.size - b.size) < 0.05 * max(a.size, 0.1) and 0 < a.y - b.y:
                    gaps[a.mono].append(a.y - b.y)
            for line in lines:
                if not line.mono:
                    weights[round(line.size, 1)] += len(line.text)
                    words.update(re.findall(r"\w+", line.text.casefold()))
        body = weights.most_common(1)[0][0] if weights else 10.0
        text_gap = _mode(gaps[False], 1.2 * body)
        return cls(body_size=body, gap={False: text_gap, True: _mode(gaps[True], text_gap)}, words=words)


def _code_text(lines: Sequence[_Line], line_gap: float) -> str:
    """A code block's lines with each character in its column (its position over the character width), so the
    indentation and alignment the PDF drew by position come back as spaces; a vertical space of more than a
    line (``line_gap``) between two lines comes back as blank lines."""
    steps = [b[0] - a[0] for line in lines for a, b in zip(line.columns, line.columns[1:]) if b[0] > a[0]]
    width = sorted(steps)[len(steps) // 2] if steps else 0.0
    if width <= 0:
        return "\n".join(line.text for line in lines)
    left = min(line.columns[0][0] for line in lines if line.columns)
    out: list[str] = []
    for k, line in enumerate(lines):
        if k and line_gap > 0:
            out.extend([""] * min(max(int(round((lines[k - 1].y - line.y) / line_gap)) - 1, 0), 2))
        row: list[str] = []
        last = None
        for x, c in line.columns:
            col = max(int(round((x - left) / width)), 0)
            # a character less than one and a half widths after the one before follows it (a proportional
            # glyph inside a code line must not open a gap); after a wider step it goes to its column
            if col > len(row) and (last is None or x - last >= 1.5 * width):
                row.extend(" " * (col - len(row)))
            row.append(c)
            last = x
        out.append("".join(row).rstrip())
    return "\n".join(out)


def _keeps_hyphen(head: str, tail: str, words: Counter[str]) -> bool:
    """Whether a word broken after a hyphen at a line end is a compound (``first-out``) rather than one word the
    typesetter split (``fer-mentum``): the joined word seen elsewhere in the document says one word; else both
    halves seen elsewhere as words say a compound (LaTeX splits words at syllables, Chromium only at hyphens)."""
    h, t = re.search(r"\w+$", head), re.match(r"\w+", tail)
    if not h or not t:
        return True
    if words[(h.group() + t.group()).casefold()]:
        return False
    return words[h.group().casefold()] >= 2 and words[t.group().casefold()] >= 2


def _join(lines: Sequence[_Line], words: Counter[str]) -> str:
    """A paragraph's lines as one line: a word split at a line end joined again."""
    parts: list[str] = []
    for i, line in enumerate(lines):
        text = line.text
        if i + 1 < len(lines) and (line.hyphen or text.endswith("\u00ad")):
            parts.append(text if line.hyphen and _keeps_hyphen(text[:-1], lines[i + 1].text, words) else text[:-1])
        else:
            parts.append(text + " ")
    return "".join(parts).strip()


def _is_bullet(line: _Line) -> bool:
    return len(line.text) > 1 and line.text[0] in _BULLETS and (line.text[1].isspace() or len(line.text) == 1)


def _write_page(b: DocumentBuilder, lines: Sequence[_Line], marks: Sequence[_Mark], layout: _Layout) -> None:
    """The page's lines as paragraphs, list items, code blocks and the headings ``marks`` put between them."""
    by_line: dict[int, list[_Mark]] = {}
    for m in sorted(marks, key=lambda m: (m.line, m.order)):
        by_line.setdefault(m.line, []).append(m)
    block: list[_Line] = []

    def flush() -> None:
        if not block:
            return
        if block[0].mono:
            b.code(_code_text(block, layout.gap[True]))
        elif _is_bullet(block[0]):
            b.item(_join(block, layout.words)[1:].strip())
        else:
            b.paragraph(_join(block, layout.words))
        block.clear()

    def starts_block(prev: _Line, line: _Line) -> bool:
        if prev.mono != line.mono:
            return True
        gap = prev.y - line.y
        usual = layout.gap[line.mono]
        if line.mono:
            return False  # space between code lines is a blank line of the code (see _code_text)
        if gap < -0.5 * usual or gap > 1.45 * usual:  # a new column, or space between blocks
            return not (prev.hyphen or gap < 0 and prev.text[-1:] not in _SENTENCE_END)
        if abs(prev.size - line.size) > 0.05 * max(prev.size, line.size) or _is_bullet(line):
            return True
        if line.x0 > prev.x0 + 0.6 * usual and prev is not block[0] and not prev.hyphen:
            return True  # a first-line indent (the first line of a list item is the one less indented)
        widest = max(x.x1 for x in block)
        return prev.text[-1:] in _SENTENCE_END and prev.x1 < widest - 2.5 * usual and line.x1 > prev.x1

    i = 0
    while i < len(lines):
        consumed = 0
        for m in by_line.get(i, ()):
            flush()
            b.heading(m.level, m.title)
            consumed = max(consumed, m.consumed)
        if consumed:
            i += consumed
            continue
        line = lines[i]
        if block and starts_block(block[-1], line):
            flush()
        block.append(line)
        i += 1
    for m in by_line.get(len(lines), ()):
        flush()
        b.heading(m.level, m.title)
    flush()


def _outline(doc: Any, n_pages: int) -> list[tuple[int, str, int, float | None]]:
    """(level, title, 0-based page, y or None) of each outline entry that leads to a page of this file."""
    out = []
    for item in doc.get_toc():
        title = " ".join((item.get_title() or "").split())
        dest = item.get_dest()
        page = dest.get_index() if dest is not None else None
        if not title or page is None or not 0 <= page < n_pages:
            continue
        y: float | None = None
        try:
            mode, view = dest.get_view()
            if mode == 1 and len(view) >= 2 and view[1]:  # /XYZ left top zoom
                y = float(view[1])
        except Exception:  # noqa: BLE001 - a destination without a readable view still has its page
            y = None
        out.append((item.level + 1, title, page, y))
    return out


def _place_outline(pages: Sequence[Sequence[_Line]], entries: Sequence[tuple[int, str, int, float | None]]
                   ) -> list[list[_Mark]]:
    """Each outline entry as a heading on its page: over the lines (one to three, a wrapped heading) that read as
    its title, the occurrence nearest its destination's position; else at that position, or the page start."""
    marks: list[list[_Mark]] = [[] for _ in pages]
    taken: set[tuple[int, int]] = set()
    for order, (level, title, page, y) in enumerate(entries):
        lines = pages[page]
        want = _squash(title)
        found: list[tuple[float, int, int]] = []
        for i in range(len(lines)):
            joined = ""
            for k in range(3):
                if i + k >= len(lines) or (page, i + k) in taken:
                    break
                joined += _squash(lines[i + k].text)
                if joined == want:
                    found.append((abs(lines[i].y - y) if y is not None else float(i), i, k + 1))
                    break
                if not want.startswith(joined):
                    break
        if found:
            _, at, n = min(found)
            taken.update((page, at + j) for j in range(n))
            text = " ".join(line.text for line in lines[at:at + n])
            marks[page].append(_Mark(at, level, text, n, order))
        else:
            at = next((j for j, line in enumerate(lines) if y is not None and line.y <= y + 1), 0 if y is None
                      else len(lines))
            marks[page].append(_Mark(at, level, title, 0, order))
    return marks


def _font_headings(pages: Sequence[Sequence[_Line]], layout: _Layout) -> list[list[_Mark]]:
    """Headings from type: short lines clearly larger than the body text (or wholly bold, at body size, where
    the body is not bold and no line is larger), not ending a sentence, not repeated on many pages (a running
    head); wrapped headings are joined. The level is the rank of the size."""
    body = layout.body_size

    def candidate(line: _Line) -> float | None:
        text = line.text
        if line.mono or len(text) > 150 or sum(c.isalpha() for c in text) < 2 or text[-1] in ".,;" \
                or _is_bullet(line):
            return None
        if line.size >= body * _HEADING_SIZE_RATIO:
            return round(line.size, 1)
        if line.bold and len(text) <= 80 and abs(line.size - body) < 0.05 * body:
            return 0.0  # bold at body size: below every larger size
        return None

    found: list[list[tuple[int, int, float, str]]] = []
    seen_on: Counter[str] = Counter()
    for lines in pages:
        groups: list[tuple[int, int, float, str]] = []
        i = 0
        while i < len(lines):
            size = candidate(lines[i])
            if size is None:
                i += 1
                continue
            j = i + 1
            while j < len(lines) and j - i < 3 and candidate(lines[j]) == size and \
                    0 < lines[j - 1].y - lines[j].y < 2.0 * lines[j].size:  # a heading wrapped onto a next line
                j += 1
            text = " ".join(line.text for line in lines[i:j])
            groups.append((i, j - i, size, text))
            i = j
        found.append(groups)
        seen_on.update({re.sub(r"\d+", "", _squash(g[3])) for g in groups})
    sizes = sorted({g[2] for groups in found for g in groups if g[2] > 0}, reverse=True)
    # bold lines at body size are headings only in a file without larger ones and whose body is not bold
    no_bold = bool(sizes) or any(line.bold for lines in pages for line in lines if round(line.size, 1) == body
                                 and not line.mono and len(line.text) > 80)
    rank = {s: i + 1 for i, s in enumerate(sizes)}
    rank[0.0] = len(sizes) + 1
    marks: list[list[_Mark]] = []
    for groups in found:
        page_marks = []
        for order, (i, n, size, text) in enumerate(groups):
            if seen_on[re.sub(r"\d+", "", _squash(text))] > _PAGE_FURNITURE_PAGES or size == 0.0 and no_bold:
                continue
            page_marks.append(_Mark(i, min(rank[size], 6), text, n, order))
        marks.append(page_marks)
    return marks


def _metadata_title(doc: Any) -> str:
    try:
        title = doc.get_metadata_value("Title")
    except Exception:  # noqa: BLE001 - unreadable metadata is no title, not an unreadable file
        return ""
    return " ".join(title.replace("\x00", " ").split()) if isinstance(title, str) else ""


class PdfLoader:
    """Reads a PDF's text layer page by page (see the module docstring); a file without one is an error."""

    name = "pdf"
    version = "1"
    cache = True

    def __init__(self, config: PdfLoaderConfig | None = None):
        self.config = config or PdfLoaderConfig()

    def _open(self, pdfium: Any, data: bytes) -> Any:
        if not data.strip():
            raise CorpusError("empty file: not a PDF (a PDF starts with %PDF-); replace it with the real document "
                              "or remove it from the corpus")
        if b"%PDF-" not in data[:1024]:
            raise CorpusError(f"not a readable PDF: it does not start with %PDF- (it starts with {data[:16]!r}); "
                              "check what the file really is, or remove it from the corpus")
        try:
            return pdfium.PdfDocument(data, password=self.config.password or None)
        except pdfium.PdfiumError as e:
            code = getattr(e, "err_code", None)
            raw = pdfium.raw
            if code == raw.FPDF_ERR_PASSWORD:
                if self.config.password:
                    raise CorpusError("encrypted, and the password given is not its password: pass the right one "
                                      "with loader option pdf.password=...") from None
                raise CorpusError("encrypted: pass its password with loader option pdf.password=...") from None
            if code == raw.FPDF_ERR_SECURITY:
                raise CorpusError("encrypted with a security handler PDFium does not support: decrypt it first "
                                  "(e.g. `qpdf --decrypt IN.pdf OUT.pdf`) and load the result") from None
            reason = "its structure is damaged or it is cut short" if code == raw.FPDF_ERR_FORMAT else str(e)
            raise CorpusError(f"not a readable PDF: {reason}; check that it opens in a PDF viewer, repair it "
                              "(e.g. qpdf) or remove it from the corpus") from None

    def load(self, data: bytes, doc_id: str, source: str) -> Document:
        try:
            import pypdfium2 as pdfium
        except ImportError:
            raise missing_library("PDF", "pypdfium2", "pdf") from None
        doc = self._open(pdfium, data)
        try:
            n_pages = len(doc)
            if n_pages == 0:
                raise CorpusError("not a readable PDF: it has no pages; check that it opens in a PDF viewer")
            reader = _PageReader(pdfium.raw)
            pages: list[list[_Line]] = []
            for index in range(n_pages):
                page = doc[index]
                try:
                    tp = page.get_textpage()
                    try:
                        pages.append(_merge_fragments(reader.lines(tp, page.get_bbox())))
                    finally:
                        tp.close()
                finally:
                    page.close()
            textless = [n + 1 for n, lines in enumerate(pages) if not lines]
            if len(textless) == n_pages:
                raise CorpusError(f"no text layer on any of its {n_pages} pages (a scan?): run OCR first, e.g. "
                                  "ocrmypdf, then load the result")
            source_of_headings = self.config.headings
            outline = _outline(doc, n_pages) if source_of_headings in ("auto", "outline") else []
            meta_title = _metadata_title(doc)
        finally:
            doc.close()
        _drop_page_furniture(pages)
        layout = _Layout.of(pages)
        if outline:
            marks = _place_outline(pages, outline)
        elif source_of_headings in ("auto", "fonts"):
            marks = _font_headings(pages, layout)
        else:
            marks = [[] for _ in pages]
        b = DocumentBuilder(doc_id, source=source, format="pdf")
        for n, lines in enumerate(pages):
            b.locate({"page": n + 1})
            _write_page(b, lines, marks[n], layout)
        metadata: dict[str, Any] = {"pages": n_pages}
        if textless:
            metadata["pages_without_text"] = textless
        if meta_title:
            metadata["pdf_title"] = meta_title
        stem = doc_id.rsplit("/", 1)[-1]
        stem = stem.rsplit(".", 1)[0] if "." in stem[1:] else stem
        return b.build(title=None if b.headings else meta_title, metadata=metadata, fallback_title=stem)


LOADERS.register("pdf", PdfLoaderConfig, PdfLoader, summary="PDF: text in reading order, outline or font headings, "
                 "page numbers (pypdfium2)", suffixes=(".pdf",), replace=True)
