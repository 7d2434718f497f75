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
    assert g.items[0].relevant == {"faq.md": 1.0}
    assert g.items[0].tags == ("paraphrase",)


@pytest.mark.parametrize("row, message", [
    ({"id": "a", "q": "x"}, "missing field 'relevant'"),
    ({"id": "a", "q": "x", "relevant": "faq.md"}, "'relevant' must be a list"),
    ({"id": "a", "q": "x", "relevant": [], "question": "typo"}, "unknown field\\(s\\) 'question'"),
    ({"id": "a", "q": "x", "relevant": {"faq.md": 0}}, "must be a number > 0"),
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
    report = check_golden(load_golden(path), corpus)
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
