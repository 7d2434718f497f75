"""The workbench on golden sets for more than one search: a conversation judged turn by turn with its history in
view, written back as one line; a relevant section put in an evidence group (and out of it when it stops being
relevant); conversations imported from `golden draft` and exported as one line. The API through its client, the
page's script in node, and the whole page in chromium where one is installed."""

import json
import re
import subprocess
import sys
from urllib.parse import quote

import pytest

from ragtune import load_corpus, load_golden
from ragtune.label.golden_file import GoldenFile
from tests.helpers import SWEEP_DOCS, free_port, write_files

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from ragtune.label.app import Workbench, create_app  # noqa: E402
from ragtune.label.candidates import Candidates, pool_query  # noqa: E402
from tests.label.test_workbench_page import NODE, _page  # noqa: E402

W = {"X-Ragtune-Workbench": "1"}
CONVERSATION = {"id": "c1", "turns": [
    {"q": "How do I descale the kettle?", "relevant": ["kettle.md#kettle"]},
    {"q": "and how often?", "relevant": []},
    {"q": "what about the fridge shelves?", "relevant": ["fridge.md#cleaning"]}]}
MULTIHOP = {"id": "m1", "q": "Which rack do glasses go on, and how many tablets per wash?",
            "relevant": ["dishwasher.md#loading"]}


