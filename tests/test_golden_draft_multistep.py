"""Drafting questions that need more than one search: multi-hop questions with evidence groups and conversations
of follow-up turns, drafted by a (fake) LLM, loaded as drafts, reviewed whole."""

import io
import json

import pytest

from ragtune import GoldenSetError, load_corpus
from ragtune.cli import main
from ragtune.golden import load_golden
from ragtune.judgments.draft import (DEFAULT_KINDS, draft_golden, draft_units, estimate_draft_cost,
                                     parse_questions, review_drafts, write_drafts)
from tests.answer.fake_llm import FakeLLM
from tests.helpers import write_files

WORDS = "and the settings page lists every option with its default value so an operator can check it quickly"
DOCS = {
    "app.md": "# App\n\n" + "".join(f"## {t}\n\n{body} {WORDS}.\n\n" for t, body in [
        ("Routes", "A route is declared with a decorator on a function that takes the path parameters"),
        ("Testing", "Tests call the routes through a test client that runs the app in the same process"),
        ("Settings", "Settings are read from environment variables into a typed settings object at start"),
        ("Logging", "Logs are written as JSON lines to standard error with the request id of each call"),
        ("Deploy", "The app is deployed as a container image behind a proxy that terminates TLS for it"),
    ]),
    "faq.md": "# FAQ\n\n## Pricing\n\nThe hosted plan is billed monthly by the number of requests served, " + WORDS +
              ".\n",
}


def reply(*questions):
    return json.dumps({"questions": list(questions)})


@pytest.fixture
def corpus(tmp_path):
    return load_corpus(write_files(tmp_path / "docs", DOCS))


def test_conversation_units_start_every_third_section_and_carry_the_next_sections(corpus):
    units = draft_units(corpus, per_section=0, kinds=("conversation",))
    assert [(u.anchor, [a for a, _, _ in u.follow]) for u in units] == [
        ("app.md#routes", ["app.md#testing", "app.md#settings"]),
        ("app.md#logging", ["app.md#deploy"]),  # the document ends: two turns
    ]  # faq.md has one section: no conversation
    system, user = units[0].prompt()
    assert '"turns"' in system
    assert "FOLLOW-UP SECTION 2 (app.md#testing)" in user and "FOLLOW-UP SECTION 3 (app.md#settings)" in user
    assert "1 conversation(s) of 3 turns" in user
    assert "conversation" not in DEFAULT_KINDS
    assert all("conversation" not in u.kinds and not u.follow for u in draft_units(corpus, per_section=1))
    est = estimate_draft_cost(units, generator="openai:m")
    assert est["questions"] == 3 + 2  # turns


def test_parse_reads_conversations_and_leaves_out_malformed_ones():
    text = reply({"kind": "conversation", "turns": ["How do I declare a route?", " and  test it? "]},
                 {"kind": "conversation", "turns": ["only one turn"]},
                 {"kind": "conversation", "q": "no turns"},
                 {"kind": "conversation", "turns": ["ok?", 3]},
                 {"kind": "paraphrase", "q": "plain?"})
    assert parse_questions(text) == [
        {"kind": "conversation", "turns": ["How do I declare a route?", "and test it?"]},
        {"kind": "paraphrase", "q": "plain?"}]


class ScriptedLLM:
    def __init__(self, text):
        self.text = text

    def chat(self, system, user):
        return self.text


def test_drafted_conversation_loads_as_draft_turns_with_history(corpus, tmp_path):
    unit = draft_units(corpus, per_section=0, kinds=("conversation", "multi-hop"))[0]
    llm = ScriptedLLM(reply(
        {"kind": "conversation", "turns": ["How do I add an endpoint?", "And how do I check it works?",
                                           "Where does it read its configuration?", "a fourth turn is dropped"]},
        {"kind": "multi-hop", "q": "Can a test call a decorated endpoint without a server?"}))
    res = draft_golden([unit], llm)
    conv, hop = res.items
    assert [t["relevant"] for t in conv["turns"]] == [["app.md#routes"], ["app.md#testing"], ["app.md#settings"]]
    assert all(t["status"] == "draft" and t["tags"] == ["conversation"] for t in conv["turns"])
    assert hop["evidence"] == [["app.md#routes"], ["app.md#testing"]]
    assert res.to_dict()["tags"]["conversation"] == 1 and res.to_dict()["tags"]["multi-hop"] == 1
    path = tmp_path / "drafts.jsonl"
    write_drafts(res.items, path)
    with pytest.raises(GoldenSetError, match="drafts"):
        load_golden(path)  # never scored before review
    golden = load_golden(path, strict=False)
    assert [i.id for i in golden] == [f"{conv['id']}#1", f"{conv['id']}#2", f"{conv['id']}#3", hop["id"]]
    assert golden.items[2].history == ("How do I add an endpoint?", "And how do I check it works?")
    assert golden.items[3].evidence == (("app.md#routes",), ("app.md#testing",))


def test_a_turn_copying_its_section_is_flagged_or_drops_the_conversation(corpus):
    unit = draft_units(corpus, per_section=0, kinds=("conversation",))[1]  # logging, deploy
    llm = ScriptedLLM(reply({"kind": "conversation", "turns": [
        "Where do my app's messages end up?",
        "Is the app deployed as a container image behind a proxy that terminates TLS?"]}))  # copies Deploy
    res = draft_golden([unit], llm, max_overlap=0.5)
    turns = res.items[0]["turns"]
    assert "flag" not in turns[0]["draft"] and turns[1]["draft"]["flag"] == "copies_section" and res.flagged == 1
    dropped = draft_golden([unit], llm, max_overlap=0.5, drop_copies=True)
    assert dropped.items == [] and dropped.dropped == 1


