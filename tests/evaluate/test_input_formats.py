"""The one table of input formats: the same judgments in every format give the same figures, judged@k included."""

import json
from dataclasses import replace

import pytest

import ragtune.golden as golden_module
from ragtune import ConfigError, GoldenSetError, load_golden
from ragtune.evaluate.formats import FORMATS, JUDGMENT_FORMATS, RUN_FORMATS, read_run
from ragtune.evaluate.run import score_run_file
from ragtune.external.files import from_ranx, load_golden_or_qrels, read_qrels
from ragtune.golden import GRADE_RULE, GoldenItem, GoldenSet
from ragtune.io import InputFormat

# question -> (anchor, grade): relevant grades 2 and 1, rows judged not relevant with 0 and with a negative grade
JUDGMENTS = {
    "q1": {"a.md": 2, "b.md": 1, "c.md": 0, "d.md": -1},
    "q2": {"e.md": 1, "f.md": 0},
    "q3": {"g.md": 2, "h.md": 1, "i.md": -2},
    "q4": {"j.md": 1},
}
QUESTIONS = {"q1": "first", "q2": "second", "q3": "third", "q4": "fourth"}
# one run: judged-not-relevant anchors and holes (never judged) among the relevant ones
RUN = {
    "q1": ["x.md", "a.md", "c.md", "d.md", "y.md", "b.md"],
    "q2": ["f.md", "z.md", "e.md", "w.md"],
    "q3": ["i.md", "g.md", "v.md", "u.md", "h.md", "t.md", "s.md"],
    "q4": ["r.md", "p.md"],
}
KS = (1, 3, 5, 10)


def write_every_format(root):
    """The judgments above as golden JSONL, golden YAML, TREC qrels, a BEIR folder and ranx qrels JSON."""
    items = []
    for q, docs in JUDGMENTS.items():
        items.append({"id": q, "q": QUESTIONS[q], "relevant": {d: g for d, g in docs.items() if g > 0},
                      **({"judged": [d for d, g in docs.items() if g <= 0]} if any(g <= 0 for g in docs.values())
                         else {})})
    root.mkdir(parents=True, exist_ok=True)
    (root / "g.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    (root / "g.yaml").write_text("".join(f"- {json.dumps(i)}\n" for i in items))
    (root / "g.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in JUDGMENTS.items() for d, g in docs.items()))
    (root / "beir" / "qrels").mkdir(parents=True)
    (root / "beir" / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n"
                                                         for q, t in QUESTIONS.items()))
    (root / "beir" / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, docs in JUDGMENTS.items() for d, g in docs.items()))
    (root / "g.qrels.json").write_text(json.dumps(JUDGMENTS))
    run = root / "r.run"
    run.write_text("".join(f"{q} Q0 {d} {r} {len(docs) - r + 1} sys\n" for q, docs in RUN.items()
                           for r, d in enumerate(docs, start=1)))
    return run


def figures(result):
    return dict(result.metrics), {q.id: dict(q.scores) for q in result.questions}


def test_same_judgments_in_every_format_give_identical_figures(tmp_path):
    run = write_every_format(tmp_path)
    sets = {
        "golden JSONL": load_golden(tmp_path / "g.jsonl"),
        "golden YAML": load_golden(tmp_path / "g.yaml"),
        "TREC qrels": load_golden(tmp_path / "g.qrels"),
        "TREC qrels (read_qrels)": read_qrels(tmp_path / "g.qrels"),
        "TREC qrels (load_golden_or_qrels)": load_golden_or_qrels(tmp_path / "g.qrels"),
        "BEIR": load_golden(tmp_path / "beir", split="test"),
        "ranx qrels JSON": load_golden(tmp_path / "g.qrels.json"),
    }
    ranx = pytest.importorskip("ranx")
    sets["ranx.Qrels"] = from_ranx(ranx.Qrels.from_dict(JUDGMENTS))
    reference = figures(score_run_file(run, sets["golden JSONL"], ks=KS))
    means, per_question = reference
    # the run is judged in part: the judged-not-relevant rows count (q1's top 5: a, c and d judged, x and y holes)
    assert per_question["q1"]["judged@5"] == pytest.approx(3 / 5)
    assert means["judged@10"] == pytest.approx((4 / 6 + 2 / 4 + 3 / 7 + 0) / 4)
    for name, golden in sets.items():
        assert {i.id: (dict(i.relevant), sorted(i.not_relevant)) for i in golden} == {
            q: ({d: float(g) for d, g in docs.items() if g > 0}, sorted(d for d, g in docs.items() if g <= 0))
            for q, docs in JUDGMENTS.items()}, name
        got = figures(score_run_file(run, golden, ks=KS))
        assert got[0] == pytest.approx(means, nan_ok=True), name
        assert set(got[1]) == set(per_question), name
        for q, scores in per_question.items():
            assert got[1][q] == pytest.approx(scores, nan_ok=True), (name, q)


