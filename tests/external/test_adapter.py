"""evaluate_retriever: any callable or object, sync or async, scored exactly as ragtune scores its own retrievers."""

import asyncio
import threading
import time

import pytest

import ragtune
from ragtune import ConfigError, Pipeline, evaluate

KS = (1, 3, 5)


def native(corpus, golden):
    pipeline = Pipeline.build(corpus)
    return pipeline, evaluate(pipeline.retriever, golden, corpus, ks=KS)


def span_hits(pipeline, q, k):
    return [{"doc_id": h.chunk.doc_id, "start": h.chunk.start, "end": h.chunk.end, "score": h.score}
            for h in pipeline.retriever.search(q, k=k).hits]


def same_scores(a, b):
    assert [q.id for q in a.questions] == [q.id for q in b.questions]
    for qa, qb in zip(a.questions, b.questions):
        assert retrieval(qa.scores) == pytest.approx(retrieval(qb.scores)), qa.id
        assert qa.first_hit_rank == qb.first_hit_rank
    assert retrieval(b.metrics) == pytest.approx(retrieval(a.metrics))


def retrieval(scores):  # an outside hit's size in tokens is unknown: context_tokens is not compared
    return {k: v for k, v in scores.items() if not k.startswith("context_tokens")}


def test_a_callable_returning_spans_scores_like_the_native_retriever(corpus, golden):
    pipeline, ref = native(corpus, golden)
    got = ragtune.evaluate_retriever(lambda q, k: span_hits(pipeline, q, k), golden, corpus=corpus, ks=KS)
    same_scores(ref, got)
    assert got.matching["match_rate"] == 1.0 and got.matching["by_method"] == {"span": got.matching["hits"]}
    assert 0 < ref.metrics["precision@5"] < 1.0  # rankings hold relevant and irrelevant chunks


def test_chunk_text_alone_scores_like_the_native_retriever(corpus, golden):
    pipeline, ref = native(corpus, golden)

    def texts(q, k):
        return [{"text": h.chunk.text} for h in pipeline.retriever.search(q, k=k).hits]

    got = ragtune.evaluate_retriever(texts, golden, corpus=corpus, ks=KS)
    same_scores(ref, got)
    assert set(got.matching["by_method"]) == {"text_exact"}


class Searcher:
    name = "my-search"

    def __init__(self, pipeline):
        self.pipeline = pipeline

    def search(self, query, k):
        return span_hits(self.pipeline, query, k)


class Retrieves:  # LlamaIndex style: retrieve(query), no k
    def __init__(self, pipeline):
        self.pipeline = pipeline

    def retrieve(self, query):
        return span_hits(self.pipeline, query, 100)


class Invokes:  # LangChain style: invoke(input, config=None)
    def __init__(self, pipeline):
        self.pipeline = pipeline

    def invoke(self, input, config=None):
        assert config is None
        return span_hits(self.pipeline, input, 100)


@pytest.mark.parametrize("kind", [Searcher, Retrieves, Invokes])
def test_objects_with_search_retrieve_or_invoke(corpus, golden, kind):
    pipeline, ref = native(corpus, golden)
    got = ragtune.evaluate_retriever(kind(pipeline), golden, corpus=corpus, ks=KS)
    same_scores(ref, got)
    assert got.config["retriever"] == ("my-search" if kind is Searcher else kind.__name__)


def test_async_retriever_runs_concurrently_and_latency_is_per_question(corpus, golden):
    pipeline, ref = native(corpus, golden)
    running, peak = 0, 0

    async def retrieve(query, k):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == 4:
            four.set()
        # no call returns before four are in flight at once; 60 s is a hang guard only (run one at a time,
        # the first call would wait for the other three forever)
        await asyncio.wait_for(four.wait(), 60)
        await asyncio.sleep(0.05)
        running -= 1
        return span_hits(pipeline, query, k)

    four = asyncio.Event()
    got = ragtune.evaluate_retriever(retrieve, golden, corpus=corpus, ks=KS, concurrency=4)
    same_scores(ref, got)
    assert len(golden) == 8 and peak == 4  # 4 at once, never more
    # each question's latency is its own call (which slept 0.05 s), not the run's time shared out
    assert all(q.latency_s >= 0.045 for q in got.questions)
    assert got.latency_ms["p95"] >= got.latency_ms["p50"] >= 45 and "external" in got.latency_ms["stages"]


def test_sync_retriever_with_concurrency_uses_threads(corpus, golden):
    pipeline, ref = native(corpus, golden)
    threads = set()

    def retrieve(query, k):
        threads.add(threading.get_ident())
        time.sleep(0.02)
        return span_hits(pipeline, query, k)

    got = ragtune.evaluate_retriever(retrieve, golden, corpus=corpus, ks=KS, concurrency=3)
    same_scores(ref, got)
    assert len(threads) > 1


def test_unmatched_hits_keep_their_rank(corpus, golden):
    def retrieve(query, k):
        return ["nowhere.md", "billing/refunds.md#refunds"]

    got = ragtune.evaluate_retriever(retrieve, golden, corpus=corpus, ks=(1, 2))
    q1 = next(q for q in got.questions if q.id == "q1")
    assert q1.first_hit_rank == 2 and q1.scores["recall@1"] == 0.0
    assert got.matching["match_rate"] == 0.5
    assert len([u for u in got.matching["unmatched"] if u["hit"] == "nowhere.md"]) == len(golden)
    assert q1.retrieved[0]["anchor"] == "?nowhere.md" and not q1.retrieved[0]["relevant"]


def test_bad_retrievers_and_options_fail_clearly(corpus, golden):
    with pytest.raises(ConfigError, match="cannot call a int"):
        ragtune.evaluate_retriever(3, golden, corpus=corpus)
    with pytest.raises(ConfigError, match="concurrency must be an integer >= 1"):
        ragtune.evaluate_retriever(lambda q, k: [], golden, corpus=corpus, concurrency=0)
    with pytest.raises(ConfigError, match="returned a str, expected a list of hits"):
        ragtune.evaluate_retriever(lambda q, k: "shipping.md", golden, corpus=corpus)

    def broken(q, k):
        raise RuntimeError("index offline")

    with pytest.raises(ConfigError, match="failed on question 'q1': RuntimeError: index offline"):
        ragtune.evaluate_retriever(broken, golden, corpus=corpus)
