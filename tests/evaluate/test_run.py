"""Run: loading eval results, sweep folders and TREC run files; TREC scoring parity with trec_eval."""

import json
import random

import ir_measures
import pytest
from ir_measures import RR, R, Success, nDCG

from ragtune import ConfigError, load_corpus, load_golden
from ragtune.errors import RagtuneError
from ragtune.evaluate import Run, compare, load_run, load_runs, regression_gate
from ragtune.evaluate.run import score_run_file
from tests.helpers import write_jsonl

MEASURES = {"recall@5": R @ 5, "recall@10": R @ 10, "hit@5": Success @ 5, "mrr": RR, "ndcg@10": nDCG @ 10}


def eval_dict(ranks, ks=(5, 10, 20), unanswerable=()):
    """An EvalResult.to_dict()-shaped dict whose question i has its first hit at ranks[i]."""
    qs = []
    for i, r in enumerate(ranks):
        hit = r is not None
        qs.append({"id": f"q{i:02d}", "answerable": True, "first_hit_rank": r,
                   "scores": {**{f"recall@{k}": float(hit and r <= k) for k in ks}, "mrr": 1 / r if hit else 0.0},
                   "retrieved": [{"anchor": f"d{j}", "chunk_id": f"c{j}"} for j in range(3)]})
    for qid in unanswerable:
        qs.append({"id": qid, "answerable": False, "first_hit_rank": None, "scores": {}})
    return {"config": {"ks": list(ks)}, "metrics": {}, "questions": qs}


def write_trec(path, rows):
    path.write_text("".join(f"{q} Q0 {d} {r} {s} {tag}\n" for q, d, r, s, tag in rows))
    return path


def test_from_result_keeps_answerable_questions_and_rankings():
    run = Run.from_result(eval_dict([1, 8, None], unanswerable=["u1"]), name="sys")
    assert run.question_ids == ("q00", "q01", "q02")
    assert run.values("recall@5") == {"q00": 1.0, "q01": 0.0, "q02": 0.0}
    assert run.first_hit_ranks == {"q00": 1, "q01": 8, "q02": None}
    assert run.rankings["q00"] == ("d0", "d1", "d2")
    assert run.ks == (5, 10, 20)
    assert run.mean("mrr") == pytest.approx((1 + 1 / 8) / 3)


def test_duplicate_question_ids_are_an_error():
    d = eval_dict([1, 2])
    d["questions"].append(dict(d["questions"][0]))
    with pytest.raises(ConfigError, match="duplicate question id.*'q00'"):
        Run.from_result(d, name="x")


def test_missing_metric_lists_the_available_ones():
    run = Run.from_result(eval_dict([1]), name="x")
    with pytest.raises(ConfigError, match=r"'recall@7' is not in the results.*have: mrr, recall@10"):
        run.values("recall@7")


def test_load_eval_json_and_sweep_folder(tmp_path):
    (tmp_path / "base.json").write_text(json.dumps(eval_dict([1, 2, 3])))
    (run,) = load_runs(tmp_path / "base.json")
    assert run.name == "base" and run.values("recall@5") == {"q00": 1.0, "q01": 1.0, "q02": 1.0}
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    configs = []
    for key, label, ranks in (("k1", "best", [1, 1, 1]), ("k2", "worst", [9, None, 9])):
        qs = eval_dict(ranks)["questions"]
        configs.append({"key": key, "label": label, "metrics": {},
                        "questions": [{k: q[k] for k in ("id", "answerable", "first_hit_rank", "scores")} for q in qs]})
    (sweep / "results.json").write_text(json.dumps({"ks": [5, 10, 20], "baseline": "k2", "configs": configs}))
    runs = load_runs(sweep)
    assert [r.name for r in runs] == ["best", "worst"]
    assert [r.meta["sweep_baseline"] for r in runs] == [False, True]
    # one path, one run per configuration; "baseline" picks the sweep's baseline configuration
    rep = compare([sweep], baseline="baseline", metrics="recall@10", samples=200)
    assert rep.baseline == "worst" and rep.row("best", "recall@10").fixed == ("q01",)
    assert runs[1].values("recall@10") == {"q00": 1.0, "q01": 0.0, "q02": 1.0}
    assert runs[1].first_hit_ranks["q01"] is None
    assert load_run(sweep).name == "best"  # top-ranked by default
    assert load_run(sweep / "results.json", config="k2", name="w").name == "w"
    with pytest.raises(ConfigError, match="no configuration 'nope'; keys: k1, k2"):
        load_runs(sweep, config="nope")
    with pytest.raises(ConfigError, match="pick one with config=KEY"):
        load_runs(sweep, name="x")


