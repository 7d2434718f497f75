"""The metric table: one row per metric, read by evaluation, grid validation, compare, the gate, the sweep
ranking and the report; a metric added at run time (one row plus its function) works in all of them."""

import json
import random
import re

import numpy as np
import pytest

from ragtune import Chunk, Hit, Ranking, evaluate, load_corpus, load_golden
from ragtune.corpus.corpus import AnchorSpan
from ragtune.errors import ConfigError, RagtuneError
from ragtune.evaluate import compare, regression_gate
from ragtune.evaluate import metrics as m
from ragtune.evaluate.evaluate import covers, judge, score_judgement
from ragtune.evaluate.gate import check_gate
from ragtune.evaluate.table import (METRICS, Judgement, Metric, check_metric, metric_table, parse_metric,
                                    register_metric, unregister_metric)
from ragtune.sweep import GridError, parse_grid, summarize
from ragtune.sweep.report import _report_data, render_report
from tests.helpers import write_jsonl

BASE = {"chunker": "fixed", "size": 64, "overlap": 8, "retriever": "bm25"}


# -- evaluation reads the table: same keys, same order, same values as before ------------------------------------

def _judgement(tokens=True):
    first = np.array([2.0, np.inf, 7.0])
    hits = np.zeros(25, dtype=bool)
    hits[[1, 3, 6]] = True
    return Judgement(first, np.array([2.0, 1.0, 1.0]), hits, np.arange(25, dtype=np.float64) if tokens else None)


@pytest.mark.parametrize("ks", [(5, 10, 20), (1, 5), (10,), (3, 25)])
def test_scores_have_the_keys_order_and_values_of_the_hand_written_list(ks):
    j = _judgement()
    s = score_judgement(j, ks)
    want = ([f"recall@{k}" for k in ks] + [f"hit@{k}" for k in ks] + [f"precision@{k}" for k in ks] + ["mrr", "ndcg@10"]
            + [f"ndcg@{k}" for k in ks if k != 10] + [f"map@{k}" for k in ks] + ["r_precision"]
            + [f"context_tokens@{k}" for k in ks])
    assert list(s) == want
    for k in ks:
        assert s[f"recall@{k}"] == m.recall_at_k(j.first_ranks, k)
        assert s[f"hit@{k}"] == m.hit_at_k(j.first_ranks, k)
        assert s[f"precision@{k}"] == m.precision_at_k(j.rank_hits, k)
        assert s[f"ndcg@{k}"] == m.ndcg_at_k(j.first_ranks, j.grades, k)
        assert s[f"map@{k}"] == m.average_precision_at_k(j.first_ranks, j.rank_hits, k)
        assert s[f"context_tokens@{k}"] == float(sum(range(min(k, 25))))
    assert s["ndcg@10"] == m.ndcg_at_k(j.first_ranks, j.grades, 10)
    assert s["mrr"] == 0.5 and s["r_precision"] == m.r_precision(j.first_ranks, j.rank_hits)
    # judged without token counts (a run file): no context_tokens, everything else the same
    assert score_judgement(_judgement(tokens=False), ks) == {k: v for k, v in s.items() if "context" not in k}


def test_the_table_rows_and_what_the_report_is_sent():
    assert list(METRICS) == ["recall", "hit", "precision", "mrr", "ndcg", "map", "r_precision", "context_tokens",
                             "judged", "recall_upper", "mrr_upper", "ndcg_upper", "evidence", "evidence@tok"]
    ctx = METRICS["context_tokens"]
    assert (ctx.bounded, ctx.higher_is_better, ctx.label, ctx.needs) == (False, False, "ctx tokens", ("tokens",))
    assert not METRICS["mrr"].takes_k and METRICS["ndcg"].always_k == (10,)
    assert all(r.bounded and r.higher_is_better and r.description for n, r in METRICS.items() if n != "context_tokens")
    rows = metric_table()
    assert [r["name"] + (f"@{r['unit']}" if r.get("unit") else "") for r in rows] == list(METRICS)
    assert "fn" not in rows[0]
    json.dumps(rows)
    with pytest.raises(TypeError):
        METRICS["x"] = ctx  # read-only: rows are added with register_metric


# -- validation: a name is valid iff the table has it; @k iff the row takes k and k is scored -------------------

