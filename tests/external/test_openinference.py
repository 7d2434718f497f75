"""Traces from production: spans recorded by the real OpenInference instrumentation of a LlamaIndex app, scored.

A LlamaIndex vector retriever (the bundled MiniLM as its embedding: offline, no LLM) runs over three of the bundled
docs with ``openinference-instrumentation-llama-index`` recording it into an ``InMemorySpanExporter``. The spans
are scored in Python, from a file of the SDK's span JSON and from OTLP JSON encoded by OpenTelemetry's own OTLP
encoder, by ``ragtune eval --run``: every way gives, question by question, the figures the same retriever gives
through ``evaluate_llamaindex`` (``evaluate_retriever``). An agent's trace of several searches keeps each search;
a fusion retriever's sub-retrievals are part of its one search; a LangChain retriever and a Haystack BM25 pipeline
recorded by their OpenInference instrumentations score as through ``evaluate_langchain`` and ``evaluate_haystack``;
malformed files are one-line errors.
"""

import json
from pathlib import Path

import pytest

from ragtune import GoldenSet
from ragtune.cli import main
from ragtune.errors import ConfigError
from ragtune.evaluate.formats import read_run
from ragtune.evaluate.otel import parse_spans, traces_from_spans
from ragtune.golden import GoldenItem

pytest.importorskip("llama_index.core")
pytest.importorskip("openinference.instrumentation.llama_index")
pytest.importorskip("opentelemetry.sdk")

from tests.external.test_frameworks import KS, METRICS, TOP, bundled, minilm  # noqa: E402,F401  (fixtures)

from ragtune.external.openinference import evaluate_spans, read_openinference, spans_of  # noqa: E402


@pytest.fixture(scope="module")
def recorded(bundled, minilm):  # noqa: F811
    """The LlamaIndex retriever, instrumented: (retriever, exporter, tracer, golden, corpus, root)."""
    from llama_index.core import SimpleDirectoryReader, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragtune.external.llamaindex import RagtuneEmbedding

    root, corpus, golden = bundled
    docs = SimpleDirectoryReader(str(root), recursive=True).load_data()
    nodes = SentenceSplitter(chunk_size=200, chunk_overlap=0, tokenizer=str.split).get_nodes_from_documents(docs)
    index = VectorStoreIndex(nodes, embed_model=RagtuneEmbedding(minilm))
    retriever = index.as_retriever(similarity_top_k=TOP)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield retriever, exporter, provider.get_tracer("app"), golden, corpus, root
    finally:
        instrumentor.uninstrument()


def per_question(result):
    return {q.id: {m: q.scores[m] for m in METRICS if m in q.scores} for q in result.questions}


def test_the_instrumented_retriever_scores_as_it_does_through_the_adapter(recorded, tmp_path):
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from ragtune.external.llamaindex import evaluate_llamaindex

    retriever, exporter, _, golden, corpus, root = recorded
    via_adapter = evaluate_llamaindex(retriever, golden, corpus=corpus, ks=KS)
    exporter.clear()
    for item in golden:  # the app: one retrieval per question, each its own trace, the question its input
        retriever.retrieve(item.q)
    spans = exporter.get_finished_spans()
    assert {s.attributes.get("openinference.span.kind") for s in spans} >= {"RETRIEVER"}

    in_python = evaluate_spans(exporter, golden, corpus=corpus, ks=KS)
    expected = per_question(via_adapter)
    assert per_question(in_python) == expected
    assert in_python.metrics["recall@5"] == pytest.approx(via_adapter.metrics["recall@5"])
    assert via_adapter.metrics["recall@5"] > 0.3  # real rankings, not empty ones
    assert in_python.matching["matched"] == in_python.matching["hits"] == TOP * len(golden)
    took = {s.attributes["input.value"]: (s.end_time - s.start_time) / 1e9 for s in spans
            if s.parent is None and s.attributes.get("openinference.span.kind") == "RETRIEVER"}
    latency = {i.id: took[i.q] for i in golden}  # each question's latency is its retrieval span's duration
    assert {q.id: q.latency_s for q in in_python.questions} == pytest.approx(latency)

    sdk_json = tmp_path / "spans.jsonl"  # what ReadableSpan.to_json() writes, one span a line
    sdk_json.write_text("".join(s.to_json(indent=None) + "\n" for s in spans), encoding="utf-8")
    console = tmp_path / "console.json"  # ConsoleSpanExporter: pretty-printed spans one after another
    console.write_text("".join(s.to_json() + "\n" for s in spans), encoding="utf-8")
    otlp = tmp_path / "otlp.json"  # the OTLP export request, as OpenTelemetry's own encoder makes it
    otlp.write_text(MessageToJson(encode_spans(spans)), encoding="utf-8")
    assert '"resourceSpans"' in otlp.read_text()
    collector = tmp_path / "collector.jsonl"  # a collector's file exporter: one request a line (protobuf's field names)
    half = len(spans) // 2  # a trace may be split across requests
    collector.write_text("".join(MessageToJson(encode_spans(part), indent=None, preserving_proto_field_name=True)
                                 + "\n" for part in (spans[:half], spans[half:])), encoding="utf-8")
    assert '"resource_spans"' in collector.read_text()
    for path in (sdk_json, console, otlp, collector):
        assert read_run(path).format == "openinference"
        from_file = evaluate_spans(path, golden, corpus=corpus, ks=KS)
        assert per_question(from_file) == expected, path.name
        assert {q.id: q.latency_s for q in from_file.questions} == pytest.approx(latency, abs=2e-6), path.name

    gold = tmp_path / "golden.jsonl"
    gold.write_text("".join(json.dumps({"id": i.id, "q": i.q, "relevant": sorted(i.relevant)}) + "\n"
                            for i in golden), encoding="utf-8")
    assert main(["eval", "--run", str(otlp), "--golden", str(gold), "--corpus", str(root), "--k", "1,3,5",
                 "--json"]) == 0