def _conversation_draft(cid, qs, anchors):
    return {"id": cid, "turns": [{"q": q, "relevant": [a], "tags": ["conversation"], "status": "draft",
                                  "draft": {"section": a, "overlap": 0.1}} for q, a in zip(qs, anchors)]}


def test_review_takes_a_conversation_whole_and_edits_it_turn_by_turn(tmp_path):
    drafts = [_conversation_draft("draft-0001", ["How do I add an endpoint?", "and test it?"],
                                  ["app.md#routes", "app.md#testing"]),
              _conversation_draft("draft-0002", ["Logs?", "and deploying?"], ["app.md#logging", "app.md#deploy"]),
              _conversation_draft("draft-0003", ["Pricing?", "per request?"], ["faq.md#pricing", "faq.md#pricing"]),
              _conversation_draft("draft-0004", ["Settings?", "defaults?"], ["app.md#settings", "app.md#settings"])]
    src, out = tmp_path / "drafts.jsonl", tmp_path / "golden.jsonl"
    write_drafts(drafts, src)
    out.write_text(json.dumps({"id": "draft-0002#1", "q": "already here", "relevant": ["app.md#logging"]}) + "\n")
    shown = []
    # accept 1; edit 2 (keep turn 1, new turn 2); reject 3; quit at 4
    answers = iter(["a", "e", "", "And how do I ship it?", "r", "q"])
    counts = review_drafts(src, out, ask=lambda _: next(answers), show=shown.append)
    assert counts == {"accepted": 2, "edited": 1, "rejected": 1, "left": 1, "passed": 0}
    assert "conversation draft-0001 (2 turns)\n  turn 1: How do I add an endpoint?\n    relevant: app.md#routes" \
        in shown[0]
    got = load_golden(out)  # scoreable: no drafts
    assert [(i.id, i.q) for i in got] == [
        ("draft-0002#1", "already here"), ("draft-0001#1", "How do I add an endpoint?"), ("draft-0001#2", "and test it?"),
        ("draft-0002-2#1", "Logs?"), ("draft-0002-2#2", "And how do I ship it?")]
    assert got.items[4].history == ("Logs?",) and got.items[4].conversation == "draft-0002-2"
    assert all(i.status is None and not i.draft for i in got)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [len(x.get("turns", [])) for x in lines] == [0, 2, 2]  # each conversation written back as one line
    left = load_golden(src, strict=False)
    assert [i.id for i in left] == ["draft-0004#1", "draft-0004#2"] and all(i.status == "draft" for i in left)


def test_review_in_the_terminal_reads_a_conversation(tmp_path, monkeypatch, capsys):
    src, out = tmp_path / "drafts.jsonl", tmp_path / "golden.jsonl"
    write_drafts([_conversation_draft("c", ["first?", "then?"], ["app.md#routes", "app.md#testing"])], src)
    monkeypatch.setattr("sys.stdin", io.StringIO("a\n"))
    assert main(["golden", "review", str(src), "--out", str(out)]) == 0
    assert "turn 2: then?" in capsys.readouterr().out
    assert json.loads(out.read_text()) == {"id": "c", "turns": [{"q": "first?", "relevant": ["app.md#routes"],
                                                                 "tags": ["conversation"]},
                                                                {"q": "then?", "relevant": ["app.md#testing"],
                                                                 "tags": ["conversation"]}]}


@pytest.fixture
def server():
    s = FakeLLM([])
    yield s
    s.close()


def test_draft_cli_writes_conversations_and_multihop_for_review(tmp_path, corpus, server, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    server.script = [reply({"kind": "conversation", "turns": ["How do I add an endpoint?", "and check it works?",
                                                              "where is its configuration read?"]},
                           {"kind": "multi-hop", "q": "Can a test call a decorated endpoint directly?"}),
                     reply({"kind": "multi-hop", "q": "Can tests change the settings the app starts with?"}),
                     reply(),
                     reply({"kind": "conversation", "turns": ["Where do messages go?", "and shipping it?"]})]
    out = tmp_path / "drafts.jsonl"
    assert main(["golden", "draft", "--corpus", str(tmp_path / "docs"), "--generator", "openai:m1", "--out",
                 str(out), "--kinds", "multi-hop,conversation", "--base-url", server.url + "/v1"]) == 0
    assert "conversation" in server.requests[0]["body"]["messages"][-1]["content"]
    assert len(server.requests) == 4  # routes, testing and settings ask multi-hop; routes and logging conversation
    said = capsys.readouterr().out
    assert "multi-hop 2" in said and "conversation 2" in said
    golden = load_golden(out, strict=False)
    convs = {i.conversation for i in golden if i.conversation}
    assert len(convs) == 2 and sum(1 for i in golden if i.evidence) == 2
    assert main(["golden", "check", "--corpus", str(tmp_path / "docs"), "--golden", str(out)]) == 0
    assert "more than one search: 2 with evidence groups, 2 conversations (5 turns)" in capsys.readouterr().out
