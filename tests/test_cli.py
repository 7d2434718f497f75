import json

from ragtune.cli import main
from tests.conftest import write_jsonl


def golden_file(tmp_path, rows):
    return str(write_jsonl(tmp_path / "g.jsonl", rows))


def test_eval_prints_bars_and_writes_json(md_corpus, tmp_path, capsys):
    g = golden_file(tmp_path, [
        {"id": "q1", "q": "When are refunds issued?", "relevant": ["guide/billing.md#refunds"], "tags": ["keyword"]},
        {"id": "q2", "q": "How is account deletion handled?", "relevant": ["faq.md#accounts"], "tags": ["paraphrase"]},
        {"id": "q3", "q": "Is there a mobile app?", "relevant": [], "tags": ["unanswerable"]},
    ])
    out = tmp_path / "r.json"
    assert main(["eval", "--corpus", str(md_corpus), "--golden", g, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "recall@5   1.00  ####################" in text
    assert "reranker headroom = recall@20 - recall@5 = 0.00" in text
    assert "1 unanswerable" in text
    data = json.loads(out.read_text())
    assert data["counts"] == {"questions": 3, "answerable": 2, "unanswerable": 1}
    assert set(data["by_tag"]) == {"keyword", "paraphrase"}


def test_golden_check_exit_codes(md_corpus, tmp_path, capsys):
    bad = golden_file(tmp_path, [{"id": "q1", "q": "x", "relevant": ["guide/billing.md#refund"]}])
    assert main(["golden", "check", "--corpus", str(md_corpus), "--golden", bad]) == 1
    out = capsys.readouterr().out
    assert "unknown anchor 'guide/billing.md#refund' (q1); did you mean: guide/billing.md#refunds" in out
    good = str(write_jsonl(tmp_path / "ok.jsonl", [{"id": "q1", "q": "x", "relevant": ["faq.md"], "tags": ["t"]}]))
    assert main(["golden", "check", "--corpus", str(md_corpus), "--golden", good]) == 0
    assert "ok: 1 questions (1 answerable, 0 unanswerable)" in capsys.readouterr().out


def test_bad_input_exits_2_with_one_line(tmp_path, capsys):
    assert main(["eval", "--corpus", str(tmp_path / "missing"), "--golden", "x.jsonl"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: corpus path") and err.count("\n") == 1


def test_search_and_anchors(md_corpus, capsys):
    assert main(["search", "--corpus", str(md_corpus), "partial refund", "-k", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["hits"][0]["anchor"] == "guide/billing.md#partial-refunds"
    assert main(["anchors", "--corpus", str(md_corpus), "--doc", "faq.md"]) == 0
    assert "faq.md#accounts" in capsys.readouterr().out
