"""Judge what decides (issue 40, item 3): the ``~`` mark means the decision could change at 95% confidence, and
the holes that could change it are listed first, with a stop line."""

import json

import numpy as np
import pytest

from ragtune import ConfigError
from ragtune.judgments.decide import DecisionModel, decides_from_sweep, decision_model, depth_rates
from ragtune.judgments.pool import Hole, Pool, PoolQuestion
from ragtune.sweep import parse_grid, summarize
from tests.helpers import SWEEP_GRID

GRID = parse_grid(SWEEP_GRID)  # metric recall@1, seed 0
BASE = GRID.baseline.key
N = 30  # questions


def question(i, hits):
    """One answerable question with one relevant anchor; ``hits`` per rank: "rel" (the relevant anchor), "not"
    (a section judged not relevant) or a hole's anchor (unjudged)."""
    retrieved = [{"anchor": f"doc.md#answer{i}" if h == "rel" else f"doc.md#other{i}" if h == "not" else h,
                  "relevant": h == "rel", "judged": h in ("rel", "not")} for h in hits]
    first = next((r for r, h in enumerate(hits, start=1) if h == "rel"), None)
    holes = {h for h in hits[:1] if h not in ("rel", "not")}
    r1 = float(first == 1)
    return {"id": f"q{i:02}", "q": f"question {i}", "answerable": True, "relevant": {f"doc.md#answer{i}": 1.0},
            "first_hit_rank": first, "anchor_ranks": {f"doc.md#answer{i}": first}, "retrieved": retrieved,
            "scores": {"recall@1": r1, "recall_upper@1": (r1 + len(holes)) / (1 + len(holes)), "recall@5": r1,
                       "mrr": 0.0 if first is None else 1 / first, "ndcg@10": r1,
                       "judged@10": sum(h in ("rel", "not") for h in hits) / 10, "context_tokens@1": 10.0}}


def record(key, questions):
    mean = lambda name: sum(q["scores"][name] for q in questions) / len(questions)  # noqa: E731
    return {"key": key, "label": key, "spec": {"chunker": "fixed", "retriever": "bm25"},
            "stats": {"latency_ms": {"p50": 1.0, "p95": 2.0}},
            "result": {"metrics": {m: mean(m) for m in questions[0]["scores"]}, "questions": questions}}


def deciding_sweep():
    """The baseline finds the answer at rank 1 on q00-q14; b on those and q15-q17 (3 wins: not significant), and
    ranks an unjudged section first on q18-q20, where the baseline ranks a judged miss: one of those three holes
    judged relevant makes b significantly better. c ranks other unjudged sections first on q15-q17: relevant, they
    would only shrink b's wins there (a relevant anchor b did not find)."""
    base, b, c = [], [], []
    for i in range(N):
        base.append(question(i, ["rel", "not"] if i < 15 else ["not", "not"]))
        b.append(question(i, ["rel", "not"] if i < 18 else [f"doc.md#decides{i}", "not"] if i < 21 else ["not", "not"]))
        c.append(question(i, ["rel", "not"] if i < 15 else [f"doc.md#late{i}", "not"] if i < 18 else ["not", "not"]))
    return [record(BASE, base), record("b", b), record("c", c)]


def by_anchor(question_id, anchor, rank):
    return 0.5 if "decides" in anchor else 0.1


def test_holes_that_cannot_change_the_recommendation_leave_no_mark():
    # b misses 3 answers the baseline finds (q00-q02) and ranks an unjudged section first on 8 questions the
    # baseline misses (q15-q22): its upper bound passes the baseline's figure (the old rule marked it), but with
    # every hole relevant it gains 0.5 on 8 questions and still loses 1 on 3: never significantly better
    base = [question(i, ["rel", "not"] if i < 15 else ["not", "not"]) for i in range(N)]
    b = [question(i, ["not", "not"]) if i < 3 else question(i, [f"doc.md#hole{i}", "not"]) if 15 <= i < 23
         else base[i] for i in range(N)]
    res = summarize(GRID, [record(BASE, base), record("b", b)])
    assert res.recommended()["key"] == BASE
    assert res.value(res.records[1], "recall_upper@1") > res.value(res.records[0])  # the old rule marked both rows
    assert res.unsettled() == set()
    assert "~" not in "".join(line[2] for line in res.table().splitlines()[1:] if line[:2].strip().isdigit())
    assert "the unjudged hits cannot change the recommendation at 95% confidence" in res.judged_note()