def test_a_sweep_stands_for_the_configuration_it_recommends_not_its_top_row(tmp_path):
    """Issue 40: load_run of a sweep folder and compare's default baseline took the table's top row; a sweep names
    one recommended configuration (results.json ``recommended``: here the baseline, nothing being significantly
    better), and both now take that one and say so."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    configs = []
    for key, label, ranks in (("k1", "top-row", [1, 1, 9]), ("k2", "base", [1, 9, 9]), ("k3", "third", [9, 9, 9])):
        qs = eval_dict(ranks)["questions"]
        configs.append({"key": key, "label": label, "metrics": {},
                        "questions": [{k: q[k] for k in ("id", "answerable", "first_hit_rank", "scores")} for q in qs]})
    data = {"ks": [5, 10, 20], "baseline": "k2", "configs": configs}
    (sweep / "results.json").write_text(json.dumps(data))
    assert load_run(sweep).name == "top-row"  # a results.json from before sweeps recommended: the top row
    (sweep / "results.json").write_text(json.dumps({**data, "recommended": {"key": "k2", "label": "base"}}))
    assert load_run(sweep).name == "base" and load_run(sweep, config="k3").name == "third"
    assert [r.meta["sweep_recommended"] for r in load_runs(sweep)] == [False, True, False]
    rep = compare([sweep], metrics="recall@5", samples=200)
    assert rep.baseline == "base" and rep.baseline_basis == "recommended" and rep.systems[0] == "base"
    assert "against the baseline base (the sweep's recommended configuration)" in rep.digest()
    assert rep.to_dict()["baseline_basis"] == "recommended" and "recommended configuration" in rep.to_text()
    assert compare([sweep], baseline="recommended", metrics="recall@5", samples=200).baseline == "base"
    named = compare([sweep], baseline="third", metrics="recall@5", samples=200)
    assert named.baseline == "third" and named.baseline_basis == "named" and "(the sweep" not in named.digest()
    (tmp_path / "new.json").write_text(json.dumps(eval_dict([1, 1, 1])))  # the first input is no sweep: it leads
    first = compare([tmp_path / "new.json", sweep], metrics="recall@5", samples=200)
    assert first.baseline == "new" and first.baseline_basis == "first"
    with pytest.raises(ConfigError, match="no run named 'recommended'"):
        compare({"x": tmp_path / "new.json", "y": tmp_path / "new.json"}, baseline="recommended", metrics="recall@5")


def test_not_a_result_and_missing_path(tmp_path):
    (tmp_path / "x.json").write_text('{"hello": 1}')
    with pytest.raises(ConfigError, match="x.json: not a run: question 'hello' has int 1"):
        load_runs(tmp_path / "x.json")
    with pytest.raises(RagtuneError, match="no such file"):
        load_runs(tmp_path / "missing.json")


@pytest.fixture
def golden(tmp_path):
    return load_golden(write_jsonl(tmp_path / "g.jsonl", [
        {"id": "q1", "q": "a", "relevant": ["d1", "d2"]},
        {"id": "q2", "q": "b", "relevant": {"d3": 2}},
        {"id": "q3", "q": "c", "relevant": ["d9"]},
        {"id": "u", "q": "d", "relevant": []},
    ]))


def test_trec_run_is_scored_against_the_golden_set(tmp_path, golden):
    path = write_trec(tmp_path / "bm25.run", [
        ("q1", "d7", 1, 9.0, "bm25"), ("q1", "d2", 2, 8.0, "bm25"), ("q1", "d1", 3, 7.5, "bm25"),
        ("q2", "d3", 1, 3.0, "bm25"), ("u", "d1", 1, 1.0, "bm25"),
    ])
    run = Run.from_trec(path, golden)
    assert run.name == "bm25"  # the tag column
    assert run.question_ids == ("q1", "q2", "q3")  # q3 is missing from the file and scores 0; u is unanswerable
    assert run.first_hit_ranks == {"q1": 2, "q2": 1, "q3": None}
    assert run.scores["q1"]["recall@5"] == 1.0 and run.scores["q1"]["mrr"] == 0.5
    assert run.scores["q3"]["recall@20"] == 0.0
    assert run.rankings["q1"] == ("d7", "d2", "d1")


def test_trec_ties_order_by_score_then_doc_id_descending(tmp_path, golden):
    # the rank column is ignored; equal scores are ordered by doc id descending, as trec_eval does
    path = write_trec(tmp_path / "r.run", [("q1", "d1", 1, 5.0, "t"), ("q1", "d8", 2, 5.0, "t"),
                                           ("q1", "d5", 3, 6.0, "t")])
    assert Run.from_trec(path, golden).rankings["q1"] == ("d5", "d8", "d1")


def test_trec_errors(tmp_path, golden):
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 1.0 t\nq1 d2 2 0.5\n")
    with pytest.raises(ConfigError, match="line 2: expected 6 columns"):
        Run.from_trec(tmp_path / "a.run", golden)
    (tmp_path / "f.run").write_text("q1 Q0 d1 first 1.0 t\n")
    with pytest.raises(ConfigError, match="line 1: rank must be an integer"):
        Run.from_trec(tmp_path / "f.run", golden)
    # a question the golden set lacks is skipped and listed, as trec_eval skips it; a run of only such is refused
    run = Run.from_trec(write_trec(tmp_path / "b.run", [("zz", "d1", 1, 1.0, "t"), ("q1", "d1", 1, 1.0, "t")]), golden)
    assert run.meta["matching"]["questions_not_in_golden"] == ["zz"] and "zz" not in run.scores
    with pytest.raises(ConfigError, match="none of the run's 1 question id.*'zz'"):
        Run.from_trec(write_trec(tmp_path / "b.run", [("zz", "d1", 1, 1.0, "t")]), golden)
    with pytest.raises(ConfigError, match="question 'q1' lists doc id.*'d1' more than once"):
        Run.from_trec(write_trec(tmp_path / "c.run", [("q1", "d1", 1, 1.0, "t"), ("q1", "d1", 2, 0.5, "t")]), golden)
    with pytest.raises(ConfigError, match="pass corpus="):
        Run.from_trec(write_trec(tmp_path / "d.run", [("q1", "chunk-7", 1, 1.0, "t")]), golden)
    with pytest.raises(ConfigError, match="golden set; pass golden="):
        load_runs(write_trec(tmp_path / "e.run", [("q1", "d1", 1, 1.0, "t")]))


def test_trec_hits_resolve_through_a_corpus(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [
        {"id": "q1", "q": "refunds", "relevant": ["guide/billing.md#refunds"]},
        {"id": "q2", "q": "faq", "relevant": ["faq.md"]},
    ]))
    path = write_trec(tmp_path / "r.run", [
        ("q1", "faq.md", 1, 3.0, "t"), ("q1", "guide/billing.md#invoices", 2, 2.0, "t"),
        ("q1", "guide/billing.md#partial-refunds", 3, 1.0, "t"),  # a subsection covers its parent section
        ("q2", "faq.md#accounts", 1, 1.0, "t"),  # a section of the relevant document covers it
    ])
    with pytest.raises(ConfigError, match="pass corpus="):
        Run.from_trec(path, golden)
    run = Run.from_trec(path, golden, corpus=corpus)
    assert run.first_hit_ranks == {"q1": 3, "q2": 1}


def test_trec_scores_match_trec_eval(tmp_path):
    rng = random.Random(11)
    items, qrels, rows = [], [], []
    for q in range(40):
        rel = {f"d{d}": rng.choice([1, 1, 2, 3]) for d in rng.sample(range(60), rng.randint(1, 4))}
        items.append({"id": f"q{q}", "q": "x", "relevant": rel})
        qrels += [ir_measures.Qrel(f"q{q}", d, g) for d, g in rel.items()]
        for r, d in enumerate(rng.sample(range(60), rng.randint(5, 30)), start=1):
            rows.append((f"q{q}", f"d{d}", r, float(rng.randint(0, 8)), "t"))  # many tied scores
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", items))
    path = write_trec(tmp_path / "r.run", rows)
    run = Run.from_trec(path, golden)
    ref = {}
    scored = [ir_measures.ScoredDoc(q, d, s) for q, d, _, s, _ in rows]
    for m in ir_measures.iter_calc(list(MEASURES.values()), qrels, scored):
        ref.setdefault(m.query_id, {})[str(m.measure)] = m.value
    assert set(ref) == set(run.scores)
    for qid, values in ref.items():
        for name, measure in MEASURES.items():
            assert run.scores[qid][name] == pytest.approx(values[str(measure)], abs=1e-9), (qid, name)



# -- malformed run files: one clear error naming the file, the line or question, and what was expected ---------------

@pytest.mark.parametrize("score, expected", [
    ('"high"', "score must be a number, got str 'high'"), ("null", "score must be a number, got NoneType None"),
    ("[1, 2]", "score must be a number, got list"), ('{"v": 1}', "score must be a number, got dict"),
    ("true", "score must be a number, got bool"), ("NaN", "score must be a finite number, got nan"),
    ("Infinity", "score must be a finite number, got inf"),
])
def test_ranx_json_scores_must_be_finite_numbers(tmp_path, golden, score, expected):
    path = tmp_path / "r.json"
    path.write_text('{"q1": {"d1": 2.0, "d2": %s}}' % score)
    with pytest.raises(ConfigError, match=rf"r\.json: question 'q1', doc 'd2': the {expected}"):
        Run.from_file(path, golden)
    with pytest.raises(ConfigError, match="r.json"):
        score_run_file(path, golden)


@pytest.mark.parametrize("score", ["nan", "NaN", "inf", "-inf"])
def test_trec_nan_and_infinite_scores_are_refused_with_the_line(tmp_path, golden, score):
    # with NaN accepted the same two lines gave MRR 0.083 or 0.167 by their order in the file
    for rows in ([("q1", "d7", 1, 2.0, "t"), ("q1", "d1", 2, score, "t")],
                 [("q1", "d1", 1, score, "t"), ("q1", "d7", 2, 2.0, "t")]):
        path = write_trec(tmp_path / "r.run", rows)
        line = 2 if rows[1][3] == score else 1
        with pytest.raises(ConfigError, match=rf"r\.run line {line}: score '{score}' is not a finite number"):
            Run.from_file(path, golden)


@pytest.mark.parametrize("questions, expected", [
    ('[{"id": "q1", "retrieved": "d1 d2"}]', r"question 'q1' 'retrieved': expected a list of hits .* got str"),
    ('[{"retrieved": []}]', "question 1 of 'questions' has no 'id'"),
    ('[{"id": null, "retrieved": []}]', "question 1 of 'questions' has no 'id'"),
    ('["q1"]', "question 1 of 'questions' is a str"),
    ('[{"id": "q1", "retrieved": [7]}]', r"question 'q1' 'retrieved' hit 1: expected an object"),
    ('[{"id": "q1", "retrieved": []}, {"id": "q1", "retrieved": []}]', "question 'q1' appears twice"),
    ('{"q1": []}', "'questions' must be a list"),
])
def test_eval_json_runs_name_the_question_and_what_was_expected(tmp_path, golden, questions, expected):
    path = tmp_path / "eval.json"
    path.write_text('{"questions": %s}' % questions)
    with pytest.raises(ConfigError, match=rf"eval\.json: {expected}"):
        score_run_file(path, golden)


@pytest.mark.parametrize("name, text, expected", [
    ("r.jsonl", '{"id": "q1", "hits": "d1"}\n', r"r\.jsonl:1: each line needs an \"id\" and a \"hits\" list"),
    ("r.jsonl", '{"id": "q1", "hits": ["d1"]}\n{"hits": ["d1"]}\n', r"r\.jsonl:2: each line needs"),
    ("r.jsonl", '{"id": "q1", "hits": [3.5]}\n', r"r\.jsonl:1: question 'q1' hit 1: cannot read a hit from float"),
    ("r.json", '{"q1": ["d1"], "q2": {"d3": 1}}', r"r\.json: not a run: question 'q2' has dict"),
    ("r.json", '{"q1": "d1"}', r"r\.json: not a run: question 'q1' has str"),
    ("r.json", '["d1", "d2"]', r"r\.json: not a run; a run file is one of: trec-run \(lines"),
    ("r.json", '{"q1": ["d1"]', r"r\.json: not JSON"),
    ("r.run", "", r"r\.run: the run file is empty"),
    ("r.run", "q1 Q0 d1 1 1.0 t\nq1 Q0 d1 2 0.5 t\n", r"r\.run line 2: question 'q1' lists doc id 'd1' more than once"),
])
def test_malformed_run_files_name_file_line_and_expectation(tmp_path, golden, name, text, expected):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=expected):
        score_run_file(path, golden)


def test_a_jsonl_run_named_json_is_read_as_json_lines(tmp_path, golden):
    path = tmp_path / "r.json"
    path.write_text('{"id": "q1", "hits": ["d1", "d2"]}\n{"id": "q2", "hits": ["d3"]}\n')
    assert score_run_file(path, golden).metrics["recall@5"] == pytest.approx(2 / 3)


def test_not_a_regular_file_is_refused_before_reading(tmp_path, golden):
    import os

    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)  # reading it would block forever
    for reader in (lambda p: score_run_file(p, golden), lambda p: Run.from_file(p, golden),
                   lambda p: load_runs(p, golden=golden), lambda p: regression_gate(eval_dict([1]), p, golden=golden)):
        with pytest.raises(ConfigError, match="run.fifo is a FIFO .*not a regular file"):
            reader(fifo)
    with pytest.raises(ConfigError, match="is a folder, not a regular file"):
        score_run_file(tmp_path, golden)
    if os.path.exists("/dev/null"):
        with pytest.raises(ConfigError, match="/dev/null is a device, not a regular file"):
            score_run_file("/dev/null", golden)
    (tmp_path / "latin1.run").write_bytes("q1 Q0 caf\xe9 1 1.0 t\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"latin1\.run: not UTF-8 text"):
        score_run_file(tmp_path / "latin1.run", golden)


def test_the_gate_names_a_corrupt_json_baseline(tmp_path, golden):
    (tmp_path / "base.json").write_text('{"questions": [')
    with pytest.raises(ConfigError, match=r"base\.json: cannot read the baseline as JSON"):
        regression_gate(eval_dict([1]), tmp_path / "base.json", golden=golden)


@pytest.mark.parametrize("question, expected", [
    ({"retrieved": []}, "question 1 of 'questions' has no 'id'"),
    ({"id": "q00", "scores": {"mrr": 1}, "retrieved": "d1 d2"}, r"question 'q00': 'retrieved' must be a list of hit"),
    ({"id": "q00", "scores": {"mrr": "high"}}, r"question 'q00': score 'mrr' must be a number or null, got str"),
    ({"id": "q00", "scores": [1.0]}, r"question 'q00': 'scores' must be an object"),
    ({"id": "q00", "scores": {}, "first_hit_rank": "1"}, r"question 'q00': 'first_hit_rank' must be a rank"),
    ("q00", "question 1 of 'questions' is a str"),
])
def test_eval_results_read_by_compare_and_the_gate_name_what_is_wrong(tmp_path, question, expected):
    # compare and the gate read an eval JSON by its recorded scores: a malformed one is one clear error too
    path = tmp_path / "base.json"
    path.write_text(json.dumps({"config": {"ks": [5]}, "metrics": {}, "questions": [question]}))
    with pytest.raises(ConfigError, match=rf"base\.json: {expected}"):
        load_runs(path)
    with pytest.raises(ConfigError, match=rf"base\.json: {expected}"):
        regression_gate(eval_dict([1]), path)
