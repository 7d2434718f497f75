"""Opening a pipeline over a corpus folder or from an index store: what the CLI, the server and the framework
adapters call when a user names one or the other."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..corpus.corpus import Corpus
from ..errors import ConfigError, ParameterError
from ..pipeline import RERANK_PREFIX, STRATEGY_PREFIX, Pipeline, PipelineConfig, Resources, build_pipeline, \
    build_strategy
from ..registry import RERANKERS
from .build import load_pipeline
from .store import IndexStore

__all__ = ["open_pipeline"]


def open_pipeline(*, corpus: Any = None, store: Any = None, version: str | None = None,
                  flags: Mapping[str, Any] | None = None, candidates: int = 50, show_progress: bool = False,
                  credentials: Mapping[str, str] | None = None) -> Pipeline:
    """The pipeline ``flags`` describe, built over ``corpus`` (a path or :class:`Corpus`), or loaded from an index
    ``store`` (path), whose version fixes chunking, retrieval and the embedder: options contradicting it are
    refused, a reranker (``rerank``, ``rerank_*``) and a strategy (``strategy``, ``strategy_*``) may be added. ``credentials``: an outside engine's secret
    (``{"milvus": token}``), handed to its client, never part of the configuration."""
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    if version and not store:
        raise ParameterError("{} selects a version of an index store; give {} too", "version", "store")
    if store is None:
        if corpus is None:
            raise ParameterError("give {} (a folder of documents) or {} (a built index)", "corpus", "store")
        if not isinstance(corpus, Corpus):
            from ..corpus import load_corpus

            corpus = load_corpus(corpus)
        config = PipelineConfig.from_flags({**flags, "candidates": candidates})
        return build_pipeline(corpus, config, resources=Resources(config.embedder_id, show_progress=show_progress,
                                                                  credentials=credentials))
    if corpus is not None:
        raise ParameterError("give {} or {}, not both", "corpus", "store")
    milvus_uri = flags.pop("milvus_uri", None)  # the version's Milvus reached by another address
    if flags.get("engine") == "milvus":  # says what the version already says
        flags.pop("engine")
    index_keys = [k for k in flags if k not in ("rerank", "strategy") and not k.startswith((RERANK_PREFIX,
                                                                                            STRATEGY_PREFIX))]
    if index_keys and not _restates(IndexStore(store), version, {k: flags[k] for k in index_keys}):
        raise ParameterError("with {}, chunking, retrieval and the embedder come from the stored version; drop {} "
                             "(or build a new version with `ragtune index build`)", "store", index_keys)
    flags = {k: v for k, v in flags.items() if k not in index_keys}
    p = load_pipeline(IndexStore(store), version, show_progress=show_progress, milvus_uri=milvus_uri,
                      credentials=credentials)
    if not flags:
        return p
    cfg = PipelineConfig.from_flags({**(p.config.to_dict() if p.config else {}), **flags, "candidates": candidates})
    reranker = RERANKERS.build(cfg.rerank, options=cfg.reranker_config()) if cfg.rerank else None
    strategy = build_strategy(p.corpus, cfg, p.parents or p.chunks)
    # what eval records: the version's configuration, reranked, searched by the strategy
    return dataclasses.replace(p.with_reranker(reranker, candidates), config=cfg, strategy=strategy)


def _restates(store: IndexStore, version: str | None, given: Mapping[str, Any]) -> bool:
    """Whether the chunking, retrieval and embedder options ``given`` (a pipeline file's, such as the recommended.toml a
    sweep writes) describe the stored version as it was built: then they are no contradiction."""
    v = store.get(version)
    stored = PipelineConfig.from_dict(v.manifest["config"])
    kind = v.manifest["corpus"]["kind"]
    for flags in ({**stored.to_dict(), **given}, given):
        try:
            if PipelineConfig.from_flags(flags).resolved(kind).index_key == stored.index_key:
                return True
        except ConfigError:
            continue
    return False