@pytest.fixture
def bench(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", SWEEP_DOCS))
    golden = tmp_path / "g.jsonl"
    golden.write_text("".join(json.dumps(x) + "\n" for x in (MULTIHOP, CONVERSATION)))
    b = Workbench(corpus, GoldenFile(golden), Candidates(corpus, systems=["bm25"], depth=3), judge="ana")
    return TestClient(create_app(b), base_url="http://127.0.0.1:8400"), golden


def _url(qid):
    return "/api/question/" + quote(qid, safe="")  # a turn's id holds '#'


def _post(c, qid, what, **body):
    rev = c.get(_url(qid)).json()["rev"]
    return c.post(f"{_url(qid)}/{what}", json={"rev": rev, **body}, headers=W)


def test_turns_are_listed_in_order_with_their_history_and_pooled_with_it(bench):
    c, _ = bench
    rows = c.get("/api/state").json()["questions"]
    assert [(r["id"], r["conversation"], r["turn"]) for r in rows] == [
        ("m1", None, None), ("c1#1", "c1", 0), ("c1#2", "c1", 1), ("c1#3", "c1", 2)]
    q = c.get(_url("c1#2")).json()
    assert q["history"] == ["How do I descale the kettle?"] and q["q"] == "and how often?"
    # "and how often?" alone finds nothing; with the turn before it the pool holds the kettle section
    assert "kettle.md#kettle" in [x["anchor"] for x in q["candidates"]]
    item = load_golden(bench[1], strict=False).items[2]
    assert pool_query(item) == "How do I descale the kettle? and how often?"


def test_judging_a_turn_keeps_the_conversation_one_line(bench):
    c, golden = bench
    r = _post(c, "c1#2", "grade", anchor="kettle.md#kettle", grade=2)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "judged" or r.json()["status"] == "partly judged"
    lines = [json.loads(x) for x in golden.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["m1", "c1"]
    assert lines[1]["turns"][1]["relevant"] == ["kettle.md#kettle"] and "id" not in lines[1]["turns"][1]
    assert lines[1]["turns"][1]["judgments"][0]["by"] == "ana"
    turn = load_golden(golden).items[2]
    assert (turn.id, turn.history, dict(turn.relevant)) == ("c1#2", ("How do I descale the kettle?",),
                                                            {"kettle.md#kettle": 2.0})


def test_evidence_groups_are_set_moved_and_follow_the_grades(bench):
    c, golden = bench
    assert _post(c, "m1", "grade", anchor="dishwasher.md#detergent", grade=2).status_code == 200
    r = _post(c, "m1", "evidence", anchor="dishwasher.md#loading", group=0)
    assert r.json()["evidence"] == [["dishwasher.md#loading"]]
    r = _post(c, "m1", "evidence", anchor="dishwasher.md#detergent", group=1)  # a new group
    assert r.json()["evidence"] == [["dishwasher.md#loading"], ["dishwasher.md#detergent"]]
    item = load_golden(golden).items[0]
    assert item.evidence == (("dishwasher.md#loading",), ("dishwasher.md#detergent",))
    r = _post(c, "m1", "evidence", anchor="dishwasher.md#loading", group=1)  # moved: its old group was emptied
    assert r.json()["evidence"] == [["dishwasher.md#detergent", "dishwasher.md#loading"]]
    r = _post(c, "m1", "evidence", anchor="dishwasher.md#loading", group=1)  # a new group again
    assert r.json()["evidence"] == [["dishwasher.md#detergent"], ["dishwasher.md#loading"]]
    r = _post(c, "m1", "grade", anchor="dishwasher.md#detergent", grade=0)  # no longer relevant: out of its group
    assert r.json()["evidence"] == [["dishwasher.md#loading"]]
    r = _post(c, "m1", "evidence", anchor="dishwasher.md#loading", group=None)
    assert r.json()["evidence"] == []
    assert load_golden(golden).items[0].evidence == ()


@pytest.mark.parametrize("anchor, group, message", [
    ("fridge.md#cleaning", 0, "'fridge.md#cleaning' is not relevant to question 'm1': grade it 1 or 2"),
    ("dishwasher.md#loading", 3, "evidence group 3: question 'm1' has 0 group\\(s\\)"),
    ("dishwasher.md#loading", -1, "evidence group -1"),
])
def test_a_bad_evidence_group_is_refused_in_one_line(bench, anchor, group, message):
    c, golden = bench
    before = golden.read_text()
    r = _post(c, "m1", "evidence", anchor=anchor, group=group)
    assert r.status_code == 400 and re.search(message, r.json()["error"]), r.text
    assert golden.read_text() == before


def test_drafted_conversations_import_as_draft_turns_and_export_as_one_line(bench):
    c, golden = bench
    drafted = {"id": "draft-0002", "turns": [
        {"q": "Where do glasses go?", "relevant": ["dishwasher.md#loading"], "tags": ["conversation"],
         "status": "draft", "draft": {"section": "dishwasher.md#loading", "overlap": 0.2}},
        {"q": "and the tablets?", "relevant": ["dishwasher.md#detergent"], "tags": ["conversation"],
         "status": "draft", "draft": {"section": "dishwasher.md#detergent", "overlap": 0.0}}]}
    r = c.post("/api/questions", json={"questions": [drafted, drafted]}, headers=W)
    assert r.json() == {"added": ["draft-0002#1", "draft-0002#2"], "skipped": 1}
    turns = load_golden(golden, strict=False).items[-2:]
    assert [t.status for t in turns] == ["draft", "draft"] and turns[1].history == ("Where do glasses go?",)
    assert turns[1].draft["proposed"] == ["dishwasher.md#detergent"] and not turns[1].relevant
    assert _post(c, "draft-0002#2", "grade", anchor="dishwasher.md#detergent", grade=2).status_code == 200
    exported = [json.loads(x) for x in c.get("/api/export").text.splitlines()]
    assert [x["id"] for x in exported] == ["draft-0002"] and len(exported[0]["turns"]) == 2
    assert "status" not in exported[0]["turns"][1] and exported[0]["turns"][0]["status"] == "draft"


_STATE = """
const rows = [
  { id: "m1", q: "Which rack, and how many tablets?", status: "judged", tags: [], conversation: null, turn: null,
    history: [], evidence: [], complete: true, pool: 2, graded: 2, added: 0 },
  { id: "c1#1", q: "How do I descale the kettle?", status: "judged", tags: [], conversation: "c1", turn: 0,
    history: [], evidence: [], complete: true, pool: 1, graded: 1, added: 0 },
  { id: "c1#2", q: "and how often?", status: "to judge", tags: [], conversation: "c1", turn: 1,
    history: ["How do I descale the kettle?"], evidence: [], complete: false, pool: 1, graded: 0, added: 0 },
];
responses.push((path, body) => {
  if (path === "/api/state") return { questions: rows, golden: "g.jsonl", retrieval: { ready: true, systems: [], error: null },
    progress: { questions: 3, complete: 2, to_go: 1, minutes_left: null } };
});
"""


@pytest.mark.skipif(NODE is None, reason="needs node to run the page's script")
def test_the_page_shows_the_history_and_cycles_evidence_groups(tmp_path):
    out = _page(tmp_path, _STATE + """
    await loadState();
    const card = (anchor, grade) => ({ anchor, title: anchor, text: "t", location: {}, grade });
    drawQuestion({ ...rows[2], rev: "r0", terms: [], candidates: [card("kettle.md#kettle", null)] });
    const turn = bySelector["#q-turn"].textContent, history = html(bySelector["#q-history"]);
    const listed = html(bySelector["#questions"]);
    let q = { ...rows[0], rev: "r0", terms: [], evidence: [["a.md#a"]],
              candidates: [card("a.md#a", 2), card("b.md#b", 2), card("c.md#c", 0)] };
    responses.unshift((path, body) => {
      if (!path.endsWith("/evidence")) return undefined;
      const groups = q.evidence.map((g) => g.filter((a) => a !== body.anchor));
      if (body.group !== null) { if (body.group === groups.length) groups.push([]); groups[body.group].push(body.anchor); }
      q = { ...q, rev: "r" + requests.length, evidence: groups.filter((g) => g.length) };
      return q;
    });
    drawQuestion(q);
    S.current = "m1"; S.area = "pool";
    const seen = [];
    for (const [focus, times] of [[1, 1], [1, 1], [0, 1], [2, 1]]) {
      S.focus = focus;
      for (let n = 0; n < times; n++) await press("g");
      seen.push({ groups: JSON.stringify(S.q.evidence), said: bySelector["#message"].textContent });
    }
    return { turn, history, listed, seen, note: bySelector["#q-evidence"].textContent,
             sent: requests.filter((r) => r.path.endsWith("/evidence")).map((r) => r.body.group) };
    """)
    assert out["turn"] == "turn 2 of 2 in conversation c1; asked before it:"
    assert out["history"] == "<div><li>How do I descale the kettle?</li></div>"  # the harness draws #q-history as a div
    assert "<span>c1 · turn 2 </span>and how often?" in out["listed"]
    # b joins group 1, then opens group 2; a, alone in group 1... goes to group 2; c is not relevant: refused
    assert [s["groups"] for s in out["seen"]] == ['[["a.md#a","b.md#b"]]', '[["a.md#a"],["b.md#b"]]',
                                                  '[["b.md#b","a.md#a"]]', '[["b.md#b","a.md#a"]]']
    assert out["seen"][3]["said"] == "grade the section 1 or 2 before putting it in an evidence group"
    assert out["sent"] == [0, 1, 1]
    assert out["note"].startswith("evidence: group 1: b.md#b, a.md#a — fully supported when a section of every group")


# -- the whole page in chromium --------------------------------------------------------------------------------

def test_judge_a_conversation_turn_by_turn_and_mark_evidence_in_the_browser(tmp_path, browser):
    pytest.importorskip("uvicorn")
    from tests.label.test_workbench_browser import _open, _shot, _wait

    corpus = write_files(tmp_path / "corpus", SWEEP_DOCS)
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(x) + "\n" for x in (MULTIHOP, CONVERSATION)))
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "ragtune", "label", "--corpus", str(corpus), "--golden",
                             str(golden), "--pool-systems", "bm25", "--depth", "2", "--judge", "ana", "--port",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url + "/api/state", lambda d: d["retrieval"]["ready"], proc=proc)
        page, errors, requests = _open(browser, url)
        # the first question not judged: m1; its relevant section goes into evidence group 1 with g
        page.click("#questions li:has-text('Which rack')")
        page.locator("#pool .card[data-anchor='dishwasher.md#loading']").click()
        page.keyboard.press("g")
        page.wait_for_selector("#pool .card[data-anchor='dishwasher.md#loading'] button.evidence.on")
        assert page.locator("#pool .card[data-anchor='dishwasher.md#loading'] button.evidence").inner_text() == \
            "evidence group 1"
        page.locator("#pool .card[data-anchor='dishwasher.md#detergent']").click()
        page.keyboard.press("2")
        page.wait_for_selector("#pool .card.g2[data-anchor='dishwasher.md#detergent']")
        expect = pytest.importorskip("playwright.sync_api").expect
        button = page.locator("#pool .card[data-anchor='dishwasher.md#detergent'] button.evidence")
        button.click()  # into group 1, beside the loading section
        expect(button).to_have_text("evidence group 1")
        button.click()  # then a group of its own
        expect(button).to_have_text("evidence group 2")
        expect(page.locator("#q-evidence")).to_contain_text(
            "group 1: dishwasher.md#loading · group 2: dishwasher.md#detergent")
        # the conversation, turn by turn: the second turn shows the first above it
        page.click("#questions li:has-text('c1 · turn 2')")
        expect(page.locator("#q-turn")).to_have_text("turn 2 of 3 in conversation c1; asked before it:")
        expect(page.locator("#q-history li")).to_have_text(["How do I descale the kettle?"])
        page.wait_for_selector("#pool .card[data-anchor='kettle.md#kettle']")  # pooled with its history
        page.locator("#pool .card[data-anchor='kettle.md#kettle']").click()
        page.keyboard.press("2")
        page.wait_for_selector("#pool .card.g2[data-anchor='kettle.md#kettle']")
        page.keyboard.press("]")
        expect(page.locator("#q-turn")).to_have_text("turn 3 of 3 in conversation c1; asked before it:")
        expect(page.locator("#q-history li")).to_have_text(["How do I descale the kettle?", "and how often?"])
        _shot(page, "conversation")
        items = load_golden(golden, strict=False).items
        assert items[0].evidence == (("dishwasher.md#loading",), ("dishwasher.md#detergent",))
        assert items[2].relevant == {"kettle.md#kettle": 2.0} and items[2].conversation == "c1"
        assert [json.loads(x)["id"] for x in golden.read_text().splitlines()] == ["m1", "c1"]
        assert errors == [] and all(u.startswith(url) for u in requests)
        page.close()
    finally:
        proc.terminate()
        proc.wait(30)
