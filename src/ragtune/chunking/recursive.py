"""Recursive splitting on the largest natural boundary that fits.

Boundaries, largest first: markdown headings, blank lines, line breaks,
sentence ends, whitespace; a piece with none left falls back to fixed windows.
Adjacent pieces are merged greedily up to the size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..types import Chunk, Document
from .base import Prefixes, SizedConfig, apply_overlap, emit, refit, windows
from .tokens import TokenSpans, get_tokenizer

__all__ = ["RecursiveChunkerConfig", "RecursiveChunker", "split_recursive", "SEPARATORS"]

# each pattern matches the gap *before* a new piece; the new piece starts at match.end()
SEPARATORS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\n(?= {0,3}#{1,6}[ \t])"),      # before a heading
    re.compile(r"\n[ \t]*\r?\n\s*"),              # blank line
    re.compile(r"\r?\n"),                         # line break
    re.compile(r"(?<=[.!?。！？])[\"')\]]*\s+"),    # sentence end
    re.compile(r"\s+"),                           # any whitespace
)


def split_recursive(ts: TokenSpans, start: int, end: int, budget: int, level: int = 0) -> list[tuple[int, int]]:
    """Contiguous pieces covering ``[start, end)``, each at most ``budget`` tokens."""
    if ts.count(start, end) <= budget:
        return [(start, end)]
    if level >= len(SEPARATORS):
        return windows(ts, start, end, budget, 0)
    text = ts.text
    cuts = [m.end() for m in SEPARATORS[level].finditer(text, start, end) if start < m.end() < end]
    if not cuts:
        return split_recursive(ts, start, end, budget, level + 1)
    bounds = [start, *cuts, end]
    out: list[tuple[int, int]] = []
    group: tuple[int, int] | None = None
    for s, e in zip(bounds, bounds[1:]):
        if ts.count(s, e) > budget:
            if group:
                out.append(group)
                group = None
            out.extend(split_recursive(ts, s, e, budget, level + 1))
        elif group is not None and ts.count(group[0], e) <= budget:
            group = (group[0], e)
        else:
            if group:
                out.append(group)
            group = (s, e)
    if group:
        out.append(group)
    return out


@dataclass(frozen=True)
class RecursiveChunkerConfig(SizedConfig):
    """Pieces of at most ``size`` tokens (with ``prefix``, each piece's prefix included) cut at natural
    boundaries; each piece after the first starts ``overlap`` tokens early."""


class RecursiveChunker:
    name = "recursive"

    def __init__(self, config: RecursiveChunkerConfig | None = None):
        self.config = config or RecursiveChunkerConfig()

    def chunk(self, document: Document) -> list[Chunk]:
        cfg = self.config
        tok = get_tokenizer(cfg.tokenizer)
        ts = TokenSpans(document.text, tok)
        pre = Prefixes(document, ts, prefix=cfg.prefix, size=cfg.size, tokenizer=tok)
        n = len(document.text)
        if len(ts) <= pre.budget(0):
            return emit(document, [(0, n)], ts, prefix=cfg.prefix, prefixes=pre)
        pieces = split_recursive(ts, 0, n, cfg.size - cfg.overlap)
        return emit(document, fit_recursive(ts, pieces, pre, cfg.overlap), ts, prefix=cfg.prefix, prefixes=pre)


def fit_recursive(ts: TokenSpans, pieces: list[tuple[int, int]], pre: Prefixes, overlap: int) -> list[tuple[int, int]]:
    """``pieces`` with ``overlap`` applied; with a prefix, a piece that does not fit with its prefix is first cut
    again (recursively, at the budget its start leaves) and no overlap makes a piece outgrow its budget."""
    if not pre.prefix:
        return apply_overlap(ts, pieces, overlap)
    pieces = refit(ts, pieces, lambda s: max(pre.budget(s) - overlap, 1),
                   lambda s, e, room: split_recursive(ts, s, e, room))
    return apply_overlap(ts, pieces, overlap, budget=pre.budget)


from ..registry import CHUNKERS  # noqa: E402 - registered where it is defined

CHUNKERS.register("recursive", RecursiveChunkerConfig, RecursiveChunker, summary="split on headings, paragraphs, lines, sentences", replace=True)