def test_a_few_deciding_holes_mark_the_runner_up_and_come_first_with_the_stop_line_after_them():
    records = deciding_sweep()
    model = DecisionModel(records, "recall@1", probability=by_anchor, seed=0)
    assert set(model.could_change(BASE)) == {"b"}  # better in 1 - 0.5^3 = 87.5% of the draws; c never is
    decides = model.decides(BASE, "b")
    assert {h.anchor for h in decides.holes[:3]} == {f"doc.md#decides{i}" for i in (18, 19, 20)}
    assert {h.anchor for h in decides.holes[3:]} == {f"doc.md#late{i}" for i in (15, 16, 17)}
    assert decides.stop == 3 and not decides.settled
    text = str(decides).splitlines()
    assert text[4].startswith("---- stop: with these 3 judged the decision is settled at 95% confidence whatever "
                              "the other 3 turn out to be")


def test_the_marks_are_corrected_for_comparing_many_configurations_with_the_recommended_one():
    # b with two deciding holes: 3 wins of 30, plus each relevant hole; significantly better alone in 3 draws of 4
    # (4 or 5 wins: bootstrap p near e^-4 and e^-5). Compared with the baseline beside 37 others (the demo grid
    # has 39 configurations), Holm asks p < 0.025 / 38: no draw gets there, the recommendation stands, no mark,
    # and judge what decides has nothing to judge
    records = deciding_sweep()
    b = records[1]["result"]["questions"]
    b[20] = question(20, ["not", "not"])
    crowd = records + [dict(records[2], key=f"c{j}", label=f"c{j}") for j in range(36)]
    alone = DecisionModel(records, "recall@1", probability=by_anchor, seed=0)
    many = DecisionModel(crowd, "recall@1", probability=by_anchor, seed=0)
    assert alone.could_change(BASE) == pytest.approx({"b": 0.25}, abs=0.05)
    assert many.could_change(BASE) == {}
    # judge what decides says the same: among 38 comparisons nothing is left to judge between the two
    assert not alone.decides(BASE, "b").settled and many.decides(BASE, "b").settled


def test_holm_stops_at_the_first_comparison_that_misses_its_threshold():
    from ragtune.judgments.decide import holm_better

    p = np.array([[0.001, 0.02], [0.012, 0.001], [0.02, 0.5]])  # three comparisons (rows), two draws (columns)
    # draw 1: 0.001 < 0.025/3, 0.012 < 0.025/2, 0.02 < 0.025; draw 2: 0.001 < 0.025/3, then 0.02 >= 0.0125 stops
    assert holm_better(p, 0.025).tolist() == [[True, False], [True, True], [True, False]]


def test_a_settled_decision_has_nothing_to_judge():
    records = deciding_sweep()
    never = DecisionModel(records, "recall@1", probability=lambda q, a, r: 0.0, seed=0)
    assert never.could_change(BASE) == {}
    decides = never.decides(BASE, "b")
    assert decides.settled and decides.stop == 0 and decides.holes == ()
    assert str(decides).endswith("the decision is already settled at 95% confidence: nothing to judge")


def test_the_same_seed_gives_the_same_marks_and_order():
    records = deciding_sweep()
    one = DecisionModel(records, "recall@1", probability=by_anchor, seed=7).decides(BASE, "b")
    two = DecisionModel(records, "recall@1", probability=by_anchor, seed=7).decides(BASE, "b")
    assert one == two and one.to_dict() == two.to_dict()


def test_the_fallback_rate_by_depth_and_what_the_model_covers():
    records = deciding_sweep()
    p = depth_rates(records)
    # no question has a hit judged not relevant among holes someone judged? here every "not" is such a hit, so the
    # judged hits at rank 1 (relevant 33 of 42 judged) pull the prior (relevant 33 of 60 hits) up
    assert 0.55 < p("q00", "x", 1) < 33 / 42 and p("q00", "x", 2) < p("q00", "x", 1)
    assert decision_model(records, "ndcg@10") is None  # the bounds rule stays for metrics the model lacks
    plain = [{**r, "result": {**r["result"], "questions": [{k: v for k, v in q.items() if k != "retrieved"}
                                                          for q in r["result"]["questions"]]}} for r in records]
    assert decision_model(plain, "recall@1") is None


def test_the_sweep_table_marks_the_configuration_that_could_replace_the_recommended_one():
    records = deciding_sweep()
    res = summarize(GRID, records)
    assert res.recommended()["key"] == BASE  # 3 wins of 30 are not significant: the baseline is kept
    assert res.unsettled() == {"b"}
    rows = [line for line in res.table().splitlines() if line[:3].strip().rstrip("~").isdigit()]
    assert [r[2] for r in rows if "(baseline)" in r] == [" "] and [r[2] for r in rows if r.endswith(" b")] == ["~"]
    note = res.judged_note()
    assert "~ marks the 1 configuration(s)" in note and "could change at 95% confidence" in note
    assert res.to_dict()["rank_could_change"] == ["b"]


