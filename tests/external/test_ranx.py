"""ranx interop: golden sets and runs to and from ranx.Qrels / ranx.Run, and ranx's metrics equal ragtune's."""

import pytest

from ragtune import ConfigError, GoldenSet, Pipeline, evaluate, load_corpus, load_golden
from ragtune.evaluate.run import Run
from ragtune.external.files import from_ranx, to_ranx, write_trec_run
from ragtune.golden import GoldenItem
from tests.helpers import random_beir

ranx = pytest.importorskip("ranx")

KS = (1, 3, 5, 10)


def test_golden_to_qrels_and_back(golden):
    graded = GoldenSet([*golden.items, GoldenItem("g1", "graded", {"shipping.md": 2.0, "billing/invoices.md": 1.0})])
    qrels = to_ranx(graded)
    assert isinstance(qrels, ranx.Qrels)
    assert qrels.to_dict()["g1"] == {"shipping.md": 2, "billing/invoices.md": 1}
    assert "q8" not in qrels.to_dict()  # unanswerable: no relevant document to judge
    back = from_ranx(qrels, questions={"g1": "graded"})
    assert {i.id: dict(i.relevant) for i in back} == {i.id: dict(i.relevant) for i in graded if i.answerable}
    assert next(i for i in back if i.id == "g1").q == "graded"


def test_a_ranx_run_scores_as_the_trec_file_of_the_same_rankings(tmp_path, corpus, golden):
    native = evaluate(Pipeline.build(corpus, retriever="bm25").retriever, golden, corpus, ks=KS)
    run = Run.from_result(native, name="bm25").to_ranx()
    assert isinstance(run, ranx.Run) and run.name == "bm25"
    write_trec_run(native, tmp_path / "r.trec")
    trec = Run.from_trec(tmp_path / "r.trec", golden, corpus=corpus, ks=KS)
    back = Run.from_ranx(run, golden, corpus=corpus, ks=KS)
    assert back.name == "bm25" and back.question_ids == trec.question_ids
    for q in trec.question_ids:
        assert dict(back.scores[q]) == pytest.approx(dict(trec.scores[q])), q
    assert dict(back.rankings) == dict(trec.rankings)
    # the module-level pair does the same from an eval result
    assert from_ranx(to_ranx(native, name="x"), golden, corpus=corpus, ks=KS).scores == back.scores
    with pytest.raises(ConfigError, match="keeps no rankings"):
        Run("empty", {"q1": {"mrr": 1.0}}).to_ranx()
    with pytest.raises(ConfigError, match="ranx.Qrels or a ranx.Run"):
        from_ranx({"q1": {"a": 1.0}})


def test_ranx_metrics_equal_ragtunes_where_one_chunk_is_one_document(tmp_path):
    random_beir(tmp_path, seed=5, docs=120, queries=40, vocab=40, doc_words=20, max_relevant=5, grades=(1, 2, 3))
    corpus = load_corpus(tmp_path)
    golden = load_golden(tmp_path, split="test")
    retriever = Pipeline.build(corpus, retriever="bm25").retriever
    ranked = {i.id: [h.chunk.doc_id for h in retriever.search(i.q, k=50).hits] for i in golden}
    run = ranx.Run.from_dict({q: {d: float(len(ids) - r) for r, d in enumerate(ids)} for q, ids in ranked.items()},
                             name="bm25")
    mine = Run.from_ranx(run, golden, corpus=corpus, ks=KS)
    names = {f"recall@{k}": f"recall@{k}" for k in KS} | {f"precision@{k}": f"precision@{k}" for k in KS} | \
        {f"ndcg@{k}": f"ndcg@{k}" for k in KS} | {f"hit@{k}": f"hit_rate@{k}" for k in KS} | {"mrr": "mrr"}
    ref = ranx.evaluate(to_ranx(golden), run, list(names.values()))
    for ours, theirs in names.items():
        assert mine.mean(ours) == pytest.approx(ref[theirs], abs=1e-6), ours
    assert 0 < mine.mean("recall@10") < 1 and 0 < mine.mean("mrr") < 1  # non-trivial rankings