def test_an_agents_searches_stay_apart_and_are_merged_in_order(recorded):
    from openinference.instrumentation import using_metadata

    retriever, exporter, tracer, golden, corpus, root = recorded
    item = golden.items[0]
    exporter.clear()
    with using_metadata({"qid": item.id}):
        with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT",
                                                               "input.value": "an unrelated opening line"}):
            first = retriever.retrieve("nDCG discount")
            second = retriever.retrieve(item.q)
    run = read_openinference(exporter)
    assert list(run.searches) == [item.id]  # the qid in the metadata names the question, not the input text
    (q1, hits1), (q2, hits2) = run.searches[item.id]
    assert (q1, q2) == ("nDCG discount", item.q)
    assert [h.text for h in hits1] == [n.node.get_content() for n in first]
    assert [h.text for h in hits2] == [n.node.get_content() for n in second]

    result = evaluate_spans(exporter, golden, corpus=corpus, ks=(1, 2 * TOP))
    question = next(q for q in result.questions if q.id == item.id)

    def where(n):
        return Path(n.node.metadata["file_path"]).relative_to(root).as_posix(), n.node.start_char_idx
    merged = list(dict.fromkeys(where(n) for n in [*first, *second]))  # in order, a chunk seen before left out
    assert len(merged) < len(first) + len(second)  # the second search found some of the first's chunks again
    assert [(r["doc_id"], r["start"]) for r in question.retrieved] == merged


def test_a_sessions_traces_are_its_conversation_turns(recorded):
    """Traces in an OpenInference session no qid names are the session's turns, ``c1#1``, ``c1#2`` by start, as
    golden conversation turns are named: a follow-up the app searched with other words is still its turn."""
    from openinference.instrumentation import using_session

    from ragtune.external.llamaindex import evaluate_llamaindex

    retriever, exporter, _, golden, corpus, _ = recorded
    a, b = golden.items[0], golden.items[1]
    turns = GoldenSet([GoldenItem("c1#1", a.q, dict(a.relevant), conversation="c1", turn=0),
                       GoldenItem("c1#2", "and the other one?", dict(b.relevant), conversation="c1", turn=1,
                                  history=(a.q,))], source="a conversation")
    exporter.clear()
    with using_session("c1"):
        retriever.retrieve(a.q)
        retriever.retrieve(b.q)  # the app searched the follow-up with the history folded in: not the turn's words
    assert [t.qid for t in traces_from_spans(spans_of(exporter))] == ["c1#1", "c1#2"]
    result = evaluate_spans(exporter, turns, corpus=corpus, ks=KS)
    asked = GoldenSet([GoldenItem("c1#1", a.q, dict(a.relevant)), GoldenItem("c1#2", b.q, dict(b.relevant))],
                      source="the same questions")
    assert per_question(result) == per_question(evaluate_llamaindex(retriever, asked, corpus=corpus, ks=KS))
    assert [(q.conversation, q.turn) for q in result.questions] == [("c1", 0), ("c1", 1)]


