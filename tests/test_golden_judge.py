"""``ragtune golden judge`` against a local server speaking both wire formats, and ``--labels human|all``."""

import json

import pytest

from ragtune import check_golden, load_corpus, load_golden
from ragtune.cli import main
from ragtune.judgments.llm_labels import GRADE_MAP, parse_grade
from tests.answer.fake_llm import FakeLLM
from tests.helpers import write_jsonl

B = "guide/billing.md"
GOLDEN = [{"id": "q1", "q": "How are refunds paid?", "relevant": [f"{B}#refunds"]},
          {"id": "q2", "q": "Is deleting an account permanent?", "relevant": ["faq.md#accounts"]}]


@pytest.fixture
def server():
    s = FakeLLM([])
    yield s
    s.close()


def _pool(tmp_path):
    rows = [{"id": "q1", "q": GOLDEN[0]["q"], "depth": 3, "pooled": 3, "judged": 1,
             "holes": [{"anchor": f"{B}#partial-refunds"}, {"anchor": f"{B}#invoices"}]},
            {"id": "q2", "q": GOLDEN[1]["q"], "depth": 3, "pooled": 2, "judged": 1,
             "holes": [{"anchor": "notes.txt"}]}]
    return write_jsonl(tmp_path / "pool.jsonl", rows)


