"""Fixed-size windows of tokens with overlap."""

from __future__ import annotations

from dataclasses import dataclass

from ..types import Chunk, Document
from .base import Prefixes, SizedConfig, emit, windows
from .tokens import TokenSpans, get_tokenizer

__all__ = ["FixedChunkerConfig", "FixedChunker"]


@dataclass(frozen=True)
class FixedChunkerConfig(SizedConfig):
    """Windows of ``size`` tokens (with ``prefix``, each window's prefix included); consecutive windows share
    ``overlap`` tokens."""


class FixedChunker:
    name = "fixed"

    def __init__(self, config: FixedChunkerConfig | None = None):
        self.config = config or FixedChunkerConfig()

    def chunk(self, document: Document) -> list[Chunk]:
        cfg = self.config
        tok = get_tokenizer(cfg.tokenizer)
        ts = TokenSpans(document.text, tok)
        pre = Prefixes(document, ts, prefix=cfg.prefix, size=cfg.size, tokenizer=tok)
        spans = windows(ts, 0, len(document.text), cfg.size, cfg.overlap, budget=pre.budget if cfg.prefix else None)
        return emit(document, spans, ts, prefix=cfg.prefix, prefixes=pre)


from ..registry import CHUNKERS  # noqa: E402 - registered where it is defined

CHUNKERS.register("fixed", FixedChunkerConfig, FixedChunker, summary="token windows with overlap", replace=True)
