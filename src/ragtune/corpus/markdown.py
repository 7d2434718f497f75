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

import re
from dataclasses import dataclass
from typing import Any

import yaml

from ..errors import CorpusError
from ..types import Section
from .blocks import scan_blocks

__all__ = ["parse_markdown", "slugify", "strip_inline_markdown", "Slugger", "ParsedMarkdown"]

_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_BLANK_RE = re.compile(r"[^\r\n]")
_ATTR_LIST_RE = re.compile(r"[ \t]*\{[ \t]*([^{}]*?)[ \t]*\}[ \t]*$")
_ATTR_TOKEN_RE = re.compile(r"""^(?:#[^\s#.]+|\.[^\s#.]+|[\w-]+=(?:"[^"]*"|'[^']*'|\S+))$""")

_IMAGE_RE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK_RE = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_REFLINK_RE = re.compile(r"\[([^\]]*)\]\[[^\]]*\]")
_CODE_RE = re.compile(r"`+([^`]*)`+")
_HTML_RE = re.compile(r"<[^>\n]+>")
_STRONG_RE = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_EM_STAR_RE = re.compile(r"\*(?=\S)(.+?)(?<=\S)\*")
_EM_UNDERSCORE_RE = re.compile(r"(?<!\w)_(?=\S)(.+?)(?<=\S)_(?!\w)")
_STRIKE_RE = re.compile(r"~~(.+?)~~")
_SLUG_DROP_RE = re.compile(r"[^\w\- ]")


def strip_inline_markdown(text: str) -> str:
    """Render inline markdown to plain text: links, code, emphasis and HTML tags."""
    text = _IMAGE_RE.sub(r"\1", text)
    text = _LINK_RE.sub(r"\1", text)
    text = _REFLINK_RE.sub(r"\1", text)
    text = _CODE_RE.sub(r"\1", text)
    text = _HTML_RE.sub("", text)
    text = _STRONG_RE.sub(r"\2", text)
    text = _EM_STAR_RE.sub(r"\1", text)
    text = _EM_UNDERSCORE_RE.sub(r"\1", text)
    text = _STRIKE_RE.sub(r"\1", text)
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
    m = _ATTR_LIST_RE.search(text)
    if not m:
        return text, None
    tokens = m.group(1).split()
    if not tokens or not all(_ATTR_TOKEN_RE.match(t) for t in tokens):
        return text, None
    explicit = next((t[1:] for t in tokens if t.startswith("#")), None)
    return text[: m.start()], explicit


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
    lines = _LINE_RE.findall(text)
    if not lines or lines[0].rstrip() != "---":
        return {}, text, 0
    offset = len(lines[0])
    for i, line in enumerate(lines[1:], start=2):
        if line.rstrip() in ("---", "..."):
            raw = text[len(lines[0]) : offset]
            try:
                data = yaml.safe_load(raw) if raw.strip() else {}
            except yaml.YAMLError as e:
                mark = getattr(e, "problem_mark", None)
                where = f" (line {mark.line + 2})" if mark is not None else ""
                raise CorpusError(
                    f"{source}: invalid YAML front matter{where}: {getattr(e, 'problem', e)}; "
                    "fix the block between the leading '---' lines or remove it"
                ) from None
            if data is None:
                data = {}
            if not isinstance(data, dict):
                raise CorpusError(
                    f"{source}: front matter must be a YAML mapping (key: value lines), "
                    f"got {type(data).__name__}"
                )
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
    ids: list[str] = []
    claimed: set[str] = set()
    for h in headings:
        if h.explicit_id and h.explicit_id not in claimed:
            ids.append(h.explicit_id)
            claimed.add(h.explicit_id)
        elif h.explicit_id:  # the same {#id} written twice: numbered like a duplicate slug
            ids.append(slugger.unique(h.explicit_id))
        else:
            ids.append(slugger.unique(slugify(strip_inline_markdown(h.title)) or "section"))

    sections: list[Section] = []
    stack: list[tuple[int, Section]] = []  # (level, section) of open ancestors
    n = len(body)
    for i, h in enumerate(headings):
        end = next((o.offset for o in headings[i + 1 :] if o.level <= h.level), n)
        own_end = headings[i + 1].offset if i + 1 < len(headings) else n
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        title = strip_inline_markdown(h.title)
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