def write_sweep(folder, records, recommended):
    (folder / "runs").mkdir(parents=True)
    for r in records:
        (folder / "runs" / f"{r['key']}.json").write_text(json.dumps(r))
    (folder / "results.json").write_text(json.dumps({
        "metric": "recall@1", "seed": 0, "recommended": {"key": recommended},
        "configs": [{"key": r["key"], "label": f"label-{r['key']}"} for r in records]}))
    return folder


def test_decides_from_a_sweep_folder_names_configurations_by_label(tmp_path):
    folder = write_sweep(tmp_path / "sweep", deciding_sweep(), BASE)
    decides = decides_from_sweep(folder, probability=by_anchor)
    assert (decides.recommended, decides.runner_up) == (BASE, "b") and decides.stop == 3
    assert str(decides).startswith("judge what decides: label-b (runner-up) against label-" + BASE)
    with pytest.raises(FileNotFoundError, match="give a sweep folder"):
        decides_from_sweep(tmp_path)


def test_pool_order_decides_puts_the_deciding_holes_first_in_the_pool_file(tmp_path):
    decides = DecisionModel(deciding_sweep(), "recall@1", probability=by_anchor, seed=0).decides(BASE, "b")
    holes = tuple(Hole(a, "doc.md", "", (("b", r),)) for a, r in (("doc.md#other18", 1), ("doc.md#decides18", 2)))
    pool = Pool(10, ("b",), (PoolQuestion("q18", "question 18", 2, 0, holes),), decides=decides)
    pool.to_jsonl(tmp_path / "pool.jsonl")
    line = json.loads((tmp_path / "pool.jsonl").read_text())
    assert [h["anchor"] for h in line["holes"]] == ["doc.md#decides18", "doc.md#other18"]
    assert line["holes"][0]["before_stop"] is True and "decides" not in line["holes"][1]
    assert "---- stop: with these 3 judged" in pool.summary()


def test_the_pool_command_orders_by_a_sweep_and_says_when_nothing_decides(md_corpus, tmp_path, capsys):
    from ragtune.cli import main
    from tests.helpers import write_jsonl

    anchor = "guide/billing.md#refunds"
    q = {"id": "q1", "q": "refunds?", "answerable": True, "relevant": {anchor: 1.0}, "first_hit_rank": 1,
         "anchor_ranks": {anchor: 1}, "retrieved": [{"anchor": anchor, "relevant": True, "judged": True},
                                                   {"anchor": "faq.md#accounts", "relevant": False, "judged": False}]}
    records = [{"key": k, "label": k, "spec": {}, "result": {"questions": [q]}} for k in ("base", "b")]
    folder = write_sweep(tmp_path / "sweep", records, "base")
    golden = write_jsonl(tmp_path / "g.jsonl", [{"id": "q1", "q": "refunds?", "relevant": [anchor]}])
    args = ["pool", str(folder), "--golden", str(golden), "--corpus", str(md_corpus), "--order", "decides"]
    assert main(args) == 0
    assert "the decision is already settled at 95% confidence: nothing to judge" in capsys.readouterr().out
    assert main(["pool", str(folder / "runs" / "b.json"), *args[2:]]) == 2
    assert "order 'decides' needs a sweep folder among the sources" in capsys.readouterr().err


def judged_golden(judged):
    """The golden set of :func:`deciding_sweep` with ``judged`` (question id -> anchor -> 0/1) judged."""
    from ragtune.golden import GoldenItem, GoldenSet

    items = []
    for i in range(N):
        q = f"q{i:02}"
        mine = judged.get(q, {})
        relevant = {f"doc.md#answer{i}": 1.0, **{a: 1.0 for a, y in mine.items() if y}}
        items.append(GoldenItem(q, f"question {i}", relevant=relevant,
                                judged={**{a: 0.0 for a, y in mine.items() if not y}, **relevant}))
    return GoldenSet(items)


def deciding_pool():
    """The deciding sweep's pool: b's three holes at rank 1 (q18-q20), c's three (q15-q17), and 24 holes at rank 1
    on the other questions (other runs' first hits), every hole in the rank-1 stratum."""
    holes = {f"q{i:02}": [(f"doc.md#decides{i}", 1)] for i in (18, 19, 20)}
    holes.update({f"q{i:02}": [(f"doc.md#late{i}", 1)] for i in (15, 16, 17)})
    for i in [*range(15), *range(21, N)]:
        holes[f"q{i:02}"] = [(f"doc.md#elsewhere{i}", 1)]
    return holes


def drawn_and_judged(sample, relevant=()):
    """Every drawn hole judged: not relevant, except the anchors in ``relevant``."""
    judged = {}
    for h in sample.holes:
        if h.sampled:
            judged.setdefault(h.question, {})[h.anchor] = float(h.anchor in relevant)
    return judged


