"""A ragtune retriever in one module: rank chunks by the share of query words they contain.

Registered through the ``ragtune.retrievers`` entry point (see pyproject.toml), so after
``pip install ./examples/plugin`` it is ``--retriever overlap`` on every command, a grid value in sweeps,
and a recordable store configuration, with ``--min-share`` as a validated flag.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Annotated

from ragtune.config import Config, Opt, check_range
from ragtune.registry import RETRIEVERS
from ragtune.retrieve.filters import ChunkFilter
from ragtune.types import Hit, Ranking

WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class OverlapConfig(Config):
    """``min_share``: the smallest share of the query's words a chunk must contain to be returned."""

    min_share: Annotated[float, Opt("smallest share of the query's words a hit must contain")] = 0.0

    def __post_init__(self) -> None:
        check_range("OverlapConfig", "min_share", self.min_share, lo=0, hi=1)


class OverlapRetriever:
    name = "overlap"

    def __init__(self, chunks, config: OverlapConfig):
        self.chunks = tuple(chunks)
        self.config = config
        self.words = [frozenset(WORD.findall(c.embed_text.lower())) for c in self.chunks]
        self.filter = ChunkFilter(self.chunks)

    def search(self, query: str, k: int = 10, filters=None) -> Ranking:
        t0 = time.perf_counter()
        q = frozenset(WORD.findall(query.lower()))
        mask = self.filter.mask(filters)
        scored = [(len(q & w) / len(q), i) for i, w in enumerate(self.words)
                  if q and (mask is None or mask[i]) and q & w]
        scored = [s for s in scored if s[0] >= self.config.min_share]
        scored.sort(key=lambda s: (-s[0], s[1]))  # ties: corpus order
        hits = tuple(Hit(self.chunks[i], score) for score, i in scored[:k])
        return Ranking(query, hits, {"overlap": time.perf_counter() - t0})


def build(config: OverlapConfig, chunks, resources) -> OverlapRetriever:
    """The factory: ``resources`` offers the pipeline's embedder and BM25/dense indexes (unused here)."""
    return OverlapRetriever(chunks, config)


RETRIEVERS.register("overlap", OverlapConfig, build, summary="share of query words in the chunk (example plugin)")


# ---------------------------------------------------------------------------------------------------------------
# A retriever with an index of its own: the same ranking from an inverted index (word -> chunk rows), built once,
# saved into a store version's index/ folder and reopened from it. Declaring ``load=`` is the whole contract: a
# store then builds, reloads, refreshes and rolls back this index like the built-in BM25 files and vectors.


class OverlapIndex(OverlapRetriever):
    name = "overlap-index"
    FORMAT = 1

    def __init__(self, chunks, config: OverlapConfig, postings: dict[str, list[int]] | None = None):
        self.chunks = tuple(chunks)
        self.config = config
        self.filter = ChunkFilter(self.chunks)
        self.loaded = postings is not None  # reopened from a saved folder (True) or built from the chunks
        if postings is None:
            postings = {}
            for row, c in enumerate(self.chunks):
                for w in sorted(set(WORD.findall(c.embed_text.lower()))):
                    postings.setdefault(w, []).append(row)
        self.postings = postings

    def search(self, query: str, k: int = 10, filters=None) -> Ranking:
        t0 = time.perf_counter()
        q = frozenset(WORD.findall(query.lower()))
        mask = self.filter.mask(filters)
        counts: dict[int, int] = {}
        for w in q:
            for row in self.postings.get(w, ()):
                counts[row] = counts.get(row, 0) + 1
        scored = [(n / len(q), i) for i, n in counts.items() if (mask is None or mask[i])]
        scored = [s for s in scored if s[0] >= self.config.min_share]
        scored.sort(key=lambda s: (-s[0], s[1]))
        hits = tuple(Hit(self.chunks[i], score) for score, i in scored[:k])
        return Ranking(query, hits, {"overlap-index": time.perf_counter() - t0})

    def save(self, folder) -> None:
        from pathlib import Path

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "overlap-index.json").write_text(json.dumps(
            {"format": self.FORMAT, "chunks": [c.id for c in self.chunks], "postings": self.postings}))

    @classmethod
    def load(cls, config: OverlapConfig, chunks, resources, folder) -> "OverlapIndex":
        from pathlib import Path

        from ragtune.errors import ConfigError

        path = Path(folder) / "overlap-index.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise ConfigError(f"cannot read the saved overlap index {path}: {e}; rebuild the version") from None
        if data.get("format") != cls.FORMAT or data.get("chunks") != [c.id for c in chunks]:
            raise ConfigError(f"{path} was saved for other chunks or another format; rebuild the version")
        return cls(chunks, config, data["postings"])


def build_index(config: OverlapConfig, chunks, resources) -> OverlapIndex:
    return OverlapIndex(chunks, config)


RETRIEVERS.register("overlap-index", OverlapConfig, build_index, load=OverlapIndex.load,
                    summary="share of query words, from an inverted index saved with the store (example plugin)")
