"""judged@k and the bounds of recall, MRR and nDCG when some retrieved sections were never judged."""

import math

import ir_measures
import numpy as np
import pytest
from ir_measures import Judged

from ragtune import load_corpus
from ragtune.evaluate.evaluate import evaluate_rankings
from ragtune.evaluate.match import AnchorsOnly
from ragtune.evaluate.render import render_eval
from ragtune.golden import GoldenItem, GoldenSet
from ragtune.types import Chunk, Hit, Ranking


def doc_chunk(doc: str) -> Chunk:
    return Chunk(id=doc, doc_id=doc, text="", start=0, end=1, embed_text="")


def ranking(q: str, docs) -> Ranking:
    return Ranking(q, tuple(Hit(doc_chunk(d), float(len(docs) - r)) for r, d in enumerate(docs)))


def test_hand_computed_example():
    # relevant a and b, c judged not relevant; retrieved: x (hole), a, c, y (hole), z (hole)
    golden = GoldenSet([GoldenItem("q", "question", {"a": 1.0, "b": 1.0}, judged={"c": 0.0})])
    result = evaluate_rankings({"q": ranking("question", ["x", "a", "c", "y", "z"])}, golden, AnchorsOnly(), ks=(3, 5))
    s = result.questions[0].scores
    assert s["judged@3"] == pytest.approx(2 / 3) and s["judged@5"] == pytest.approx(2 / 5)
    assert s["judged@10"] == pytest.approx(2 / 5)  # fewer than 10 retrieved: divided by the 5 there are
    assert (s["recall@5"], s["recall_upper@5"]) == (0.5, pytest.approx((1 + 3) / (2 + 3)))
    assert (s["recall@3"], s["recall_upper@3"]) == (0.5, pytest.approx((1 + 1) / (2 + 1)))
    assert (s["mrr"], s["mrr_upper"]) == (0.5, 1.0)
    d = [1 / math.log2(r + 1) for r in range(1, 11)]
    assert s["ndcg@5"] == pytest.approx(d[1] / (d[0] + d[1]))
    # as if x, y and z were relevant: relevant at ranks 1, 2, 4, 5 out of five relevant (b never retrieved)
    assert s["ndcg_upper@5"] == pytest.approx((d[0] + d[1] + d[3] + d[4]) / sum(d[:5]))
    assert s["ndcg_upper@10"] == pytest.approx((d[0] + d[1] + d[3] + d[4]) / sum(d[:5]))
    assert [r["judged"] for r in result.questions[0].retrieved] == [False, True, True, False, False]
    assert result.metrics["judged@10"] == pytest.approx(0.4)
    text = render_eval(result)
    assert "judged@10 0.400: unjudged hits could lift nDCG@10 from 0.387 up to 0.830, recall@5 from 0.500 up to " \
           "0.800, MRR from 0.500 up to 1.000" in text


def test_every_hit_judged_collapses_the_bounds():
    golden = GoldenSet([GoldenItem("q", "question", {"a": 2.0}, judged={"c": 0.0})])
    result = evaluate_rankings({"q": ranking("question", ["c", "a"])}, golden, AnchorsOnly(), ks=(5,))
    s = result.questions[0].scores
    assert s["judged@5"] == 1.0
    assert (s["recall_upper@5"], s["mrr_upper"], s["ndcg_upper@10"]) == (s["recall@5"], s["mrr"], s["ndcg@10"])
    assert "every hit in the top 10 has a judgment" in render_eval(result)
    empty = evaluate_rankings({}, golden, AnchorsOnly(), ks=(5,)).questions[0].scores
    assert empty["judged@10"] == 1.0 and empty["recall_upper@5"] == 0.0  # nothing retrieved: nothing unjudged


