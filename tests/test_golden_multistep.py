"""Golden sets for retrieval that searches more than once: evidence groups and conversations."""

import json

import pytest

from ragtune import GoldenSetError, check_golden, load_corpus, load_golden
from ragtune.cli import main
from ragtune.golden import GoldenItem, golden_records, parse_item, parse_record, ranx_qrels, write_beir_golden, \
    write_golden_jsonl, write_golden_yaml, write_trec_qrels
from tests.helpers import write_jsonl

CONVERSATION = {"id": "c1", "turns": [
    {"q": "How do I declare a route?", "relevant": ["routes.md#declare"]},
    {"q": "and how do I test it?", "relevant": {"testing.md#client": 1}, "evidence": [["testing.md#client"]]},
    {"q": "what about websockets?", "relevant": [], "tags": ["unanswerable"]},
]}
MULTIHOP = {"id": "m1", "q": "Which client tests the route declared in routes?",
            "relevant": ["routes.md#declare", "testing.md#client", "testing.md#async"],
            "evidence": [["routes.md#declare"], ["testing.md#client", "testing.md#async"]]}


def test_evidence_groups_load_and_relevant_is_their_union_when_left_out(tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", [
        MULTIHOP, {"id": "m2", "q": "only groups", "evidence": [["a.md#x", "b.md#y"], ["c.md#z"]]}])
    m1, m2 = load_golden(path)
    assert m1.evidence == (("routes.md#declare",), ("testing.md#client", "testing.md#async"))
    assert list(m1.relevant) == ["routes.md#declare", "testing.md#client", "testing.md#async"]
    assert m2.relevant == {"a.md#x": 2.0, "b.md#y": 2.0, "c.md#z": 2.0}
    assert m2.evidence == (("a.md#x", "b.md#y"), ("c.md#z",))
    assert m1.conversation is None and m1.turn is None and m1.history == ()


def test_plain_item_has_no_evidence_and_its_dict_is_unchanged():
    item = parse_item({"id": "q1", "q": "x", "relevant": ["a.md"]})
    assert item.evidence == () and item.conversation is None
    assert item.to_dict() == {"id": "q1", "q": "x", "relevant": ["a.md"]}


@pytest.mark.parametrize("evidence, message", [
    (["a.md#x"], r"evidence group 1 is the string 'a.md#x', not a list.*write \[\"a.md#x\"\]"),
    ([], r"'evidence' must be a list of groups of alternative anchors, like \[\[.*got \[\]"),
    ("a.md#x", r"'evidence' must be a list of groups"),
    ([["a.md#x"], []], r"evidence group 2 must be a non-empty list of anchors"),
    ([["a.md#x", " "]], r"evidence group 1 must list anchor strings"),
    ([[3]], r"evidence group 1 must list anchor strings"),
])
def test_malformed_evidence_names_the_line_the_question_and_the_fix(tmp_path, evidence, message):
    path = write_jsonl(tmp_path / "g.jsonl", [{"id": "ok", "q": "fine", "relevant": []},
                                              {"id": "m", "q": "x", "evidence": evidence}])
    with pytest.raises(GoldenSetError, match=r"g\.jsonl:2: question 'm': " + message):
        load_golden(path)


def test_evidence_anchor_missing_from_relevant_is_refused(tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", [{"id": "m", "q": "x", "relevant": ["a.md#x"],
                                               "evidence": [["a.md#x"], ["b.md#y"]]}])
    with pytest.raises(GoldenSetError, match=r"g\.jsonl:1: question 'm': evidence anchor 'b.md#y' is not in "
                                             r"'relevant'.*leave 'relevant' out"):
        load_golden(path)


