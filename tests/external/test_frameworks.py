"""Framework adapters against the real packages, offline, with the bundled MiniLM as each framework's embedding.

For each framework: a retriever built in the framework over part of the bundled docs gives the same metrics
through the adapter as a TREC run of the same rankings (``ragtune eval --run``), and a ragtune pipeline
exposed as the framework's retriever scores as the pipeline itself does.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragtune import GoldenSet, MissingDependencyError, Pipeline, evaluate, load_corpus
from ragtune.external.files import evaluate_run_file
from ragtune.golden import GoldenItem

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no telemetry calls from the tests

DOCS = Path(__file__).resolve().parents[2] / "docs"
SUBSET = ("concepts/metrics.md", "concepts/bm25.md", "concepts/matching.md")
KS = (1, 3, 5)
TOP = 10
METRICS = ("recall@1", "recall@3", "recall@5", "mrr", "ndcg@10", "hit@5", "precision@3")


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    """Three documents of the bundled docs, and the golden questions they answer."""
    root = tmp_path_factory.mktemp("docs")
    for rel in SUBSET:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DOCS / rel, root / rel)
    items = []
    for line in (DOCS / "golden.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["relevant"] and all(a.split("#")[0] in SUBSET for a in row["relevant"]):
            items.append(GoldenItem(row["id"], row["q"], {a: 1.0 for a in row["relevant"]}, tuple(row.get("tags", ()))))
    assert len(items) >= 10
    return root, load_corpus(root), GoldenSet(items, source="docs/golden.jsonl (subset)")


class CachedMiniLM:
    """The bundled MiniLM, with vectors kept per text so the three frameworks embed each text once."""

    def __init__(self):
        from ragtune.embed import get_embedder

        try:
            self.inner = get_embedder("minilm")
            self.inner.embed(["warm"])
        except MissingDependencyError as e:
            pytest.skip(str(e))
        self.model_id, self.dim = self.inner.model_id, self.inner.dim
        self.cache = {}

    def _get(self, texts, fn, kind):
        todo = [t for t in dict.fromkeys(texts) if (kind, t) not in self.cache]
        if todo:
            for t, v in zip(todo, fn(todo)):
                self.cache[(kind, t)] = v
        import numpy as np

        return np.stack([self.cache[(kind, t)] for t in texts])

    def embed(self, texts):
        return self._get(list(texts), self.inner.embed, "p")

    def embed_queries(self, texts):
        return self._get(list(texts), self.inner.embed_queries, "q")


@pytest.fixture(scope="module")
def minilm():
    return CachedMiniLM()


def retrieval(scores):
    return {m: scores[m] for m in METRICS}


def trec_parity(tmp_path, corpus, golden, rankings, via_adapter):
    """Write ``rankings`` ({question: [span id doc@start-end, ...]}) as a TREC run, score it as `ragtune eval
    --run` does, and check it gives the adapter's metrics, question by question."""
    path = tmp_path / "framework.trec"
    with open(path, "w") as f:
        for qid, ids in rankings.items():
            for rank, docid in enumerate(ids, start=1):
                f.write(f"{qid} Q0 {docid} {rank} {len(ids) - rank + 1} fw\n")
    from_file = evaluate_run_file(path, golden, corpus=corpus, ks=KS)
    assert from_file.matching["by_method"] == {"span": sum(map(len, rankings.values()))}
    assert via_adapter.matching["by_method"].get("span") == from_file.matching["by_method"]["span"]
    assert via_adapter.matching["match_rate"] == 1.0
    for a, b in zip(via_adapter.questions, from_file.questions):
        assert a.id == b.id and retrieval(a.scores) == pytest.approx(retrieval(b.scores)), a.id
    assert retrieval(via_adapter.metrics) == pytest.approx(retrieval(from_file.metrics))
    assert via_adapter.metrics["recall@5"] > 0.3  # the rankings are real, not empty


def native_metrics(corpus, golden):
    pipeline = Pipeline.build(corpus, retriever="bm25")
    return pipeline, evaluate(pipeline.retriever, golden, corpus, ks=KS)


# -- LlamaIndex ---------------------------------------------------------------------------------------------------

def test_llamaindex_retriever_and_query_engine_match_a_trec_run(tmp_path, bundled, minilm):
    pytest.importorskip("llama_index.core")
    from llama_index.core import SimpleDirectoryReader, VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.node_parser import SentenceSplitter

    from ragtune.external.llamaindex import RagtuneEmbedding, evaluate_llamaindex

    root, corpus, golden = bundled
    docs = SimpleDirectoryReader(str(root), recursive=True).load_data()
    nodes = SentenceSplitter(chunk_size=200, chunk_overlap=0, tokenizer=str.split).get_nodes_from_documents(docs)
    index = VectorStoreIndex(nodes, embed_model=RagtuneEmbedding(minilm))
    retriever = index.as_retriever(similarity_top_k=TOP)
    via = evaluate_llamaindex(retriever, golden, corpus=corpus, ks=KS)
    rankings = {}
    for item in golden:
        found = retriever.retrieve(item.q)
        rankings[item.id] = [f"{Path(n.node.metadata['file_path']).relative_to(root).as_posix()}@"
                             f"{n.node.start_char_idx}-{n.node.end_char_idx}" for n in found]
    trec_parity(tmp_path, corpus, golden, rankings, via)
    # a query engine's source nodes are the same nodes
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=TOP)
    assert retrieval(evaluate_llamaindex(engine, golden, corpus=corpus, ks=KS).metrics) == \
        pytest.approx(retrieval(via.metrics))