def test_the_grade_rule():
    assert GRADE_RULE(2) == (True, 2.0) and GRADE_RULE(0.5) == (True, 0.5)
    assert GRADE_RULE(0) == (False, 0.0) and GRADE_RULE(-1) == (False, 0.0)


def test_one_row_per_format_and_an_unknown_file_lists_them(tmp_path):
    names = [r.name for r in FORMATS]
    assert sorted(names) == sorted(["golden-jsonl", "golden-yaml", "beir", "trec-qrels", "ranx-qrels", "trec-run",
                                    "jsonl-trace", "openinference", "jsonl-run", "json-run", "ranx-run", "eval-json"])
    assert FORMATS == (*JUDGMENT_FORMATS, *RUN_FORMATS)
    assert {r.kind for r in JUDGMENT_FORMATS} == {"judgments"} and {r.kind for r in RUN_FORMATS} == {"run"}
    (tmp_path / "odd.bin").write_text("one two three\n")
    with pytest.raises(GoldenSetError, match="odd.bin: not a golden set ragtune reads") as e:
        load_golden(tmp_path / "odd.bin")
    assert all(f"{r.name} (" in str(e.value) for r in JUDGMENT_FORMATS)
    (tmp_path / "odd.json").write_text('["a", "b"]')
    with pytest.raises(ConfigError, match="odd.json: not a run; a run file is one of") as e:
        read_run(tmp_path / "odd.json")
    assert all(f"{r.name} (" in str(e.value) for r in RUN_FORMATS)


def judgments_of(golden, questions):
    return {i.id: (i.q if questions else "", dict(i.relevant), sorted(i.not_relevant)) for i in golden}


@pytest.mark.parametrize("row", [r for r in JUDGMENT_FORMATS if r.write], ids=lambda r: r.name)
def test_judgments_round_trip_through_every_row_that_writes(tmp_path, row):
    golden = GoldenSet([GoldenItem("q1", "first", {"a.md": 2.0, "b.md": 1.0}, judged={"c.md": 0.0}),
                        GoldenItem("q2", "second", {"e.md": 1.0})])
    path = tmp_path / {"beir": "beir", "golden-yaml": "g.yaml", "ranx-qrels": "g.json",
                       "golden-jsonl": "g.jsonl", "trec-qrels": "g.qrels"}[row.name]
    row.write(golden, path)
    back = load_golden(path, split="test")
    assert judgments_of(back, row.questions) == judgments_of(golden, row.questions)


@pytest.mark.parametrize("row", [r for r in RUN_FORMATS if r.write], ids=lambda r: r.name)
def test_runs_round_trip_through_every_row_that_writes(tmp_path, row):
    rankings = {"q1": [("b.md", 9.0), ("a.md", 4.0), ("c.md", 4.0)], "q2": [("e.md", 1.0)]}
    path = tmp_path / f"run-{row.name}.{'jsonl' if row.name == 'jsonl-run' else 'out'}"
    row.write(rankings, path)
    parsed = read_run(path)
    assert parsed.format.split("-")[0] in row.name
    assert {q: [h.ident for h in hits] for q, hits in parsed.hits.items()} == {
        q: [d for d, _ in hits] for q, hits in rankings.items()}


def test_a_new_judgments_format_is_one_row(tmp_path, monkeypatch):
    def read_csv(sample, split=None):
        rows = [line.split(",") for line in sample.path.read_text().splitlines() if line]
        grades = {}
        for q, d, g in rows:
            grades.setdefault(q, {})[d] = float(g)
        return GoldenSet(golden_module.items_from_grades(grades), source=str(sample.path))

    row = InputFormat("csv-qrels", "judgments", ".csv: qid,docid,grade", lambda s: s.suffix == ".csv", read_csv,
                      questions=False)
    monkeypatch.setattr(golden_module, "JUDGMENT_FORMATS", (*JUDGMENT_FORMATS, row))
    (tmp_path / "g.csv").write_text("q1,a.md,2\nq1,c.md,0\n")
    got = load_golden(tmp_path / "g.csv")
    assert judgments_of(got, False) == {"q1": ("", {"a.md": 2.0}, ["c.md"])}
    assert replace(row, name="x").name == "x"  # rows are plain frozen values


def test_qrels_score_run_files_but_a_retriever_needs_question_text(tmp_path):
    from ragtune import evaluate

    write_every_format(tmp_path)
    qrels = load_golden(tmp_path / "g.qrels")  # no question text: loads, for run files
    assert {i.q for i in qrels} == {""}
    with pytest.raises(GoldenSetError, match="have no text .*score run files"):
        evaluate(lambda q, k: [], qrels, None)