def test_conversation_loads_one_item_per_turn_with_history(tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", [{"id": "q0", "q": "plain", "relevant": ["a.md"]}, CONVERSATION])
    golden = load_golden(path)
    assert [i.id for i in golden] == ["q0", "c1#1", "c1#2", "c1#3"]
    t = golden.items[1:]
    assert [i.conversation for i in t] == ["c1"] * 3 and [i.turn for i in t] == [0, 1, 2]
    assert t[2].history == ("How do I declare a route?", "and how do I test it?")
    assert t[0].history == ()
    assert t[1].relevant == {"testing.md#client": 1.0} and t[1].evidence == (("testing.md#client",),)
    assert not t[2].answerable and t[2].tags == ("unanswerable",)
    assert golden.locations[1:] == tuple(f"{path}:2 turn {n}" for n in (1, 2, 3))


@pytest.mark.parametrize("line, message", [
    ({"id": "c", "turns": []}, r"conversation 'c': 'turns' must be a non-empty list"),
    ({"id": "c", "turns": "q?"}, r"conversation 'c': 'turns' must be a non-empty list"),
    ({"id": "c", "q": "x", "turns": [{"q": "y", "relevant": []}]}, r"unknown field\(s\) 'q' in a conversation"),
    ({"turns": [{"q": "y", "relevant": []}]}, r"a conversation needs a non-empty 'id'"),
    ({"id": "c", "turns": [{"q": "y", "relevant": []}, "z?"]}, r"conversation 'c' turn 2: expected an object"),
    ({"id": "c", "turns": [{"q": "y"}]}, r"conversation 'c' turn 1: missing field 'relevant'"),
    ({"id": "c", "turns": [{"q": "y", "relevant": [], "turns": []}]}, r"conversation 'c' turn 1: a turn cannot hold turns"),
    ({"id": "c", "turns": [{"q": "y", "relevant": [], "history": ["x"]}]}, r"conversation 'c' turn 1: unknown field\(s\) 'history'"),
])
def test_malformed_conversations_name_the_line_and_turn(tmp_path, line, message):
    path = write_jsonl(tmp_path / "g.jsonl", [line])
    with pytest.raises(GoldenSetError, match=r"g\.jsonl:1: " + message):
        load_golden(path)


def test_duplicate_turn_ids_are_refused_for_scoring(tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", [{"id": "c1#2", "q": "clash", "relevant": []}, CONVERSATION])
    with pytest.raises(GoldenSetError, match=r"duplicate question id 'c1#2'"):
        load_golden(path)


def test_jsonl_round_trip_regroups_conversations(tmp_path):
    lines = [{"id": "q0", "q": "plain", "relevant": ["a.md"], "tags": ["keyword"]}, CONVERSATION, MULTIHOP]
    path = write_jsonl(tmp_path / "g.jsonl", lines)
    golden = load_golden(path)
    out = tmp_path / "out.jsonl"
    write_golden_jsonl(golden, out)
    assert [json.loads(x) for x in out.read_text().splitlines()] == lines
    assert load_golden(out).items == golden.items
    assert out.read_text() == path.read_text().replace('{"testing.md#client": 1}', '{"testing.md#client": 1.0}')


def test_yaml_round_trip_and_yaml_conversations(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("- id: c9\n  turns:\n    - q: first?\n      relevant: [a.md]\n    - q: then?\n"
                    "      evidence: [[a.md], [b.md]]\n")
    golden = load_golden(path)
    assert [(i.id, i.turn, i.history) for i in golden] == [("c9#1", 0, ()), ("c9#2", 1, ("first?",))]
    assert golden.items[1].relevant == {"a.md": 2.0, "b.md": 2.0}
    assert golden.locations == (f"{path}:1 turn 1", f"{path}:1 turn 2")
    out = tmp_path / "out.yaml"
    write_golden_yaml(golden, out)
    assert load_golden(out).items == golden.items


def test_records_keep_a_turn_id_that_is_not_positional_and_group_interleaved_turns():
    turns = parse_record(CONVERSATION, "f:1")
    other = parse_item({"id": "x", "q": "x", "relevant": []})
    kept = [turns[0], other, turns[2]]  # a subset: the third turn now stands second
    records = golden_records(kept)
    assert records == [{"id": "c1", "turns": [{"q": "How do I declare a route?", "relevant": ["routes.md#declare"]},
                                              {"id": "c1#3", "q": "what about websockets?", "relevant": [],
                                               "tags": ["unanswerable"]}]},
                       {"id": "x", "q": "x", "relevant": []}]
    again = parse_record(records[0], "f:1")
    assert [i.id for i in again] == ["c1#1", "c1#3"]
    assert again[1].history == ("How do I declare a route?",)


def test_parse_item_refuses_a_conversation_with_a_pointer():
    with pytest.raises(GoldenSetError, match="conversation .*parse_record"):
        parse_item(CONVERSATION, "f:1")


def test_human_labels_drop_llm_only_anchors_from_evidence_groups():
    item = parse_item({"id": "m", "q": "x", "evidence": [["a.md"], ["b.md", "c.md"], ["d.md"]],
                       "judgments": [{"anchor": "c.md", "grade": 2, "by": "llm:m"},
                                     {"anchor": "d.md", "grade": 2, "by": "llm:m"}]})
    human = item.human_labels()
    assert human.evidence == (("a.md",), ("b.md",))
    assert set(human.relevant) == {"a.md", "b.md"}
    assert isinstance(human, GoldenItem)


# -- golden check and the export formats ------------------------------------------------------------------------

def test_check_finds_unknown_evidence_anchors_and_turn_anchors(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    path = write_jsonl(tmp_path / "g.jsonl", [
        {"id": "m1", "q": "refunds and shipping?", "evidence": [["guide/billing.md#refunds"], ["faq.md#shiping"]]},
        {"id": "c1", "turns": [{"q": "refunds?", "relevant": ["guide/billing.md#refunds"]},
                               {"q": "and invoices?", "relevant": ["guide/billing.md#invoice"]}]},
    ])
    report = check_golden(load_golden(path), corpus)
    assert [(p.kind, p.item_id) for p in report.problems] == [("unknown_anchor", "m1"), ("unknown_anchor", "c1#2")]
    first, second = (p.message for p in report.problems)
    assert f"{path}:1: unknown anchor 'faq.md#shiping' (m1, evidence group 2)" in first
    assert f"{path}:2 turn 2: unknown anchor 'guide/billing.md#invoice' (c1#2)" in second
    assert "guide/billing.md#invoices" in report.problems[1].suggestions


def test_check_summary_counts_evidence_questions_conversations_and_turns(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    path = write_jsonl(tmp_path / "g.jsonl", [
        {"id": "q1", "q": "refunds?", "relevant": ["guide/billing.md#refunds"]},
        {"id": "m1", "q": "refunds then invoices?", "evidence": [["guide/billing.md#refunds"],
                                                                 ["guide/billing.md#invoices", "faq.md"]]},
        {"id": "c1", "turns": [{"q": "refunds?", "relevant": ["guide/billing.md#refunds"]},
                               {"q": "and invoices?", "relevant": ["guide/billing.md#invoices"]}]},
    ])
    report = check_golden(load_golden(path), corpus)
    assert report.ok, [p.message for p in report.problems]
    s = report.summary
    assert (s["questions"], s["evidence_questions"], s["conversations"], s["turns"]) == (4, 1, 1, 2)
    assert s["relevant_anchors"] == 6
    plain = check_golden(load_golden(write_jsonl(tmp_path / "p.jsonl", [
        {"id": "q1", "q": "refunds?", "relevant": ["guide/billing.md#refunds"]}])), corpus).summary
    assert (plain["evidence_questions"], plain["conversations"], plain["turns"]) == (0, 0, 0)


def test_cli_check_prints_the_multistep_line(md_corpus, tmp_path, capsys):
    path = write_jsonl(tmp_path / "g.jsonl", [
        {"id": "m1", "q": "refunds then invoices?", "evidence": [["guide/billing.md#refunds"],
                                                                 ["guide/billing.md#invoices"]]},
        {"id": "c1", "turns": [{"q": "refunds?", "relevant": ["guide/billing.md#refunds"]},
                               {"q": "and invoices?", "relevant": ["guide/billing.md#invoices"]}]}])
    assert main(["golden", "check", "--corpus", str(md_corpus), "--golden", str(path)]) == 0
    out = capsys.readouterr().out
    assert "more than one search: 1 with evidence groups, 1 conversations (2 turns)" in out
    plain = write_jsonl(tmp_path / "p.jsonl", [{"id": "q1", "q": "refunds?", "relevant": ["guide/billing.md#refunds"]}])
    assert main(["golden", "check", "--corpus", str(md_corpus), "--golden", str(plain)]) == 0
    assert "more than one search" not in capsys.readouterr().out


def test_trec_and_ranx_qrels_hold_turn_ids_and_the_union_of_evidence(tmp_path):
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [MULTIHOP, CONVERSATION]))
    write_trec_qrels(golden, tmp_path / "g.qrels")
    rows = [line.split() for line in (tmp_path / "g.qrels").read_text().splitlines()]
    assert [r[0] for r in rows] == ["m1"] * 3 + ["c1#1", "c1#2"]  # the unanswerable third turn has no qrels
    assert [r[2] for r in rows[:3]] == list(MULTIHOP["relevant"])
    back = load_golden(tmp_path / "g.qrels")
    assert {i.id: dict(i.relevant) for i in back} == {i.id: dict(i.relevant) for i in golden if i.answerable}
    assert ranx_qrels(golden)["c1#2"] == {"testing.md#client": 1}


def test_beir_export_keeps_turns_and_evidence_in_query_metadata(tmp_path):
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [MULTIHOP, CONVERSATION,
                                                            {"id": "q9", "q": "plain", "relevant": ["a.md"]}]))
    folder = write_beir_golden(golden, tmp_path / "beir")
    queries = [json.loads(x) for x in (folder / "queries.jsonl").read_text().splitlines()]
    assert queries[2] == {"_id": "c1#2", "text": "and how do I test it?", "metadata": {
        "conversation": "c1", "turn": 1, "history": ["How do I declare a route?"],
        "evidence": [["testing.md#client"]]}}
    assert queries[-1] == {"_id": "q9", "text": "plain"}  # a plain question as before
    back = load_golden(folder, split="test")
    want = {i.id: i for i in golden if i.answerable}
    assert [i.id for i in back] == list(want)
    for item in back:
        w = want[item.id]
        assert (item.q, dict(item.relevant), item.evidence, item.conversation, item.turn, item.history) == \
            (w.q, dict(w.relevant), w.evidence, w.conversation, w.turn, w.history)


def test_beir_metadata_with_a_bad_turn_is_refused(tmp_path):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "c1#1", "text": "x", "metadata": {
        "conversation": "c1", "turn": "first"}}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nc1#1\ta.md\t1\n")
    with pytest.raises(GoldenSetError, match=r"queries\.jsonl:1: query 'c1#1': metadata of a conversation turn"):
        load_golden(folder, split="test")


