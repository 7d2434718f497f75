"""Structure-aware markdown chunking.

Sections first, then paragraphs within a section. Fenced code blocks and
tables are atomic: they are cut only when one block alone exceeds the size,
a table between rows (its header repeated in the indexed text of every
piece) and a code block between lines (the fence reopened and closed in the
indexed text). A heading always stays with the first content under it.
With ``merge_siblings``, small consecutive sections under the same parent
(or a parent's intro and its first child) share a chunk up to the size.
With ``prefix``, the size counts each chunk's prefix: a piece and the
``Title > Heading path`` it is indexed with fit the size together.

Blocks come from the same scanner the corpus parser uses
(:mod:`ragtune.corpus.blocks`), so a heading that has an anchor is never
swallowed as code here, and a ``#`` line in code never opens a section
there. HTML blocks and indented code are kept whole like fenced code, but
when too big they are cut between lines with nothing repeated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from ..config import Opt
from ..corpus.blocks import Block, blocks_in
from ..errors import ConfigError
from ..types import Chunk, Document, Section
from .base import Prefixes, SizedConfig, apply_overlap, make_chunk, trim_span, windows
from .recursive import split_recursive
from .tokens import TokenSpans, get_tokenizer

__all__ = ["MarkdownChunkerConfig", "MarkdownChunker", "blocks"]

@dataclass(frozen=True)
class MarkdownChunkerConfig(SizedConfig):
    overlap: int = 0
    merge_siblings: Annotated[bool, Opt("merge small sibling sections up to the size")] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.merge_siblings, bool):
            raise ConfigError(f"MarkdownChunkerConfig: merge_siblings must be true or false, got {self.merge_siblings!r}")


def blocks(text: str, start: int, end: int) -> list[Block]:
    """The blocks of ``text`` within ``[start, end)``, as the corpus parser sees them.

    The whole text is scanned (once, cached), so a block's kind never depends
    on where a section starts: a heading the parser found is a heading here,
    and a line the parser took for code is code here.
    """
    return blocks_in(text, start, end)


def is_heading_block(text: str, block: Block) -> bool:
    """A block made of one heading and nothing else (ATX line, or setext text + underline)."""
    return block.kind == "heading"


@dataclass
class Piece:
    start: int
    end: int
    lead: str = ""
    tail: str = ""


def _split_lines(ts: TokenSpans, lines: list[tuple[int, int]], budget: int) -> list[tuple[int, int]]:
    """Group consecutive lines up to ``budget`` tokens; a line too long alone is windowed."""
    groups: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    for s, e in lines:
        if ts.count(s, e) > budget:
            if cur:
                groups.append(cur)
                cur = None
            groups.extend(windows(ts, s, e, budget))
        elif cur is not None and ts.count(cur[0], e) <= budget:
            cur = (cur[0], e)
        else:
            if cur:
                groups.append(cur)
            cur = (s, e)
    if cur:
        groups.append(cur)
    return groups


def split_block(ts: TokenSpans, block: Block, budget: int) -> list[Piece]:
    """Cut one block that exceeds ``budget``: tables between rows, code between lines, text recursively."""
    text = ts.text
    if block.kind == "table" and len(block.lines) > 2 and 2 * ts.count(block.lines[0][0], block.lines[1][1]) <= budget:
        (hs, _), (_, he) = block.lines[0], block.lines[1]
        header = text[hs:he]
        groups = _split_lines(ts, block.lines[2:], max(1, budget - ts.count(hs, he)))
        return [Piece(block.start if i == 0 else s, e, lead="" if i == 0 else header + "\n")
                for i, (s, e) in enumerate(groups)]
    if block.kind == "code" and block.fence and len(block.lines) > 2 and 4 * ts.count(*block.lines[0]) <= budget:
        os_, oe = block.lines[0]
        opening = text[os_:oe].strip()
        marker = block.fence
        body = block.lines[1:-1] if block.closed else block.lines[1:]
        groups = _split_lines(ts, body, max(1, budget - 2 * ts.count(os_, oe))) if body else []
        if not groups:
            return [Piece(block.start, block.end)]
        n = len(groups)
        return [Piece(block.start if i == 0 else s, block.end if i == n - 1 else e,
                      lead="" if i == 0 else opening + "\n", tail="" if i == n - 1 else "\n" + marker)
                for i, (s, e) in enumerate(groups)]
    if block.kind in ("code", "table", "html"):  # indented code, HTML, or a header or fence too big to repeat
        return [Piece(s, e) for s, e in _split_lines(ts, block.lines, budget)]
    return [Piece(s, e) for s, e in split_recursive(ts, block.start, block.end, budget, level=2)]


def section_pieces(ts: TokenSpans, start: int, end: int, budget: int, overlap: int) -> list[Piece]:
    """Pack the blocks of ``[start, end)`` into pieces of at most ``budget`` tokens.

    Leading heading-only blocks are glued to the first block after them, so a
    heading never ends a piece.
    """
    blks = blocks(ts.text, start, end)
    if not blks:
        return []
    h = 0
    while h < len(blks) and is_heading_block(ts.text, blks[h]):
        h += 1
    units = [blks[: h + 1]] + [[b] for b in blks[h + 1:]] if 0 < h < len(blks) else [[b] for b in blks]
    pieces: list[Piece] = []
    cur: Piece | None = None
    for unit in units:
        us, ue = unit[0].start, unit[-1].end
        if ts.count(us, ue) <= budget:
            if cur is not None and ts.count(cur.start, ue) <= budget:
                cur.end = ue
            else:
                if cur:
                    pieces.append(cur)
                cur = Piece(us, ue)
            continue
        if cur:
            pieces.append(cur)
            cur = None
        big = unit[-1]
        head_tokens = ts.count(us, unit[-2].end) if len(unit) > 1 else 0
        room = budget - head_tokens
        if room < max(1, budget // 4):  # headings too long to reserve room for: cut everything as text
            sub = split_block(ts, Block(us, ue, "para", [l for b in unit for l in b.lines]), budget)
        elif ts.count(big.start, big.end) <= room:
            sub = [Piece(us, ue)]
        else:
            sub = split_block(ts, big, room)
            sub[0] = Piece(us, sub[0].end, tail=sub[0].tail)
        pieces.extend(sub)
    if cur:
        pieces.append(cur)
    if overlap and len(pieces) > 1:
        spans = apply_overlap(ts, [(p.start, p.end) for p in pieces], overlap)
        for p, (s, _) in zip(pieces, spans):
            p.start = s
    return pieces


class MarkdownChunker:
    name = "markdown"

    def __init__(self, config: MarkdownChunkerConfig | None = None):
        self.config = config or MarkdownChunkerConfig()

    def chunk(self, document: Document) -> list[Chunk]:
        cfg = self.config
        text = document.text
        tok = get_tokenizer(cfg.tokenizer)
        ts = TokenSpans(text, tok)
        pre = Prefixes(document, ts, prefix=cfg.prefix, size=cfg.size, tokenizer=tok)
        units: list[tuple[int, int, Section | None]] = [(0, document.sections[0].start if document.sections else len(text), None)]
        units.extend((s.start, s.own_end, s) for s in document.sections)

        items: list[tuple[Piece, Section | None, bool]] = []  # (piece, section, whole section?)
        pending: int | None = None  # start of heading-only sections waiting for their content
        for i, (start, end, section) in enumerate(units):
            start, end = trim_span(text, start, end)
            if start >= end:
                continue
            heading_only = False
            if section is not None:
                blks = blocks(text, start, end)
                heading_only = len(blks) == 1 and is_heading_block(text, blks[0])
                if heading_only and i + 1 < len(units) and ts.count(pending or start, end) * 2 <= cfg.size:
                    pending = start if pending is None else pending
                    continue
            if pending is not None:
                start, pending = pending, None
            # the size less the prefix: the longer of the unit's (where its chunks start) and its section's
            size = min(pre.budget(start), pre.budget(section.start)) if section is not None else pre.budget(start)
            if ts.count(start, end) <= size:
                # headings too long to carry forward stand alone: never merged onto earlier content
                items.append((Piece(start, end), section, not heading_only))
            else:
                pieces = section_pieces(ts, start, end, max(size - cfg.overlap, 1), cfg.overlap)
                items.extend((p, section, False) for p in pieces)
        if pending is not None:  # headings with nothing under them at the end of the document
            items.append((Piece(pending, len(text)), None, False))

        merged = self._merge(ts, items, pre) if cfg.merge_siblings else [p for p, _, _ in items]
        chunks = []
        for p in merged:
            s, e = trim_span(text, p.start, p.end)
            if s < e:
                chunks.append(make_chunk(document, s, e, prefix=cfg.prefix, tokens=ts.count(s, e),
                                         lead=p.lead, tail=p.tail, prefixes=pre))
        return chunks

    def _merge(self, ts: TokenSpans, items: list[tuple[Piece, Section | None, bool]], pre: Prefixes) -> list[Piece]:
        """Merge consecutive whole sections under one parent (or a parent's intro and its
        first child) while they fit in the size (the group's prefix counted)."""
        out: list[Piece] = []
        group: tuple[Section, Section] | None = None  # (first, last) section of the open merged group
        for piece, section, whole in items:
            if (group is not None and whole and section is not None
                    and section.parent in (group[0].parent, group[1].anchor)
                    and ts.count(out[-1].start, piece.end) <= pre.budget(out[-1].start)):
                out[-1] = Piece(out[-1].start, piece.end)
                group = (group[0], section)
                continue
            out.append(piece)
            group = (section, section) if whole and section is not None else None
        return out


from ..registry import CHUNKERS  # noqa: E402 - registered where it is defined

CHUNKERS.register("markdown", MarkdownChunkerConfig, MarkdownChunker, summary="heading-aware; tables and code blocks atomic", replace=True)
