"""Questions searched more than once: evidence@k, evidence within a token budget, per-search figures, conversation
turns, JSONL traces, and compare on the new metrics."""

import json
import math

import pytest

from ragtune import Chunk, Hit, Ranking, load_corpus, load_golden
from ragtune.errors import ConfigError
from ragtune.evaluate import compare
from ragtune.evaluate.evaluate import evaluate_rankings
from ragtune.evaluate.formats import read_run, write_trace
from ragtune.evaluate.render import render_eval
from ragtune.evaluate.run import Run, score_run_file
from ragtune.evaluate.searches import compare_turns
from ragtune.evaluate.table import check_metric, parse_metric
from tests.helpers import write_jsonl

REFUNDS, INVOICES, FAQ_ACCOUNTS = "guide/billing.md#refunds", "guide/billing.md#invoices", "faq.md#accounts"


def chunk(corpus, doc_id, needle, tokens=100, length=12):
    doc = corpus[doc_id]
    start = doc.text.index(needle)
    return Chunk(id=f"{doc_id}@{start}", doc_id=doc_id, text=doc.text[start:start + length], start=start,
                 end=start + length, embed_text="", tokens=tokens)


def ranking(query, chunks):
    return Ranking(query, tuple(Hit(c, 1.0 / (i + 1)) for i, c in enumerate(chunks)), {"search": 0.01})


@pytest.fixture
def setup(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    c = {
        "refunds": chunk(corpus, "guide/billing.md", "Refunds are", tokens=300),
        "partial": chunk(corpus, "guide/billing.md", "A partial refund", tokens=300),
        "invoices": chunk(corpus, "guide/billing.md", "Invoices are", tokens=600),
        "accounts": chunk(corpus, "faq.md", "Account deletion", tokens=200),
        "intro": chunk(corpus, "guide/billing.md", "Overview of", tokens=50),
    }
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [
        # two pieces of evidence: refunds (or, as an alternative, the FAQ's accounts section) and invoices
        {"id": "m1", "q": "refunds and invoices", "evidence": [[REFUNDS, FAQ_ACCOUNTS], [INVOICES]]},
        {"id": "p1", "q": "plain question", "relevant": [REFUNDS]},
    ]))
    return corpus, c, golden


def test_evidence_needs_every_group_within_k_and_within_the_token_budget(setup):
    corpus, c, golden = setup
    # the first search finds the FAQ's accounts section (an alternative of group 1), the second the invoices
    first = ranking("refunds", [c["intro"], c["accounts"]])
    second = ranking("invoices", [c["accounts"], c["invoices"]])
    rankings = {"m1": Ranking.from_searches("refunds and invoices", [first, second]),
                "p1": ranking("plain question", [c["refunds"]])}
    result = evaluate_rankings(rankings, golden, corpus, ks=(2, 3, 5))
    m1, p1 = result.questions
    # merged: intro (50 tok), accounts (200), invoices (600): group 1 at rank 2, group 2 at rank 3
    assert m1.scores["evidence@2"] == 0.0 and m1.scores["evidence@3"] == 1.0 and m1.scores["evidence@5"] == 1.0
    assert m1.scores["evidence@1000tok"] == 1.0  # 50 + 200 + 600 = 850 tokens
    assert m1.scores["recall@3"] == pytest.approx(2 / 3)  # relevant is the union: refunds, accounts, invoices
    assert not any(k.startswith("evidence") for k in p1.scores)  # no evidence groups: no evidence figure
    # the mean of evidence is over the question with evidence groups only
    assert result.metrics["evidence@3"] == 1.0 and result.metrics["evidence@2"] == 0.0
    assert result.to_dict()["counts"]["evidence"] == 1
    # a budget the invoices chunk does not fit in
    tight = Ranking.from_searches("q", [ranking("a", [c["intro"], c["accounts"], c["partial"]]),
                                        ranking("b", [c["invoices"]])])
    r2 = evaluate_rankings({"m1": tight}, golden, corpus, ks=(5,))
    assert r2.questions[0].scores["evidence@5"] == 1.0 and r2.questions[0].scores["evidence@1000tok"] == 0.0


