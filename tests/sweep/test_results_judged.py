"""judged@k in sweeps and comparisons: which configurations the unjudged hits could reorder, and a compare digest
that says when a difference lies inside the unjudged interval (issue 21)."""

from ragtune.evaluate.compare import compare
from ragtune.evaluate.run import Run
from ragtune.sweep import parse_grid, summarize
from tests.helpers import SWEEP_GRID

GRID = parse_grid(SWEEP_GRID)  # metric recall@1
BASE = GRID.baseline.key


def record(key, r1, upper, judged):
    qs = [{"id": f"q{i}", "answerable": True, "first_hit_rank": 1 if a else None,
           "scores": {"recall@1": a, "recall_upper@1": u, "recall@5": a, "mrr": a, "mrr_upper": u, "ndcg@10": a,
                      "judged@10": judged, "context_tokens@1": 10.0}}
          for i, (a, u) in enumerate(zip(r1, upper))]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return {"key": key, "label": key, "spec": {"chunker": "fixed", "retriever": "bm25"},
            "stats": {"latency_ms": {"p50": 1.0, "p95": 2.0}},
            "result": {"metrics": {"recall@1": mean(r1), "recall_upper@1": mean(upper), "recall@5": mean(r1),
                                   "mrr": mean(r1), "ndcg@10": mean(r1), "judged@10": judged}, "questions": qs}}


def test_the_table_marks_configurations_the_holes_could_reorder():
    # a: 0.75 exact (judged); b: 0.50, up to 1.00 if its holes are relevant (could pass a); c: 0.25, up to 0.25
    recs = [record(BASE, [1, 1, 1, 0], [1, 1, 1, 0], 1.0), record("b", [1, 1, 0, 0], [1, 1, 1, 1], 0.6),
            record("c", [1, 0, 0, 0], [1, 0, 0, 0], 1.0)]
    res = summarize(GRID, recs)
    assert res.upper_metric() == "recall_upper@1"
    assert res.unsettled() == {BASE, "b"}  # b could pass the baseline; c stays last whatever the holes hold
    table = res.table()
    rows = [line for line in table.splitlines() if line[:3].strip().rstrip("~").isdigit()]
    assert [r[2] for r in rows] == ["~", "~", " "]
    assert "judged@10 0.60 to 1.00 across configurations; ~ marks the 2 configuration(s)" in table
    data = res.to_dict()
    assert data["rank_could_change"] == sorted([BASE, "b"]) and "judged@10 0.60" in data["judged_note"]


def test_fully_judged_sweeps_say_so_and_mark_nothing():
    recs = [record(BASE, [1, 1, 0, 0], [1, 1, 0, 0], 1.0), record("b", [1, 0, 0, 0], [1, 0, 0, 0], 1.0)]
    res = summarize(GRID, recs)
    assert res.unsettled() == set()
    assert res.judged_note() == "judged@10 1.00 to 1.00 across configurations: every top-10 hit has a judgment"


def test_compare_says_a_difference_inside_the_unjudged_interval():
    base = record(BASE, [1, 1, 0, 0], [1, 1, 1, 1], 0.5)  # 0.50, could be 1.00
    better = record("b", [1, 1, 1, 0], [1, 1, 1, 0], 1.0)  # 0.75, judged
    runs = [Run.from_result(r["result"], name=r["key"]) for r in (base, better)]
    digest = compare(runs, metrics=("recall@1",), samples=200).digest()
    assert (f"unjudged: the difference lies inside the unjudged interval: {BASE}'s unjudged hits could lift it from "
            "0.5000 to 1.0000, which reaches b's 0.7500") in digest
    settled = record(BASE, [1, 1, 0, 0], [1, 1, 0, 0], 1.0)
    runs = [Run.from_result(r["result"], name=r["key"]) for r in (settled, better)]
    assert "unjudged" not in compare(runs, metrics=("recall@1",), samples=200).digest()


def test_the_gate_says_how_much_was_judged_and_when_a_drop_lies_inside_the_unjudged_interval():
    from ragtune.evaluate.gate import regression_gate

    base = record(BASE, [1, 1, 1, 0], [1, 1, 1, 0], 1.0)["result"]  # 0.75, every hit judged
    cur = record("cur", [1, 1, 0, 0], [1, 1, 1, 1], 0.5)["result"]  # 0.50, could be 1.00
    rep = regression_gate(cur, base, max_drop=0.02, metrics=["recall@1"], samples=200)
    text = rep.to_text()
    assert "judged@10: baseline 1.00, this run 0.50 (unjudged hits count as misses" in text
    assert ("recall@1: the drop lies inside the unjudged interval: this run's unjudged hits could lift it from "
            "0.5000 to 1.0000, which reaches the baseline's 0.7500") in text
    assert rep.to_dict()["judged_at_10"] == [1.0, 0.5] and "judged@10: baseline 1.00" in rep.to_markdown()
    settled = regression_gate(record("c", [1, 1, 0, 0], [1, 1, 0, 0], 1.0)["result"], base, max_drop=0.02,
                              metrics=["recall@1"], samples=200)
    assert "unjudged interval" not in settled.to_text()
