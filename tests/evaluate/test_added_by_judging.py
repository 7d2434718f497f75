"""When judging adds relevant anchors to a question after the golden set was authored, eval says how many and
what recall was against the authored anchors: recall is now measured against more."""

import json

from ragtune import load_golden
from ragtune.cli import main
from ragtune.evaluate.added import added_by_judging
from ragtune.evaluate.evaluate import evaluate_rankings
from ragtune.evaluate.match import AnchorsOnly
from ragtune.golden import GoldenSet
from ragtune.label import golden_file as gf
from ragtune.types import Chunk, Hit, Ranking

B = "guide/billing.md"


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _ranking(q, anchors):
    return Ranking(q, tuple(Hit(Chunk(id=a, doc_id=a, text="", start=0, end=1, embed_text=""), 1.0 / (r + 1))
                            for r, a in enumerate(anchors)))


def test_eval_says_how_many_anchors_judging_added_and_recall_against_the_authored(tmp_path, md_corpus, capsys):
    added = [{"anchor": a, "grade": 2, "by": "ana", "at": "2026-01-05T10:00:00Z", "pool": "pool.jsonl", "added": True}
             for a in (f"{B}#partial-refunds", "notes.txt")]
    golden = _write(tmp_path / "golden.jsonl", [
        {"id": "q1", "q": "How are refunds paid?", "relevant": [f"{B}#refunds", "faq.md#accounts",
                                                              f"{B}#partial-refunds", "notes.txt"], "judgments": added},
        {"id": "q2", "q": "Is deleting an account permanent?", "relevant": ["faq.md#accounts"]}])
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"q1": [f"{B}#refunds", "faq.md#accounts"], "q2": ["faq.md#accounts"]}))
    assert main(["eval", "--golden", str(golden), "--corpus", str(md_corpus), "--run", str(run), "-k", "5"]) == 0
    text = capsys.readouterr().out
    assert "[q1] recall@5 0.50 (was 1.00 against the 2 authored anchors; 2 relevant anchors added by judging)" in text
    assert "judging added 2 relevant anchors to 1 question after the golden set was authored: recall is now " \
           "measured against more anchors. recall@5 0.750 (was 1.000 against the authored anchors)" in text
    assert main(["eval", "--golden", str(golden), "--corpus", str(md_corpus), "--run", str(run), "-k", "5",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["added_by_judging"]
    assert (data["anchors"], data["recall"], data["recall_authored"]) == (2, 0.75, 1.0)
    assert data["questions"] == [{"id": "q1", "authored": 2, "added": 2, "recall": 0.5, "recall_authored": 1.0}]
    # no anchor added by judging: no note
    plain = _write(tmp_path / "plain.jsonl", [{"id": "q1", "q": "x", "relevant": [f"{B}#refunds", "notes.txt"]},
                                              {"id": "q2", "q": "y", "relevant": ["faq.md#accounts"]}])
    assert main(["eval", "--golden", str(plain), "--corpus", str(md_corpus), "--run", str(run), "-k", "5"]) == 0
    text = capsys.readouterr().out
    assert "recall@5" in text and "added by judging" not in text


def test_the_workbench_records_what_judging_added(tmp_path):
    """Grading a pool section relevant on a question authored as a list records ``added``; grading the question's
    own anchors, or the first sections of a question born in the workbench, does not."""
    item = load_golden(_write(tmp_path / "g.jsonl", [{"id": "q", "q": "refunds?", "relevant": ["a"]}])).items[0]
    item = gf.grade(item, "a", 1, by="ana")  # the author's anchor, regraded: still authored
    item = gf.grade(item, "b", 2, by="ana", pool="pool.jsonl")
    item = gf.grade(item, "b", 1, by="bo")  # regraded: still added
    assert item.added == ("b",) and item.authored == ("a",)
    assert [j.to_dict().get("added", False) for j in item.judgments] == [False, True]
    born = load_golden(_write(tmp_path / "d.jsonl", [{"id": "d", "q": "x", "relevant": [], "status": "draft",
                                                       "draft": {"origin": "workbench"}}]), strict=False).items[0]
    new = gf.grade(gf.grade(born, "a", 2, by="ana"), "b", 1, by="ana")  # a question the workbench authored
    assert new.added == () and new.relevant == {"a": 2.0, "b": 1.0} and new.status is None
    golden = GoldenSet([item])
    note = added_by_judging(evaluate_rankings({"q": _ranking("refunds?", ["a"])}, golden, AnchorsOnly(), ks=(5,)),
                            golden)
    assert note is not None and note.questions[0].to_text(5) == \
        "[q] recall@5 0.50 (was 1.00 against the 1 authored anchor; 1 relevant anchor added by judging)"


def test_an_llm_label_on_an_authored_question_counts_as_added(tmp_path):
    llm = {"anchor": "b", "grade": 1, "by": "llm:m1", "at": "2026-01-05T10:00:00Z", "pool": "pool.jsonl"}
    path = _write(tmp_path / "g.jsonl", [{"id": "q", "q": "x", "relevant": ["a", "b"], "judgments": [llm]}])
    assert load_golden(path, labels="all").items[0].added == ("b",)
    assert load_golden(path).items[0].added == () and load_golden(path).items[0].relevant == {"a": 2.0}
