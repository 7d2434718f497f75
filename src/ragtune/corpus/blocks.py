"""One markdown block scanner, shared by the corpus parser and the markdown chunker.

:func:`scan_blocks` splits a markdown text into top-level blocks, following
CommonMark (and GFM for tables) where it decides what is a heading and what
is code:

- ATX headings (``# Title``) and setext headings (text underlined with
  ``===`` or ``---``);
- fenced code: three or more backticks or tildes, closed by a fence of the
  same character at least as long; a backtick fence's info string may not
  contain a backtick (then the line is text); an unclosed fence runs to the
  end of the document;
- indented code: four columns of indentation, but never as the continuation
  of a paragraph;
- GFM pipe tables: a header row, a delimiter row with as many cells, then
  rows until a blank line or the start of another block;
- HTML blocks, with CommonMark's seven start and end conditions;
- thematic breaks.

List items are followed just far enough to know the column their content
starts at (so a fence or heading indented inside a list item is seen, and a
continuation paragraph indented under an item is not taken for code), and a
paragraph that holds a list item or block quote line never becomes a setext
heading. Headings inside block quotes are not headings here.

Front matter is not handled here: the corpus parser blanks it out before
the text reaches this scanner.

Every block knows its exact character span and the spans of its lines
(without line endings), so callers can cut between lines without losing
offsets.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["Block", "scan_blocks", "blocks_in"]

_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_FENCE_OPEN_RE = re.compile(r"(`{3,}|~{3,})(.*)\Z", re.S)
_FENCE_CLOSE_RE = re.compile(r"(`{3,}|~{3,})[ \t]*\Z")
_SETEXT_RE = re.compile(r"(=+|-+)[ \t]*\Z")
_RULE_RE = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})\Z")
_LIST_RE = re.compile(r"([-+*]|(\d{1,9})[.)])([ \t]+|\Z)")
_DELIM_CELL_RE = re.compile(r":?-+:?\Z")
# No pattern here may try every length of a run of spaces from every position: an ATX heading, its closing
# '#'s and a table's delimiter row are read by the small functions below instead (the regexes they replace,
# `(#{1,6})(?:[ \t]+(.*?))?[ \t]*\Z` and others, took O(n²) on a line with a long run of spaces).

_HTML_BLOCK_TAGS = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|div|"
    "dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|h3|h4|h5|h6|head|header|hr|html|iframe|"
    "legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|"
    "tbody|td|tfoot|th|thead|title|tr|track|ul"
)
_ATTR = r"""(?:\s+[A-Za-z_:][\w.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?)"""
# (start condition, end condition or None for "ends at a blank line", may interrupt a paragraph)
_HTML_STARTS: tuple[tuple[re.Pattern[str], re.Pattern[str] | None, bool], ...] = (
    (re.compile(r"<(?:script|pre|style|textarea)(?:[ \t>]|\Z)", re.I),
     re.compile(r"</(?:script|pre|style|textarea)>", re.I), True),
    (re.compile(r"<!--"), re.compile(r"-->"), True),
    (re.compile(r"<\?"), re.compile(r"\?>"), True),
    (re.compile(r"<![A-Za-z]"), re.compile(r">"), True),
    (re.compile(r"<!\[CDATA\["), re.compile(r"\]\]>"), True),
    (re.compile(rf"</?(?:{_HTML_BLOCK_TAGS})(?:[ \t]|/?>|\Z)", re.I), None, True),
    (re.compile(rf"(?:<[A-Za-z][A-Za-z0-9-]*{_ATTR}*\s*/?>|</[A-Za-z][A-Za-z0-9-]*\s*>)[ \t]*\Z"), None, False),
)


@dataclass(frozen=True, slots=True)
class Block:
    """One block: ``text[start:end]`` spans its lines, ``lines`` their spans without line endings.

    ``kind`` is ``"heading"``, ``"para"``, ``"code"``, ``"table"``, ``"html"`` or
    ``"rule"``. Headings carry ``level`` and ``title`` (the raw inline text,
    closing ``#`` marks removed, attribute list kept). Code blocks carry
    ``fence`` (the opening marker, empty for indented code) and ``closed``.
    """

    start: int
    end: int
    kind: str
    lines: list[tuple[int, int]] = field(default_factory=list)
    level: int = 0
    title: str = ""
    fence: str = ""
    closed: bool = False


def _indent(line: str) -> tuple[int, int]:
    """(columns of leading indentation, tabs to multiples of 4; index of the first other character)."""
    if not line or line[0] not in " \t":
        return 0, 0
    cols = 0
    for i, ch in enumerate(line):
        if ch == " ":
            cols += 1
        elif ch == "\t":
            cols += 4 - cols % 4
        else:
            return cols, i
    return cols, len(line)


def _atx(rest: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line (indentation removed), closing ``#`` marks removed; else None."""
    level = len(rest) - len(rest.lstrip("#"))
    if not 1 <= level <= 6 or (level < len(rest) and rest[level] not in " \t"):
        return None
    title = rest[level:].strip(" \t")
    body = len(title.rstrip("#"))  # a closing sequence: '#'s at the end, alone or after a space
    if body < len(title):
        if body == 0:
            title = ""
        elif title[body - 1] in " \t":
            title = title[:body]
    return level, title.strip()


def _is_delimiter_row(rest: str) -> bool:
    """A GFM table delimiter row: cells like ``---``, ``:--``, ``:-:`` between optional outer pipes."""
    row = rest.rstrip(" \t")
    cells = row.split("|")
    if row.startswith("|"):
        cells = cells[1:]
    if row.endswith("|") and cells:
        cells = cells[:-1]
    return bool(cells) and all(_DELIM_CELL_RE.match(c.strip(" \t")) for c in cells)


def _cells(row: str) -> int:
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return len(re.split(r"(?<!\\)\|", row))


def _html_start(rest: str, in_para: bool) -> re.Pattern[str] | None | bool:
    """The end condition of an HTML block starting at ``rest`` (None: a blank line), or False."""
    if not rest.startswith("<"):
        return False
    for start, end, interrupts in _HTML_STARTS:
        if start.match(rest) and (interrupts or not in_para):
            return end
    return False


def _line_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) of every line of ``text``, line ending (``\\n``, ``\\r\\n``) excluded."""
    lines: list[tuple[int, int]] = []
    for m in _LINE_RE.finditer(text):
        s, e = m.start(), m.end()
        if e > s and text[e - 1] == "\n":
            e -= 1
        if e > s and text[e - 1] == "\r":
            e -= 1
        lines.append((s, e))
    return lines


class _BlockScanner:
    """One pass over the lines of a text that emits its top-level blocks.

    The open state is the paragraph being read (and whether it may still become a
    setext heading), the table being read, and the content columns of the open list
    items. Each ``_step`` method tries one kind of block at line ``i``: it returns
    the index of the next line to read when the line starts (or ends) that kind of
    block, None when it does not. Every line is read once: a block that spans lines
    (code, HTML) consumes them and returns the index after its last line.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = _line_spans(text)
        self.out: list[Block] = []
        self.para: list[tuple[int, int]] = []  # lines of the open paragraph
        self.para_plain = True  # no list item or block quote line in it (so it may become a setext heading)
        self.table: list[tuple[int, int]] = []  # lines of the open table
        self.lists: list[int] = []  # content columns of the open list items, innermost last

    def scan(self) -> tuple[Block, ...]:
        """Read every line; each non-blank one goes to the first step that takes it, else to the open paragraph."""
        text, lines = self.text, self.lines
        n = len(lines)
        steps = (
            self._step_fence,
            self._step_atx_heading,
            self._step_setext_heading,
            self._step_table_start,
            self._step_html,
            self._step_rule,
            self._step_list_or_quote,
        )
        i = 0
        while i < n:
            s, e = lines[i]
            line = text[s:e]
            cols, first = _indent(line)
            rest = line[first:]
            if not rest:
                self._close()
                i += 1
                continue
            base = 0
            for c in self.lists:
                if c <= cols:
                    base = c
            if cols - base >= 4:
                i = self._step_indented(i, cols, base)
                continue
            for step in steps:
                j = step(i, rest, cols, base)
                if j is not None:
                    break
            else:
                self._text_line(i, cols)
                j = i + 1
            i = j
        self._close()
        return tuple(self.out)

    def _close(self) -> None:
        """End the open paragraph and table, emitting them."""
        if self.para:
            self.out.append(Block(self.para[0][0], self.para[-1][1], "para", self.para))
        if self.table:
            self.out.append(Block(self.table[0][0], self.table[-1][1], "table", self.table))
        self.para, self.table, self.para_plain = [], [], True

    def _leave_lists(self, cols: int) -> None:
        """Close the list items whose content starts right of column ``cols``."""
        self.lists = [c for c in self.lists if c <= cols]

    def _step_indented(self, i: int, cols: int, base: int) -> int:
        """A line indented 4+ columns past its list item: continues a paragraph or table, else starts indented code.

        Indented code runs over blank lines while lines stay indented; trailing blank lines are not part of it.
        """
        text, lines = self.text, self.lines
        s, e = lines[i]
        if self.para or self.table:
            (self.para or self.table).append((s, e))
            return i + 1
        self._leave_lists(cols)
        code = [(s, e)]
        j = i + 1
        n = len(lines)
        while j < n:
            ls, le = lines[j]
            c2, f2 = _indent(text[ls:le])
            if f2 < le - ls and c2 < base + 4:
                break
            code.append((ls, le))
            j += 1
        while code and not text[code[-1][0]:code[-1][1]].strip():
            code.pop()
            j -= 1
        self.out.append(Block(code[0][0], code[-1][1], "code", code))
        return j

    def _step_fence(self, i: int, rest: str, cols: int, base: int) -> int | None:
        """A fenced code block: runs to its closing fence, the end of its list item, or the end of the text."""
        m = _FENCE_OPEN_RE.match(rest)
        if not m or (m.group(1)[0] == "`" and "`" in m.group(2)):
            return None
        text, lines = self.text, self.lines
        s, e = lines[i]
        self._close()
        self._leave_lists(cols)
        marker = m.group(1)
        code = [(s, e)]
        closed = False
        j = i + 1
        n = len(lines)
        while j < n:
            ls, le = lines[j]
            body = text[ls:le]
            c2, f2 = _indent(body)
            if base and f2 < len(body) and c2 < base:
                break  # the list item holding the fence ends, and the fence with it
            code.append((ls, le))
            j += 1
            cm = _FENCE_CLOSE_RE.match(body, f2) if c2 - base <= 3 else None
            if cm and cm.group(1)[0] == marker[0] and len(cm.group(1)) >= len(marker):
                closed = True
                break
        self.out.append(Block(s, code[-1][1], "code", code, fence=marker, closed=closed))
        return j

    def _step_atx_heading(self, i: int, rest: str, cols: int, base: int) -> int | None:
        """An ATX heading (``# Title``): one line, which ends any open paragraph."""
        atx = _atx(rest)
        if not atx:
            return None
        s, e = self.lines[i]
        self._close()
        self._leave_lists(cols)
        self.out.append(Block(s, e, "heading", [(s, e)], level=atx[0], title=atx[1]))
        return i + 1

    def _step_setext_heading(self, i: int, rest: str, cols: int, base: int) -> int | None:
        """A setext underline (``===``/``---``) under a plain paragraph turns the paragraph into a heading."""
        if not (self.para and self.para_plain):
            return None
        m = _SETEXT_RE.match(rest)
        if not m:
            return None
        s, e = self.lines[i]
        para = self.para
        title = " ".join(self.text[a:b].strip() for a, b in para)
        level = 1 if m.group(1)[0] == "=" else 2
        self.out.append(Block(para[0][0], e, "heading", para + [(s, e)], level=level, title=title))
        self.para = []
        return i + 1

    def _step_table_start(self, i: int, rest: str, cols: int, base: int) -> int | None:
        """A GFM delimiter row under a header line with as many cells: the header line leaves the paragraph and opens a table."""
        if not (self.para and "-" in rest and _is_delimiter_row(rest)):
            return None
        hs, he = self.para[-1]
        header = self.text[hs:he]
        if not (("|" in header or "|" in rest) and _cells(header) == _cells(rest)):
            return None
        self.para.pop()
        self._close()
        self.table = [(hs, he), self.lines[i]]
        return i + 1

    def _step_html(self, i: int, rest: str, cols: int, base: int) -> int | None:
        """An HTML block: runs to the line matching its end condition, or to a blank line for the open-ended kinds."""
        end = _html_start(rest, bool(self.para))
        if end is False:
            return None
        text, lines = self.text, self.lines
        s, e = lines[i]
        self._close()
        self._leave_lists(cols)
        html = [(s, e)]
        j = i + 1
        n = len(lines)
        if end is None or not end.search(rest):
            while j < n:
                ls, le = lines[j]
                body = text[ls:le]
                if end is None and not body.strip():
                    break
                html.append((ls, le))
                j += 1
                if end is not None and end.search(body):
                    break
        self.out.append(Block(s, html[-1][1], "html", html))
        return j

    def _step_rule(self, i: int, rest: str, cols: int, base: int) -> int | None:
        """A thematic break (``---``, ``***``): one line, which ends any open paragraph."""
        if not _RULE_RE.match(rest):
            return None
        s, e = self.lines[i]
        self._close()
        self._leave_lists(cols)
        self.out.append(Block(s, e, "rule", [(s, e)]))
        return i + 1

    def _step_list_or_quote(self, i: int, rest: str, cols: int, base: int) -> int | None:
        """A list item or block quote line: joins the paragraph (no longer setext-able); a list item opens a list level.

        An empty item, or an ordered one not numbered 1, cannot interrupt a paragraph: it is read as a continuation line.
        """
        m = _LIST_RE.match(rest)
        quote = rest.startswith(">")
        if m:
            empty = m.end() == len(rest)
            if self.para and (empty or (m.group(2) is not None and m.group(2) != "1")):
                m = None  # cannot interrupt a paragraph: a continuation line
        if not (m or quote):
            return None
        if self.table:
            self._close()
        if m:
            self._leave_lists(cols)
            spaces = _indent(rest[len(m.group(1)):])[0]
            width = len(m.group(1)) + (1 if spaces > 4 or m.end() == len(rest) else spaces)
            self.lists.append(cols + width)
        self.para.append(self.lines[i])
        self.para_plain = False
        return i + 1

    def _text_line(self, i: int, cols: int) -> None:
        """Any other line: a row of the open table, else a line of the paragraph (a new one closes deeper list items)."""
        if self.table:
            self.table.append(self.lines[i])
        else:
            if not self.para:
                self._leave_lists(cols)
            self.para.append(self.lines[i])


@lru_cache(maxsize=8)
def scan_blocks(text: str) -> tuple[Block, ...]:
    """Every top-level block of ``text``, in order (blank lines belong to none)."""
    return _BlockScanner(text).scan()


def blocks_in(text: str, start: int, end: int) -> list[Block]:
    """The blocks of the whole ``text`` that overlap ``[start, end)``, clipped to it.

    Scanning the whole text (cached) rather than the slice keeps a block's
    kind independent of where a caller cuts.
    """
    all_blocks = scan_blocks(text)
    i = max(bisect.bisect_right(_starts(text), start) - 1, 0)
    out: list[Block] = []
    for k in range(i, len(all_blocks)):
        b = all_blocks[k]
        if b.start >= end:
            break
        if b.end <= start:
            continue
        if start <= b.start and b.end <= end:
            out.append(b)
            continue
        cs, ce = max(b.start, start), min(b.end, end)
        lines = [(max(a, start), min(z, end)) for a, z in b.lines if a < end and z >= start]
        lines = [(a, z) for a, z in lines if a <= z]
        if cs < ce and lines:
            out.append(Block(cs, ce, b.kind, lines, b.level, b.title, b.fence, b.closed))
    return out


@lru_cache(maxsize=8)
def _starts(text: str) -> list[int]:
    return [b.start for b in scan_blocks(text)]