@pytest.mark.parametrize("spec, ks", [("map@5", (5, 10)), ("r_precision", (5,)), ("ndcg@5", (5, 10)),
                                      ("ndcg@10", (5,)), ("mrr", (1,)), ("context_tokens@5", (5,)),
                                      ("precision@20", (5, 10, 20))])
def test_grid_accepts_every_metric_that_is_computed(spec, ks):
    assert check_metric(spec, ks) is None
    assert parse_grid({"metric": spec, "k": list(ks), "baseline": BASE, "grid": {"size": [64]}}).metric == spec


@pytest.mark.parametrize("spec, needle", [
    ("ndcg@7", "k=7 is not among the evaluated k values [5, 10]"),
    ("bogus@5", "choose one of recall@k, hit@k, precision@k, mrr, ndcg@k, map@k, r_precision, context_tokens@k"),
    ("Recall@5", "choose one of"), (" recall@5", "choose one of"), ("", "choose one of"),
    ("mrr@5", "mrr takes no @k"), ("r_precision@5", "r_precision takes no @k"), ("mrr@", "mrr takes no @k"),
    ("recall", "recall needs a cut-off, e.g. recall@10"), ("recall@", "needs a cut-off"),
    ("recall@0", "positive whole number"), ("recall@05", "positive whole number"), ("recall@-5", "positive whole"),
    ("recall@5.0", "positive whole number"), ("recall@\u0661\u0660", "positive whole number"),
    ("recall@10 ", "positive whole number"), ("recall@5@5", "positive whole number"),
])
def test_grid_refuses_a_metric_that_is_not_computed_with_the_reason(spec, needle):
    assert needle in check_metric(spec, (5, 10))
    with pytest.raises(GridError) as e:
        parse_grid({"metric": spec, "k": [5, 10], "baseline": BASE, "grid": {"size": [64]}})
    assert needle in str(e.value)
    if "k=7" not in needle:
        with pytest.raises(ConfigError, match=re.escape(needle)):
            parse_metric(spec)


def test_parse_metric_of_a_non_string():
    for bad in (None, 10, ["recall@10"]):
        with pytest.raises(ConfigError, match="expected a metric name such as recall@10"):
            parse_metric(bad)


# -- judge(): the same covers semantics, pair by pair --------------------------------------------------------------

def _reference_judge(ranking, spans):
    first = np.full(len(spans), np.inf)
    hits = np.zeros(len(ranking.hits), dtype=bool)
    for r, h in enumerate(ranking.hits, start=1):
        for i, s in enumerate(spans):
            if covers(h.chunk, s):
                hits[r - 1] = True
                if first[i] == np.inf:
                    first[i] = r
    return first, hits


def test_judge_agrees_with_covers_on_every_rank_and_anchor():
    rng = random.Random(20)
    edge = [0, 1, 9, 10, 11, 20]  # offsets on and around span boundaries
    for _ in range(400):
        spans = []
        for i in range(rng.randrange(0, 5)):
            d = f"d{rng.randrange(3)}"
            s = rng.choice(edge)
            spans.append(AnchorSpan(f"{d}#{i}", d, s, s + rng.choice([0, 1, 10]), rng.choice([None, object()])))
        if spans and rng.random() < 0.2:
            spans.append(spans[0])  # the same anchor twice
        hits = []
        for r in range(rng.randrange(0, 30)):
            s = rng.choice(edge)
            e = s + rng.choice([-3, 0, 1, 5])  # empty and reversed chunks too
            tok = rng.choice([None, 0, 7])
            hits.append(Hit(Chunk(f"c{r}", f"d{rng.randrange(4)}", "", s, e, "", tokens=tok), 1.0))
        ranking = Ranking("q", tuple(hits))
        j = judge(ranking, spans, [1.0] * len(spans))
        first, rank_hits = _reference_judge(ranking, spans)
        assert np.array_equal(j.first_ranks, first) and np.array_equal(j.rank_hits, rank_hits)
        assert list(j.tokens) == [float(h.chunk.tokens or 0) for h in hits]
        assert j.first_hit_rank == (int(np.flatnonzero(rank_hits)[0]) + 1 if rank_hits.any() else None)


# -- a metric added at run time: one row plus its function, nothing else touched ----------------------------------

def first_hit_is_top(j, k):
    """1 when the chunk at rank 1 covers a relevant anchor and the first anchors covered fit in the top k."""
    return float(bool(j.rank_hits[:1].any()) and bool(np.any(j.first_ranks <= k)))