# -- golden judge on a conversation ---------------------------------------------------------------------------

def test_golden_judge_reads_a_turn_with_its_history_and_writes_the_conversation_back(tmp_path, md_corpus,
                                                                                    monkeypatch, capsys):
    from tests.answer.fake_llm import FakeLLM

    golden = write_jsonl(tmp_path / "golden.jsonl", [
        {"id": "c1", "turns": [{"q": "How do refunds work?", "relevant": ["guide/billing.md#refunds"]},
                               {"q": "and invoices?", "relevant": ["guide/billing.md#invoices"]}]}])
    pool = write_jsonl(tmp_path / "pool.jsonl", [{"id": "c1#2", "q": "and invoices?", "depth": 3, "pooled": 2,
                                                  "judged": 1, "holes": [{"anchor": "faq.md"}]}])
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    server = FakeLLM(['{"grade": 2}'])
    try:
        out = tmp_path / "labelled.jsonl"
        assert main(["golden", "judge", str(pool), "--corpus", str(md_corpus), "--golden", str(golden), "--judge",
                     "openai:m1", "--out", str(out), "--base-url", server.url + "/v1", "--cache-dir",
                     str(tmp_path / "cache")]) == 0
        asked = server.requests[0]["body"]["messages"][-1]["content"]
    finally:
        server.close()
    assert asked.startswith("QUESTION: How do refunds work? / then: and invoices?")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["id"] == "c1" and len(lines[0]["turns"]) == 2
    turn = load_golden(out, labels="all").items[1]
    assert turn.relevant == {"guide/billing.md#invoices": 2.0, "faq.md": 1.0} and turn.history == ("How do refunds work?",)


def test_an_evidence_anchor_made_not_relevant_in_code_is_a_conflict(md_corpus, tmp_path):
    from dataclasses import replace

    item = parse_item({"id": "m", "q": "x", "evidence": [["guide/billing.md#refunds"], ["faq.md"]]})
    broken = replace(item, relevant={"guide/billing.md#refunds": 2.0})
    assert broken.conflicts() == ["evidence anchor 'faq.md' is not relevant; grade it relevant or take it out of "
                                  "its evidence group"]
    from ragtune.golden import GoldenSet
    report = check_golden(GoldenSet([broken]), load_corpus(md_corpus))
    assert [p.kind for p in report.problems] == ["judgment_conflict"]
