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

__all__ = ["embedder_tokenizer", "window_overflow", "WindowOverflow"]


def embedder_tokenizer(embedder: str) -> str | None:
    """The ``tokenizer`` chunker option that counts in ``embedder``'s tokens, or None when it is not available
    offline (``e5-small``, whose tokenizer is inside its binary; hosted ``openai:`` models; an ``st:`` hub model
    not in the local cache)."""
    from ..registry import EMBEDDERS

    name = EMBEDDERS.canonical(embedder).split("|")[0]  # without query/passage prefixes
    kind, _, arg = name.partition(":")
    if name == "minilm":
        return "minilm"
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
    """How many of ``total`` texts have more tokens than the embedder's window ``max_tokens``."""

    over: int
    total: int
    max_tokens: int
    tokens_lost: int  # summed over the texts that are cut

    @property
    def share(self) -> float:
        return self.over / self.total if self.total else 0.0


def window_overflow(embedder, texts: Sequence[str]) -> WindowOverflow | None:
    """Count, with the embedder's own tokenizer, how many ``texts`` its window cuts; None when the embedder
    cannot count its tokens (it has no ``count_tokens``)."""
    inner = getattr(embedder, "inner", embedder)
    count = getattr(inner, "count_tokens", None)
    if count is None:
        return None
    import numpy as np

    n = np.asarray(count(list(texts)), dtype=np.int64)
    limit = int(embedder.max_tokens)
    over = n > limit
    return WindowOverflow(int(over.sum()), int(n.size), limit, int((n[over] - limit).sum()))