def test_a_ragtune_pipeline_as_a_llamaindex_retriever_scores_as_itself(bundled):
    pytest.importorskip("llama_index.core")
    from llama_index.core.retrievers import BaseRetriever

    from ragtune.external.llamaindex import RagtuneRetriever, evaluate_llamaindex

    _, corpus, golden = bundled
    pipeline, native = native_metrics(corpus, golden)
    retriever = RagtuneRetriever(pipeline, k=TOP)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve(golden.items[0].q)
    top = pipeline.retriever.search(golden.items[0].q, TOP).hits[0]
    assert len(nodes) == TOP and nodes[0].node.node_id == top.chunk.id and nodes[0].score == top.score
    assert nodes[0].node.ref_doc_id == top.chunk.doc_id and nodes[0].node.start_char_idx == top.chunk.start
    via = evaluate_llamaindex(retriever, golden, corpus=corpus, ks=KS)
    assert via.matching["by_method"] == {"span": TOP * len(golden)}
    for m in ("recall@1", "recall@3", "recall@5", "hit@5", "precision@3"):  # all within the top 10
        assert via.metrics[m] == pytest.approx(native.metrics[m]), m


# -- LangChain ----------------------------------------------------------------------------------------------------

def langchain_documents(root):
    """Documents as a loader and a splitter with add_start_index=True make them: source path and start_index."""
    from langchain_core.documents import Document

    out = []
    for rel in SUBSET:
        text = (root / rel).read_text()
        start = 0
        for para in text.split("\n\n"):
            if para.strip():
                out.append(Document(page_content=para, metadata={"source": str(root / rel), "start_index": start}))
            start += len(para) + 2
    merged, cur = [], None  # paragraphs joined up to about 1,200 characters, as a character splitter would
    for d in out:
        if cur and cur.metadata["source"] == d.metadata["source"] and len(cur.page_content) + len(d.page_content) < 1200:
            gap = d.metadata["start_index"] - cur.metadata["start_index"] - len(cur.page_content)
            cur.page_content += "\n" * gap + d.page_content
        else:
            cur = Document(page_content=d.page_content, metadata=dict(d.metadata))
            merged.append(cur)
    return merged


def test_langchain_retriever_and_vector_store_match_a_trec_run(tmp_path, bundled, minilm):
    pytest.importorskip("langchain_core")
    from langchain_core.vectorstores import InMemoryVectorStore

    from ragtune.external.langchain import RagtuneEmbeddings, evaluate_langchain

    root, corpus, golden = bundled
    docs = langchain_documents(root)
    for d in docs:  # the spans are real spans of the files
        s = d.metadata["start_index"]
        assert (root / Path(d.metadata["source"]).relative_to(root)).read_text()[s:s + len(d.page_content)] == d.page_content
    store = InMemoryVectorStore(RagtuneEmbeddings(minilm))
    store.add_documents(docs)
    retriever = store.as_retriever(search_kwargs={"k": TOP})
    via = evaluate_langchain(retriever, golden, corpus=corpus, ks=KS)
    rankings = {item.id: [f"{Path(d.metadata['source']).relative_to(root).as_posix()}@{d.metadata['start_index']}-"
                          f"{d.metadata['start_index'] + len(d.page_content)}" for d in retriever.invoke(item.q)]
                for item in golden}
    trec_parity(tmp_path, corpus, golden, rankings, via)
    # the store itself (with scores), and the documents located by their text alone, score the same
    assert retrieval(evaluate_langchain(store, golden, corpus=corpus, ks=KS).metrics) == pytest.approx(
        retrieval(via.metrics))
    by_text = evaluate_langchain(retriever, golden, corpus=corpus, ks=KS, offsets=False)
    assert by_text.matching["by_method"].get("span") is None and by_text.matching["by_method"]["text_exact"] > 0
    assert retrieval(by_text.metrics) == pytest.approx(retrieval(via.metrics))


def test_a_ragtune_pipeline_as_a_langchain_retriever_scores_as_itself(bundled):
    pytest.importorskip("langchain_core")
    from langchain_core.retrievers import BaseRetriever

    from ragtune.external.langchain import RagtuneRetriever, evaluate_langchain

    _, corpus, golden = bundled
    pipeline, native = native_metrics(corpus, golden)
    retriever = RagtuneRetriever(pipeline, k=TOP)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(golden.items[0].q)
    top = pipeline.retriever.search(golden.items[0].q, TOP).hits[0]
    assert docs[0].id == top.chunk.id and docs[0].metadata["source"] == top.chunk.doc_id
    assert docs[0].metadata["start_index"] == top.chunk.start and docs[0].metadata["score"] == top.score
    via = evaluate_langchain(retriever, golden, corpus=corpus, ks=KS)
    for m in ("recall@1", "recall@3", "recall@5", "hit@5", "precision@3"):
        assert via.metrics[m] == pytest.approx(native.metrics[m]), m