def test_a_fusion_retrievers_sub_retrievals_are_part_of_its_one_search(recorded):
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever

    retriever, exporter, _, golden, corpus, _ = recorded
    fusion = QueryFusionRetriever([retriever, retriever], llm=MockLLM(), num_queries=1, similarity_top_k=5,
                                  use_async=False, mode="reciprocal_rerank")
    exporter.clear()
    found = fusion.retrieve(golden.items[1].q)
    kinds = [s.attributes.get("openinference.span.kind") for s in exporter.get_finished_spans()]
    assert kinds.count("RETRIEVER") >= 3  # the fusion retriever's span and those of the retrievals inside it
    (trace,) = traces_from_spans(spans_of(exporter))
    assert len(trace.searches) == 1 and trace.question == golden.items[1].q
    assert [h["text"] for h in trace.searches[0][1]] == [n.node.get_content() for n in found]


def test_spans_of_the_langchain_instrumentation_score_as_the_langchain_adapter(bundled, minilm):  # noqa: F811
    pytest.importorskip("openinference.instrumentation.langchain")
    from langchain_core.vectorstores import InMemoryVectorStore
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragtune.external.langchain import RagtuneEmbeddings, evaluate_langchain
    from tests.external.test_frameworks import langchain_documents

    root, corpus, golden = bundled
    store = InMemoryVectorStore(RagtuneEmbeddings(minilm))
    store.add_documents(langchain_documents(root))
    retriever = store.as_retriever(search_kwargs={"k": TOP})
    via_adapter = evaluate_langchain(retriever, golden, corpus=corpus, ks=KS)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        for item in golden:
            retriever.invoke(item.q)
    finally:
        instrumentor.uninstrument()
    result = evaluate_spans(exporter, golden, corpus=corpus, ks=KS)
    assert per_question(result) == per_question(via_adapter)
    assert result.matching["matched"] == TOP * len(golden)


def test_spans_of_the_haystack_instrumentation_score_as_the_haystack_adapter(bundled):  # noqa: F811
    """A Haystack pipeline of BM25 (no model): the root span's input is the pipeline's nested inputs."""
    pytest.importorskip("openinference.instrumentation.haystack")
    from haystack import Document, Pipeline as HPipeline
    from haystack.components.preprocessors import DocumentSplitter
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from openinference.instrumentation.haystack import HaystackInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragtune.external.haystack import evaluate_haystack
    from tests.external.test_frameworks import SUBSET

    root, corpus, golden = bundled
    raw = [Document(content=(root / rel).read_text(), meta={"file_path": str(root / rel)}) for rel in SUBSET]
    store = InMemoryDocumentStore()
    store.write_documents(DocumentSplitter(split_by="word", split_length=200).run(raw)["documents"])
    pipe = HPipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(store, top_k=TOP))
    via_adapter = evaluate_haystack(pipe, golden, corpus=corpus, ks=KS)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = HaystackInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        for item in golden:
            pipe.run({"retriever": {"query": item.q}})
    finally:
        instrumentor.uninstrument()
    traces = traces_from_spans(spans_of(exporter))
    assert sorted(t.question for t in traces) == sorted(i.q for i in golden)  # read from the pipeline's inputs
    result = evaluate_spans(exporter, golden, corpus=corpus, ks=KS)
    assert per_question(result) == per_question(via_adapter)
    assert via_adapter.metrics["recall@5"] > 0.3


