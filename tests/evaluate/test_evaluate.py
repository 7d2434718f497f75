import json
import math

import pytest

from ragtune import (Chunk, Hit, Pipeline, Ranking, UnknownAnchorError, evaluate, load_corpus, load_golden)
from ragtune.evaluate import covers
from tests.helpers import write_jsonl


class FixedRetriever:
    """Returns a fixed list of chunks for every query."""

    name = "fixed"

    def __init__(self, chunks):
        self.chunks = chunks

    def search(self, query, k=10):
        return Ranking(query, tuple(Hit(c, 1.0 / (i + 1)) for i, c in enumerate(self.chunks[:k])), {"fixed": 0.001})


def chunk_at(corpus, doc_id, needle, length=10):
    doc = corpus[doc_id]
    start = doc.text.index(needle)
    return Chunk(id=f"{doc_id}@{start}", doc_id=doc_id, text=doc.text[start:start + length], start=start,
                 end=start + length, embed_text="")


def test_subsection_counts_for_parent_but_not_sibling(md_corpus):
    corpus = load_corpus(md_corpus)
    partial = chunk_at(corpus, "guide/billing.md", "A partial refund")
    refunds = corpus.resolve("guide/billing.md#refunds")
    invoices = corpus.resolve("guide/billing.md#invoices")
    doc = corpus.resolve("guide/billing.md")
    assert covers(partial, refunds)
    assert covers(partial, corpus.resolve("guide/billing.md#partial-refunds"))
    assert not covers(partial, invoices)
    assert covers(partial, doc)
    assert not covers(partial, corpus.resolve("faq.md"))


def test_metrics_count_anchors_not_chunks(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    chunks = [
        chunk_at(corpus, "faq.md", "Account deletion"),          # rank 1: miss
        chunk_at(corpus, "guide/billing.md", "Refunds are"),      # rank 2: covers #refunds
        chunk_at(corpus, "guide/billing.md", "A partial refund"),  # rank 3: #refunds again, adds nothing
        chunk_at(corpus, "guide/billing.md", "Invoices are"),     # rank 4: covers #invoices
    ]
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [
        {"id": "q1", "q": "x", "relevant": ["guide/billing.md#refunds", "guide/billing.md#invoices"], "tags": ["multi-hop"]},
        {"id": "q2", "q": "y", "relevant": [], "tags": ["unanswerable"]},
    ]))
    result = evaluate(FixedRetriever(chunks), golden, corpus, ks=(1, 2, 4))
    q1 = result.questions[0]
    assert q1.first_hit_rank == 2
    assert q1.anchor_ranks == {"guide/billing.md#refunds": 2, "guide/billing.md#invoices": 4}
    assert q1.scores["recall@1"] == 0 and q1.scores["recall@2"] == 0.5 and q1.scores["recall@4"] == 1.0
    assert q1.scores["precision@4"] == 0.75  # three of four chunks touch a relevant anchor
    assert q1.scores["mrr"] == 0.5
    expected_ndcg = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert q1.scores["ndcg@10"] == pytest.approx(expected_ndcg)
    # unanswerable question: counted, excluded from means
    assert result.n_unanswerable == 1 and result.n_answerable == 1
    assert result.metrics["recall@2"] == 0.5
    assert result.metrics["reranker_headroom"] == 1.0 - 0.0
    assert result.by_tag == {"multi-hop": {**{k: v for k, v in q1.scores.items()}, "n": 1}}
    assert [r["relevant"] for r in q1.retrieved] == [False, True, True, True]


def test_json_shape(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [
        {"id": "q1", "q": "partial refund amount", "relevant": ["guide/billing.md#refunds"], "tags": ["keyword"]},
        {"id": "q2", "q": "weather", "relevant": []},
    ]))
    pipeline = Pipeline.build(corpus)
    from ragtune import run_eval
    result = run_eval(pipeline, golden)
    out = tmp_path / "sub" / "r.json"
    result.to_json(out)
    data = json.loads(out.read_text())
    assert set(data) >= {"config", "metrics", "by_tag", "questions", "counts", "latency_ms"}
    assert data["config"]["chunker"]["name"] == "small_to_big"  # the default under hybrid: window-sized pieces
    assert data["config"]["corpus"]["fingerprint"] == corpus.fingerprint
    assert data["metrics"]["recall@5"] == 1.0
    q = data["questions"][0]
    assert q["first_hit_rank"] == 1
    assert q["retrieved"][0]["anchor"].startswith("guide/billing.md#")
    assert set(q["retrieved"][0]) >= {"chunk_id", "anchor", "score"}
    assert data["questions"][1]["first_hit_rank"] is None and data["questions"][1]["scores"] == {}


def test_unknown_anchor_in_eval_points_to_golden_check(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [{"id": "q1", "q": "x", "relevant": ["faq.md#nope"]}]))
    with pytest.raises(UnknownAnchorError, match="golden check"):
        evaluate(FixedRetriever([]), golden, corpus)


def test_failures_lists_the_worst_questions_first(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    chunks = [
        chunk_at(corpus, "faq.md", "Account deletion"),       # rank 1
        chunk_at(corpus, "guide/billing.md", "Refunds are"),   # rank 2: #refunds
        chunk_at(corpus, "guide/billing.md", "Invoices are"),  # rank 3: #invoices
    ]
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [
        {"id": "top", "q": "x", "relevant": ["faq.md"]},                                    # found at rank 1
        {"id": "second", "q": "x", "relevant": ["guide/billing.md#refunds"]},              # found late, at 2
        {"id": "third", "q": "x", "relevant": ["guide/billing.md#invoices"]},              # found later, at 3
        {"id": "half", "q": "x", "relevant": ["guide/billing.md#invoices", "guide/billing.md#partial-refunds"]},
        {"id": "none", "q": "x", "relevant": ["guide/billing.md#partial-refunds"]},        # never found
        {"id": "unanswerable", "q": "x", "relevant": []},
    ]))
    result = evaluate(FixedRetriever(chunks), golden, corpus, ks=(1, 3))
    # lowest recall first, then the latest first hit; a question answered at rank 1 is no failure
    assert [q.id for q in result.failures()] == ["none", "half", "third", "second"]
    assert [q.id for q in result.failures(n=2)] == ["none", "half"]
    assert result.failures(n=0) == []
