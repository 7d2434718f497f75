import json
import math

import pytest

from ragtune import GoldenSetError, check_golden, load_corpus, load_golden
from tests.helpers import write_files, write_jsonl


def test_jsonl_list_and_graded_relevance(tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", [
        {"id": "q1", "q": "refunds?", "relevant": ["guide/billing.md#refunds"], "tags": ["keyword"]},
        {"id": 2, "q": "graded", "relevant": {"faq.md": 2, "guide/billing.md": 1}},
        {"id": "q3", "q": "weather tomorrow?", "relevant": [], "tags": ["unanswerable"]},
    ])
    g = load_golden(path)
    assert [i.id for i in g] == ["q1", "2", "q3"]
    assert g.items[1].relevant == {"faq.md": 2.0, "guide/billing.md": 1.0}
    assert [i.answerable for i in g] == [True, True, False]
    assert g.tag_counts() == {"keyword": 1, "unanswerable": 1}


def test_yaml_with_questions_key(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("questions:\n  - id: a\n    q: What?\n    relevant: [faq.md]\n    tags: [paraphrase]\n")
    g = load_golden(path)
    assert g.items[0].relevant == {"faq.md": 2.0}  # a list: the top grade
    assert g.items[0].tags == ("paraphrase",)


@pytest.mark.parametrize("row, message", [
    ({"id": "a", "q": "x"}, "missing field 'relevant'"),
    ({"id": "a", "q": "x", "relevant": "faq.md"}, "'relevant' must be a list"),
    ({"id": "a", "q": "x", "relevant": [], "question": "typo"}, "unknown field\\(s\\) 'question'"),
    ({"id": "a", "q": "x", "relevant": {"faq.md": 0}}, "question 'a': grade of 'faq.md' must be a finite number > 0"),
])
def test_malformed_items_name_the_line(tmp_path, row, message):
    path = write_jsonl(tmp_path / "g.jsonl", [{"id": "ok", "q": "fine", "relevant": []}, row])
    with pytest.raises(GoldenSetError, match=r"g\.jsonl:2: .*" + message):
        load_golden(path)


def test_malformed_json_line(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text('{"id": "a", "q": "x", "relevant": []}\n{"id": \n')
    with pytest.raises(GoldenSetError, match=r"g\.jsonl:2: malformed JSON"):
        load_golden(path)


def test_beir_golden_needs_split_and_skips_zero_scores(tmp_path):
    write_jsonl(tmp_path / "corpus.jsonl", [{"_id": "d1", "text": "a"}, {"_id": "d2", "text": "b"}])
    write_jsonl(tmp_path / "queries.jsonl", [{"_id": "1", "text": "q one"}, {"_id": "2", "text": "q two"}])
    write_files(tmp_path, {"qrels/test.tsv": "query-id\tcorpus-id\tscore\n1\td1\t2\n1\td2\t0\n2\td2\t0\n"})
    with pytest.raises(GoldenSetError, match="needs a split; pass --split \\(test\\)"):
        load_golden(tmp_path)
    g = load_golden(tmp_path, split="test")
    assert [(i.id, dict(i.relevant)) for i in g] == [("1", {"d1": 2.0})]
    with pytest.raises(FileNotFoundError, match="available splits: test"):
        load_golden(tmp_path, split="dev")


def test_check_reports_every_problem_with_suggestions(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    path = write_jsonl(tmp_path / "g.jsonl", [
        {"id": "q1", "q": "refunds?", "relevant": ["guide/billing.md#refund"]},
        {"id": "q1", "q": "dup id", "relevant": ["faq.md"]},
        {"id": "q3", "q": "  ", "relevant": []},
        {"id": "q4", "q": "x", "relevant": ["gide/billing.md#invoices"]},
    ])
    report = check_golden(load_golden(path, strict=False), corpus)
    assert not report.ok
    kinds = [(p.kind, p.item_id) for p in report.problems]
    assert kinds == [("unknown_anchor", "q1"), ("duplicate_id", "q1"), ("empty_question", "q3"), ("unknown_anchor", "q4")]
    assert report.problems[0].suggestions[0] == "guide/billing.md#refunds"
    assert "guide/billing.md#invoices" in report.problems[3].suggestions


def test_check_summary_when_ok(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    path = write_jsonl(tmp_path / "g.jsonl", [
        {"id": "q1", "q": "refunds?", "relevant": ["guide/billing.md#refunds"], "tags": ["keyword"]},
        {"id": "q2", "q": "weather?", "relevant": [], "tags": ["unanswerable"]},
    ])
    report = check_golden(load_golden(path), corpus)
    assert report.ok
    assert report.summary["answerable"] == 1 and report.summary["unanswerable"] == 1
    assert report.summary["tags"] == {"keyword": 1, "unanswerable": 1}


def test_problems_name_file_line_and_id(md_corpus, tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", [
        {"id": "q1", "q": "refunds?", "relevant": ["guide/billing.md#refunds"]},
        {"id": "q2", "q": "fine", "relevant": []},
        {"id": "q1", "q": "dup id", "relevant": ["faq.md"]},
        {"id": "q4", "q": " \t", "relevant": []},
    ])
    report = check_golden(load_golden(path, strict=False), load_corpus(md_corpus))
    msgs = [p.message for p in report.problems]
    assert len(msgs) == 2
    assert msgs[0].startswith(f"{path}:3: duplicate question id 'q1' (first used at {path}:1)")
    assert msgs[1].startswith(f"{path}:4: question 'q4' has an empty 'q'")


@pytest.mark.parametrize("rows, message", [
    ([{"id": "q1", "q": "a", "relevant": []}, {"id": "q2", "q": "b", "relevant": []}, {"id": "q1", "q": "c", "relevant": []}],
     r"g\.jsonl:3: duplicate question id 'q1' \(first used at .*g\.jsonl:1\); give every question its own id$"),
    ([{"id": "q1", "q": "a", "relevant": []}, {"id": 7, "q": "   ", "relevant": []}],
     r"g\.jsonl:2: question '7' has an empty 'q'; write the question or remove the item$"),
    ([{"id": "q1", "q": "", "relevant": []}, {"id": "q1", "q": "", "relevant": []}],
     r"g\.jsonl:1: question 'q1' has an empty 'q'.* \(and 2 more problem\(s\); `ragtune golden check` lists them all\)$"),
])
def test_scoring_refuses_duplicate_ids_and_blank_questions(tmp_path, rows, message):
    path = write_jsonl(tmp_path / "g.jsonl", rows)
    with pytest.raises(GoldenSetError, match=message):
        load_golden(path)
    assert len(load_golden(path, strict=False)) == len(rows)  # golden check still reads them all


@pytest.mark.parametrize("grade", [math.nan, math.inf, -math.inf, -1, 0, "2", None, [1], True])
def test_bad_grades_are_refused_with_file_line_and_id(tmp_path, grade):
    path = tmp_path / "g.jsonl"
    path.write_text('{"id": "ok", "q": "fine", "relevant": []}\n'
                    + json.dumps({"id": "q9", "q": "x", "relevant": {"faq.md": grade}}) + "\n")
    with pytest.raises(GoldenSetError, match=r"g\.jsonl:2: question 'q9': grade of 'faq.md' must be a finite number > 0"
                                             r".*use 1 for relevant"):
        load_golden(path)
    with pytest.raises(GoldenSetError):
        load_golden(path, strict=False)  # a malformed grade is a parse error, not a check problem


def test_yaml_problems_name_the_line_of_the_item(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("# billing\nquestions:\n  - id: a\n    q: What?\n    relevant: []\n"
                    "  - id: b\n    q: Why?\n    relevant: {faq.md: .nan}\n")
    with pytest.raises(GoldenSetError, match=r"g\.yaml:6: question 'b': grade of 'faq.md' must be a finite number"):
        load_golden(path)
    path.write_text("- id: a\n  q: What?\n  relevant: []\n\n- id: a\n  q: Again?\n  relevant: []\n")
    with pytest.raises(GoldenSetError, match=r"g\.yaml:5: duplicate question id 'a' \(first used at .*g\.yaml:1\)"):
        load_golden(path)


def test_beir_refuses_duplicate_queries_and_non_finite_scores(tmp_path):
    write_jsonl(tmp_path / "corpus.jsonl", [{"_id": "d1", "text": "a"}])
    write_jsonl(tmp_path / "queries.jsonl", [{"_id": "1", "text": "q one"}, {"_id": "1", "text": "again"}])
    write_files(tmp_path, {"qrels/test.tsv": "query-id\tcorpus-id\tscore\n1\td1\t1\n"})
    with pytest.raises(GoldenSetError, match=r"queries\.jsonl:2: duplicate query _id '1' \(first on line 1\)"):
        load_golden(tmp_path, split="test")
    write_jsonl(tmp_path / "queries.jsonl", [{"_id": "1", "text": "q one"}, {"_id": "2", "text": " "}])
    for score in ("nan", "inf", "lots"):
        write_files(tmp_path, {"qrels/test.tsv": f"query-id\tcorpus-id\tscore\n1\td1\t{score}\n"})
        with pytest.raises(GoldenSetError, match=rf"test\.tsv:2: query '1': score '{score}' is not a finite number"):
            load_golden(tmp_path, split="test")
    write_files(tmp_path, {"qrels/test.tsv": "query-id\tcorpus-id\tscore\n1\td1\t1\n2\td1\t1\n"})
    with pytest.raises(GoldenSetError, match=r"queries\.jsonl:2: question '2' has an empty 'q'"):
        load_golden(tmp_path, split="test")


def test_check_reports_headings_sharing_an_explicit_id(tmp_path):
    root = write_files(tmp_path / "c", {
        "a.md": "# A\n\n## Setup {#same}\n\none\n\n## Install {#same}\n\ntwo\n",
        "b.md": "# B {#b}\n\n## Fine {#fine}\n",
    })
    corpus = load_corpus(root)
    path = write_jsonl(tmp_path / "g.jsonl", [{"id": "q1", "q": "install?", "relevant": ["a.md#same-1"]}])
    report = check_golden(load_golden(path), corpus)
    assert not report.ok
    [p] = report.problems
    assert p.kind == "duplicate_heading_id" and p.item_id == ""
    assert p.message.startswith(f"{root / 'a.md'}:3 and line 7: headings 'Setup' and 'Install' both have the id {{#same}}")
    assert "the first is a.md#same, the second a.md#same-1" in p.message
    assert p.suggestions == ("a.md#same", "a.md#same-1")
    assert corpus.resolve("a.md#same").section.title == "Setup"
    assert corpus.resolve("a.md#same-1").section.title == "Install"
