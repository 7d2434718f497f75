"""HTML pages (a built doc site, an exported wiki): the page's main content, its h1-h6 headings as sections.

Parsed with lxml (libxml2's HTML parser: fast, and it recovers from any broken markup; BSD licence).

- **Main content.** The container of the common doc-site generators is preferred (:data:`CONTAINERS`, first match
  wins): Read the Docs theme ``[itemprop=articleBody]``, MkDocs Material ``article.md-content__inner``,
  Docusaurus ``div.theme-doc-markdown``, then ``[role=main]`` (Sphinx basic/alabaster ``div.body``, furo,
  pydata, the MkDocs theme), ``<main>``, Sphinx ``div.body``, ``<article>``, Sphinx ``div.document``, else
  ``<body>``. The ``main`` option names the container with a CSS selector instead. Inside it, navigation,
  sidebars, footers, scripts, forms and hidden elements are never read (:data:`DROP_TAGS`, :data:`DROP_ROLES`,
  :data:`DROP_CLASSES`, ``hidden``, ``aria-hidden="true"``, ``display: none``); a ``<header>`` is dropped only
  when the container is ``<body>`` (inside an article it holds the title: Docusaurus puts the h1 there).
- **Anchors.** A heading's id is its own ``id``, else that of its enclosing ``<section id>`` (``<div
  class="section" id>`` in older Sphinx) when it is that section's first heading, else an ``<a id|name>`` inside
  it, else the slug of its title. Other ids at the same place are aliases: the ``<span id="tut-if">`` Sphinx
  writes for a label, ids inside the heading, empty anchors right before it. An id Sphinx made up (``<section
  id="id2">`` for a second "Routing") is an alias too: the anchor is a readable one, else the title's slug
  (``#routing-1``), so a page and its reStructuredText source give the same anchors (:mod:`.builder`). Header
  links (``¶``, ``#``) and Sphinx's ``<span class="section-number">`` are not text, so titles read as in the
  source: "if Statements".
- **Blocks.** ``<pre>`` is a fenced code block with its text as displayed (language from ``highlight-LANG``,
  ``language-LANG`` or ``lang-LANG`` on it, its ``<code>`` or a wrapper); a table is a pipe table (header row
  from ``<thead>`` or a row of ``<th>``; a cell spanning columns or rows has its text in its first cell and the
  others left empty, so no text is counted twice); a table holding a ``<pre>`` or a heading is layout (Pygments'
  line-number tables) and read as the blocks inside it; list items keep their nesting depth; definition lists,
  block quotes and admonitions are paragraphs ("Note: ..."); ``<br>`` is a line break.
- **Locations.** Each block is located at ``{"element_id": ID}``: the id of the heading or section it sits under.
- **Encoding.** A byte-order mark, else the ``<meta charset>`` (or ``http-equiv``, or an XML declaration) in the
  first 4 KiB, else UTF-8; bytes that do not decode are replaced with U+FFFD rather than refused, as a browser
  does. Control characters are dropped.
- **Bad input.** Broken markup loads what the parser recovers. Markup nested deeper than libxml2 allows (2048
  levels, where it stops reading) is parsed again with the standard library's tokenizer, elements past
  :data:`MAX_DEPTH` levels merged into their parent, so the rest of the page is not lost. The walk over the tree
  is iterative: no depth raises RecursionError. A page without text is an error.
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Annotated, Any

from ...config import Config, Opt
from ...errors import ConfigError, CorpusError
from ...registry import LOADERS
from ...types import Document
from . import missing_library
from .builder import DocumentBuilder, strip_section_number

__all__ = ["HtmlLoaderConfig", "HtmlLoader", "CONTAINERS", "selector_xpath"]

#: Main-content containers, most specific first: the first that matches (outside dropped elements) is read.
CONTAINERS = ("[itemprop=articleBody]", "article.md-content__inner", "div.theme-doc-markdown", "[role=main]", "main",
              "div.body", "article", "div.document")
DROP_TAGS = frozenset("head script style noscript template form nav aside footer iframe object embed svg canvas "
                      "button select textarea input map audio video dialog".split())
DROP_ROLES = frozenset({"navigation", "search", "banner", "contentinfo", "complementary"})
DROP_CLASSES = frozenset({"sphinxsidebar", "footer", "headerlink", "hash-link", "section-number", "linenos",
                          "md-sidebar", "md-header", "md-footer", "theme-doc-toc-mobile"})
# an <aside> that is text, not a sidebar: docutils (Sphinx) writes footnotes, citations and topics as <aside>
_NOTE_CLASSES = frozenset({"footnote", "footnote-list", "citation", "citation-list", "topic"})
_NOTE_ROLES = frozenset({"doc-footnote", "doc-endnotes", "doc-endnote", "note"})
MAX_DEPTH = 1000
_BLOCK = frozenset("address article aside blockquote body caption center dd details dialog dir div dl dt fieldset "
                   "figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr html legend li main menu nav "
                   "ol p pre section summary table tbody td tfoot th thead tr ul".split())
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_LISTS = frozenset({"ul", "ol", "menu", "dir"})
_WS_RE = re.compile(r"[ \t\n\r\f]+")
_BR = "\x00"  # a <br> in a paragraph being collected (decode_html leaves no NUL in the text)
_HIDDEN_STYLE_RE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_LANG_RE = re.compile(r"^(?:highlight|language|lang)-([\w+#.-]+)$")
_NO_LANGUAGE = frozenset({"none", "default"})
# C0 controls but \t \n \f \r, DEL, and the two non-characters XML (and lxml's tree builder) refuses
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f\ufffe\uffff]")
_META_CHARSET_RE = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_:.+-]+)""", re.I)
_XML_ENCODING_RE = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_.:+-]+)""", re.I)
# labels a browser reads as windows-1252 (the WHATWG Encoding standard), and the UTF-16 a meta tag cannot mean
_WINDOWS_1252 = frozenset({"iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "ascii", "us-ascii", "cp819",
                           "ibm819", "iso-ir-100", "windows-1252", "cp1252", "x-cp1252"})
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


# -- the main option: a small CSS selector language, evaluated as XPath (no cssselect dependency) ----------------
_SEL_TOKEN_RE = re.compile(r"""\s*(?P<comb>[,>])\s*|(?P<ws>\s+)|(?P<tag>\*|[A-Za-z][\w-]*)|\.(?P<cls>[\w-]+)
                               |\#(?P<id>[\w:.-]+)
                               |\[\s*(?P<attr>[A-Za-z_][\w:.-]*)\s*(?:=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'
                               |(?P<bare>[^\]\s"']+))\s*)?\]""", re.X)


def _class_test(name: str) -> str:
    # the plain contains() first: it rules out most elements at a fraction of the cost of the exact test
    return f"contains(@class, '{name}') and contains(concat(' ', normalize-space(@class), ' '), ' {name} ')"


@functools.lru_cache(maxsize=64)
def selector_xpath(selector: str) -> str:
    """The XPath of a CSS selector of the forms ``tag``, ``.class``, ``#id``, ``[attr]``, ``[attr=value]``,
    compounds of them (``div.body[role=main]``), joined by a space (descendant) or ``>`` (child), alternatives
    separated by commas. Raises ValueError on anything else."""
    alternatives: list[str] = []
    steps: list[str] = []
    axis, tag, tests = "//", "", []
    pos = 0
    text = selector.strip()

    def end_step() -> None:
        nonlocal tag, tests
        if not tag and not tests:
            raise ValueError("a combinator or comma with no element before it")
        steps.append(axis + (tag or "*") + "".join(f"[{t}]" for t in tests))
        tag, tests = "", []

    while pos < len(text):
        m = _SEL_TOKEN_RE.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"unexpected {text[pos:pos + 10]!r}")
        pos = m.end()
        if m["comb"] or m["ws"]:
            end_step()
            if m["comb"] == ",":
                alternatives.append("".join(steps))
                steps, axis = [], "//"
            else:
                axis = "/" if m["comb"] == ">" else "//"
        elif m["tag"]:
            if tag or tests:
                raise ValueError(f"element name {m['tag']!r} must come first in {text!r}")
            tag = m["tag"].lower()
        elif m["cls"]:
            tests.append(_class_test(m["cls"]))
        elif m["id"]:
            tests.append(f"@id='{m['id']}'")
        else:
            value = m["dq"] if m["dq"] is not None else m["sq"] if m["sq"] is not None else m["bare"]
            if value is None:
                tests.append(f"@{m['attr'].lower()}")
            elif "'" in value:
                tests.append(f'@{m["attr"].lower()}="{value}"')
            else:
                tests.append(f"@{m['attr'].lower()}='{value}'")
    end_step()
    alternatives.append("".join(steps))
    return " | ".join(alternatives)


@dataclass(frozen=True)
class HtmlLoaderConfig(Config):
    main: Annotated[str, Opt("CSS selector of the main-content container (tag, .class, #id, [attr=value], "
                             "'a b', 'a > b', commas for alternatives; its first match is read); empty: find the "
                             "doc-site generator's. A page where it matches nothing is not loaded")] = ""

    def __post_init__(self) -> None:
        if not isinstance(self.main, str):
            raise ConfigError(f"HtmlLoaderConfig: main must be a CSS selector string, got {self.main!r}")
        if self.main.strip():
            try:
                selector_xpath(self.main)
            except ValueError as e:
                raise ConfigError(f"HtmlLoaderConfig: main={self.main!r} is not a selector ragtune reads ({e}); "
                                  "use tag, .class, #id, [attr] or [attr=value], combined like div.body[role=main], "
                                  "'main article' or 'main > div', alternatives separated by commas") from None


# -- bytes to a tree ---------------------------------------------------------------------------------------------
def _codec(label: bytes | str) -> str | None:
    name = (label.decode("ascii", "replace") if isinstance(label, bytes) else label).strip().lower()
    if name in _WINDOWS_1252:
        return "cp1252"
    if name.startswith(("utf-16", "utf16")):  # a meta tag read as ASCII cannot be UTF-16 (WHATWG): it means UTF-8
        return "utf-8"
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode_html(data: bytes) -> str:
    """The page's text: its byte-order mark's encoding, else its declared one, else UTF-8; undecodable bytes
    become U+FFFD and control characters are dropped (a browser shows neither), a form feed is a space."""
    codec = next((c for bom, c in _BOMS if data.startswith(bom)), None)
    if codec is not None:
        text = data.decode(codec, "replace")[1:]
    else:
        head = data[:4096]
        m = _XML_ENCODING_RE.match(head) or _META_CHARSET_RE.search(head)
        text = data.decode((_codec(m.group(1)) if m else None) or "utf-8", "replace")
    text = _CONTROL_RE.sub("", text)
    return text.replace("\f", " ") if "\f" in text else text


class _ShallowTree:
    """A tree from the standard library's HTML tokenizer, at most ``max_depth`` elements deep: a start tag past
    that depth (and its end tag) is left out and its text goes to the deepest element kept. For pages nested
    deeper than libxml2 reads."""

    _VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
    _NAME_RE = re.compile(r"^[A-Za-z_][\w.-]*$")

    def __init__(self, etree: Any, max_depth: int):
        from html.parser import HTMLParser

        self.builder = etree.TreeBuilder()
        self.open: list[str] = []
        self.skipped: dict[str, int] = {}
        self.max_depth = max_depth
        owner = self

        class Tokens(HTMLParser):
            def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
                owner.start(tag, attrs)

            def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
                owner.start(tag, attrs)
                if tag not in owner._VOID and owner.open and owner.open[-1] == tag:
                    owner.end(tag)

            def handle_endtag(self, tag: str) -> None:
                owner.end(tag)

            def handle_data(self, data: str) -> None:
                owner.builder.data(data)

        self.tokens = Tokens(convert_charrefs=True)

    def start(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if len(self.open) >= self.max_depth or not self._NAME_RE.match(tag):
            if tag not in self._VOID:
                self.skipped[tag] = self.skipped.get(tag, 0) + 1
            return
        self.builder.start(tag, {k: v or "" for k, v in attrs if self._NAME_RE.match(k)})
        if tag in self._VOID:
            self.builder.end(tag)
        else:
            self.open.append(tag)

    def end(self, tag: str) -> None:
        if self.skipped.get(tag):
            self.skipped[tag] -= 1
        elif tag in self.open:
            while self.open:
                name = self.open.pop()
                self.builder.end(name)
                if name == tag:
                    break

    def parse(self, text: str) -> Any:
        self.start("html", [])
        self.tokens.feed(text)
        self.tokens.close()
        while self.open:
            self.builder.end(self.open.pop())
        return self.builder.close()


def _parse(etree: Any, text: str) -> Any:
    """The page's tree (its ``<html>`` element), or None when there is no markup at all."""
    parser = etree.HTMLParser(encoding="utf-8", huge_tree=True, remove_comments=True, remove_pis=True)
    root = etree.fromstring(text.encode("utf-8"), parser) if text.strip() else None
    if any(e.type == etree.ErrorTypes.ERR_RESOURCE_LIMIT for e in parser.error_log):
        return _ShallowTree(etree, MAX_DEPTH).parse(text)
    return root


# -- the walk ----------------------------------------------------------------------------------------------------
def _classes(el: Any) -> list[str]:
    c = el.get("class")
    return c.split() if c else []


def _dropped(el: Any, keep_header: bool) -> bool:
    """Whether ``el`` (and all inside it) is not content. Called on every element: the common case, an element
    without attributes or with only a class, is decided first."""
    tag = el.tag
    if not isinstance(tag, str):
        return True
    if tag in DROP_TAGS or (tag == "header" and not keep_header):
        if tag != "aside":
            return True
        cls = el.get("class")
        return not (el.get("role") in _NOTE_ROLES or cls and not _NOTE_CLASSES.isdisjoint(cls.split()))
    keys = el.keys()
    if not keys:
        return False
    if "class" in keys and not DROP_CLASSES.isdisjoint(el.get("class").split()):
        return True
    if len(keys) == 1 and keys[0] == "class":
        return False
    if el.get("role") in DROP_ROLES or "hidden" in keys or el.get("aria-hidden") == "true":
        return True
    style = el.get("style")
    return bool(style and _HIDDEN_STYLE_RE.search(style))


def _anchor_id(el: Any) -> str | None:
    return el.get("id") or (el.get("name") if el.tag == "a" else None) or None


@dataclass
class _Frame:
    """A ``<section>`` (or the container) open in the walk: its id, whether a heading was seen in it, and the
    element id the text in it is located at."""

    id: str | None
    section: bool
    location: str | None
    heading_seen: bool = False


@dataclass
class _Item:
    depth: int
    ordered: bool
    number: int
    written: bool = False


@dataclass
class _Walker:
    builder: DocumentBuilder
    keep_header: bool
    buf: list[str] = field(default_factory=list)
    frames: list[_Frame] = field(default_factory=list)
    lists: list[list[Any]] = field(default_factory=list)  # [ordered, next number] of each open list
    items: list[_Item] = field(default_factory=list)
    pending_ids: list[str] = field(default_factory=list)
    first_h1: str | None = None
    hold: bool = False  # an admonition's title waits for its first paragraph ("Note: ...")
    has_text: bool = False  # the paragraph being collected has more than whitespace

    # -- text out ------------------------------------------------------------------------------------------------
    def _locate(self) -> None:
        self.builder.locate({"element_id": self.frames[-1].location})

    def _emitted(self) -> None:
        self.pending_ids.clear()

    def flush(self, hard: bool = False) -> None:
        """End the paragraph being collected. Inside a list item only a hard boundary (a nested list, code, a
        table, a heading, the item's end) ends it: the item's paragraphs are one item."""
        if not self.buf:
            self.hold = self.hold and not hard
            return
        if not hard and (self.hold or self.items):
            self.hold = False
            if self.buf:
                self.buf.append(" ")
            return
        self.hold = False
        text = _WS_RE.sub(" ", "".join(self.buf)).replace(_BR, "\n").strip()
        self.buf.clear()
        self.has_text = False
        if not text:
            return
        self._locate()
        item = self.items[-1] if self.items else None
        if item is not None and not item.written:
            self.builder.item(text, depth=item.depth, ordered=item.ordered, number=item.number)
            item.written = True
        else:
            self.builder.paragraph(text)
        self._emitted()

    def inline(self, text: str | None) -> None:
        if text:
            self.buf.append(text)
            self.has_text = self.has_text or not text.isspace()

    def gather(self, root: Any, *, pre: bool = False) -> tuple[str, list[str]]:
        """The text of ``root``'s subtree (whitespace kept for ``pre``, else collapsed, block boundaries as
        spaces) and the ids inside it; dropped elements left out."""
        parts: list[str] = []
        ids: list[str] = []
        stack: list[Any] = [root]
        while stack:
            el = stack.pop()
            if isinstance(el, str):
                parts.append(el)
                continue
            if el is not root:
                if _dropped(el, self.keep_header):
                    continue
                if (i := _anchor_id(el)) is not None:
                    ids.append(i)
            if el.tag == "br":
                parts.append("\n" if pre else " ")
                continue
            block = not pre and el.tag in _BLOCK
            if block:
                parts.append(" ")
            if el.text:
                parts.append(el.text)
            for child in reversed(el):
                if block:
                    stack.append(" ")
                if child.tail:
                    stack.append(child.tail)
                stack.append(child)
        text = "".join(parts)
        return (text if pre else _WS_RE.sub(" ", text).replace("\u200b", "").strip()), ids

    # -- blocks --------------------------------------------------------------------------------------------------
    def heading(self, el: Any) -> None:
        self.flush(hard=True)
        title, inner = self.gather(el)
        frame = self.frames[-1]
        section_id = frame.id if frame.section and not frame.heading_seen else None
        if frame.section:
            frame.heading_seen = True
        own = el.get("id") or None
        hid = own or section_id or (inner[0] if inner else None)
        if not title:
            return
        aliases = [a for a in (*self.pending_ids, section_id, own, *inner) if a and a != hid]
        if hid:
            frame.location = hid
        self._locate()
        self.builder.heading(int(el.tag[1]), title, id=hid, aliases=aliases)
        self._emitted()
        if el.tag == "h1" and self.first_h1 is None:
            self.first_h1 = strip_section_number(title)

    def code(self, el: Any) -> None:
        self.flush(hard=True)
        text, _ = self.gather(el, pre=True)
        self._locate()
        self.builder.code(text, _language(el))
        self._emitted()

    def table(self, el: Any) -> None:
        self.flush(hard=True)
        caption = el.find("caption")
        if caption is not None and not _dropped(caption, self.keep_header):
            self.inline(self.gather(caption)[0])
            self.flush(hard=True)
        rows, header = self._rows(el)
        if any(any(c for c in r) for r in rows):
            self._locate()
            self.builder.table(rows, header=header)
            self._emitted()

    def _rows(self, table: Any) -> tuple[list[list[str]], bool]:
        """The table's rows (its ``<tfoot>`` last), each spanned cell after the first left empty, and whether the
        first row is a header."""
        trs: list[tuple[Any, bool]] = []
        foot: list[tuple[Any, bool]] = []
        for part in table:
            if part.tag == "tr":
                trs.append((part, False))
            elif part.tag in ("thead", "tbody", "tfoot"):
                (foot if part.tag == "tfoot" else trs).extend((tr, part.tag == "thead") for tr in part
                                                              if tr.tag == "tr")
        rows: list[list[str]] = []
        carry: dict[int, int] = {}  # column -> rows a rowspan still covers
        header = False
        for n, (tr, in_head) in enumerate(trs + foot):
            cells = [c for c in tr if c.tag in ("td", "th") and not _dropped(c, self.keep_header)]
            if n == 0:
                header = in_head or bool(cells) and all(c.tag == "th" for c in cells)
            row: list[str] = []
            for cell in cells:
                while carry.get(len(row)):
                    carry[len(row)] -= 1
                    row.append("")
                text = self.gather(cell)[0]
                span, down = _int_attr(cell, "colspan", 1000), _int_attr(cell, "rowspan", 65534)
                for k in range(span):
                    if down > 1:
                        carry[len(row)] = down - 1
                    row.append("" if k else text)
            for col in sorted(c for c, left in carry.items() if left and c >= len(row)):
                row.extend([""] * (col - len(row)) + [""])
                carry[col] -= 1
            rows.append(row)
        return rows, header

    # -- the walk ------------------------------------------------------------------------------------------------
    def walk(self, container: Any) -> None:
        """Every block under ``container``, in document order, with an explicit stack (no recursion)."""
        self.frames.append(_Frame(container.get("id"), False, container.get("id")))
        stack: list[tuple[Any, bool]] = [(container, False)]
        while stack:
            el, closing = stack.pop()
            if closing:
                self._close(el)
                if el is not container:
                    self.inline(el.tail)
                continue
            if el is not container and _dropped(el, self.keep_header):
                self.inline(el.tail)
                continue
            tag = el.tag
            if el is not container and not self.has_text and (i := _anchor_id(el)) is not None:
                self.pending_ids.append(i)
            if tag in _HEADINGS:
                self.heading(el)
            elif tag == "pre":
                self.code(el)
            elif tag == "br":
                self.buf.append(_BR)
            elif tag == "table" and not _layout_table(el):
                self.table(el)
            else:
                self._open(el)
                self.inline(el.text)
                stack.append((el, True))
                stack.extend((child, False) for child in reversed(el))
                continue
            if el is not container:
                self.inline(el.tail)
        self.flush(hard=True)

    def _open(self, el: Any) -> None:
        tag = el.tag
        if tag in _LISTS:
            self.flush(hard=True)
            self.lists.append([tag == "ol", _int_attr(el, "start", 10**9, default=1, low=-10**9)])
        elif tag == "li":
            self.flush(hard=True)
            ordered, number = self.lists[-1] if self.lists else (False, 1)
            number = _int_attr(el, "value", 10**9, default=number, low=-10**9)
            if self.lists:
                self.lists[-1][1] = number + 1
            self.items.append(_Item(max(len(self.lists) - 1, 0), ordered, number))
        elif tag in _BLOCK:
            self.flush(hard=tag in ("blockquote", "dl", "hr"))
        if tag == "section" or (tag == "div" and "section" in _classes(el)):
            self.frames.append(_Frame(el.get("id"), True, el.get("id") or self.frames[-1].location))

    def _close(self, el: Any) -> None:
        tag = el.tag
        if tag == "li":
            self.flush(hard=True)
            self.items.pop()
        elif tag in _LISTS:
            self.flush(hard=True)
            if self.lists:
                self.lists.pop()
        elif (tag == "summary" or "admonition-title" in _classes(el)) and self.has_text:
            if not "".join(self.buf).rstrip().endswith(":"):
                self.buf.append(":")
            self.hold = True
        elif tag == "span" and "label" in _classes(el) and el.getparent() is not None and \
                _NOTE_CLASSES.intersection(_classes(el.getparent())):
            self.hold = True  # a footnote's "[1]" starts its paragraph
        elif tag in _BLOCK:
            self.flush(hard=tag in ("blockquote", "dl"))
        if len(self.frames) > 1 and (tag == "section" or (tag == "div" and "section" in _classes(el))):
            self.frames.pop()


def _int_attr(el: Any, name: str, high: int, *, default: int = 1, low: int = 1) -> int:
    value = el.get(name)
    if value is None:
        return default
    try:
        return min(max(int(value), low), high)
    except (TypeError, ValueError):
        return default


def _layout_table(el: Any) -> bool:
    """A table that lays out blocks (code with line numbers, a page in a table) rather than holding data."""
    return next(el.iter("pre", *_HEADINGS), None) is not None


def _language(pre: Any) -> str:
    """The code's language from the classes of the ``<pre>``, its ``<code>``, or up to three wrappers."""
    code = pre.find("code")
    candidates: list[Any] = [pre, *([code] if code is not None else [])]
    parent = pre.getparent()
    while parent is not None and len(candidates) < 5:
        candidates.append(parent)
        parent = parent.getparent()
    for el in candidates:
        for c in _classes(el):
            m = _LANG_RE.match(c)
            if m:
                return "" if m.group(1).lower() in _NO_LANGUAGE else m.group(1)
    return ""


def _containers(root: Any) -> Iterator[tuple[str, Any]]:
    """(selector, element) of each doc-site generator's container found outside dropped elements, in preference
    order, then the body: the whole ``<html>`` but its ``<head>``, since libxml2 leaves text after a stray
    ``</body>`` outside the body, where a browser shows it inside."""
    for selector in CONTAINERS:
        for el in root.xpath(selector_xpath(selector)):
            if not any(_dropped(a, False) for a in el.iterancestors()):
                yield selector, el
                break
    yield "body", root


class HtmlLoader:
    """One HTML page: its main content as markdown text, h1-h6 as sections (see the module docstring)."""

    name = "html"
    version = "2"  # 2: an id Sphinx made up (id1) is an alias, never the anchor
    cache = True

    def __init__(self, config: HtmlLoaderConfig | None = None):
        self.config = config or HtmlLoaderConfig()

    def load(self, data: bytes, doc_id: str, source: str) -> Document:
        try:
            from lxml import etree
        except ImportError:
            raise missing_library("HTML", "lxml", "html") from None
        root = _parse(etree, decode_html(data)) if data.strip() else None
        if root is None:
            raise CorpusError("no text: the HTML file is empty; remove it from the corpus")
        main = self.config.main.strip()
        if main:
            found = root.xpath(selector_xpath(main))
            if not found:
                raise CorpusError(f"no text: the html loader's main selector {main!r} matches nothing in this page; "
                                  "add an alternative for it (a, b), or leave main empty to find the content")
            candidates: Iterator[tuple[str, Any]] = iter([(main, found[0])])
        else:
            candidates = _containers(root)
        for selector, container in candidates:
            builder = DocumentBuilder(doc_id=doc_id, source=source, format="html")
            walker = _Walker(builder, keep_header=container.tag not in ("body", "html"))
            walker.walk(container)
            if builder.text.strip():
                break
        else:
            raise CorpusError("no text in the page's content (an empty page, or one whose text is written by "
                              "JavaScript?); remove it from the corpus" +
                              ("" if main else ", or name its content with the html loader's main option"))
        page_title = _page_title(root)
        metadata: dict[str, Any] = {"content": selector}
        if page_title:
            metadata["html_title"] = page_title
        return builder.build(title=walker.first_h1 or page_title, metadata=metadata,
                             fallback_title=PurePosixPath(doc_id).stem)


def _page_title(root: Any) -> str | None:
    head = root.find("head")
    title = head.find("title") if head is not None else next(root.iter("title"), None)
    text = " ".join("".join(title.itertext()).split()) if title is not None else ""
    return text or None


LOADERS.register("html", HtmlLoaderConfig, HtmlLoader, summary="HTML pages: main content, h1-h6 sections by id",
                 suffixes=(".html", ".htm", ".xhtml"), replace=True)
