"""ragtune: measure and tune the retrieval half of RAG.

The public API::

    import ragtune as rt
    corpus = rt.load_corpus("docs/")
    golden = rt.load_golden("docs/golden.jsonl")
    pipeline = rt.Pipeline.build(corpus)          # section chunks with the heading prefix, hybrid retrieval
    result = rt.run_eval(pipeline, golden)
    print(result.metrics["recall@5"])
    outside = rt.evaluate_retriever(my_search, golden, corpus=corpus)  # any (query, k) -> hits
"""

from ._version import __version__

# The core, imported with the package (numpy, bm25s and PyYAML only: no model, no torch, no onnxruntime).
from .chunking import (DocumentChunker, DocumentChunkerConfig, FixedChunker, FixedChunkerConfig, MarkdownChunker,
                       MarkdownChunkerConfig, RecursiveChunker, RecursiveChunkerConfig, SectionChunker,
                       SectionChunkerConfig, SemanticChunker, SemanticChunkerConfig, SmallToBigChunker,
                       SmallToBigChunkerConfig, chunk_corpus, make_chunker)
from .corpus import Corpus, load_corpus
from .errors import (
    APIError,
    ConfigError,
    CorpusError,
    CorpusNotFoundError,
    CurrentMovedError,
    DamagedStoreError,
    EmptyIndexError,
    EngineError,
    GoldenSetError,
    GridError,
    MissingDependencyError,
    RagtuneError,
    StoreError,
    StoreLockedError,
    SweepStateError,
    TelemetryBusyError,
    TelemetryError,
    UnknownAnchorError,
)
from .evaluate import (METRICS, EvalResult, Metric, QuestionResult, Report, Run, compare, evaluate, load_run,
                       load_runs, register_metric, unregister_metric)
from .external import evaluate_retriever
from .golden import GoldenItem, GoldenReport, GoldenSet, check_golden, load_golden
from .pipeline import (Pipeline, PipelineConfig, Resources, StoredIndex, build_pipeline, build_reranker,
                       build_retriever, candidate_verdict, compare_candidates, default_chunker, run_eval)
from .registry import CHUNKERS, EMBEDDERS, GENERATORS, JUDGES, RERANKERS, RETRIEVERS
from .retrieve import BM25Config, BM25Retriever, ParentRetriever, Retriever
from .types import Chunk, Document, Hit, Ranking, Section

# The rest of the public API, imported on first use (``rt.sweep`` loads the sweep package, ``rt.create_app``
# needs ``ragtune[serve]``): name -> the module that defines it.
_LAZY = {
    **dict.fromkeys(("DenseRetriever",), "ragtune.retrieve.dense"),
    **dict.fromkeys(("HybridRetriever", "rrf"), "ragtune.retrieve.fusion"),
    **dict.fromkeys(("RerankedRetriever",), "ragtune.retrieve.rerank"),
    **dict.fromkeys(("DEFAULT_EMBEDDER", "CachedEmbedder", "EmbeddingCache", "get_embedder"), "ragtune.embed"),
    **dict.fromkeys(("get_tokenizer",), "ragtune.chunking.tokens"),
    **dict.fromkeys(("Grid", "Executor", "LocalExecutor", "SweepJob", "SweepResult", "load_grid", "parse_grid",
                     "run_config", "run_grid", "run_sweep", "summarize", "write_report"), "ragtune.sweep"),
    **dict.fromkeys(("IndexStore", "VersionInfo", "build_version", "load_pipeline", "migrate", "open_pipeline",
                     "refresh_version"), "ragtune.store"),
    **dict.fromkeys(("Answer", "Citation", "ConfidenceGate", "answer_question", "build_prompt",
                     "calibrate_threshold", "make_generator", "make_judge", "parse_answer", "top_score"),
                    "ragtune.answer"),
    **dict.fromkeys(("evaluate_answers",), "ragtune.answer.evaluate"),
    **dict.fromkeys(("bootstrap_ci", "correct", "detectable_effect", "paired_test"), "ragtune.evaluate.significance"),
    **dict.fromkeys(("regression_gate", "write_baseline"), "ragtune.evaluate.gate"),
    **dict.fromkeys(("create_app",), "ragtune.serve.app"),
    **dict.fromkeys(("TelemetryLog", "parse_since"), "ragtune.serve.telemetry"),
    **dict.fromkeys(("cluster_gaps",), "ragtune.serve.gaps"),
    **dict.fromkeys(("RayOptions", "RaySweepExecutor", "ray_embedders"), "ragtune.scale"),
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ragtune' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = sorted({
    "__version__", *_LAZY,
    "APIError", "ConfigError", "CorpusError", "CorpusNotFoundError", "CurrentMovedError", "DamagedStoreError",
    "EmptyIndexError", "EngineError", "GoldenSetError", "GridError", "MissingDependencyError", "RagtuneError",
    "StoreError", "StoreLockedError", "SweepStateError", "TelemetryBusyError", "TelemetryError", "UnknownAnchorError",
    "DocumentChunker", "DocumentChunkerConfig", "FixedChunker", "FixedChunkerConfig", "MarkdownChunker",
    "MarkdownChunkerConfig", "RecursiveChunker", "RecursiveChunkerConfig", "SectionChunker", "SectionChunkerConfig",
    "SemanticChunker", "SemanticChunkerConfig", "SmallToBigChunker", "SmallToBigChunkerConfig", "chunk_corpus",
    "make_chunker", "Corpus", "load_corpus", "METRICS", "EvalResult", "Metric", "QuestionResult", "Report", "Run",
    "compare", "evaluate", "load_run", "load_runs", "register_metric", "unregister_metric", "evaluate_retriever",
    "GoldenItem", "GoldenReport", "GoldenSet", "check_golden", "load_golden", "Pipeline", "PipelineConfig",
    "Resources", "StoredIndex", "build_pipeline", "build_reranker", "build_retriever", "candidate_verdict",
    "compare_candidates", "default_chunker", "run_eval", "CHUNKERS", "EMBEDDERS", "GENERATORS", "JUDGES",
    "RERANKERS", "RETRIEVERS", "BM25Config", "BM25Retriever", "ParentRetriever", "Retriever", "Chunk", "Document",
    "Hit", "Ranking", "Section",
})
