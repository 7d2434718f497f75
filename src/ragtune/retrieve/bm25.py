"""Lexical retrieval with BM25 (bm25s), English stemming and stopwords."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from ..config import Config, Opt, check_choice, check_range
from ..errors import ConfigError, MissingDependencyError
from ..types import Chunk, Hit, Ranking
from .base import top_k
from .filters import ChunkFilter

__all__ = ["BM25Config", "BM25Retriever", "indexed_texts_key"]


def indexed_texts_key(chunks: Sequence[Chunk]) -> str:
    """A hash of what BM25 indexes: each chunk's id and its embed_text (the prefix changes the latter only)."""
    import hashlib

    h = hashlib.sha256()
    for c in chunks:
        h.update(c.id.encode())
        h.update(hashlib.sha256(c.embed_text.encode("utf-8")).digest())
    return h.hexdigest()

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
STEMMERS = ("english", "porter", None)


@dataclass(frozen=True)
class BM25Config(Config):
    """BM25 parameters. ``stemmer`` is a Snowball algorithm name or None;
    ``stopwords`` is ``"en"`` or None."""

    k1: Annotated[float, Opt("BM25 term-frequency saturation (higher: repeated terms count longer)")] = 1.5
    b: Annotated[float, Opt("BM25 length normalisation, 0 (none) to 1 (full)")] = 0.75
    method: Annotated[str, Opt("BM25 variant (bm25s): lucene, robertson, atire, bm25l, bm25+")] = "lucene"
    stemmer: Annotated[str | None, Opt("stemmer language for BM25 tokens (none: no stemming)")] = "english"
    stopwords: Annotated[str | None, Opt("stop-word list for BM25 tokens (none: keep every word)")] = "en"

    def __post_init__(self) -> None:
        check_range("BM25Config", "k1", self.k1, lo=0)
        check_range("BM25Config", "b", self.b, lo=0, hi=1)
        check_choice("BM25Config", "method", self.method, METHODS)
        check_choice("BM25Config", "stemmer", self.stemmer, STEMMERS)
        check_choice("BM25Config", "stopwords", self.stopwords, ("en", None))


def _stemmer(name: str | None):
    if name is None:
        return None
    try:
        import Stemmer  # PyStemmer
    except ImportError:  # pragma: no cover - a core dependency
        raise MissingDependencyError("BM25 stemming needs PyStemmer: pip install PyStemmer") from None
    return Stemmer.Stemmer(name).stemWord


class BM25Retriever:
    """BM25 over each chunk's ``embed_text``.

    Scores come from bm25s; ranking is an exact top-k over all chunks with
    ties broken by chunk order. A query with no known term returns no hits.
    """

    name = "bm25"

    def __init__(self, chunks: Sequence[Chunk], model, tokenizer, config: BM25Config):
        self.chunks = tuple(chunks)
        self.config = config
        self._model = model
        self._tokenizer = tokenizer
        vocab = tokenizer.get_vocab_dict()
        self._empty_id = vocab.get("")
        self._vocab = vocab  # stem (or word) -> token id
        self._stop = frozenset(tokenizer.stopwords or ())
        self._stem = _stemmer(config.stemmer)
        self.filter = ChunkFilter(self.chunks)

    @classmethod
    def build(cls, chunks: Sequence[Chunk], config: BM25Config | None = None) -> "BM25Retriever":
        import bm25s
        from bm25s.tokenization import Tokenizer

        config = config or BM25Config()
        if not chunks:
            raise ConfigError("cannot build a BM25 index over zero chunks; is the corpus empty?")
        tokenizer = Tokenizer(stopwords=config.stopwords or [], stemmer=_stemmer(config.stemmer))
        ids = tokenizer.tokenize([c.embed_text for c in chunks], return_as="ids", show_progress=False)
        model = bm25s.BM25(k1=config.k1, b=config.b, method=config.method)
        model.index(ids, show_progress=False)
        return cls(chunks, model, tokenizer, config)

    def save(self, folder) -> None:
        """Write the index as plain files (bm25s arrays as .npy, vocabularies and params as JSON; no pickle)."""
        import json
        from pathlib import Path

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        vocab = self._model.vocab_dict  # token id -> index: orjson (bm25s uses it when installed) refuses int keys
        self._model.vocab_dict = {str(k): v for k, v in vocab.items()} if vocab else vocab  # what json.dumps writes
        try:
            self._model.save(str(folder), show_progress=False)
        finally:
            self._model.vocab_dict = vocab
        self._tokenizer.save_vocab(str(folder))
        (folder / "ragtune-bm25.json").write_text(json.dumps({"config": self.config.to_dict(), "n_chunks": len(self.chunks),
                                                               "texts": indexed_texts_key(self.chunks)}))

    @classmethod
    def load(cls, folder, chunks: Sequence[Chunk], config: BM25Config | None = None) -> "BM25Retriever":
        """Load an index written by :meth:`save` for exactly these ``chunks`` (checked) and config."""
        import json
        from pathlib import Path

        import bm25s
        from bm25s.tokenization import Tokenizer

        config = config or BM25Config()
        folder = Path(folder)
        meta = json.loads((folder / "ragtune-bm25.json").read_text())
        if meta["config"] != config.to_dict() or meta.get("texts") != indexed_texts_key(chunks):
            raise ConfigError(f"{folder}: the saved BM25 index was built for other chunks or another configuration")
        model = bm25s.BM25.load(str(folder), show_progress=False)
        tokenizer = Tokenizer(stopwords=config.stopwords or [], stemmer=_stemmer(config.stemmer))
        tokenizer.load_vocab(str(folder))
        return cls(chunks, model, tokenizer, config)

    def _query_ids(self, query: str) -> list[int]:
        """The query's token ids, tokenised exactly as the chunks were. Done here rather than with
        ``Tokenizer.tokenize``, which remembers every unseen query word: a server would grow without bound."""
        words = [w for w in self._tokenizer.splitter(query.lower()) if w not in self._stop]
        terms = [self._stem(w) for w in words] if self._stem is not None else words
        ids = [self._vocab[t] for t in terms if t in self._vocab]
        return [i for i in ids if i != self._empty_id]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for ``query`` (zeros when no term is known)."""
        ids = self._query_ids(query)
        if not ids:
            return np.zeros(len(self.chunks), dtype=np.float32)
        return np.asarray(self._model.get_scores(ids), dtype=np.float32)

    def search(self, query: str, k: int = 10, filters=None) -> Ranking:
        t0 = time.perf_counter()
        mask = self.filter.mask(filters)
        scores = self.scores(query)
        idx = top_k(scores, k, min_score=0.0, mask=mask)
        hits = tuple(Hit(self.chunks[i], float(scores[i])) for i in idx)
        return Ranking(query, hits, {"bm25": time.perf_counter() - t0})


def _build(config: BM25Config, chunks: Sequence[Chunk], resources) -> BM25Retriever:
    return resources.bm25(chunks, config)


from ..registry import RETRIEVERS  # noqa: E402

RETRIEVERS.register("bm25", BM25Config, _build, summary="lexical BM25 (bm25s, stemming, stopwords)")