def test_older_keys_are_unchanged_by_judgments():
    """Judged-not-relevant anchors add keys; they change no figure that was there before."""
    runs = {"q": ranking("question", ["x", "a", "c", "y"])}
    plain = evaluate_rankings(runs, GoldenSet([GoldenItem("q", "question", {"a": 1.0})]), AnchorsOnly())
    judged = evaluate_rankings(runs, GoldenSet([GoldenItem("q", "question", {"a": 1.0}, judged={"c": 0.0})]),
                               AnchorsOnly())
    old = {k: v for k, v in plain.metrics.items() if not k.startswith(("judged", "recall_upper", "mrr_upper",
                                                                        "ndcg_upper"))}
    assert {k: judged.metrics[k] for k in old} == old
    assert plain.metrics["judged@10"] == 0.25 and judged.metrics["judged@10"] == 0.5


def test_a_chunk_is_judged_when_it_covers_a_judged_anchor(md_corpus):
    corpus = load_corpus(md_corpus)
    refunds, invoices = corpus.resolve("guide/billing.md#refunds"), corpus.resolve("guide/billing.md#invoices")
    doc = corpus["guide/billing.md"]

    def chunk(start, end, anchors, doc=doc):
        return Chunk(id=f"{doc.id}@{start}", doc_id=doc.id, text=doc.text[start:end], start=start, end=end,
                     embed_text="", anchors=anchors)

    faq = corpus["faq.md"]
    hits = [chunk(invoices.start + 1, invoices.start + 5, ("guide/billing.md#invoices",)),  # inside a judged-0 span
            chunk(0, refunds.start - 1, ("guide/billing.md#billing",)),  # before refunds: a hole
            chunk(refunds.start, refunds.start + 3, ("guide/billing.md#refunds",)),  # relevant
            chunk(0, 5, ("faq.md",), doc=faq)]  # another document: a hole
    golden = GoldenSet([GoldenItem("q", "refunds?", {"guide/billing.md#refunds": 1.0},
                                   judged={"guide/billing.md#invoices": 0.0})])
    r = evaluate_rankings({"q": Ranking("refunds?", tuple(Hit(c, 1.0) for c in hits))}, golden, corpus, ks=(4,))
    q = r.questions[0]
    assert [h["judged"] for h in q.retrieved] == [True, False, True, False]
    assert q.scores["judged@4"] == 0.5
    assert q.scores["recall_upper@4"] == pytest.approx(3 / 3) and q.scores["mrr_upper"] == 0.5


def test_judged_matches_ir_measures_on_document_level_data():
    rng = np.random.default_rng(11)
    docs = [f"d{i}" for i in range(60)]
    items, runs, qrels, run = [], {}, [], []
    for n in range(50):
        qid = f"q{n}"
        pick = rng.permutation(docs)
        relevant = {d: float(rng.integers(1, 4)) for d in pick[:rng.integers(1, 4)]}
        zero = {d: 0.0 for d in pick[10:10 + rng.integers(0, 15)]}
        items.append(GoldenItem(qid, qid, relevant, judged=zero))
        ranked = list(rng.permutation(docs)[:rng.integers(3, 30)])
        runs[qid] = ranking(qid, ranked)
        qrels += [ir_measures.Qrel(qid, d, int(g)) for d, g in {**relevant, **zero}.items()]
        run += [ir_measures.ScoredDoc(qid, d, float(len(ranked) - r)) for r, d in enumerate(ranked)]
    result = evaluate_rankings(runs, GoldenSet(items), AnchorsOnly(), ks=(5, 10, 20))
    ref: dict = {}
    for m in ir_measures.iter_calc([Judged @ 5, Judged @ 10, Judged @ 20], qrels, run):
        ref.setdefault(m.query_id, {})[f"judged@{m.measure['cutoff']}"] = m.value
    assert len(ref) == 50
    for q in result.questions:
        for key, value in ref[q.id].items():
            assert q.scores[key] == pytest.approx(value, abs=1e-9), (q.id, key)
    assert result.metrics["judged@10"] == pytest.approx(np.mean([ref[q]["judged@10"] for q in ref]))
