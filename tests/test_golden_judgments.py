"""Judged-not-relevant anchors and the provenance of judgments in the golden set format."""

import json

import pytest

from ragtune import GoldenSetError, check_golden, load_corpus, load_golden
from ragtune.golden import GoldenItem, Judgment
from tests.helpers import write_files, write_jsonl

NEW = {"id": "q1", "q": "refunds?", "relevant": {"guide/billing.md#refunds": 2},
       "judged": {"guide/billing.md#invoices": 0},
       "judgments": [{"anchor": "guide/billing.md#refunds", "grade": 2, "by": "ana", "at": "2025-03-02"},
                     {"anchor": "guide/billing.md#invoices", "grade": 0, "by": "llm:claude-x",
                      "at": "2025-03-02T14:05:00Z", "pool": "pool.jsonl"}]}


def test_older_files_load_exactly_as_before(tmp_path):
    rows = [{"id": "q1", "q": "refunds?", "relevant": ["guide/billing.md#refunds"], "tags": ["keyword"]},
            {"id": "q2", "q": "graded", "relevant": {"faq.md": 2, "guide/billing.md": 1}},
            {"id": "q3", "q": "weather?", "relevant": []}]
    g = load_golden(write_jsonl(tmp_path / "g.jsonl", rows))
    assert [i.to_dict() for i in g] == [{**r, "relevant": r["relevant"]} for r in rows]
    assert all(i.judged == {} and i.judgments == () and i.not_relevant == () for i in g)
    assert g.items[1].judged_anchors == {"faq.md": 2.0, "guide/billing.md": 1.0}


def test_judged_not_relevant_and_provenance_round_trip(tmp_path):
    g = load_golden(write_jsonl(tmp_path / "g.jsonl", [NEW, {"id": "q2", "q": "x", "relevant": [],
                                                              "judged": ["faq.md"]}]), labels="all")
    item = g.items[0]
    assert item.not_relevant == ("guide/billing.md#invoices",)
    assert item.judged_anchors == {"guide/billing.md#invoices": 0.0, "guide/billing.md#refunds": 2.0}
    assert item.judgments[1] == Judgment("guide/billing.md#invoices", 0.0, "llm:claude-x", "2025-03-02T14:05:00Z",
                                         "pool.jsonl")
    assert item.judgments[1].by_llm and not item.judgments[0].by_llm
    assert g.items[1].judged == {"faq.md": 0.0} and not g.items[1].answerable
    g.to_jsonl(tmp_path / "again.jsonl")
    assert [json.loads(line) for line in (tmp_path / "again.jsonl").read_text().splitlines()] == \
        [{**NEW, "relevant": ["guide/billing.md#refunds"], "judged": ["guide/billing.md#invoices"]},
         {"id": "q2", "q": "x", "relevant": [], "judged": ["faq.md"]}]  # every grade 2 (the top): written as a list


