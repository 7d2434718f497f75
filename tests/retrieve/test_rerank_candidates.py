"""The candidates table: per shortlist size, quality, the rerank stage's own latency, the gain per 100 ms and a
verdict for a latency budget; the warning when reranking scores below the first stage."""

import math

import pytest

from ragtune import Hit, Ranking
from ragtune.corpus import load_corpus
from ragtune.golden import GoldenItem, GoldenSet
from ragtune.pipeline import PipelineConfig, build_pipeline, compare_candidates, first_stage_check, run_eval
from ragtune.cli.render import render_candidates
from ragtune.pipeline import candidate_gains, candidate_verdict, rerank_warning


def row(n, ndcg, p95, p50=None):
    return {"candidates": n, "recall@5": 0.5, "mrr": 0.5, "ndcg@10": ndcg, "p50_ms": 1.0, "p95_ms": 2.0,
            "rerank_p50_ms": 0.0 if n == "none" else (p50 if p50 is not None else p95 / 2), "rerank_p95_ms": p95}


def test_gain_per_100ms_is_the_metric_gain_over_the_rerank_p50():
    rows = candidate_gains([row("none", 0.70, 0.0), row(20, 0.73, 100.0, p50=60.0), row(50, 0.69, 300.0)])
    assert rows[0]["gain"] == 0.0 and math.isnan(rows[0]["gain_per_100ms"])
    assert rows[1]["gain"] == pytest.approx(0.03) and rows[1]["gain_per_100ms"] == pytest.approx(0.05)
    assert rows[2]["gain"] == pytest.approx(-0.01) and rows[2]["gain_per_100ms"] == pytest.approx(-0.01 / 1.5)


def test_verdict_takes_the_best_gain_that_fits_the_budget():
    rows = [row("none", 0.70, 0.0), row(10, 0.72, 80.0), row(20, 0.74, 150.0), row(50, 0.75, 420.0)]
    v = candidate_verdict(rows)
    assert v == {"candidates": 20, "metric": "ndcg@10", "budget_ms": 300.0,
                 "text": "verdict: rerank 20 candidates (ndcg@10 +0.040, rerank p95 150 ms <= 300 ms budget)"}
    assert candidate_verdict(rows, budget_ms=500)["candidates"] == 50
    assert candidate_verdict(rows, budget_ms=100)["candidates"] == 10
    tight = candidate_verdict(rows, budget_ms=50)
    assert tight["candidates"] is None
    assert tight["text"] == ("verdict: skip reranking for this budget (the best gain (50 candidates, ndcg@10 +0.050) "
                             "needs rerank p95 420 ms > 50 ms)")
    worse = candidate_verdict([row("none", 0.70, 0.0), row(10, 0.70, 10.0), row(20, 0.60, 20.0)])
    assert worse["candidates"] is None
    assert worse["text"] == "verdict: skip reranking for this budget (no shortlist size raises ndcg@10 over the first stage)"
    # equal gains: the smaller shortlist
    assert candidate_verdict([row("none", 0.7, 0.0), row(10, 0.8, 50.0), row(20, 0.8, 60.0)])["candidates"] == 10


def test_verdict_falls_back_to_mrr_without_ndcg_at_10():
    rows = [{**row("none", float("nan"), 0.0), "mrr": 0.4}, {**row(10, float("nan"), 10.0), "mrr": 0.5}]
    assert candidate_verdict(rows)["metric"] == "mrr" and candidate_verdict(rows)["candidates"] == 10