def misses(j, k):
    """Relevant anchors not covered in the top k (fewer is better, not on a 0-1 scale)."""
    return float(np.count_nonzero(j.first_ranks > k))


@pytest.fixture
def toy_metrics():
    rows = [register_metric(Metric("first_hit_is_top", first_hit_is_top, description="rank 1 covers an anchor",
                                   label="top hit")),
            register_metric(Metric("misses", misses, bounded=False, higher_is_better=False, label="missed"))]
    yield rows
    for r in rows:
        unregister_metric(r.name)


class FixedRetriever:
    """The same chunks for every query; ``odd``: other chunks for the questions whose text ends in an odd digit."""

    name = "fixed"

    def __init__(self, chunks, odd=None):
        self.chunks, self.odd = chunks, odd

    def search(self, query, k=10):
        chunks = self.odd if self.odd is not None and int(query[-1]) % 2 else self.chunks
        return Ranking(query, tuple(Hit(c, 1.0 / (i + 1)) for i, c in enumerate(chunks[:k])), {"fixed": 0.001})


def _chunk(corpus, doc_id, needle, length=10):
    start = corpus[doc_id].text.index(needle)
    return Chunk(id=f"{doc_id}@{start}", doc_id=doc_id, text="x", start=start, end=start + length, embed_text="",
                 tokens=length)


def _two_results(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [
        {"id": f"q{i}", "q": f"refunds {i}", "relevant": ["guide/billing.md#refunds", "guide/billing.md#invoices"]}
        for i in range(6)]))
    refunds, invoices = _chunk(corpus, "guide/billing.md", "Refunds are"), _chunk(corpus, "guide/billing.md", "Invoices are")
    miss = _chunk(corpus, "faq.md", "Account deletion")
    good = evaluate(FixedRetriever([miss, refunds, miss], odd=[refunds, invoices, miss]), golden, corpus, ks=(1, 4))
    bad = evaluate(FixedRetriever([miss, miss, refunds]), golden, corpus, ks=(1, 4))
    return good, bad


def test_a_metric_registered_at_run_time_is_scored_validated_compared_gated_ranked_and_reported(
        toy_metrics, md_corpus, tmp_path):
    good, bad = _two_results(md_corpus, tmp_path)
    # evaluated: every k, after the built-in keys, means included
    q = good.questions[1].scores
    assert list(q)[-4:] == ["first_hit_is_top@1", "first_hit_is_top@4", "misses@1", "misses@4"]
    assert (q["first_hit_is_top@1"], q["misses@1"], q["misses@4"]) == (1.0, 1.0, 0.0)
    assert bad.metrics["first_hit_is_top@4"] == 0.0 and bad.metrics["misses@4"] == 1.0
    assert json.loads(good.to_json())["metrics"]["misses@4"] == 0.5

    # validated in a grid: the name now exists; its k must still be evaluated
    grid = parse_grid({"metric": "misses@4", "k": [1, 4], "samples": 200, "baseline": BASE,
                       "grid": {"size": [64, 128]}})
    assert grid.metric == "misses@4"
    with pytest.raises(GridError, match=r"k=7 is not among the evaluated k values \[1, 4\]"):
        parse_grid({"metric": "first_hit_is_top@7", "k": [1, 4], "baseline": BASE, "grid": {"size": [64]}})
    with pytest.raises(GridError, match="first_hit_is_top needs a cut-off"):
        parse_grid({"metric": "first_hit_is_top", "k": [1, 4], "baseline": BASE, "grid": {"size": [64]}})

    # compared: two runs on it; not on a 0-1 scale, so no five-point power figure
    report = compare({"good": good, "bad": bad}, metrics=["first_hit_is_top@1", "misses@4"], samples=200)
    top, miss = report.row("bad", "first_hit_is_top@1"), report.row("bad", "misses@4")
    assert (top.delta, top.losses, miss.delta, miss.wins) == (-0.5, 3, 0.5, 3)
    assert top.needed_target is not None and miss.needed_target is None
    check_gate(metric=["misses@4", "first_hit_is_top@1"])

    # gated in its direction: more misses fail, fewer pass
    worse = regression_gate(bad, good, metrics=["misses@4"], significance=1, samples=200)
    assert not worse.passed and worse.checks[0].status == "fail"
    better = regression_gate(good, bad, metrics=["misses@4", "first_hit_is_top@1"], significance=1, samples=200)
    assert better.passed

    # ranked by the sweep in its direction (fewer misses first), and sent to the report with its label
    def rec(key, res):
        return {"key": key, "label": key, "spec": {"chunker": "fixed", "retriever": "bm25"},
                "stats": {"latency_ms": {"p50": 1.0, "p95": 2.0}, "chunks": 3}, "result": res.to_dict()}

    sweep = summarize(grid, [rec(grid.baseline.key, bad), rec("other", good)])
    assert [r["key"] for r in sweep.ranked()] == ["other", grid.baseline.key]
    assert "ranked by misses@4 (lower is better)" in sweep.ranking_rule
    data = _report_data(sweep)
    assert data["metric_table"]["misses"] == {"label": "missed", "takes_k": True, "bounded": False,
                                              "higher_is_better": False, "description": ""}
    assert "misses@4" in data["columns"]
    assert "misses@4" in render_report(sweep)


