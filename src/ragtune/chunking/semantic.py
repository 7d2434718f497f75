"""Semantic chunking: cut where neighbouring sentences stop being about the same thing.

Sentences (cut at sentence ends, line breaks and blank lines) are embedded;
a new chunk starts where the cosine similarity of two neighbours falls below
``threshold`` or, when no threshold is given, where their distance is in the
top ``100 - percentile`` percent of the document's distances. Chunks never
exceed ``size`` tokens. Sentence embeddings go through the embedding cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np

from ..config import Opt, check_range
from ..embed import DEFAULT_EMBEDDER
from ..errors import ConfigError
from ..types import Chunk, Document
from .base import Budget, Prefixes, SizedConfig, emit, trim_span, windows
from .recursive import SEPARATORS
from .tokens import TokenSpans, get_tokenizer

__all__ = ["SemanticChunkerConfig", "SemanticChunker", "sentence_spans"]


@dataclass(frozen=True)
class SemanticChunkerConfig(SizedConfig):
    overlap: int = 0
    threshold: Annotated[float | None, Opt(
        "similarity drop that starts a new chunk (default: from --percentile)")] = None
    percentile: Annotated[float, Opt(
        "percentile of sentence-to-sentence distances that splits, when no threshold")] = 90.0
    embedder: Annotated[str, Opt("embedder that compares sentences")] = DEFAULT_EMBEDDER

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.overlap:
            raise ConfigError("SemanticChunkerConfig: semantic chunks follow topic shifts and do not overlap; "
                              "set overlap=0 (use fixed or recursive for overlapping windows)")
        if self.threshold is not None:
            check_range("SemanticChunkerConfig", "threshold", self.threshold, lo=-1, hi=1)
        check_range("SemanticChunkerConfig", "percentile", self.percentile, lo=0, hi=100)


def sentence_spans(ts: TokenSpans, size: int, budget: Budget | None = None) -> list[tuple[int, int]]:
    """Trimmed sentence spans covering the text; a sentence over ``size`` tokens (or ``budget(its start)``: a
    prefix counted) is windowed."""
    text = ts.text
    cuts = sorted({m.end() for pat in SEPARATORS[1:4] for m in pat.finditer(text)})
    bounds = [0, *[c for c in cuts if 0 < c < len(text)], len(text)]
    out = []
    for s, e in zip(bounds, bounds[1:]):
        s, e = trim_span(text, s, e)
        if s >= e:
            continue
        if ts.count(s, e) > (size if budget is None else min(size, budget(s))):
            out.extend(trim_span(text, a, b) for a, b in windows(ts, s, e, size, budget=budget))
        else:
            out.append((s, e))
    return [(s, e) for s, e in out if s < e]


class SemanticChunker:
    name = "semantic"

    def __init__(self, config: SemanticChunkerConfig | None = None, *, embedder=None):
        self.config = config or SemanticChunkerConfig()
        self._embedder = embedder  # built on first use

    @property
    def embedder(self):
        if self._embedder is None:
            from ..embed import CachedEmbedder, get_embedder

            self._embedder = CachedEmbedder(get_embedder(self.config.embedder))
        return self._embedder

    def chunk(self, document: Document) -> list[Chunk]:
        cfg = self.config
        tok = get_tokenizer(cfg.tokenizer)
        ts = TokenSpans(document.text, tok)
        pre = Prefixes(document, ts, prefix=cfg.prefix, size=cfg.size, tokenizer=tok)
        sents = sentence_spans(ts, cfg.size, pre.budget if cfg.prefix else None)
        if len(sents) <= 1:
            return emit(document, sents, ts, prefix=cfg.prefix, prefixes=pre)
        vecs = self.embedder.embed([document.text[s:e] for s, e in sents])
        sims = np.einsum("ij,ij->i", vecs[:-1], vecs[1:])
        if cfg.threshold is not None:
            breaks = sims < cfg.threshold
        else:
            dist = 1.0 - sims
            breaks = dist > np.percentile(dist, cfg.percentile)
        spans: list[tuple[int, int]] = []
        cur_s, cur_e = sents[0]
        for (s, e), brk in zip(sents[1:], breaks):
            if brk or ts.count(cur_s, e) > pre.budget(cur_s):
                spans.append((cur_s, cur_e))
                cur_s = s
            cur_e = e
        spans.append((cur_s, cur_e))
        return emit(document, spans, ts, prefix=cfg.prefix, prefixes=pre)


from ..registry import CHUNKERS  # noqa: E402 - registered where it is defined

CHUNKERS.register("semantic", SemanticChunkerConfig, SemanticChunker, summary="cut where neighbouring sentences diverge", uses_embedder=True, fixed=("overlap",), replace=True)
