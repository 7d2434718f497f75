"""A retriever that ranks at random: configurations of it differ only by noise (its ``salt``).

Registered through the registry like any plugin, so grids and searches run it through the real code path; the
optimism tests use it to show that choosing among noise flatters the winner in-sample and not held out."""

from __future__ import annotations

import random
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Iterator

from ragtune.config import Config, Opt, check_range
from ragtune.registry import RETRIEVERS
from ragtune.types import Hit, Ranking
from tests.helpers import write_files, write_jsonl

DOCS = 20


@dataclass(frozen=True)
class NoiseConfig(Config):
    salt: Annotated[int, Opt("which random ranking")] = 0

    def __post_init__(self) -> None:
        check_range("NoiseConfig", "salt", self.salt, lo=0)


class NoiseRetriever:
    name = "noise"

    def __init__(self, chunks, config: NoiseConfig):
        self.chunks, self.config = tuple(chunks), config

    def search(self, query: str, k: int = 10, filters=None) -> Ranking:
        t0 = time.perf_counter()
        order = list(range(len(self.chunks)))
        random.Random(f"{self.config.salt}|{query}").shuffle(order)
        hits = tuple(Hit(self.chunks[i], 1.0 / (r + 1)) for r, i in enumerate(order[:k]))
        return Ranking(query, hits, {"noise": time.perf_counter() - t0})


@contextmanager
def noise_retriever() -> Iterator[None]:
    RETRIEVERS.register("noise", NoiseConfig, lambda config, chunks, resources: NoiseRetriever(chunks, config),
                        summary="a random ranking (tests)", replace=True)
    try:
        yield
    finally:
        RETRIEVERS.unregister("noise")


def noise_corpus(root: Path, questions: int = 80, unanswerable: int = 6) -> tuple[Path, Path]:
    """(corpus folder, golden file): DOCS one-section documents; answerable questions each about one document,
    tagged a or b, and a few unanswerable ones."""
    corpus = write_files(root / "c", {f"d{i:02d}.md": f"# Doc {i}\n\nThe text of document {i}.\n" for i in range(DOCS)})
    rows = [{"id": f"q{i:02d}", "q": f"question {i}", "relevant": [f"d{i % DOCS:02d}.md"], "tags": ["ab"[i % 2]]}
            for i in range(questions)]
    rows += [{"id": f"u{i}", "q": f"nothing {i}", "relevant": [], "tags": ["unanswerable"]} for i in range(unanswerable)]
    return corpus, write_jsonl(root / "g.jsonl", rows)