def test_a_judged_sample_that_settles_the_decision_removes_the_mark():
    from ragtune.judgments.sample import draw_sample

    records = deciding_sweep()
    assert summarize(GRID, records).unsettled() == {"b"}  # by depth, a rank-1 hole is relevant more often than not
    holes = deciding_pool()
    # 24 of the 30 rank-1 holes drawn, the three that decide among them (found by seed): all judged not relevant
    sample = next(s for s in (draw_sample(holes, 24, seed=seed) for seed in range(500))
                  if all(h.sampled for h in s.holes if "decides" in h.anchor))
    golden = judged_golden(drawn_and_judged(sample))
    res = summarize(GRID, records, judged=(sample, golden))
    assert res.unsettled() == set()  # the deciding holes are judged, the rest barely matter: nothing can change
    assert "its chance estimated from the judged pool sample" in res.judged_note()
    model = DecisionModel(records, "recall@1", sample=sample, golden=golden)
    assert model.could_change(BASE) == {}


def test_judged_holes_are_certain_and_the_rest_follow_the_sample_or_the_fallback():
    from ragtune.judgments.decide import sample_probability
    from ragtune.judgments.sample import draw_sample

    records = deciding_sweep()
    holes = deciding_pool()
    sample = draw_sample(holes, 30, seed=0)  # every hole drawn
    some = drawn_and_judged(sample, relevant={"doc.md#decides18"})
    del some["q19"], some["q20"]  # two drawn holes not judged yet
    golden = judged_golden(some)
    p = sample_probability(sample, golden, lambda q, a, r: 0.42)
    assert p("q18", "doc.md#decides18", 1) == 1.0 and p("q15", "doc.md#late15", 1) == 0.0
    # not judged: its question has no judged draw, so the model's chance for a question it has not seen, near the
    # 1 in 28 of the judged draws (raised by how unsure 28 draws leave it)
    from ragtune.judgments.estimate import hole_relevance

    assert p("q19", "doc.md#decides19", 1) == hole_relevance(sample, golden)["q19"]["doc.md#decides19"]
    assert 1 / 28 < p("q19", "doc.md#decides19", 1) < 0.15
    assert p("q19", "doc.md#not-pooled", 2) == 0.42  # outside the pool: the fallback
    # judged relevant, found by b and missed by the baseline: b is now significantly better in every draw
    assert DecisionModel(records, "recall@1", sample=sample, golden=golden).settled_share(BASE, "b") == (1, 1.0)
    nothing = judged_golden({})  # no draw judged yet: the sample says nothing, the fallback stays
    q = sample_probability(sample, nothing, lambda q, a, r: 0.42)
    assert q("q19", "doc.md#decides19", 1) == 0.42
    with pytest.raises(ConfigError, match="golden set"):
        DecisionModel(records, "recall@1", sample=sample)
    with pytest.raises(ConfigError, match="none of the golden set's"):
        sample_probability(draw_sample({"zz": [("a", 1), ("b", 1)]}, 2), golden, lambda q, a, r: 0.5)


def test_sweep_pool_sample_reads_the_judged_sample_and_refuses_a_missing_file(tmp_path, capsys):
    from ragtune.cli import main
    from tests.helpers import SWEEP_DOCS, SWEEP_QUESTIONS, golden_rows, write_files, write_jsonl

    corpus = write_files(tmp_path / "c", SWEEP_DOCS)
    golden = write_jsonl(tmp_path / "g.jsonl", golden_rows(SWEEP_QUESTIONS))
    (tmp_path / "grid.yaml").write_text(json.dumps(SWEEP_GRID))  # JSON is YAML
    base = ["sweep", "--corpus", str(corpus), "--golden", str(golden), "--grid", str(tmp_path / "grid.yaml")]
    assert main([*base, "--out", str(tmp_path / "a"), "--pool-sample", str(tmp_path / "none.jsonl")]) == 2
    assert "none.jsonl: no such pool file" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()  # refused before the sweep ran
    assert main([*base, "--out", str(tmp_path / "a"), "--json"]) == 0
    capsys.readouterr()
    pool = tmp_path / "pool.jsonl"
    assert main(["pool", str(tmp_path / "a"), "--golden", str(golden), "--corpus", str(corpus), "--sample", "8",
                 "--out", str(pool)]) == 0
    capsys.readouterr()
    assert main([*base, "--out", str(tmp_path / "b"), "--pool-sample", str(pool), "--json"]) == 0
    note = json.loads(capsys.readouterr().out)["judged_note"]  # nothing judged yet: the depth estimate stays
    assert "no draw of the pool sample is judged yet" in note and note == json.loads(
        (tmp_path / "b" / "results.json").read_text())["judged_note"]


def test_a_printed_share_stays_on_its_side_of_the_confidence():
    from ragtune.judgments.decide import _share

    # 0.9495 printed as "95%" read as settled while the stop line below it said otherwise
    assert [_share(x, 0.95) for x in (0.9495, 0.95, 0.94, 0.5)] == ["94.95%", "95%", "94%", "50%"]
