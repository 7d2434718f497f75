"""The pipeline: one configuration, one set of resources, one builder.

- :mod:`.config`: :class:`PipelineConfig`, the whole pipeline as one validated, hashable value;
- :mod:`.resources`: :class:`Resources`, every cache and stored artifact a build draws on;
- :mod:`.build`: :func:`build_pipeline` and the immutable :class:`Pipeline` it returns;
- :mod:`.evaluation`: :func:`run_eval` and the reranker shortlist study.

Opening a pipeline from a corpus folder or an index store is :func:`ragtune.store.open_pipeline` (a layer up:
the store is built on this package).
"""

from .build import (Pipeline, build_pipeline, build_reranker, build_retriever, build_strategy, default_chunker,
                    warn_window)
from .config import (ALIASES, DEFAULT_RETRIEVER, DEFAULT_STRATEGY, EMBEDDER_KEYS, PIPELINE_KEYS, RERANK_PREFIX,
                     STRATEGY_PREFIX, PipelineConfig, file_flags, option_owners, option_types, read_pipeline_flags)
from .evaluation import (candidate_gains, candidate_row, candidate_verdict, compare_candidates, evaluate_reranking,
                         first_stage_check, rerank_warning, run_eval)
from .resources import Chunking, FirstStage, Resources, StoredIndex

__all__ = ["PipelineConfig", "Pipeline", "Resources", "StoredIndex", "Chunking", "FirstStage", "build_pipeline",
           "run_eval", "evaluate_reranking", "default_chunker", "build_retriever", "build_reranker", "option_owners", "option_types",
           "compare_candidates", "first_stage_check", "candidate_row", "candidate_gains", "candidate_verdict",
           "rerank_warning", "warn_window", "ALIASES", "PIPELINE_KEYS", "EMBEDDER_KEYS", "RERANK_PREFIX",
           "DEFAULT_RETRIEVER", "file_flags", "read_pipeline_flags", "build_strategy", "STRATEGY_PREFIX",
           "DEFAULT_STRATEGY"]
