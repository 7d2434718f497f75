"""Selection that does not fool itself: a sweep chooses on some questions and reports the choice on the others."""

import pytest

from ragtune.sweep import parse_grid, summarize
from ragtune.sweep.grid import GridError
from ragtune.sweep.holdout import holdout_selection, split_questions
from tests.helpers import SWEEP_GRID

N = 40


def q(i, tags=("keyword",), answerable=True):
    return {"id": f"q{i:02d}", "tags": list(tags), "answerable": answerable}


def test_the_split_is_stratified_seeded_and_keeps_unanswerable_questions_on_both_sides():
    qs = [q(i, ("keyword",)) for i in range(20)] + [q(20 + i, ("paraphrase",)) for i in range(10)] + \
         [q(30 + i, ("unanswerable",), answerable=False) for i in range(4)] + [q(40, ())]
    sel, held = split_questions(qs, 0.3, seed=1)
    assert sorted(sel + held) == sorted(x["id"] for x in qs) and not set(sel) & set(held)
    assert sum(i in held for i in (f"q{i:02d}" for i in range(20))) == 6  # 30% of each tag
    assert sum(i in held for i in (f"q{20 + i:02d}" for i in range(10))) == 3
    unans = {f"q{30 + i:02d}" for i in range(4)}
    assert unans & set(held) and unans & set(sel)  # on both sides
    assert "q40" in sel  # a stratum of one stays where the choice is made
    assert split_questions(qs, 0.3, seed=1) == (sel, held) and split_questions(qs, 0.3, seed=2) != (sel, held)


def record(key, hits):
    qs = [{"id": f"q{i:02d}", "tags": ["keyword"], "answerable": True, "first_hit_rank": 1 if h else None,
           "scores": {"recall@1": float(h), "recall@5": float(h), "mrr": float(h), "ndcg@10": float(h),
                      "context_tokens@1": 1.0}} for i, h in enumerate(hits)]
    m = sum(hits) / len(hits)
    return {"key": key, "label": key, "spec": {"chunker": "fixed", "retriever": "bm25"},
            "stats": {"latency_ms": {"p50": 1.0, "p95": 2.0}},
            "result": {"metrics": {"recall@1": m, "recall@5": m, "mrr": m, "ndcg@10": m}, "questions": qs}}


def test_the_winner_of_the_selection_questions_is_reported_on_the_held_out_ones():
    grid = parse_grid({**SWEEP_GRID, "holdout": 0.25})
    base = grid.baseline.key
    sel, held = split_questions([q(i) for i in range(N)], 0.25, grid.seed)
    # "lucky" is perfect on the selection questions and useless held out; "steady" is 0.75 everywhere
    lucky = [1 if f"q{i:02d}" in sel else 0 for i in range(N)]
    steady = [1 if i % 4 else 0 for i in range(N)]
    recs = [record(base, [1 if i % 2 else 0 for i in range(N)]), record("lucky", lucky), record("steady", steady)]
    res = summarize(grid, recs)
    s = res.selection()
    assert s["chosen"] == "lucky" and s["selection_questions"] == 30 and s["held_out_questions"] == 10
    assert s["selection_score"] == 1.0 and s["held_out_score"] == 0.0 and s["optimism"] == 1.0
    assert s["held_out_ci"] == [0.0, 0.0] and not s["beats_baseline"]
    direct = holdout_selection(recs, metric="recall@1", share=0.25, seed=grid.seed, baseline_key=base, samples=500)
    assert direct["held_out_ids"] == held
    table = res.table()
    assert "holdout 25%: chosen on 30 questions, scored on the other 10: lucky recall@1 1.000 where chosen, 0.000" \
           in table and "(optimism +1.000)" in table and "Quote the held-out figure." in table
    assert res.to_dict()["selection"]["chosen"] == "lucky"
    assert summarize(parse_grid(SWEEP_GRID), recs).selection() is None  # no holdout, no selection


def test_a_bad_holdout_share_is_refused():
    for bad in (1, 1.5, -0.1, "0.3", True):
        with pytest.raises(GridError, match="holdout: expected the share of questions to hold out"):
            parse_grid({**SWEEP_GRID, "holdout": bad})


def test_the_command_line_share_overrides_the_grid_file(tmp_path):
    from ragtune.cli import build_parser
    from ragtune.sweep import load_grid

    path = tmp_path / "g.toml"
    path.write_text('metric = "recall@5"\nholdout = 0.2\n[baseline]\nretriever = "bm25"\n[grid]\nchunker = ["section"]\n')
    assert load_grid(path).holdout == 0.2 and load_grid(path, holdout=0.4).holdout == 0.4
    args = build_parser().parse_args(["sweep", "--corpus", "c", "--golden", "g", "--grid", str(path), "--out", "o",
                                      "--holdout", "0.3"])
    assert args.holdout == 0.3