def test_per_search_figures(setup):
    corpus, c, golden = setup
    first = ranking("refunds", [c["refunds"], c["intro"]])
    second = ranking("invoices", [c["refunds"], c["invoices"], c["accounts"]])
    rankings = {"m1": Ranking.from_searches("refunds and invoices", [first, second]),
                "p1": ranking("plain question", [c["partial"]])}
    result = evaluate_rankings(rankings, golden, corpus, ks=(5,))
    m1 = result.questions[0].searches
    s1, s2 = m1["searches"]
    assert (s1["query"], s1["hits"], s1["new_relevant"], s1["redundant"]) == ("refunds", 2, [REFUNDS], 0)
    assert s1["recall"] == pytest.approx(1 / 3) and s1["context_tokens"] == 350
    # the second search repeats the refunds chunk (redundant) and finds invoices and accounts
    assert s2["redundant"] == 1 and sorted(s2["new_relevant"]) == sorted([INVOICES, FAQ_ACCOUNTS])
    assert s2["recall"] == 1.0 and s2["context_tokens"] == 350 + 600 + 200
    assert m1["first_found"] == {REFUNDS: 1, INVOICES: 2, FAQ_ACCOUNTS: 2}
    # the plain question counts as one search
    p1 = result.questions[1].searches
    assert len(p1["searches"]) == 1 and p1["first_found"] == {REFUNDS: 1}
    summary = result.searches
    assert summary["questions"] == 2 and summary["mean_searches"] == 1.5
    one, two = summary["by_search"]
    assert one["questions"] == 2 and one["recall"] == pytest.approx((1 / 3 + 1) / 2)
    assert two["questions"] == 1 and two["recall"] == 1.0  # p1 keeps its value after its only search
    assert two["new_relevant"] == 2.0 and two["redundant"] == 1.0
    assert summary["first_found"] == {"1": 2, "2": 2}
    by_tokens = dict((p["tokens"], p["recall"]) for p in summary["by_tokens"])
    # m1 within 500 tokens: refunds (300) + intro (50): 1/3; p1: partial (300) covers refunds: 1
    assert by_tokens[500] == pytest.approx((1 / 3 + 1) / 2) and by_tokens[2000] == 1.0
    data = json.loads(result.to_json())
    assert data["searches"]["by_search"][1]["search"] == 2 and "searches" in data["questions"][0]
    text = render_eval(result)
    assert "relevant anchors first found by: search 1 2, search 2 2" in text
    assert "evidence@5" in text


def test_a_plain_run_has_no_search_or_turn_figures(setup):
    corpus, c, golden = setup
    golden = type(golden)([i for i in golden if i.id == "p1"])
    result = evaluate_rankings({"p1": ranking("plain question", [c["refunds"]])}, golden, corpus, ks=(5,))
    data = result.to_dict()
    assert "searches" not in data and "turns" not in data and "searches" not in data["questions"][0]
    assert not any(k.startswith("evidence") for k in data["metrics"])
    assert "evidence" not in data["counts"]
    text = render_eval(result)
    assert "searches:" not in text and "by turn" not in text


