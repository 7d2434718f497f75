"""One meaning of "judged" in the workbench: a question is judged when every section of its pool has a grade, or
when it is marked unanswerable. The header and the sidebar count that same thing; a listed anchor shows as the
top grade; what judging added to a question is said on its page.

The API half runs everywhere; the page half drives Debian's chromium with Playwright where it is installed."""

from __future__ import annotations

import re
import threading
import time

import pytest

from ragtune import load_corpus, load_golden
from tests.helpers import SWEEP_DOCS, free_port, write_files, write_jsonl

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from ragtune.label.app import Workbench, create_app  # noqa: E402
from ragtune.label.candidates import Candidates  # noqa: E402
from ragtune.label.golden_file import GoldenFile  # noqa: E402

W = {"X-Ragtune-Workbench": "1"}
HOLES = ["washing-machine.md#washing-machine", "dishwasher.md#loading"]


def _bench(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", SWEEP_DOCS))
    golden = write_jsonl(tmp_path / "g.jsonl", [
        {"id": "q1", "q": "tablets", "relevant": ["dishwasher.md#detergent"]},
        {"id": "q2", "q": "Can I pay with bitcoin?", "relevant": []},  # accepted as unanswerable
        {"id": "q3", "q": "popcorn", "relevant": [], "status": "draft"}])
    pool = {"q1": HOLES, "q2": HOLES[:1], "q3": HOLES[:1]}
    bench = Workbench(corpus, GoldenFile(golden), Candidates(corpus, systems=["bm25"], depth=5, pool=pool),
                      judge="ana", pool_name="pool.jsonl")
    return bench, golden


def _grade(c, qid, anchor, grade):
    rev = c.get(f"/api/question/{qid}").json()["rev"]
    r = c.post(f"/api/question/{qid}/grade", json={"rev": rev, "anchor": anchor, "grade": grade}, headers=W)
    assert r.status_code == 200, r.text
    return r.json()


def _counted(state):
    rows = state["questions"]
    return state["progress"]["complete"], sum(r["complete"] for r in rows), \
        sum(r["status"] in ("judged", "unanswerable") for r in rows)


def test_judged_means_every_pool_section_graded_and_is_counted_once(tmp_path):
    bench, golden = _bench(tmp_path)
    c = TestClient(create_app(bench), base_url="http://127.0.0.1:8400")
    st = c.get("/api/state").json()
    rows = {r["id"]: r for r in st["questions"]}
    # q1 is accepted (its author listed an anchor) but two sections of its pool have no grade: not judged
    assert (rows["q1"]["status"], rows["q1"]["complete"], rows["q1"]["graded"], rows["q1"]["pool"]) == \
        ("partly judged", False, 1, 3)
    assert rows["q2"]["status"] == "unanswerable" and rows["q2"]["complete"]
    assert _counted(st) == (1, 1, 1)
    q = c.get("/api/question/q1").json()
    assert {x["anchor"]: x["grade"] for x in q["candidates"]}["dishwasher.md#detergent"] == 2  # a list: the top
    _grade(c, "q1", HOLES[0], 0)
    q = _grade(c, "q1", HOLES[1], 2)
    assert (q["status"], q["complete"], q["authored"], q["added"]) == ("judged", True, 1, 1)
    assert _counted(c.get("/api/state").json()) == (2, 2, 2)
    item = load_golden(golden, strict=False).items[0]
    assert item.relevant == {"dishwasher.md#detergent": 2.0, HOLES[1]: 2.0} and item.added == (HOLES[1],)


@pytest.fixture
def served(tmp_path):
    uvicorn = pytest.importorskip("uvicorn")
    bench, golden = _bench(tmp_path)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(bench), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", bench
    server.should_exit = True
    thread.join(10)


def test_the_header_and_the_sidebar_count_the_same_judged_questions(served, browser):
    url, bench = served
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready='1']")
    expect = pytest.importorskip("playwright.sync_api").expect
    expect(page.locator("#progress-text")).to_contain_text("1 of 3 judged · 2 to go")
    expect(page.locator("#counts")).to_have_text("3 questions: 1 judged (1 unanswerable), 1 partly judged, "
                                                 "1 to judge, 0 draft")
    page.click("#questions li[data-id='q1']")
    expect(page.locator("#q-status")).to_have_text("partly judged")
    for anchor, grade in ((HOLES[0], "0"), (HOLES[1], "2")):
        page.click(f"#pool .card[data-anchor='{anchor}'] .grades button.v{grade}")
        expect(page.locator(f"#pool .card[data-anchor='{anchor}']")).to_have_class(re.compile(rf"\bg{grade}\b"))
    expect(page.locator("#progress-text")).to_contain_text("2 of 3 judged · 1 to go")
    expect(page.locator("#counts")).to_have_text("3 questions: 2 judged (1 unanswerable), 0 partly judged, "
                                                 "1 to judge, 0 draft")
    expect(page.locator("#q-status")).to_have_text("judged")
    expect(page.locator("#q-added")).to_have_text("1 relevant section added by judging: recall is now measured "
                                                  "against 2 anchors, not the 1 authored, so it can fall with "
                                                  "nothing else changed")
    page.click("#status-filter button[data-status='judged']")
    assert sorted(page.locator("#questions li").evaluate_all("els => els.map(e => e.dataset.id)")) == ["q1", "q2"]
    assert errors == []
