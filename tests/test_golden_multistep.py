"""Golden sets for retrieval that searches more than once: evidence groups and conversations."""

import json

import pytest

from ragtune import GoldenSetError, load_golden
from ragtune.golden import GoldenItem, golden_records, parse_item, parse_record, write_golden_jsonl, \
    write_golden_yaml
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