def test_parse_grade_reads_json_and_bare_digits():
    assert parse_grade('{"grade": 2}') == 2 and parse_grade('Sure.\n```json\n{"grade": "3"}\n```') == 3
    assert parse_grade("1") == 1 and parse_grade("Grade: 0") == 0
    assert parse_grade('{"grade": 7}') is None and parse_grade("it answers it") is None
    assert GRADE_MAP == {0: 0, 1: 0, 2: 1, 3: 2}


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_judge_end_to_end(tmp_path, md_corpus, server, kind, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    golden, pool, out = write_jsonl(tmp_path / "golden.jsonl", GOLDEN), _pool(tmp_path), tmp_path / "labelled.jsonl"
    before = golden.read_text()
    base = server.url + ("/v1" if kind == "openai" else "")
    args = ["golden", "judge", str(pool), "--corpus", str(md_corpus), "--golden", str(golden), "--judge",
            f"{kind}:m1", "--out", str(out), "--base-url", base, "--price-in", "3", "--price-out", "15",
            "--cache-dir", str(tmp_path / "cache")]
    # the dry run: an estimate, nothing sent, nothing written
    assert main(args + ["--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "estimate: 3 calls" in dry and "$" in dry and "nothing sent" in dry
    assert server.requests == [] and not out.exists()
    # the first call is overloaded (529), the next fails (500): retried, then answered
    server.script = [529, 500, '{"grade": 2}', "The passage is unrelated.", '{"grade": 1}', '{"grade": 3}']
    assert main(args) == 0
    text = capsys.readouterr().out
    assert len(server.requests) == 6  # 2 retries + 3 holes + 1 reply asked again (no grade in it)
    assert server.requests[0]["path"].endswith("/chat/completions" if kind == "openai" else "/messages")
    assert server.requests[0]["body"]["model"] == "m1"
    assert "Refunds are issued within 14 days" not in server.requests[2]["body"]["messages"][-1]["content"]
    assert "A partial refund returns part of the order amount." in json.dumps(server.requests[2]["body"])
    assert "labelled 3 hole(s): 2 relevant, 1 not relevant, the judge's base rate of relevant 67%" in text
    assert "$" in text and "ragtune golden ppi" in text
    assert golden.read_text() == before  # the input is never rewritten
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    q1, q2 = rows
    # the author's listed anchor is the top grade (2); the LLM's "answers" (its 2) is ragtune's 1
    assert q1["relevant"] == {f"{B}#refunds": 2, f"{B}#partial-refunds": 1}
    assert q1["judged"] == [f"{B}#invoices"]
    assert q2["relevant"] == ["faq.md#accounts", "notes.txt"]  # both grade 2: a list
    records = q1["judgments"] + q2["judgments"]
    assert [(r["anchor"], r["grade"], r["by"], r["pool"]) for r in records] == [
        (f"{B}#partial-refunds", 1, "llm:m1", "pool.jsonl"), (f"{B}#invoices", 0, "llm:m1", "pool.jsonl"),
        ("notes.txt", 2, "llm:m1", "pool.jsonl")]
    assert all(r["at"].endswith("Z") and r["at"][:2] == "20" for r in records)
    assert check_golden(load_golden(out, labels="all"), load_corpus(md_corpus)).ok
    assert main(["golden", "check", "--corpus", str(md_corpus), "--golden", str(out)]) == 0
    capsys.readouterr()
    # a rerun costs nothing: every grade comes from the cache, no request reaches the server
    out2 = tmp_path / "again.jsonl"
    assert main([*args[:args.index("--out") + 1], str(out2), *args[args.index("--out") + 2:], "--dry-run"]) == 0
    assert "estimate: 0 calls" in capsys.readouterr().out
    assert main([*args[:args.index("--out") + 1], str(out2), *args[args.index("--out") + 2:]]) == 0
    assert len(server.requests) == 6
    assert "(3 from the cache); 0 calls" in capsys.readouterr().out
    again = [json.loads(line) for line in out2.read_text().splitlines()]
    assert [r["relevant"] for r in again] == [r["relevant"] for r in rows]
    # judging the labelled file again skips what is labelled
    assert main([*args[:args.index("--golden") + 1], str(out), *args[args.index("--golden") + 2:], "--dry-run"]) == 0
    assert "estimate: 0 calls" in capsys.readouterr().out


def test_max_holes_and_the_default_output(tmp_path, md_corpus, server, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    golden = write_jsonl(tmp_path / "golden.jsonl", GOLDEN)
    server.script = ['{"grade": 0}'] * 5
    assert main(["golden", "judge", str(_pool(tmp_path)), "--corpus", str(md_corpus), "--golden", str(golden),
                 "--judge", "openai:m2", "--base-url", server.url + "/v1", "--max-holes", "1",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    assert len(server.requests) == 2  # one hole a question
    written = tmp_path / "golden.judged.jsonl"
    assert "past --max-holes 1" in capsys.readouterr().out and written.is_file()
    assert [json.loads(x).get("judged") for x in written.read_text().splitlines()] == [[f"{B}#partial-refunds"],
                                                                                       ["notes.txt"]]


def test_labels_human_scores_as_the_original_and_all_scores_the_llm_labels(tmp_path, md_corpus, capsys):
    golden = write_jsonl(tmp_path / "golden.jsonl", GOLDEN)
    llm = {"anchor": "notes.txt", "grade": 1, "by": "llm:m1", "at": "2025-03-02T10:00:00Z", "pool": "pool.jsonl"}
    labelled = write_jsonl(tmp_path / "labelled.jsonl", [
        GOLDEN[0], {**GOLDEN[1], "relevant": ["faq.md#accounts", "notes.txt"], "judgments": [llm]}])
    # the LLM-only label is dropped by default, kept with labels="all"
    assert load_golden(labelled).items[1].relevant == {"faq.md#accounts": 2.0}
    assert load_golden(labelled).labels == "human"
    # a listed anchor with a judgment record keeps the grade recorded (files from before a list meant grade 2)
    assert load_golden(labelled, labels="all").items[1].relevant == {"faq.md#accounts": 2.0, "notes.txt": 1.0}
    # a label a person also judged stays
    both = write_jsonl(tmp_path / "both.jsonl", [{**GOLDEN[1], "relevant": ["faq.md#accounts", "notes.txt"],
                                                  "judgments": [llm, {**llm, "by": "ana"}]}])
    assert load_golden(both).items[0].relevant == {"faq.md#accounts": 2.0, "notes.txt": 1.0}
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"q1": [f"{B}#refunds"], "q2": ["notes.txt", "faq.md#accounts"]}))

    def score(path, *labels):
        assert main(["eval", "--golden", str(path), "--corpus", str(md_corpus), "--run", str(run), "--json",
                     *labels]) == 0
        return json.loads(capsys.readouterr().out)

    original, human, everything = score(golden), score(labelled), score(labelled, "--labels", "all")
    assert human["metrics"] == original["metrics"] and human["questions"] == original["questions"]
    assert original["config"]["labels"] == human["config"]["labels"] == "human"
    assert everything["config"]["labels"] == "all"
    assert everything["metrics"]["mrr"] == 1.0 and original["metrics"]["mrr"] == 0.75
    assert main(["eval", "--golden", str(labelled), "--corpus", str(md_corpus), "--run", str(run), "--labels",
                 "all"]) == 0
    assert "labels all" in capsys.readouterr().out


def test_old_golden_files_load_unchanged_under_both_label_choices(tmp_path):
    rows = [{"id": "q1", "q": "refunds?", "relevant": [f"{B}#refunds"], "tags": ["keyword"]},
            {"id": "q2", "q": "graded", "relevant": {"faq.md": 2, B: 1}, "judged": ["notes.txt"],
             "judgments": [{"anchor": "notes.txt", "grade": 0, "by": "ana"}]},
            {"id": "q3", "q": "weather?", "relevant": []}]
    path = write_jsonl(tmp_path / "g.jsonl", rows)
    human, everything = load_golden(path), load_golden(path, labels="all")
    assert [i.to_dict() for i in human] == [i.to_dict() for i in everything] == rows
    assert human.labels == "human" and everything.labels == "all"
    with pytest.raises(Exception, match="labels must be one of human, all"):
        load_golden(path, labels="llm")