def test_yaml_dates_are_kept_as_iso_text(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("- id: a\n  q: What?\n  relevant: [faq.md]\n  judged: [notes.txt]\n"
                    "  judgments: [{anchor: notes.txt, grade: 0, by: ana, at: 2025-03-02}]\n")
    assert load_golden(path).items[0].judgments[0].at == "2025-03-02"


@pytest.mark.parametrize("extra, message", [
    ({"judged": {"faq.md": -1}}, "'judged' grade of 'faq.md' must be a finite number >= 0"),
    ({"judged": "faq.md"}, "'judged' must list the anchors judged not relevant"),
    ({"judged": {"": 0}}, "'judged' has an empty anchor"),
    ({"judgments": {"anchor": "faq.md"}}, "'judgments' must be a list of records"),
    ({"judgments": [{"anchor": "faq.md", "grade": 0}]}, "judgment 1: 'by' must be a non-empty string"),
    ({"judgments": [{"anchor": "faq.md", "by": "ana"}]}, "judgment 1: missing 'grade'"),
    ({"judgments": [{"anchor": "faq.md", "grade": "high", "by": "ana"}]}, "judgment 1: 'grade' must be a finite"),
    ({"judgments": [{"anchor": "faq.md", "grade": 0, "by": "ana", "at": "yesterday"}]}, "'at' must be an ISO 8601"),
    ({"judgments": [{"anchor": "faq.md", "grade": 0, "by": "ana", "who": "x"}]}, "unknown field\\(s\\) 'who'"),
])
def test_malformed_judgments_name_the_line_and_question(tmp_path, extra, message):
    path = write_jsonl(tmp_path / "g.jsonl", [{"id": "ok", "q": "fine", "relevant": []},
                                              {"id": "a", "q": "x", "relevant": [], **extra}])
    with pytest.raises(GoldenSetError, match=r"g\.jsonl:2: question 'a': .*" + message):
        load_golden(path)


def test_check_lists_unknown_judged_anchors_and_conflicts(md_corpus, tmp_path):
    rows = [
        {"id": "q1", "q": "refunds?", "relevant": {"guide/billing.md#refunds": 2},
         "judged": {"guide/billing.md#refunds": 1, "guide/billing.md#invoice": 0}},
        {"id": "q2", "q": "x", "relevant": [], "judged": {"faq.md": 2}},
        {"id": "q3", "q": "y", "relevant": ["faq.md"],
         "judgments": [{"anchor": "faq.md", "grade": 0, "by": "ana"}, {"anchor": "notes.txt", "grade": 0, "by": "bo"}]},
    ]
    path = write_jsonl(tmp_path / "g.jsonl", rows)
    with pytest.raises(GoldenSetError, match="relevant with grade 2 but judged 1"):
        load_golden(path)  # scoring refuses contradicting labels
    report = check_golden(load_golden(path, strict=False), load_corpus(md_corpus))
    kinds = [(p.kind, p.item_id) for p in report.problems]
    assert kinds == [("judgment_conflict", "q1"), ("unknown_anchor", "q1"), ("judgment_conflict", "q2"),
                     ("judgment_conflict", "q3"), ("judgment_conflict", "q3")]
    msgs = [p.message for p in report.problems]
    assert "guide/billing.md#invoices" in report.problems[1].suggestions
    assert "'faq.md' is judged relevant (grade 2) but not listed in 'relevant'" in msgs[2]
    assert "judgment of 'faq.md' by ana gives grade 0 but the label is 2" in msgs[3]
    assert "judgment of 'notes.txt' by bo (grade 0) has no label" in msgs[4]


def test_check_summary_counts_judgments(md_corpus, tmp_path):
    report = check_golden(load_golden(write_jsonl(tmp_path / "g.jsonl", [NEW]), labels="all"), load_corpus(md_corpus))
    assert report.ok, report.problems
    assert report.summary["judged_not_relevant"] == 1 and report.summary["judgments"] == 2
    assert report.summary["relevant_anchors"] == 1


def test_beir_zero_grades_are_judged_not_relevant(tmp_path):
    write_jsonl(tmp_path / "corpus.jsonl", [{"_id": "d1", "text": "a"}, {"_id": "d2", "text": "b"}])
    write_jsonl(tmp_path / "queries.jsonl", [{"_id": "1", "text": "q one"}, {"_id": "2", "text": "q two"}])
    write_files(tmp_path, {"qrels/test.tsv": "query-id\tcorpus-id\tscore\n1\td1\t2\n1\td2\t0\n2\td2\t0\n"})
    g = load_golden(tmp_path, split="test")
    assert [(i.id, dict(i.relevant), dict(i.judged)) for i in g] == [("1", {"d1": 2.0}, {"d2": 0.0})]


def test_items_built_in_code_keep_their_old_signature():
    item = GoldenItem("q", "text", {"a.md": 1.0})
    assert item.judged == {} and item.conflicts() == []
