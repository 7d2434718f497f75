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

from .chunking import DocumentChunker, DocumentChunkerConfig, SectionChunker, SectionChunkerConfig, chunk_corpus, make_chunker
from .corpus import Corpus, load_corpus
from .errors import (
    APIError,
    EngineError,
    ConfigError,
    CorpusError,
    CorpusNotFoundError,
    GoldenSetError,
    GridError,
    MissingDependencyError,
    RagtuneError,
    StoreError,
    SweepStateError,
    TelemetryBusyError,
    TelemetryError,
    UnknownAnchorError,
)
from .evaluate import EvalResult, QuestionResult, evaluate
from .evaluate import Report, Run, compare, load_run, load_runs
from .external import evaluate_retriever
from .golden import GoldenItem, GoldenReport, GoldenSet, check_golden, load_golden
from .pipeline import Pipeline, build_retriever, default_chunker, run_eval
from .retrieve import BM25Config, BM25Retriever, Retriever
from .types import Chunk, Document, Hit, Ranking, Section

__all__ = [
    "__version__",
    "APIError",
    "EngineError",
    "BM25Config",
    "BM25Retriever",
    "Chunk",
    "ConfigError",
    "Corpus",
    "CorpusError",
    "CorpusNotFoundError",
    "Document",
    "DocumentChunker",
    "DocumentChunkerConfig",
    "EvalResult",
    "GoldenItem",
    "GoldenReport",
    "GoldenSet",
    "GoldenSetError",
    "GridError",
    "Hit",
    "MissingDependencyError",
    "Pipeline",
    "QuestionResult",
    "RagtuneError",
    "Ranking",
    "Report",
    "Retriever",
    "Run",
    "Section",
    "SectionChunker",
    "SectionChunkerConfig",
    "StoreError",
    "SweepStateError",
    "TelemetryBusyError",
    "TelemetryError",
    "UnknownAnchorError",
    "build_retriever",
    "check_golden",
    "chunk_corpus",
    "compare",
    "default_chunker",
    "evaluate",
    "evaluate_retriever",
    "load_corpus",
    "load_golden",
    "load_run",
    "load_runs",
    "make_chunker",
    "run_eval",
]
