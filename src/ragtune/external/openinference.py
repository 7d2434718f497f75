"""Traces from production: what an app instrumented with OpenInference retrieved, scored against a golden set.

An app instrumented with an OpenInference instrumentation (``openinference-instrumentation-llama-index``,
``-langchain``, ``-haystack``; Arize Phoenix collects the same spans) records each retrieval as an OpenTelemetry
span of kind ``RETRIEVER`` with its query and its documents. :func:`evaluate_spans` scores them: each trace is one
question (its ``ragtune.qid`` attribute or ``metadata`` ``qid``, else the root span's input matched to a golden
question's text), each outermost RETRIEVER span one search, in start order; every search's documents are matched
to the corpus as outside hits are (:class:`~ragtune.evaluate.match.HitMatcher`) and the searches merged into what
reached the model (:meth:`ragtune.types.Ranking.from_searches`), so every metric, and the per-search figures, apply.

The spans come from a file (OTLP JSON or the SDK's span JSON: :mod:`ragtune.evaluate.otel` says which shapes; the
same file ``ragtune eval --run FILE`` reads), or, in Python, from the spans an ``InMemorySpanExporter`` kept
(``exporter.get_finished_spans()``, or the exporter itself). Reading needs no OpenTelemetry package; recording
them needs the instrumentation of the app's framework (``pip install 'ragtune[traces]'``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from ..evaluate.evaluate import DEFAULT_KS, EvalResult
from ..evaluate.formats import RunFile
from ..evaluate.match import MatchOptions
from ..evaluate.otel import Span, SpanTrace, read_spans, trace_searches, traces_from_spans
from ..evaluate.run import _score_parsed

__all__ = ["spans_of", "traces_of", "read_openinference", "evaluate_spans", "FORMAT"]

FORMAT = "openinference"  # the run row's name, and the ``format`` of what it reads


def _hex(v: int, width: int) -> str:
    return format(v, f"0{width}x")


def _from_sdk(span: Any, order: int) -> Span:
    """An opentelemetry-sdk ``ReadableSpan`` (read by its attributes; no import of the SDK)."""
    ctx = span.context
    parent = getattr(span, "parent", None)
    return Span(_hex(ctx.trace_id, 32), _hex(ctx.span_id, 16), _hex(parent.span_id, 16) if parent else None,
                str(span.name), int(span.start_time or 0), dict(span.attributes or {}), order, int(span.end_time or 0))


def spans_of(source: Any) -> list[Span]:
    """Spans from ``source``: the path of a span file, an exporter with ``get_finished_spans()`` (the SDK's
    ``InMemorySpanExporter``), or an iterable of ``ReadableSpan`` or :class:`~ragtune.evaluate.otel.Span`."""
    if isinstance(source, (str, os.PathLike)):
        return read_spans(source)
    if callable(getattr(source, "get_finished_spans", None)):
        source = source.get_finished_spans()
    if isinstance(source, (bytes, Mapping)) or not isinstance(source, Iterable):
        raise ConfigError(f"cannot read spans from a {type(source).__name__}: pass a span file's path, an "
                          "InMemorySpanExporter, or a list of spans (exporter.get_finished_spans())")
    out = []
    for n, s in enumerate(source):
        if isinstance(s, Span):
            out.append(s)
        elif getattr(s, "context", None) is not None and hasattr(s, "attributes"):
            out.append(_from_sdk(s, n))
        else:
            raise ConfigError(f"span {n + 1} is a {type(s).__name__}, not an OpenTelemetry span (a ReadableSpan "
                              "with context and attributes)")
    if not out:
        raise ConfigError("no spans: the exporter holds none (was the instrumentation set up before the app ran, "
                          "and the tracer provider given the exporter's span processor?)")
    return out


def traces_of(source: Any) -> list[SpanTrace]:
    """One :class:`~ragtune.evaluate.otel.SpanTrace` per trace with a retriever span (see :func:`spans_of`)."""
    where = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "spans"
    return traces_from_spans(spans_of(source), where)


def read_openinference(source: Any, *, field: str | None = None) -> RunFile:
    """The spans of ``source`` (see :func:`spans_of`) as a run: question -> its searches, each ``(query, hits)``,
    what a run row reads (``format`` is ``openinference``)."""
    where = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "spans"
    hits, searches, questions, seconds = trace_searches(traces_from_spans(spans_of(source), where), field=field,
                                                        where=where)
    return RunFile(hits, FORMAT, None, searches, questions, seconds)


def evaluate_spans(source: Any, golden: Any, *, corpus: Any = None, ks: Sequence[int] = DEFAULT_KS,
                   options: MatchOptions | Mapping[str, Any] | None = None, field: str | None = None,
                   **match: Any) -> EvalResult:
    """Score what the traces of ``source`` retrieved (see :func:`spans_of`) on ``golden`` (a golden set or its
    path), hits matched to ``corpus`` (a :class:`~ragtune.Corpus` or a folder) by ``options`` or the matcher's
    keywords (``base_url``, ``path_prefix``, ``doc_hits`` ...), as ``ragtune eval --run`` scores a span file.
    Golden questions no trace asked score as retrieving nothing; traces of questions the golden set lacks are
    listed in ``result.matching["questions_not_in_golden"]``."""
    from ..corpus import Corpus, load_corpus
    from ..golden import load_golden

    gold = load_golden(golden) if isinstance(golden, (str, os.PathLike)) else golden
    docs = corpus if corpus is None or isinstance(corpus, Corpus) else load_corpus(corpus)
    source_name = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "spans"
    return _score_parsed(read_openinference(source, field=field), gold, docs, ks=ks,
                         options=MatchOptions.of(options, **match), source=source_name)
