"""The one builder: corpus -> chunks -> first stage (-> rerank) (-> parents), as an immutable :class:`Pipeline`.

:func:`build_pipeline` takes a corpus, a :class:`~ragtune.pipeline.PipelineConfig` and the :class:`Resources` to
build from, and nothing else: eval, sweeps, store build and load, migrate, training and serve all call it, and
whatever they reuse (stored chunks and indexes, cached chunkings, shared embedders) is in the resources.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..corpus.corpus import Corpus
from ..embed import DEFAULT_EMBEDDER
from ..errors import ConfigError, EmptyIndexError
from ..registry import CHUNKERS, RERANKERS, RETRIEVERS, STRATEGIES
from ..retrieve.base import Retriever, warm_up
from ..retrieve.parents import ParentRetriever
from ..retrieve.strategies import StrategyRetriever
from ..rerank.base import RerankedRetriever, Reranker
from ..types import Chunk
from .config import ALIASES, PipelineConfig
from .resources import Resources

__all__ = ["Pipeline", "build_pipeline", "build_strategy", "warn_window", "default_chunker", "build_retriever",
           "build_reranker"]


@dataclass(frozen=True)
class Pipeline:
    """A corpus chunked and indexed, ready to search and evaluate. Immutable.

    ``base`` is the first-stage retriever over ``chunks``; ``retriever`` is what gets searched:
    ``base``, reranked if a reranker is set, then mapped to parents for small-to-big, then searched by the
    ``strategy`` (a :class:`ragtune.stages.Strategy`; None: one search of the question, the default).
    """

    corpus: Corpus
    chunker: Any
    base: Retriever
    chunks: tuple[Chunk, ...] = ()
    parents: tuple[Chunk, ...] = ()
    reranker: Reranker | None = None
    candidates: int = 50
    version: str | None = None  # the store version this pipeline was loaded from
    config: PipelineConfig | None = None
    stats: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # what the build made or reused
    strategy: Any = None
    retriever: Retriever = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "chunks", tuple(self.chunks))
        object.__setattr__(self, "parents", tuple(self.parents))
        r: Retriever = self.base
        if self.reranker is not None:
            r = RerankedRetriever(r, self.reranker, candidates=self.candidates)
        if self.parents:
            r = ParentRetriever(r, {p.id: p for p in self.parents})
        if self.strategy is not None:
            r = StrategyRetriever(r, self.strategy)
        object.__setattr__(self, "retriever", r)

    @classmethod
    def build(cls, corpus: Corpus, config: PipelineConfig | None = None, *, show_progress: bool = False,
              **flags: Any) -> "Pipeline":
        """``Pipeline.build(corpus, PipelineConfig(...))``, or with flag names:
        ``Pipeline.build(corpus, chunker="fixed", size=256, retriever="hybrid")``."""
        if config is None:
            flags = {k: v for k, v in flags.items() if v is not None}
            for group in ("chunker_options", "retriever_options"):  # the keyword form of earlier releases
                flags.update(flags.pop(group, None) or {})
            config = PipelineConfig.from_flags(flags)
        elif flags:
            raise ConfigError("give a PipelineConfig or flag names, not both")
        return build_pipeline(corpus, config, resources=Resources(config.embedder_id, show_progress=show_progress))

    def warm_up(self) -> float:
        """Load the models the searches use (the query embedder, the reranker's model) now rather than in the
        first search, whose latency would otherwise include the load; returns the seconds it took (about 0 once
        loaded). Timed searches (``run_eval``, ``ragtune search``) call it first and report it apart."""
        t0 = time.perf_counter()
        warm_up(self.retriever)
        return time.perf_counter() - t0

    def with_reranker(self, reranker: Reranker | None, candidates: int = 50) -> "Pipeline":
        """A new pipeline over the same index with another reranking stage (no re-chunking, no re-embedding)."""
        return replace(self, reranker=reranker, candidates=candidates)

    def describe(self) -> dict[str, Any]:
        """What eval JSON and reports record of this pipeline. URL-valued options (a Milvus server, an LLM
        reranker's base URL) are recorded with their credentials redacted (:func:`ragtune.http.redact_url`)."""
        cfg = getattr(self.chunker, "config", None)
        rcfg = getattr(self.base, "config", None)
        rcfg = rcfg.to_dict() if hasattr(rcfg, "to_dict") else dict(rcfg or {})
        out = {
            "corpus": {"root": self.corpus.root, "kind": self.corpus.kind, "documents": len(self.corpus),
                       "fingerprint": self.corpus.fingerprint},
            "chunker": {"name": self.chunker.name, **(cfg.to_dict() if cfg else {})},
            "retriever": {"name": self.retriever.name, **rcfg},
            "chunks": len(self.chunks),
        }
        if self.config is not None:
            out["pipeline"] = self.config.to_dict()
        if self.reranker is not None:
            out["rerank"] = {"name": self.reranker.name, **dict(getattr(self.reranker, "config", {}) or {}),
                             "candidates": self.candidates}
        if self.parents:
            out["parents"] = len(self.parents)
        if self.strategy is not None:
            config = getattr(self.strategy, "config", None)
            about = getattr(self.strategy, "describe", None)
            out["strategy"] = {"name": self.strategy.name, **(config.to_dict() if config is not None else {}),
                               **(about() if callable(about) else {})}
        return _redacted(out)


def _redacted(value: Any) -> Any:
    from ..http import redact_urls

    return redact_urls(value)


_WARNED_WINDOW: set[str] = set()


def warn_window(config: PipelineConfig, chunks: Sequence[Chunk], embedder: Any) -> Any:
    """Warn on stderr, once per configuration, when the embedder's window cuts some chunks (prefix included),
    with the share affected. Returns the :class:`~ragtune.embed.window.WindowOverflow` (None: not countable, or
    this configuration was warned about already and is not counted again)."""
    from ..embed.window import window_overflow

    if config.key in _WARNED_WINDOW:  # said once already: no need to count again
        return None
    try:
        found = window_overflow(embedder, [c.embed_text for c in chunks])
    except Exception:  # counting is advice: a tokenizer that cannot load must not stop the pipeline
        return None
    if found is not None and found.over:
        import sys

        _WARNED_WINDOW.add(config.key)
        about = "about " if found.sampled else ""
        if config.chunker == "document":  # whole documents (BEIR's unit): a note, for cutting them measured no gain
            print(f"note: {config.label}: {about}{found.over:,} of {found.total:,} documents ({found.share:.0%}) are "
                  f"longer than the embedder's {found.max_tokens}-token window, which reads their beginning; "
                  "embedding window-sized pieces instead (--chunker small_to_big --parent section) scored the same "
                  "on SciFact (nDCG@10 -0.001, docs/concepts/defaults.md#window) for twice the chunks",
                  file=sys.stderr, flush=True)
            return found
        print(f"warning: {config.label}: {about}{found.over:,} of {found.total:,} chunks ({found.share:.0%}"
              f"{f', from a sample of {found.counted:,}' if found.sampled else ''}) are longer than "
              f"the embedder's {found.max_tokens}-token window and are cut when embedded, losing "
              f"{found.tokens_lost / found.over:.0f} tokens each on average (prefix and special tokens included); use a smaller chunk size{' or no prefix' if config.prefix else ''} to embed whole chunks",
              file=sys.stderr, flush=True)
    return found


def build_pipeline(corpus: Corpus, config: PipelineConfig, *, resources: Resources | None = None,
                   version: str | None = None) -> Pipeline:
    """The one builder: ``corpus`` chunked, the first stage built through the retriever registry, the reranker
    added, each part asked of ``resources`` (stored, cached or made now). ``version`` names the store version
    the resources hold. :attr:`Pipeline.stats` says what was built and what was reused."""
    config = config.resolved(corpus.kind)
    resources = (resources or Resources(config.embedder_id)).for_embedder(config.embedder_id)
    chunking = resources.chunking(corpus, config)
    chunks, parents = chunking.chunks, chunking.parents
    if not chunks:
        raise EmptyIndexError(f"the {chunking.chunker.name} chunker produced no chunks: every document is empty")
    emb = resources.embedder() if config.uses_vectors else None
    if emb is not None and resources.stored is None:  # a stored index was checked when it was built
        warn_window(config, chunks, emb)
    before = dict(getattr(emb, "stats", None) or {"hits": 0, "misses": 0})
    first = resources.first_stage(config, chunks)
    after = dict(getattr(emb, "stats", None) or {"hits": 0, "misses": 0})
    reranker = RERANKERS.build(config.rerank, options=config.reranker_config()) if config.rerank else None
    strategy = build_strategy(corpus, config, parents or chunks)
    stats = {"chunks": len(chunks), "parents": len(parents), "index_build_s": first.build_s,
             "index_reused": first.reused, "texts_embedded": after["misses"] - before["misses"],
             "embedding_cache_hits": after["hits"] - before["hits"]}
    return Pipeline(corpus, chunking.chunker, first.retriever, chunks, parents, reranker, config.candidates, version,
                    config, stats, strategy)


def build_strategy(corpus: Corpus, config: PipelineConfig, units: Sequence[Chunk]) -> Any:
    """The configuration's strategy over ``units`` (what a search returns: the chunks, or the parents of
    small-to-big), or None for one search of the question (the default, which leaves the pipeline as it was)."""
    if not config.multi_step:
        return None
    return STRATEGIES.build(config.strategy, options=config.strategy_config(), corpus=corpus, units=tuple(units))


# ---------------------------------------------------------------------------------------------------------------
# Shorthands kept for the Python API


def default_chunker(corpus: Corpus, name: str = "auto", *, prefix: bool | None = None, **options: Any):
    """The chunker ``name`` (``auto``: sections for markdown, whole documents otherwise) with ``options``."""
    flags = {"chunker": name, "prefix": prefix, **options}
    config = PipelineConfig.from_flags({k: v for k, v in flags.items() if v is not None}).resolved(corpus.kind)
    return CHUNKERS.build(config.chunker, options=config.chunker_config())


def build_retriever(chunks: Sequence[Chunk], name: str = "bm25", *, embedder: Any = DEFAULT_EMBEDDER,
                    show_progress: bool = False, cache_dir: Any = None, **options: Any) -> Retriever:
    """A first-stage retriever from the registry over ``chunks`` (``bm25``, ``dense``, ``hybrid`` or a plugin)."""
    options = {ALIASES.get(k, k): v for k, v in options.items()}
    resources = Resources(embedder, show_progress=show_progress, cache_dir=cache_dir)
    return RETRIEVERS.build(name, chunks, resources, options=options)


def build_reranker(name: str, model: str | None = None, **options: Any) -> Reranker:
    """A reranker from the registry: ``embedding`` (default model e5-small) or ``cross-encoder``."""
    return RERANKERS.build(name, options={**options, **({"model": model} if model else {})})

