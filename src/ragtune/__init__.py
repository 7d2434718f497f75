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
    GoldenConflictError,
    GoldenSetError,
    GridError,
    InputTooLargeError,
    MissingDependencyError,
    ParameterError,
    RagtuneError,
    StageContractError,
    StoreError,
    StoreLockedError,
    SweepStateError,
    TelemetryBusyError,
    TelemetryError,
    TrackingError,
    UnknownAnchorError,
)
from .evaluate import (METRICS, EvalResult, Metric, QuestionResult, Report, Run, compare, evaluate, load_run,
                       load_runs, register_metric, unregister_metric)
from .external import evaluate_retriever
from .golden import GoldenItem, GoldenReport, GoldenSet, check_golden, load_golden
from .pipeline import (Pipeline, PipelineConfig, Resources, StoredIndex, build_pipeline, build_reranker,
                       build_retriever, candidate_verdict, compare_candidates, default_chunker, run_eval)
from .registry import CHUNKERS, EMBEDDERS, GENERATORS, JUDGES, LOADERS, RERANKERS, RETRIEVERS
from .retrieve import BM25Config, BM25Retriever, ParentRetriever, Retriever
from .types import Chunk, Document, Hit, Ranking, Section

# The rest of the public API, imported on first use (``rt.sweep`` loads the sweep package, ``rt.create_app``
# needs ``ragtune[serve]``): name -> the module that defines it.
_LAZY = {
    **dict.fromkeys(("DenseRetriever",), "ragtune.retrieve.dense"),
    **dict.fromkeys(("HybridRetriever", "rrf"), "ragtune.retrieve.fusion"),
    **dict.fromkeys(("RerankedRetriever",), "ragtune.rerank.base"),
    **dict.fromkeys(("DEFAULT_EMBEDDER", "CachedEmbedder", "EmbeddingCache", "get_embedder"), "ragtune.embed"),
    **dict.fromkeys(("get_tokenizer",), "ragtune.chunking.tokens"),
    **dict.fromkeys(("Grid", "Executor", "LocalExecutor", "SweepJob", "SweepResult", "load_grid", "load_plan", "log_to_mlflow",
                     "parse_grid", "run_config", "run_grid", "run_sweep", "summarize", "write_report", "Search",
                     "parse_space", "run_search"), "ragtune.sweep"),
    **dict.fromkeys(("IndexStore", "VersionInfo", "build_version", "load_pipeline", "migrate", "open_pipeline",
                     "refresh_version"), "ragtune.store"),
    **dict.fromkeys(("Answer", "Citation", "ConfidenceGate", "answer_question", "build_prompt",
                     "calibrate_threshold", "make_generator", "make_judge", "parse_answer", "top_score"),
                    "ragtune.answer"),
    **dict.fromkeys(("evaluate_answers",), "ragtune.answer.evaluate"),
    **dict.fromkeys(("bootstrap_ci", "correct", "detectable_effect", "paired_test"), "ragtune.evaluate.significance"),
    **dict.fromkeys(("regression_gate", "write_baseline"), "ragtune.evaluate.gate"),
    **dict.fromkeys(("Agreement", "cohen_kappa", "golden_agreement", "kendall_tau", "label_agreement"),
                    "ragtune.judgments.agreement"),
    **dict.fromkeys(("judge_pool",), "ragtune.judgments.llm_labels"),
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


# every public name, eager and lazy (tests/test_api_docs.py checks each is documented)
__all__ = [
    "APIError", "Agreement", "Answer", "BM25Config", "BM25Retriever", "CHUNKERS", "CachedEmbedder", "Chunk", "Citation",
    "ConfidenceGate", "ConfigError", "Corpus", "CorpusError", "CorpusNotFoundError", "CurrentMovedError",
    "DEFAULT_EMBEDDER", "DamagedStoreError", "DenseRetriever", "Document", "DocumentChunker", "DocumentChunkerConfig",
    "EMBEDDERS", "EmbeddingCache", "EmptyIndexError", "EngineError", "EvalResult", "Executor", "FixedChunker",
    "FixedChunkerConfig", "GENERATORS", "GoldenConflictError", "GoldenItem", "GoldenReport", "GoldenSet", "GoldenSetError", "Grid",
    "GridError", "Hit", "HybridRetriever", "IndexStore", "InputTooLargeError", "JUDGES", "LOADERS", "LocalExecutor", "METRICS", "MarkdownChunker",
    "MarkdownChunkerConfig", "Metric", "MissingDependencyError", "ParameterError", "ParentRetriever", "Pipeline", "PipelineConfig",
    "QuestionResult", "RERANKERS", "RETRIEVERS", "RagtuneError", "Ranking", "RayOptions", "RaySweepExecutor",
    "RecursiveChunker", "RecursiveChunkerConfig", "Report", "RerankedRetriever", "Resources", "Retriever", "Run",
    "Search", "Section", "SectionChunker", "SectionChunkerConfig", "SemanticChunker", "SemanticChunkerConfig",
    "SmallToBigChunker", "SmallToBigChunkerConfig", "StageContractError", "StoreError", "StoreLockedError", "StoredIndex", "SweepJob",
    "SweepResult", "SweepStateError", "TelemetryBusyError", "TelemetryError", "TelemetryLog", "TrackingError",
    "UnknownAnchorError",
    "VersionInfo", "__version__", "answer_question", "bootstrap_ci", "build_pipeline", "build_prompt",
    "build_reranker", "build_retriever", "build_version", "calibrate_threshold", "candidate_verdict", "check_golden",
    "chunk_corpus", "cluster_gaps", "cohen_kappa", "compare", "compare_candidates", "correct", "create_app", "default_chunker",
    "detectable_effect", "evaluate", "evaluate_answers", "evaluate_retriever", "get_embedder", "get_tokenizer",
    "golden_agreement", "judge_pool", "kendall_tau", "label_agreement", "load_corpus", "load_golden", "load_grid", "load_pipeline", "load_plan", "load_run", "load_runs", "log_to_mlflow", "make_chunker",
    "make_generator", "make_judge", "migrate", "open_pipeline", "paired_test", "parse_answer", "parse_grid",
    "parse_since", "parse_space", "ray_embedders", "refresh_version", "register_metric", "regression_gate", "rrf", "run_config",
    "run_eval", "run_grid", "run_search", "run_sweep", "summarize", "top_score", "unregister_metric", "write_baseline",
    "write_report",
]
