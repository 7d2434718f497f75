"""`ragtune label` in a real headless browser (Playwright driving Debian's chromium, as the report test does).

From no golden set: add a question and judge its pool by keyboard only, find and add a section the pool missed
by search, mark a question unanswerable, import two questions from a telemetry log a real `ragtune serve` wrote,
reload and find everything saved; two tabs on one question conflict without loss; the page loads nothing from
the network. Screenshots go to ``out/label-screenshots/`` (docs/guide/labeling.md shows them).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ragtune import load_golden
from ragtune.cli import main
from tests.helpers import SWEEP_DOCS, free_port, write_files

playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect
pytest.importorskip("uvicorn")
pytest.importorskip("sklearn")
from tests.helpers import CHROMIUM  # noqa: E402
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium binary (apt-get install chromium)")
SHOTS = Path(__file__).resolve().parents[2] / "out" / "label-screenshots"
KETTLE = "How do I descale the kettle?"


def _get(url, timeout=5.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def _post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def _wait(url, ok, timeout=180.0, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the server exited with {proc.returncode}")
        try:
            data = _get(url)
            if ok(data):
                return data
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{url} did not become ready in {timeout:g} s")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The corpus, a telemetry log written by a real `ragtune serve`, and `ragtune label` serving on it."""
    tmp = tmp_path_factory.mktemp("label")
    corpus = write_files(tmp / "corpus", SWEEP_DOCS)
    store = tmp / "store"
    assert main(["index", "build", "--store", str(store), "--corpus", str(corpus), "--retriever", "bm25"]) == 0
    port = free_port()
    serve = subprocess.Popen([sys.executable, "-m", "ragtune", "serve", "--store", str(store), "--port", str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(f"http://127.0.0.1:{port}/health", lambda d: True, proc=serve)
        for q in [KETTLE, "Can I pay with bitcoin?", "can I pay with bitcoin", "When does the popcorn stall open?"]:
            _post(f"http://127.0.0.1:{port}/answer", {"query": q})
    finally:
        serve.send_signal(signal.SIGINT)  # a clean stop: the log is flushed
        serve.wait(60)
    log = store / "telemetry.sqlite"
    golden = tmp / "golden.jsonl"
    port = free_port()
    err = open(tmp / "label.err", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "ragtune", "label", "--corpus", str(corpus), "--golden",
                             str(golden), "--log", str(log), "--pool-systems", "bm25,dense", "--depth", "2",
                             "--judge", "ana", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url + "/api/state", lambda d: d["retrieval"]["ready"], proc=proc)
        yield {"url": url, "golden": golden, "corpus": corpus, "proc": proc}
    finally:
        proc.terminate()
        proc.wait(30)
        err.seek(0)
        print(err.read()[-2000:])



def _open(browser, url):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready='1']")
    return page, errors, requests


def _focused(page):
    return page.locator("#pool .card.focus, #results .card.focus").get_attribute("data-anchor")


def _shot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def test_from_no_golden_set_to_judged_questions_by_keyboard(site, browser):
    page, errors, requests = _open(browser, site["url"])
    assert page.locator("#empty").is_visible()
    _shot(page, "empty")
    keys = 0

    def press(key):
        nonlocal keys
        keys += 1
        page.keyboard.press(key)

    # a question, then its pool judged by keyboard alone: 2 for the kettle section, 0 for the rest
    press("a")
    page.keyboard.type(KETTLE)
    press("Enter")
    page.wait_for_selector("#pool .card.focus")
    n = page.locator("#pool .card").count()
    assert 2 <= n <= 4  # the union of BM25's and dense's top 2, de-duplicated
    for _ in range(n):
        anchor = _focused(page)
        graded = page.locator("#pool .card[class*=' g']").count()
        press("2" if anchor == "kettle.md#kettle" else "0")
        expect(page.locator("#pool .card[class*=' g']")).to_have_count(graded + 1)
    assert page.locator("#pool-count").inner_text() == f"{n} of {n} graded"
    _shot(page, "judging")

    # the pool missed the fridge's cleaning section: find it and add it
    press("/")
    page.keyboard.type("wipe the shelves with warm soapy water")
    press("Enter")
    page.wait_for_selector("#results .card.focus")
    assert _focused(page) == "fridge.md#cleaning"
    _shot(page, "search")
    press("1")
    page.wait_for_selector("#pool .card.g1[data-anchor='fridge.md#cleaning']")

    # a question the corpus cannot answer
    press("a")
    page.keyboard.type("Do you sell televisions?")
    press("Enter")
    expect(page.locator("#q-text")).to_contain_text("televisions")
    press("u")
    expect(page.locator("#q-status")).to_have_text("unanswerable")

    # the questions users asked: the kettle one is already in the set; the two others are imported
    press("i")
    page.click("#import-tabs button[data-tab='traffic']")
    page.wait_for_selector("#traffic fieldset", timeout=90_000)  # the server embeds and clusters the log
    boxes = page.locator("#traffic input[type=checkbox]")
    texts = [page.locator("#traffic label").nth(i).inner_text() for i in range(boxes.count())]
    assert any("already in the set" in t and "kettle" in t for t in texts)
    assert any("bitcoin" in t and "asked 2" in t for t in texts)  # the two spellings merged
    for i in range(boxes.count()):
        if boxes.nth(i).is_enabled():
            boxes.nth(i).check()
    _shot(page, "import")
    page.click("#import-traffic-go")
    expect(page.locator("#import-result")).to_have_text(re.compile(r"^added 2,"))
    page.keyboard.press("Escape")

    # reload: everything is there, from the file
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    assert page.locator("#questions li").count() == 4
    golden = load_golden(site["golden"], strict=False)
    by_q = {i.q: i for i in golden}
    kettle = by_q[KETTLE]
    assert kettle.status is None and kettle.relevant == {"kettle.md#kettle": 2.0, "fridge.md#cleaning": 1.0}
    assert len(kettle.not_relevant) == n - 1 and {j.by for j in kettle.judgments} == {"ana"}
    assert by_q["Do you sell televisions?"].status is None and not by_q["Do you sell televisions?"].relevant
    traffic = [i for i in golden if "traffic" in i.tags]
    assert len(traffic) == 2 and all(i.status == "draft" for i in traffic)
    assert next(i for i in traffic if "bitcoin" in i.q).draft["asked"] == 2
    assert main(["golden", "check", "--corpus", str(site["corpus"]), "--golden", str(site["golden"])]) == 0
    assert errors == []
    assert all(u.startswith(site["url"]) for u in requests), [u for u in requests if not u.startswith(site["url"])]
    assert keys <= 30, keys
    page.close()


def test_two_tabs_on_one_question_conflict_and_lose_nothing(site, browser):
    one, errors, _ = _open(browser, site["url"])
    two, _, _ = _open(browser, site["url"])
    for page in (one, two):
        page.click(f"#questions li:has-text('{KETTLE}')")
        expect(page.locator("#q-text")).to_have_text(KETTLE)
        page.locator("#pool .card[data-anchor='kettle.md#kettle']").click()
    one.keyboard.press("1")  # tab one: the kettle section only partly answers
    one.wait_for_selector("#pool .card.g1[data-anchor='kettle.md#kettle']")
    two.keyboard.press("0")  # tab two, on the question as it loaded it
    expect(two.locator("#message")).to_contain_text("changed elsewhere")
    _shot(two, "conflict")
    item = next(i for i in load_golden(site["golden"], strict=False) if i.q == KETTLE)
    assert item.relevant["kettle.md#kettle"] == 1.0  # tab one's judgment stands
    # tab two now shows the question as it is, and its judgment can be made again, on purpose
    two.wait_for_selector("#pool .card.g1[data-anchor='kettle.md#kettle']")
    two.locator("#pool .card[data-anchor='kettle.md#kettle']").click()
    two.keyboard.press("2")
    two.wait_for_selector("#pool .card.g2[data-anchor='kettle.md#kettle']")
    two.keyboard.press("z")  # undo: back to tab one's grade
    two.wait_for_selector("#pool .card.g1[data-anchor='kettle.md#kettle']")
    item = next(i for i in load_golden(site["golden"], strict=False) if i.q == KETTLE)
    assert item.relevant["kettle.md#kettle"] == 1.0
    assert errors == []


def test_the_source_link_shows_the_section_in_its_document(site, browser):
    page, errors, requests = _open(browser, site["url"])
    src = browser.new_page()
    src.goto(site["url"] + "/source?anchor=" + "fridge.md%23cleaning")
    src.wait_for_selector("body[data-ready='1']")
    assert src.locator("#target").inner_text().startswith("## Cleaning")
    assert "Keep the dial" in src.locator("#doc").inner_text()  # the whole document around it
    assert errors == []


def test_import_a_text_file_and_accept_a_draft_with_its_section_in_view(site, browser, tmp_path):
    page, errors, requests = _open(browser, site["url"])
    questions = tmp_path / "questions.txt"
    questions.write_text(f"{KETTLE}\nHow long is delivery free?\n\n")  # one already in the set
    page.keyboard.press("i")
    page.set_input_files("#import-text-file", str(questions))
    expect(page.locator("#import-text")).to_have_value(re.compile("delivery free"))
    page.click("#import-text-go")
    expect(page.locator("#import-result")).to_have_text("added 1, 1 already in the set")
    page.click("#import-tabs button[data-tab='drafts']")
    draft = {"id": "d1", "q": "Where do glasses go in the dishwasher?", "relevant": ["dishwasher.md#loading"],
             "status": "draft", "draft": {"section": "dishwasher.md#loading", "kind": "paraphrase"}}
    page.fill("#import-drafts", json.dumps(draft))
    page.click("#import-drafts-go")
    expect(page.locator("#import-result")).to_have_text("added 1, 0 already in the set")
    page.keyboard.press("Escape")
    page.click("#questions li:has-text('glasses go in the dishwasher')")
    expect(page.locator("#q-status")).to_have_text("draft")
    expect(page.locator("#pool .card[data-anchor='dishwasher.md#loading'] .proposed")).to_have_text(
        "proposed by the drafter")
    page.keyboard.press("y")  # accept the proposal: the person's grade 2
    # accepted; judged once every section of its pool is graded
    expect(page.locator("#q-status")).to_have_text(re.compile(r"^(partly )?judged$"))
    item = next(i for i in load_golden(site["golden"], strict=False) if i.id == "d1")
    assert item.relevant == {"dishwasher.md#loading": 2.0} and item.judgments[0].by == "ana"
    assert any(i.q == "How long is delivery free?" and i.status == "draft"
               for i in load_golden(site["golden"], strict=False))
    assert errors == [] and all(u.startswith(site["url"]) for u in requests)