def test_after_unregistering_the_name_is_refused_again(toy_metrics):
    assert check_metric("misses@5", (5,)) is None
    row = unregister_metric("misses")
    assert "choose one of" in check_metric("misses@5", (5,))
    register_metric(row)  # the fixture removes it


def test_registering_checks_the_row():
    with pytest.raises(ConfigError, match="already in the table"):
        register_metric(Metric("recall", first_hit_is_top))
    for kwargs, needle in [({"name": "top@5"}, "no '@'"), ({"name": "Top"}, "lower-case"),
                           ({"fn": 3}, "fn must be a function"), ({"takes_k": False, "always_k": (5,)}, "takes_k=True"),
                           ({"always_k": (0,)}, "positive integers"), ({"needs": ("answers",)}, "may need only tokens")]:
        with pytest.raises(ConfigError, match=re.escape(needle)) as e:
            Metric(**{"name": "top", "fn": first_hit_is_top, **kwargs})
        assert isinstance(e.value, RagtuneError) and isinstance(e.value, ValueError)
    with pytest.raises(ConfigError, match="takes a Metric row"):
        register_metric("top")
    with pytest.raises(ConfigError, match="is not in the table"):
        unregister_metric("nope")
    same = METRICS["hit"]
    assert register_metric(same, replace=True) is same and list(METRICS)[1] == "hit"  # keeps its place


# -- compare and the gate validate --metric against the table ------------------------------------------------------

def test_compare_and_gate_name_the_valid_metrics(md_corpus, tmp_path):
    good, bad = _two_results(md_corpus, tmp_path)
    with pytest.raises(ConfigError, match="metric 'bogus@5': choose one of recall@k"):
        compare([good, bad], metrics=["bogus@5"])
    with pytest.raises(ConfigError, match="mrr takes no @k"):
        compare([good, bad], metrics="mrr@10")
    with pytest.raises(ConfigError, match="metric 'recall@7' is not in the results"):
        compare([good, bad], metrics=["recall@7"])  # a valid name the runs were not scored at
    with pytest.raises(ConfigError, match="metric 'ndcg@3' is not in the results"):
        compare([good, bad], metrics=["ndcg@3"])  # any ndcg@k is a metric now; this one was not scored
    for bad_metric in ("recal@10", "recall@010"):
        with pytest.raises(ConfigError):
            check_gate(metric=[bad_metric])
    check_gate(metric=None)


def test_gate_judges_context_tokens_in_its_direction(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [{"id": f"q{i}", "q": "x",
                                                            "relevant": ["guide/billing.md#refunds"]} for i in range(4)]))
    small = _chunk(corpus, "guide/billing.md", "Refunds are", 10)
    big = _chunk(corpus, "guide/billing.md", "Refunds are", 400)
    lean = evaluate(FixedRetriever([small]), golden, corpus, ks=(1,))
    heavy = evaluate(FixedRetriever([big]), golden, corpus, ks=(1,))
    assert heavy.metrics["context_tokens@1"] > lean.metrics["context_tokens@1"]
    rose = regression_gate(heavy, lean, metrics=["context_tokens@1"], significance=1, samples=100)
    assert not rose.passed  # more tokens for the same recall: worse
    fell = regression_gate(lean, heavy, metrics=["context_tokens@1"], significance=1, samples=100)
    assert fell.passed  # fewer tokens: better, even though the value dropped
    noisy = regression_gate(heavy, lean, metrics=["context_tokens@1"], significance=1e-9, samples=100)
    assert noisy.checks[0].status == "not-significant" and "rose (lower is better) 390.0000" in noisy.checks[0].note
