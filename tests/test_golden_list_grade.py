"""A plain list of relevant anchors means the top grade: the author's answers are never outranked by a section
judging finds later, and files written before that rule still load with the grades they recorded."""

import json
import math

import pytest

from ragtune.evaluate.evaluate import evaluate_rankings
from ragtune.evaluate.match import AnchorsOnly
from ragtune.golden import TOP_GRADE, GoldenItem, GoldenSet, load_golden, ranx_qrels, read_trec_qrels, \
    write_trec_qrels
from ragtune.label import golden_file as gf
from ragtune.types import Chunk, Hit, Ranking


def ranking(q: str, docs) -> Ranking:
    return Ranking(q, tuple(Hit(Chunk(id=d, doc_id=d, text="", start=0, end=1, embed_text=""), float(len(docs) - r))
                            for r, d in enumerate(docs)))


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_list_is_the_top_grade(tmp_path):
    g = load_golden(write_jsonl(tmp_path / "g.jsonl", [{"id": "q", "q": "refunds?", "relevant": ["a", "b"]}]))
    assert TOP_GRADE == 2.0 and g.items[0].relevant == {"a": 2.0, "b": 2.0}
    assert g.items[0].to_dict()["relevant"] == ["a", "b"]  # written back as the list it was
    # a map of grade 1 stays a map: written as a list it would read back as grade 2
    assert GoldenItem("q", "x", {"a": 1.0}).to_dict()["relevant"] == {"a": 1.0}


def test_a_pool_find_graded_2_does_not_outrank_the_authors_answers(tmp_path):
    """The workbench grades a pool section 2 on a question authored as a list; a ranking that puts the author's
    answers first is ideal (nDCG 1), and one that puts the find first is not better than that."""
    g = load_golden(write_jsonl(tmp_path / "g.jsonl", [{"id": "q", "q": "refunds?", "relevant": ["a", "b"]}]))
    judged = gf.grade(g.items[0], "c", 2, by="ana", pool="pool.jsonl")
    assert judged.relevant == {"a": 2.0, "b": 2.0, "c": 2.0}
    golden = GoldenSet([judged])
    authors_first = evaluate_rankings({"q": ranking("refunds?", ["a", "b", "c"])}, golden, AnchorsOnly(), ks=(5,))
    assert authors_first.metrics["ndcg@10"] == pytest.approx(1.0)
    # graded 1 ("partly"): ranking the find above the author's answers now costs nDCG
    partly = GoldenSet([gf.grade(g.items[0], "c", 1, by="ana")])
    find_first = evaluate_rankings({"q": ranking("refunds?", ["c", "a", "b"])}, partly, AnchorsOnly(), ks=(5,))
    d = [1 / math.log2(r + 1) for r in range(1, 4)]
    assert find_first.metrics["ndcg@10"] == pytest.approx((1 * d[0] + 2 * d[1] + 2 * d[2]) / (2 * d[0] + 2 * d[1]
                                                                                              + 1 * d[2]))


def test_qrels_round_trip_keeps_the_top_grade(tmp_path):
    g = GoldenSet([GoldenItem("q", "x", {"a": TOP_GRADE, "b": 1.0})])
    write_trec_qrels(g, tmp_path / "q.qrels")
    assert read_trec_qrels(tmp_path / "q.qrels").items[0].relevant == {"a": 2.0, "b": 1.0}
    assert ranx_qrels(load_golden(write_jsonl(tmp_path / "g.jsonl", [{"id": "q", "q": "x", "relevant": ["a"]}]))) \
        == {"q": {"a": 2}}


def test_ndcg_upper_counts_a_hole_at_the_questions_top_grade(tmp_path):
    """The upper end treats a hole as relevant as the author's answers: for a list, nDCG's upper end is what it
    was when a list meant grade 1 (nDCG does not change when every grade is doubled)."""
    listed = GoldenSet([GoldenItem("q", "x", {"a": TOP_GRADE})])
    ones = GoldenSet([GoldenItem("q", "x", {"a": 1.0})])
    run = {"q": ranking("x", ["hole", "a"])}
    up = [evaluate_rankings(run, g, AnchorsOnly(), ks=(5,)).metrics["ndcg_upper@10"] for g in (listed, ones)]
    assert up[0] == pytest.approx(up[1]) == pytest.approx(1.0)


def test_old_files_still_load(tmp_path):
    """A file the workbench wrote before lists meant the top grade: a list whose anchors carry grade-1 records (a
    person graded them "partly"), records without ``added``; it loads without a conflict, with the grades
    recorded, and nothing counts as added by judging."""
    rows = [{"id": "q1", "q": "refunds?", "relevant": ["a", "b"],
             "judgments": [{"anchor": "b", "grade": 1, "by": "ana", "at": "2025-03-02T10:00:00Z",
                            "pool": "pool.jsonl"}]},
            {"id": "q2", "q": "fees?", "relevant": {"c": 1, "d": 2}, "judged": ["e"],
             "judgments": [{"anchor": "d", "grade": 2, "by": "bo", "pool": "workbench"}]}]
    g = load_golden(write_jsonl(tmp_path / "old.jsonl", rows))
    assert g.items[0].relevant == {"a": 2.0, "b": 1.0} and g.items[0].conflicts() == []
    assert g.items[1].relevant == {"c": 1.0, "d": 2.0}
    assert [i.added for i in g] == [(), ()] and g.items[0].authored == ("a", "b")
    assert g.items[0].to_dict()["relevant"] == {"a": 2.0, "b": 1.0}  # rewritten unambiguously
