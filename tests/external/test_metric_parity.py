"""MAP@k, nDCG@k at every cutoff and R-precision equal trec_eval's (via ir_measures) where one chunk is one document."""

import ir_measures
import pytest
from ir_measures import AP, Rprec, nDCG

from ragtune import Pipeline, evaluate, load_corpus, load_golden
from tests.helpers import random_beir

KS = (1, 3, 5, 10, 20)


def test_map_ndcg_and_r_precision_match_trec_eval(tmp_path):
    random_beir(tmp_path, seed=11, docs=150, queries=50, vocab=50, doc_words=25, max_relevant=6, grades=(1, 2, 3))
    corpus = load_corpus(tmp_path)
    golden = load_golden(tmp_path, split="test")
    retriever = Pipeline.build(corpus).retriever
    result = evaluate(retriever, golden, corpus, ks=KS, depth=100)

    measures = {f"map@{k}": AP @ k for k in KS} | {f"ndcg@{k}": nDCG @ k for k in KS} | {"r_precision": Rprec}
    ref_qrels = [ir_measures.Qrel(i.id, a, int(g)) for i in golden for a, g in i.relevant.items()]
    run = []
    for i in golden:
        ids = [h.chunk.doc_id for h in retriever.search(i.q, k=100).hits]
        run.extend(ir_measures.ScoredDoc(i.id, d, float(len(ids) - r)) for r, d in enumerate(ids))
    ref: dict[str, dict[str, float]] = {}
    for m in ir_measures.iter_calc(list(measures.values()), ref_qrels, run):
        ref.setdefault(m.query_id, {})[str(m.measure)] = m.value
    checked = 0
    for q in result.questions:
        if q.id not in ref:
            continue
        for name, measure in measures.items():
            assert q.scores[name] == pytest.approx(ref[q.id][str(measure)], abs=1e-6), (q.id, name)
        checked += 1
    assert checked >= 40
    assert 0 < result.metrics["map@10"] < result.metrics["recall@10"] <= 1  # non-trivial rankings