@pytest.mark.parametrize("content, message", [
    ("{not json", "not JSON"),
    ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab", "spanId": "cd", "name": "x", '
     '"attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "LLM"}}]}]}]}]}',
     "none a RETRIEVER span"),
    ('{"resourceSpans": "x"}', "must be a list of objects"),
    ('{"name": "r", "context": {"trace_id": "0x1", "span_id": "0x2"}, "attributes": {"openinference.span.kind": '
     '"RETRIEVER", "input.value": "q", "retrieval.documents.0.document.content": "t", '
     '"retrieval.documents.0.document.score": "high"}}', "document.score must be a number"),
])
def test_a_malformed_span_file_is_a_one_line_error(tmp_path, capsys, content, message):
    path = tmp_path / "spans.json"
    path.write_text(content, encoding="utf-8")
    gold = tmp_path / "golden.jsonl"
    gold.write_text('{"id": "q1", "q": "q", "relevant": ["a.md"]}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        read_openinference(path)
    capsys.readouterr()
    assert main(["eval", "--run", str(path), "--golden", str(gold)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


def test_span_shapes_read_alike():
    """OTLP JSON in camelCase with hex ids, protobuf's snake_case with base64 ids, and the SDK's span objects."""
    doc = {"retrieval.documents.0.document.id": "n1", "retrieval.documents.0.document.content": "Text one",
           "retrieval.documents.0.document.score": 0.5,
           "retrieval.documents.0.document.metadata": json.dumps({"file_path": "/srv/docs/a.md"}),
           "retrieval.documents.1.document.id": "guide.md#refunds"}

    def otlp(trace, span, parent, camel=True):
        def value(v):
            return {"doubleValue": v} if isinstance(v, float) else {"stringValue": v}
        attrs = [{"key": k, "value": value(v)} for k, v in {**doc, "openinference.span.kind": "RETRIEVER",
                                                           "input.value": "what?"}.items()]
        span_obj = {"traceId": trace, "spanId": span, "parentSpanId": parent, "name": "retrieve",
                    "startTimeUnixNano": "1700000000000000000", "attributes": attrs}
        req = {"resourceSpans": [{"scopeSpans": [{"spans": [span_obj]}]}]}
        if not camel:
            req = {"resource_spans": [{"scope_spans": [{"spans": [{"trace_id": trace, "span_id": span,
                                                                    "name": "retrieve", "attributes": attrs,
                                                                    "start_time_unix_nano": 1}]}]}]}
        return req

    sdk = {"name": "retrieve", "context": {"trace_id": "0x" + "ab" * 16, "span_id": "0x" + "cd" * 8},
           "parent_id": None, "start_time": "2026-01-01T00:00:00.000001Z",
           "attributes": {**doc, "openinference.span.kind": "RETRIEVER", "input.value": "what?"}}
    import base64

    for value in (otlp("ab" * 16, "cd" * 8, ""), otlp(base64.b64encode(bytes.fromhex("ab" * 16)).decode(),
                                                       base64.b64encode(bytes.fromhex("cd" * 8)).decode(), "",
                                                       camel=False), sdk):
        (trace,) = traces_from_spans(parse_spans([value]))
        assert trace.trace_id == "ab" * 16 and trace.question == "what?" and trace.qid is None
        ((query, hits),) = trace.searches
        assert query == "what?"
        assert hits == ({"path": "/srv/docs/a.md", "text": "Text one", "score": 0.5}, {"id": "guide.md#refunds"})


def test_what_names_the_question_and_which_spans_are_searches():
    """A root's ``ragtune.qid`` names the question; searches are the outermost retriever spans by start time (file
    order aside); one that records no documents takes those of the retriever span inside it."""
    def span(sid, parent, start, kind=None, **attrs):
        a = {"openinference.span.kind": kind, **attrs} if kind else attrs
        return {"name": sid, "context": {"trace_id": "0x" + "1" * 32, "span_id": "0x" + sid * 16},
                "parent_id": "0x" + parent * 16 if parent else None, "start_time": start, "attributes": a}

    doc = {"retrieval.documents.0.document.content": "found", "retrieval.documents.0.document.id": "a.md#x"}
    spans = parse_spans([
        span("2", "1", 30, "RETRIEVER", **{"input.value": "second"}),  # read first, started last
        span("3", "2", 31, "RETRIEVER", **{"input.value": '{"query_bundle": {"query_str": "second"}}'}, **doc),
        span("1", None, 10, "AGENT", **{"input.value": "the user's words", "ragtune.qid": "q7"}),
        span("4", "1", 20, "RETRIEVER", **{"input.value": "first"}, **doc),
        span("5", "4", 21, "EMBEDDING", **{"input.value": "first"}),
    ])
    (trace,) = traces_from_spans(spans)
    assert (trace.qid, trace.question) == ("q7", "the user's words")
    assert [q for q, _ in trace.searches] == ["first", "second"]
    assert [hits for _, hits in trace.searches] == [({"id": "a.md#x", "text": "found"},)] * 2
    assert trace.seconds is None  # no end times recorded
