"""One chunk per section: from a heading to the next heading of any level.

With ``max_tokens`` (an embedder's window: 256 for the default MiniLM), a section whose chunk, prefix and the
model's two special tokens included, would be longer is cut at block boundaries (paragraphs, list items; code
blocks and tables stay whole unless one alone is too long) into pieces that each fit, every piece keeping the
section's heading path and prefix, so the embedder reads every chunk whole. The default pipeline searches such
pieces and returns their whole sections (``small_to_big`` with ``parent="section"``, which cuts them here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from ..config import Config, Opt, check_range
from ..errors import ConfigError
from ..types import Chunk, Document
from .base import Prefixes, make_chunk, trim_span, windows
from .tokens import RegexTokenizer, TokenSpans, get_tokenizer

__all__ = ["SectionChunkerConfig", "SectionChunker", "fit_pieces"]

SPECIAL_TOKENS = 2  # [CLS] and [SEP]: what a BERT-style embedder adds to every text, inside its window
# tokens kept free in each piece: a cut inside a word, or a symbol the counting tokenizer splits otherwise than the
# model's (emoji), can make a piece a token or two longer once embedded on its own (seen on FastAPI's release notes)
SLACK = 8


@dataclass(frozen=True)
class SectionChunkerConfig(Config):
    prefix: Annotated[bool, Opt("start every chunk with 'Title > Heading path'")] = False
    max_tokens: Annotated[int | None, Opt(
        "cut a section longer than this many tokens (prefix included) at block boundaries (default: never)")] = None
    tokenizer: Annotated[str, Opt(
        "what a token is for max_tokens (default: the embedder's when the retriever embeds; regex otherwise)")] = "regex"

    def __post_init__(self) -> None:
        if not isinstance(self.prefix, bool):
            raise ConfigError(f"SectionChunkerConfig: prefix must be true or false, got {self.prefix!r}")
        if self.max_tokens is not None:
            check_range("SectionChunkerConfig", "max_tokens", self.max_tokens, lo=0, integer=True)
        if not isinstance(self.tokenizer, str):
            raise ConfigError(f"SectionChunkerConfig: tokenizer must be a name or path, got {self.tokenizer!r}")


def fit_pieces(document: Document, start: int, end: int, ts: TokenSpans, budget: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut into pieces of at most ``budget`` tokens, at block boundaries (blocks packed greedily
    in order); a block longer than the budget alone is cut into token windows."""
    from ..corpus.blocks import blocks_in

    if ts.count(start, end) <= budget:
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    for b in blocks_in(document.text, start, end):
        a, z = max(b.start, start), min(b.end, end)
        if a >= z:
            continue
        if cur is not None and ts.count(cur[0], z) <= budget:
            cur = (cur[0], z)
            continue
        if cur is not None:
            pieces.append(cur)
        if ts.count(a, z) <= budget:
            cur = (a, z)
        else:
            pieces.extend(windows(ts, a, z, budget))
            cur = None
    if cur is not None:
        pieces.append(cur)
    return pieces or [(start, end)]


class SectionChunker:
    """Each section's own text is a chunk; text before the first heading is one too.

    A document without headings is a single chunk.
    """

    name = "section"

    def __init__(self, config: SectionChunkerConfig | None = None):
        self.config = config or SectionChunkerConfig()

    def chunk(self, document: Document) -> list[Chunk]:
        text = document.text
        bounds: list[tuple[int, int]] = []
        if not document.sections:
            bounds.append((0, len(text)))
        else:
            bounds.append((0, document.sections[0].start))
            bounds.extend((s.start, s.own_end) for s in document.sections)
        cfg = self.config
        chunks = []
        tok = get_tokenizer(cfg.tokenizer) if cfg.max_tokens else None
        ts = TokenSpans(text, tok) if tok is not None else None
        # the window less the special tokens and the slack: what a piece and its prefix share
        pre = (Prefixes(document, ts, prefix=cfg.prefix, size=int(cfg.max_tokens or 0) - SPECIAL_TOKENS - SLACK,
                        tokenizer=tok) if ts is not None else None)
        for a, b in bounds:
            a, b = trim_span(text, a, b)
            if a >= b:
                continue
            if ts is None:
                chunks.append(make_chunk(document, a, b, prefix=cfg.prefix,
                                         tokens=len(RegexTokenizer().spans(text[a:b]))))
                continue
            # the tokens left for a piece's own text: the window less the special tokens, the slack and this
            # section's prefix (cut to half of what is left when longer); at least 16 when the window is tiny
            budget = max(pre.budget(a), 16)
            for x, y in fit_pieces(document, a, b, ts, budget):
                x, y = trim_span(text, x, y)
                if x < y:
                    chunks.append(make_chunk(document, x, y, prefix=cfg.prefix, tokens=ts.count(x, y), prefixes=pre))
        return chunks


from ..registry import CHUNKERS  # noqa: E402 - registered where it is defined

CHUNKERS.register("section", SectionChunkerConfig, SectionChunker, summary="one chunk per heading section", replace=True)
