"""Content words for lexical matching: lowercase, English stopwords dropped, Snowball-stemmed."""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["content_terms"]

_WORD_RE = re.compile(r"\w\w+")


@lru_cache(maxsize=1)
def _tools():
    import Stemmer
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return Stemmer.Stemmer("english"), frozenset(STOPWORDS_EN_PLUS)


def content_terms(text: str) -> set[str]:
    stemmer, stop = _tools()
    words = [w for w in _WORD_RE.findall(text.lower()) if w not in stop]
    return set(stemmer.stemWords(words))