def test_conversation_turns_by_index_and_with_against_without_history(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    golden = load_golden(write_jsonl(tmp_path / "c.jsonl", [
        {"id": "c1", "turns": [{"q": "how do refunds work", "relevant": [REFUNDS]},
                               {"q": "and invoices?", "relevant": [INVOICES]}]},
        {"id": "c2", "turns": [{"q": "delete my account", "relevant": [FAQ_ACCOUNTS]},
                               {"q": "is it permanent?", "relevant": [FAQ_ACCOUNTS]}]},
    ]))
    assert [i.id for i in golden] == ["c1#1", "c1#2", "c2#1", "c2#2"]
    refunds, invoices = chunk(corpus, "guide/billing.md", "Refunds are"), chunk(corpus, "guide/billing.md", "Invoices are")
    accounts = chunk(corpus, "faq.md", "Account deletion")
    found = {"c1#1": [refunds], "c1#2": [invoices], "c2#1": [accounts], "c2#2": [accounts]}
    lost = {**found, "c1#2": [refunds], "c2#2": [invoices]}  # the follow-ups searched without their history
    with_h = evaluate_rankings({q: ranking(q, h) for q, h in found.items()}, golden, corpus, ks=(1, 5))
    without = evaluate_rankings({q: ranking(q, h) for q, h in lost.items()}, golden, corpus, ks=(1, 5))
    assert with_h.turns["conversations"] == 2
    t1, t2 = without.turns["by_turn"]
    assert (t1["turn"], t1["n"], t1["recall@5"]) == (1, 2, 1.0) and (t2["turn"], t2["recall@5"]) == (2, 0.0)
    assert with_h.questions[1].to_dict()["turn"] == 1 and with_h.questions[1].conversation == "c1"
    rows = compare_turns(with_h, without.to_dict(), "recall@5")
    assert [(r["turn"], r["with"], r["without"], r["delta"]) for r in rows] == [(1, 1.0, 1.0, 0.0), (2, 1.0, 0.0, 1.0)]
    assert "by turn (2 conversations):" in render_eval(without)


def test_a_jsonl_trace_is_read_and_scored_as_its_searches(setup, tmp_path):
    corpus, c, golden = setup
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n".join(json.dumps(row) for row in [
        {"qid": "m1", "question": "refunds and invoices", "searches": [
            {"query": "refunds", "hits": [{"anchor": REFUNDS, "score": 2.0}, "faq.md"]},
            {"query": "invoices", "hits": [REFUNDS, {"doc_id": "guide/billing.md", "text": "Invoices are sent monthly"}]}]},
        {"question": "  Plain   question ", "searches": [{"query": "plain", "hits": [REFUNDS]}]},
    ]) + "\n")
    parsed = read_run(trace)
    assert parsed.format == "trace" and [q for q, _ in parsed.searches["m1"]] == ["refunds", "invoices"]
    result = score_run_file(trace, golden, corpus=corpus, ks=(1, 3, 5))
    m1, p1 = result.questions
    assert m1.scores["evidence@3"] == 1.0 and m1.scores["evidence@1"] == 0.0
    assert [s["redundant"] for s in m1.searches["searches"]] == [0, 1]  # the refunds section came back
    assert m1.searches["first_found"][INVOICES] == 2
    assert p1.scores["recall@1"] == 1.0  # matched by its question text
    assert result.matching["format"] == "trace"
    # the writer: ragtune's own rankings as a trace, read back to the same figures
    own = {"m1": Ranking.from_searches("q", [ranking("a", [c["accounts"]]), ranking("b", [c["invoices"]])])}
    out = tmp_path / "own.jsonl"
    assert write_trace(own, out) == 1
    again = score_run_file(out, golden, corpus=corpus, ks=(1, 2))
    assert again.questions[0].scores["evidence@2"] == 1.0 and again.questions[0].scores["evidence@1"] == 0.0


@pytest.mark.parametrize("line, message", [
    ('{"qid": "m1", "searches": [{"query": "x"}]}', "search 1: the search has no \"hits\" list"),
    ('{"searches": [{"query": "x", "hits": []}]}', "names no question"),
    ('{"qid": "m1", "searches": ["x"]}', "a search must be an object"),
    ('{"qid": "m1", "searches": [{"query": 3, "hits": []}]}', "\"query\" must be a string"),
])
def test_a_malformed_trace_is_one_clear_line(tmp_path, line, message):
    p = tmp_path / "bad.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(ConfigError, match="bad.jsonl:1: ") as e:
        read_run(p)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_evidence_metrics_by_name_and_compare_on_them(setup, tmp_path):
    corpus, c, golden = setup
    row, k = parse_metric("evidence@1000tok")
    assert (row.unit, k) == ("tok", 1000) and parse_metric("evidence@5")[0].unit == ""
    assert check_metric("evidence@500tok", (5,)).startswith("metric 'evidence@500tok': the budget 500 is not scored")
    with pytest.raises(ConfigError, match="recall takes no budget in tok"):
        parse_metric("recall@100tok")
    good = {"m1": Ranking.from_searches("q", [ranking("a", [c["refunds"]]), ranking("b", [c["invoices"]])]),
            "p1": ranking("p", [c["refunds"]])}
    bad = {"m1": ranking("a", [c["refunds"]]), "p1": ranking("p", [c["intro"]])}
    a = Run.from_result(evaluate_rankings(good, golden, corpus, ks=(5, 10)), name="two-searches")
    b = Run.from_result(evaluate_rankings(bad, golden, corpus, ks=(5, 10)), name="one-search")
    assert a.values("evidence@5") == {"m1": 1.0}  # only the question with evidence groups
    report = compare([b, a], metrics=["evidence@5", "evidence@1000tok", "recall@5"], samples=200)
    rows = {(r.system, r.metric): r for r in report.rows}
    assert rows[("two-searches", "evidence@5")].n == 1 and rows[("two-searches", "evidence@5")].delta == 1.0
    assert rows[("two-searches", "recall@5")].n == 2
    assert math.isfinite(rows[("two-searches", "evidence@1000tok")].p_value)


