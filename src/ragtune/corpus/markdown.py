"""Markdown parsing: front matter, headings (ATX and setext), anchors and sections.

Anchors follow what readers already see on GitHub and MkDocs: a heading's
explicit id (``## Refunds {#refunds}``, ``{ #refunds .class }``) when it has
one, else the GitHub slug of its rendered text, de-duplicated with ``-1``,
``-2``. An explicit id written on two headings of one document is
de-duplicated the same way (the second ``{#same}`` becomes ``same-1``), and
``golden check`` reports it. What is a heading (and what is code) is decided
by :mod:`ragtune.corpus.blocks`, the scanner the markdown chunker uses too.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any


from ..errors import CorpusError
from ..types import Section
from .blocks import scan_blocks
from .headings import MAX_HEADING_CHARS, clip_heading
from .metadata import load_front_matter

__all__ = ["parse_markdown", "slugify", "strip_inline_markdown", "Slugger", "ParsedMarkdown"]

_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_BLANK_RE = re.compile(r"[^\r\n]")
_ATTR_TOKEN_RE = re.compile(r"""^(?:#[^\s#.]+|\.[^\s#.]+|[\w-]+=(?:"[^"]*"|'[^']*'|\S+))$""")

_CODE_RE = re.compile(r"`+([^`]*)`+")  # linear: a match ends at the first backtick after its opening run
_SLUG_DROP_RE = re.compile(r"[^\w\- ]")

# Inline markdown is removed by small scanners rather than regexes like ``\*(?=\S)(.+?)(?<=\S)\*``: on
# unclosed markers (``**a `` written 8,000 times) such a regex tries every length from every marker, O(n²)
# (4 s for 32 kB, 200 s for one 180 kB file of headings). Each scanner below gives the regex's result
# (tests/corpus/test_markdown.py compares them on generated text) in linear or O(n log n) time.


def _is_space(ch: str) -> bool:
    return ch.isspace()


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


class _Next:
    """``find(ch, start)`` for start positions that never decrease, in linear time overall: the last answer is
    reused while it is still at or after ``start`` (a text full of ``[`` without ``]`` is scanned once, not once
    per ``[``)."""

    __slots__ = ("text", "_cache")

    def __init__(self, text: str):
        self.text = text
        self._cache: dict[str, int] = {}

    def __call__(self, ch: str, start: int) -> int:
        found = self._cache.get(ch)
        if found is None or (found != -1 and found < start):
            found = self.text.find(ch, start)
            self._cache[ch] = found
        return found


def _sub_bracketed(text: str, opener: str, closer: str) -> str:
    """``re.sub(re.escape(opener) + r"([^\\]]*)\\]" + re.escape(closer[0]) + r"[^X]*X", r"\\1", text)`` with X =
    ``closer[1]``: links ``[text](url)``, images ``![alt](url)``, reference links ``[text][ref]``; each kept as
    its text. Linear: the only possible end of a match is the first ``]`` and the first closing character after."""
    open_, close = closer
    nxt = _Next(text)
    out: list[str] = []
    pos = 0
    i = text.find(opener)
    while i != -1:
        j = nxt("]", i + len(opener))
        if j == -1:
            break  # no ']' after here: no match anywhere later either
        if j + 1 < len(text) and text[j + 1] == open_:
            k = nxt(close, j + 2)
            if k == -1:
                break  # no closing character after here: no later match either
            out.append(text[pos:i])
            out.append(text[i + len(opener):j])
            pos = k + 1
            i = text.find(opener, pos)
            continue
        i = text.find(opener, i + 1)
    out.append(text[pos:])
    return "".join(out)


def _sub_html(text: str) -> str:
    """``re.sub(r"<[^>\\n]+>", "", text)`` in linear time."""
    nxt = _Next(text)
    out: list[str] = []
    pos = 0
    i = text.find("<")
    while i != -1:
        gt = nxt(">", i + 1)
        if gt == -1:
            break
        nl = nxt("\n", i + 1)
        if gt > i + 1 and (nl == -1 or gt < nl):
            out.append(text[pos:i])
            pos = gt + 1
            i = text.find("<", pos)
        else:
            i = text.find("<", i + 1)
    out.append(text[pos:])
    return "".join(out)


def _positions(text: str, delim: str) -> list[int]:
    """Every start of ``delim`` in ``text``, overlapping ones included."""
    found = []
    i = text.find(delim)
    while i != -1:
        found.append(i)
        i = text.find(delim, i + 1)
    return found


def _sub_delimited(text: str, delims: tuple[str, ...], *, flanking: bool, intraword: bool = True) -> str:
    """Emphasis and strikethrough: for each ``delim``, ``delim(.+?)delim`` becomes its content, as
    ``re.sub(r"(D)(?=\\S)(.+?)(?<=\\S)\\1", r"\\2", text)`` does (with ``flanking``; ``intraword=False`` adds
    ``(?<!\\w)`` before and ``(?!\\w)`` after), in O(n log n) instead of the regex's O(n²) on unclosed markers:
    the end of a match is the first valid closing position after its start (a bisect over positions computed
    once), not found by trying every length."""
    if not any(d in text for d in delims):
        return text
    n = len(text)
    ends: dict[str, list[int]] = {}
    for d in set(delims):
        valid = []
        for e in _positions(text, d):
            if flanking and (e == 0 or _is_space(text[e - 1])):
                continue
            if not intraword and e + len(d) < n and _is_word(text[e + len(d)]):
                continue
            valid.append(e)
        ends[d] = valid
    starts = sorted({i for d in set(delims) for i in _positions(text, d)})
    nxt = _Next(text)
    out: list[str] = []
    pos = 0
    for i in starts:
        if i < pos:
            continue
        d = next(x for x in delims if text.startswith(x, i))  # the regex's alternation order
        body = i + len(d)
        if body >= n or text[body] == "\n":
            continue  # '.+?' needs one character, never a line break
        if flanking and _is_space(text[body]):
            continue
        if not intraword and i > 0 and _is_word(text[i - 1]):
            continue
        cand = ends[d]
        k = bisect.bisect_left(cand, body + 1)
        if k == len(cand):
            continue
        e = cand[k]
        nl = nxt("\n", body)
        if nl != -1 and nl < e:
            continue
        out.append(text[pos:i])
        out.append(text[body:e])
        pos = e + len(d)
    out.append(text[pos:])
    return "".join(out)


def strip_inline_markdown(text: str) -> str:
    """Render inline markdown to plain text: links, code, emphasis and HTML tags."""
    text = _sub_bracketed(text, "![", "()")
    text = _sub_bracketed(text, "[", "()")
    text = _sub_bracketed(text, "[", "[]")
    text = _CODE_RE.sub(r"\1", text)
    text = _sub_html(text)
    text = _sub_delimited(text, ("**", "__"), flanking=True)
    text = _sub_delimited(text, ("*",), flanking=True)
    text = _sub_delimited(text, ("_",), flanking=True, intraword=False)
    text = _sub_delimited(text, ("~~",), flanking=False)
    return " ".join(text.split())


def slugify(text: str) -> str:
    """GitHub's slug of a heading's plain text (no de-duplication).

    Lowercase; every character that is not a letter, digit, ``_``, ``-`` or
    space is dropped; each space becomes ``-``.
    """
    return _SLUG_DROP_RE.sub("", text.lower()).replace(" ", "-")


class Slugger:
    """De-duplicates slugs the way GitHub does: ``a``, ``a-1``, ``a-2``."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def reserve(self, slug: str) -> None:
        self._seen.setdefault(slug, 0)

    def unique(self, base: str) -> str:
        slug = base
        while slug in self._seen:
            self._seen[base] += 1
            slug = f"{base}-{self._seen[base]}"
        self._seen[slug] = 0
        return slug


def _split_attr_list(text: str) -> tuple[str, str | None]:
    """Remove a trailing attribute list; return (text, explicit id or None)."""
    # what `[ \t]*\{[ \t]*([^{}]*?)[ \t]*\}[ \t]*$` found, without its O(n²) search over runs of spaces: the
    # text ends with '}' (spaces after it aside), and the list starts at the last '{' before it
    end = len(text[:-1] if text.endswith("\n") else text)
    end = len(text[:end].rstrip(" \t"))
    if end == 0 or text[end - 1] != "}":
        return text, None
    brace = text.rfind("{", 0, end - 1)
    if brace == -1 or text.find("}", brace + 1, end - 1) != -1:
        return text, None
    tokens = text[brace + 1:end - 1].split()
    if not tokens or not all(_ATTR_TOKEN_RE.match(t) for t in tokens):
        return text, None
    explicit = next((t[1:] for t in tokens if t.startswith("#")), None)
    return text[: len(text[:brace].rstrip(" \t"))], explicit


@dataclass(frozen=True, slots=True)
class _Heading:
    offset: int
    level: int
    title: str
    explicit_id: str | None


@dataclass(frozen=True, slots=True)
class ParsedMarkdown:
    """``body`` is the whole text with its front matter blanked out: every
    character of the front matter block but line endings becomes a space, so
    offsets into ``body`` are offsets into the source text, and line numbers
    match too. ``body_offset`` is where the content after the front matter
    starts (0 without front matter)."""

    body: str
    body_offset: int
    front_matter: dict[str, Any]
    sections: tuple[Section, ...]
    first_h1: str | None


def _split_front_matter(text: str, source: str) -> tuple[dict[str, Any], str, int]:
    nl = text.find("\n")
    first = text if nl == -1 else text[: nl + 1]
    if first.rstrip() != "---":
        return {}, text, 0
    offset = len(first)
    for m in _LINE_RE.finditer(text, offset):  # lazily: lines are not all split up front
        line = m.group()
        if line.rstrip() in ("---", "..."):
            data = load_front_matter(text[len(first):offset], source)
            end = offset + len(line)
            return data, _BLANK_RE.sub(" ", text[:end]) + text[end:], end
        offset += len(line)
    return {}, text, 0  # no closing line: a thematic break, not front matter


def _scan_headings(body: str) -> list[_Heading]:
    headings = []
    for b in scan_blocks(body):
        if b.kind == "heading":
            text, explicit = _split_attr_list(b.title)
            headings.append(_Heading(b.start, b.level, text.strip(), explicit))
    return headings


def parse_markdown(text: str, *, doc_id: str, source: str | None = None) -> ParsedMarkdown:
    """Read the front matter of ``text``, blank it out, and find the sections.

    Section spans are offsets into ``text`` itself (front matter included),
    so a span highlights the right characters in the source file.
    """
    front, body, body_offset = _split_front_matter(text, source or doc_id)
    headings = _scan_headings(body)
    slugger = Slugger()
    for h in headings:
        if h.explicit_id:
            slugger.reserve(h.explicit_id)
    # clipped (corpus.headings): a title is repeated in every heading path under it and every chunk's prefix;
    # the raw text is cut first so that stripping a 200 KB heading's markup costs no more than a short one's
    titles = [clip_heading(strip_inline_markdown(h.title[:4 * MAX_HEADING_CHARS])) for h in headings]
    ids: list[str] = []
    claimed: set[str] = set()
    for h, title in zip(headings, titles):
        if h.explicit_id and h.explicit_id not in claimed:
            ids.append(h.explicit_id)
            claimed.add(h.explicit_id)
        elif h.explicit_id:  # the same {#id} written twice: numbered like a duplicate slug
            ids.append(slugger.unique(h.explicit_id))
        else:
            ids.append(slugger.unique(slugify(title) or "section"))

    sections: list[Section] = []
    stack: list[tuple[int, Section]] = []  # (level, section) of open ancestors
    n = len(body)
    ends = [n] * len(headings)  # where each section ends: the next heading of its level or higher
    waiting: list[int] = []  # headings whose end is not found yet (their levels strictly increase)
    for i, h in enumerate(headings):
        while waiting and headings[waiting[-1]].level >= h.level:
            ends[waiting.pop()] = h.offset
        waiting.append(i)
    for i, h in enumerate(headings):
        end = ends[i]
        own_end = headings[i + 1].offset if i + 1 < len(headings) else n
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        title = titles[i]
        path = tuple(s.title for _, s in stack) + (title,)
        parent = stack[-1][1].anchor if stack else None
        section = Section(
            doc_id=doc_id, id=ids[i], title=title, level=h.level, heading_path=path,
            parent=parent, start=h.offset, end=end, own_end=own_end, explicit_id=h.explicit_id,
        )
        sections.append(section)
        stack.append((h.level, section))
    first_h1 = next((s.title for s in sections if s.level == 1), None)
    return ParsedMarkdown(body, body_offset, front, tuple(sections), first_h1)
