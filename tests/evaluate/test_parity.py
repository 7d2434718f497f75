"""Parity: where one chunk is one document, ragtune's metrics equal trec_eval's (via ir_measures)."""

import ir_measures
import pytest
from ir_measures import P, R, RR, Success, nDCG

from ragtune import Pipeline, evaluate, load_corpus, load_golden
from tests.helpers import random_beir, shared_dataset

MEASURES = {"recall@5": R @ 5, "recall@10": R @ 10, "recall@20": R @ 20, "hit@5": Success @ 5,
            "precision@10": P @ 10, "mrr": RR, "ndcg@10": nDCG @ 10}


def reference_scores(runs, golden):
    qrels = [ir_measures.Qrel(i.id, a, int(g)) for i in golden for a, g in i.relevant.items()]
    run = []
    for qid, doc_ids in runs.items():
        # strictly decreasing scores: trec_eval re-sorts by score and would reorder ties
        run.extend(ir_measures.ScoredDoc(qid, doc, float(len(doc_ids) - r)) for r, doc in enumerate(doc_ids))
    per_query: dict[str, dict[str, float]] = {}
    for m in ir_measures.iter_calc(list(MEASURES.values()), qrels, run):
        per_query.setdefault(m.query_id, {})[str(m.measure)] = m.value
    return per_query


def assert_parity(pipeline, golden, corpus):
    result = evaluate(pipeline.retriever, golden, corpus, ks=(5, 10, 20), depth=100)
    runs = {i.id: [h.chunk.doc_id for h in pipeline.retriever.search(i.q, k=100).hits] for i in golden}
    ref = reference_scores(runs, golden)
    checked = 0
    for q in result.questions:
        if q.id not in ref:  # trec_eval skips queries with an empty run
            assert not runs[q.id]
            continue
        for name, measure in MEASURES.items():
            assert q.scores[name] == pytest.approx(ref[q.id][str(measure)], abs=1e-6), (q.id, name)
        checked += 1
    assert checked >= len(result.questions) * 0.9
    return result


def test_parity_on_generated_beir_data(tmp_path):
    random_beir(tmp_path, seed=7, docs=200, queries=60, vocab=60, doc_words=30, max_relevant=5, grades=(1, 1, 2, 3))
    corpus = load_corpus(tmp_path)
    golden = load_golden(tmp_path, split="test")
    assert_parity(Pipeline.build(corpus), golden, corpus)


@pytest.mark.dataset
def test_parity_on_scifact():
    path = shared_dataset("scifact")
    corpus = load_corpus(path)
    golden = load_golden(path, split="test")
    result = assert_parity(Pipeline.build(corpus, retriever="bm25"), golden, corpus)  # BM25: no corpus embedding in CI
    assert result.metrics["ndcg@10"] >= 0.68