def test_the_gate_fails_a_drop_of_evidence(setup):
    from ragtune.evaluate.gate import regression_gate

    corpus, c, golden = setup
    both = {"m1": Ranking.from_searches("q", [ranking("a", [c["refunds"]]), ranking("b", [c["invoices"]])]),
            "p1": ranking("p", [c["refunds"]])}
    one = {**both, "m1": ranking("a", [c["refunds"]])}  # the second search lost: one piece of evidence missing
    base = evaluate_rankings(both, golden, corpus, ks=(5, 10))
    cur = evaluate_rankings(one, golden, corpus, ks=(5, 10))
    gate = regression_gate(cur, base.to_dict(), metrics=["evidence@5", "recall@10"], samples=200)
    checks = {ch.metric: ch for ch in gate.checks}
    assert checks["evidence@5"].status == "fail" and checks["evidence@5"].n == 1
    assert checks["evidence@5"].baseline == 1.0 and checks["evidence@5"].current == 0.0
    assert checks["recall@10"].n == 2 and not gate.passed


def test_per_search_figures_count_the_top_k_only(setup):
    corpus, c, golden = setup
    # at k=2 the second search's invoices (merged rank 3) did not reach the top: it found nothing there
    merged = Ranking.from_searches("q", [ranking("a", [c["intro"], c["refunds"]]), ranking("b", [c["invoices"]])])
    result = evaluate_rankings({"m1": merged}, golden, corpus, ks=(2,))
    m1 = result.questions[0].searches
    assert [s["recall"] for s in m1["searches"]] == [pytest.approx(1 / 3), pytest.approx(1 / 3)]
    assert [s["context_tokens"] for s in m1["searches"]] == [350, 350]
    assert m1["first_found"] == {REFUNDS: 1, INVOICES: None, FAQ_ACCOUNTS: None}
    # p1, given no ranking, counts as one search that found nothing
    assert result.searches["k"] == 2 and result.searches["first_found"] == {"1": 1, "never": 3}
    # the token curve reads the budget, not k: within 1000 tokens the invoices chunk (600) is in
    assert dict((b, r) for b, r in m1["by_tokens"])[1000] == pytest.approx(2 / 3)


def test_outside_hits_cost_the_tokens_of_their_text(setup, tmp_path):
    """A trace's hits are what the model read: their text counts against a token budget (evidence@1000tok), so a
    long first hit pushes the second search's evidence past 1,000 tokens."""
    corpus, c, golden = setup
    trace = tmp_path / "trace.jsonl"
    trace.write_text(json.dumps({"qid": "m1", "question": "refunds and invoices", "searches": [
        {"query": "refunds", "hits": [{"anchor": REFUNDS, "text": "refund words " * 600}]},
        {"query": "invoices", "hits": [INVOICES]}]}) + "\n")
    m1 = score_run_file(trace, golden, corpus=corpus, ks=(1, 3)).questions[0]
    assert m1.scores["evidence@3"] == 1.0
    assert m1.scores["evidence@1000tok"] == 0.0  # 1,200 tokens before the invoices section reached the model