# -- Haystack -----------------------------------------------------------------------------------------------------

def test_haystack_pipeline_matches_a_trec_run(tmp_path, bundled, minilm):
    pytest.importorskip("haystack")
    from haystack import Document, Pipeline as HPipeline
    from haystack.components.preprocessors import DocumentSplitter
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from ragtune.external.haystack import RagtuneDocumentEmbedder, RagtuneTextEmbedder, evaluate_haystack

    root, corpus, golden = bundled
    raw = [Document(content=(root / rel).read_text(), meta={"file_path": str(root / rel)}) for rel in SUBSET]
    split = DocumentSplitter(split_by="word", split_length=200).run(raw)["documents"]
    store = InMemoryDocumentStore()
    store.write_documents(RagtuneDocumentEmbedder(minilm).run(split)["documents"])
    pipe = HPipeline()
    pipe.add_component("embedder", RagtuneTextEmbedder(minilm))
    pipe.add_component("retriever", InMemoryEmbeddingRetriever(store, top_k=TOP))
    pipe.connect("embedder.embedding", "retriever.query_embedding")
    via = evaluate_haystack(pipe, golden, corpus=corpus, ks=KS)
    rankings = {}
    for item in golden:
        docs = pipe.run({"embedder": {"text": item.q}, "retriever": {"top_k": TOP}})["retriever"]["documents"]
        rankings[item.id] = [f"{Path(d.meta['file_path']).relative_to(root).as_posix()}@{d.meta['split_idx_start']}-"
                             f"{d.meta['split_idx_start'] + len(d.content)}" for d in docs]
    trec_parity(tmp_path, corpus, golden, rankings, via)


def test_a_ragtune_pipeline_as_a_haystack_component_scores_as_itself(bundled):
    pytest.importorskip("haystack")
    from haystack import Pipeline as HPipeline

    from ragtune.external.haystack import RagtuneRetriever, evaluate_haystack

    _, corpus, golden = bundled
    pipeline, native = native_metrics(corpus, golden)
    pipe = HPipeline()
    pipe.add_component("ragtune", RagtuneRetriever(pipeline, top_k=TOP))
    via = evaluate_haystack(pipe, golden, corpus=corpus, ks=KS)
    assert via.matching["by_method"] == {"span": TOP * len(golden)}  # the component's top_k, as built
    for m in ("recall@1", "recall@3", "recall@5", "hit@5", "precision@3"):
        assert via.metrics[m] == pytest.approx(native.metrics[m]), m


def test_haystack_errors_name_the_fix(bundled):
    pytest.importorskip("haystack")
    from haystack import Pipeline as HPipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from ragtune import ConfigError
    from ragtune.external.haystack import HaystackHits

    with pytest.raises(ConfigError, match="neither a Haystack Pipeline nor a component"):
        HaystackHits(object())
    pipe = HPipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(InMemoryDocumentStore()))
    with pytest.raises(ConfigError, match="no output of component 'nope'"):
        HaystackHits(pipe, component="nope").search("q", 3)


# -- packaging ----------------------------------------------------------------------------------------------------

def test_import_ragtune_imports_no_framework():
    code = ("import sys, ragtune, ragtune.external, ragtune.external.llamaindex, ragtune.external.langchain, "
            "ragtune.external.haystack; print([m for m in ('llama_index', 'langchain_core', 'haystack') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_missing_framework_names_the_install_command(monkeypatch):
    from ragtune.external import haystack, langchain, llamaindex

    for module, name, extra in ((llamaindex, "llama_index.core", "llamaindex"),
                                (langchain, "langchain_core", "langchain"), (haystack, "haystack", "haystack")):
        monkeypatch.setitem(sys.modules, name, None)
        with pytest.raises(MissingDependencyError, match=rf"pip install 'ragtune\[{extra}\]'"):
            module._make_classes()


def test_a_path_relative_to_the_working_directory_names_the_corpus_document(bundled, monkeypatch):
    from ragtune.external import HitMatcher, to_hit
    from ragtune.external._framework import source_of, span_hit

    root, corpus, _ = bundled
    monkeypatch.chdir(root.parent)  # a loader given "<folder>" keeps "<folder>/concepts/bm25.md"
    hit = span_hit(source_of({"source": f"{root.name}/concepts/bm25.md"}, None), "BM25", None, 0, 10)
    chunk, method = HitMatcher(corpus).match(to_hit(hit))
    assert method == "span" and (chunk.doc_id, chunk.start, chunk.end) == ("concepts/bm25.md", 0, 10)
    # an id that is no file stays as it is
    assert source_of({"doc_id": "concepts/bm25.md#bm25"}, None) == "concepts/bm25.md#bm25"
