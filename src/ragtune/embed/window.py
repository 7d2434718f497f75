"""Chunk sizes in the embedder's own tokens, and the share of chunks its window cuts.

An embedder reads at most ``max_tokens`` tokens of its tokenizer (special
tokens included) and silently drops the rest. Chunk sizes counted with the
``regex`` tokenizer are words and punctuation marks, fewer than the
sub-word pieces a model sees, so a "256-token" chunk is often cut.
:func:`embedder_tokenizer` names the tokenizer a chunker should count with
for a given embedder; :func:`window_overflow` measures what is cut.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .base import DEFAULT_EMBEDDER

__all__ = ["embedder_tokenizer", "embedder_window", "window_overflow", "WindowOverflow"]

MINILM_WINDOW = 256  # all-MiniLM-L6-v2's max_seq_length, special tokens included


def embedder_window(embedder: str) -> int | None:
    """How many tokens ``embedder`` reads (special tokens included), when that is known without loading it: the
    default MiniLM's 256. None for the others (their window is read from the model once it is loaded, and a chunk
    longer than it is reported by :func:`window_overflow`)."""
    from .spec import EmbedderSpec

    return MINILM_WINDOW if EmbedderSpec.parse(embedder).kind == DEFAULT_EMBEDDER else None


def embedder_tokenizer(embedder: str) -> str | None:
    """The ``tokenizer`` chunker option that counts in ``embedder``'s tokens, or None when it is not available
    offline (``e5-small``, whose tokenizer is inside its binary; hosted ``openai:`` models; an ``st:`` hub model
    not in the local cache)."""
    from .spec import EmbedderSpec

    spec = EmbedderSpec.parse(embedder)  # the prefixes do not change the tokenizer
    kind, arg = spec.kind, spec.model
    if kind == DEFAULT_EMBEDDER:
        return "minilm"  # the bundled MiniLM tokenizer (chunking.tokens)
    if kind == "onnx" and arg:
        path = Path(arg) / "tokenizer.json"
        return str(path) if path.is_file() else None
    if kind == "st" and arg:
        if Path(arg).is_dir():
            path = Path(arg) / "tokenizer.json"
            return str(path) if path.is_file() else None
        try:
            from huggingface_hub import try_to_load_from_cache

            cache_dir = os.environ.get("HF_HUB_CACHE") or (os.path.join(os.environ["HF_HOME"], "hub")
                                                            if os.environ.get("HF_HOME") else None)
            found = try_to_load_from_cache(arg, "tokenizer.json", cache_dir=cache_dir)
        except Exception:
            return None
        return found if isinstance(found, str) and os.path.isfile(found) else None
    return None


@dataclass(frozen=True)
class WindowOverflow:
    """How many of ``total`` texts have more tokens than the embedder's window ``max_tokens``. ``counted``:
    how many texts were tokenized (fewer than ``total`` when a sample stood for them; then ``over`` and
    ``tokens_lost`` are scaled up to ``total``)."""

    over: int
    total: int
    max_tokens: int
    tokens_lost: int  # summed over the texts that are cut
    counted: int = 0

    @property
    def share(self) -> float:
        return self.over / self.total if self.total else 0.0

    @property
    def sampled(self) -> bool:
        return 0 < self.counted < self.total


SAMPLE = 2000  # texts counted at most: the warning is advice, and tokenizing every chunk of a large corpus is not free


def window_overflow(embedder, texts: Sequence[str], *, sample: int | None = SAMPLE) -> WindowOverflow | None:
    """Count, with the embedder's own tokenizer, how many ``texts`` its window cuts; None when the embedder
    cannot count its tokens (it has no ``count_tokens``). More than ``sample`` texts: an evenly spaced sample
    of that many is counted and the figures scaled to all (``sample=None`` counts every text)."""
    inner = getattr(embedder, "inner", embedder)
    count = getattr(inner, "count_tokens", None)
    if count is None:
        return None
    import numpy as np

    texts = list(texts)
    total = len(texts)
    if sample is not None and total > sample:
        picks = np.linspace(0, total - 1, sample).round().astype(np.int64)
        texts = [texts[i] for i in picks]
    n = np.asarray(count(texts), dtype=np.int64)
    limit = int(embedder.max_tokens)
    over = n > limit
    scale = total / n.size if n.size else 1.0
    return WindowOverflow(int(round(over.sum() * scale)), total, limit, int(round((n[over] - limit).sum() * scale)),
                          int(n.size))