def test_rendered_table_warns_when_every_size_is_worse():
    text = render_candidates([row("none", 0.710, 0.0), row(20, 0.602, 90.0), row(50, 0.650, 200.0)], "embedding")
    lines = text.strip().splitlines()
    assert lines[0] == "reranking (embedding) by number of candidates:"
    assert lines[1].startswith("(p50/p95: the rerank stage alone; gain/100ms: ndcg@10 gained over none")
    assert lines[4].split()[:2] == ["20", "0.500"] and lines[4].split()[-3:] == ["45.0", "90.0", "-0.2400"]
    assert lines[-2] == ("warning: reranking with embedding lowers ndcg@10 from 0.710 (first stage alone) to 0.650; "
                         "drop --rerank, or try --rerank-mode fuse or another reranker")
    assert lines[-1].startswith("verdict: skip reranking for this budget")
    fine = render_candidates([row("none", 0.70, 0.0), row(20, 0.72, 90.0)], "x")
    assert "warning" not in fine and fine.splitlines()[-1].startswith("verdict: rerank 20 candidates")
    assert rerank_warning(0.7, 0.7, "x") is None and rerank_warning(float("nan"), 0.1, "x") is None


class Promote:
    """Moves the chunks of one document to the top; reports 40 ms of reranking per query."""

    name, config, mode = "promote", None, "replace"

    def __init__(self, doc):
        self.doc = doc

    def rerank(self, query, ranking):
        hits = sorted(ranking.hits, key=lambda h: h.chunk.doc_id != self.doc)
        return Ranking(query, tuple(Hit(h.chunk, float(-i)) for i, h in enumerate(hits)), {**ranking.timings, "rerank": 0.04})


@pytest.fixture
def pipeline(tmp_path):
    docs = {"cats.md": "# Cats\n\nCats purr and sleep all day long.\n",
            "dogs.md": "# Dogs\n\nDogs bark at cats and chase balls.\n",
            "fish.md": "# Fish\n\nFish swim; cats watch fish.\n"}
    for name, text in docs.items():
        (tmp_path / name).write_text(text)
    return build_pipeline(load_corpus(tmp_path), PipelineConfig(retriever="bm25"))


def golden():
    return GoldenSet([GoldenItem("q1", "cats", {"fish.md": 1.0}), GoldenItem("q2", "cats purr", {"cats.md": 1.0})])


def test_compare_candidates_reads_the_rerank_stage_latency(pipeline):
    p = pipeline.with_reranker(Promote("fish.md"), 1)
    rows = compare_candidates(p, golden(), [1, 3], ks=(1, 3, 10))
    assert [r["candidates"] for r in rows] == ["none", 1, 3]
    assert rows[0]["rerank_p50_ms"] == 0.0
    assert rows[1]["rerank_p50_ms"] == pytest.approx(40.0) and rows[2]["rerank_p95_ms"] == pytest.approx(40.0)
    assert rows[2]["p95_ms"] >= rows[2]["p50_ms"] >= rows[2]["rerank_p50_ms"]  # the whole search holds the stage
    # promoting fish.md helps q1 and hurts q2 once it can reach the fish chunk (3 candidates, not 1)
    base = run_eval(pipeline, golden(), ks=(1, 3, 10)).metrics["ndcg@10"]
    assert rows[0]["ndcg@10"] == pytest.approx(base) and rows[1]["gain"] == pytest.approx(rows[1]["ndcg@10"] - base)
    assert rows[2]["ndcg@10"] != rows[0]["ndcg@10"]


def test_first_stage_check_warns_only_when_reranking_is_worse(pipeline):
    worse = pipeline.with_reranker(Promote("dogs.md"), 3)
    result = run_eval(worse, golden(), ks=(1, 3, 10))
    line = first_stage_check(worse, result, golden(), ks=(1, 3, 10))
    assert line is not None and line.startswith("warning: reranking with promote lowers ndcg@10 from ")
    same = pipeline.with_reranker(Promote("nowhere.md"), 3)  # a stable sort that moves nothing: equal, no warning
    res = run_eval(same, golden(), ks=(1, 3, 10))
    assert first_stage_check(same, res, golden(), ks=(1, 3, 10)) is None
    assert first_stage_check(pipeline, result, golden()) is None  # no reranker: nothing to check
