"""The sweep report in a real headless browser: no console errors, charts drawn, sorting, failure rows expand.

Needs Debian's chromium (``.ci/run`` installs it); skipped with a reason elsewhere.
"""

import os
import shutil

import pytest

from ragtune import load_corpus, load_golden
from ragtune.sweep import parse_grid, sweep
from tests.helpers import write_files, write_jsonl
from tests.sweep.test_runner import DOCS, GRID, QUESTIONS

playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = os.environ.get("RAGTUNE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium binary (apt-get install chromium)")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    corpus = load_corpus(write_files(tmp / "c", DOCS))
    golden = load_golden(write_jsonl(tmp / "g.jsonl", [{"id": i, "q": q, "relevant": r} for i, q, r in QUESTIONS]))
    sweep(corpus, golden, parse_grid(GRID), tmp / "out", show_progress=False)
    return tmp / "out" / "report.html"


def test_report_renders_sorts_and_expands(report):
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        page = browser.new_page()
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        requests = []
        page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        page.goto(report.as_uri())
        page.wait_for_selector("#table table")
        assert errors == [] and requests == []
        # charts drawn
        assert page.locator("#curves svg polyline").count() >= 2
        assert page.locator("#headroom svg rect").count() >= 2
        assert page.locator("#scatter svg circle").count() == 10
        assert page.locator("#heat svg rect").count() >= 4
        # sorting: click recall@5 twice -> descending; values in the first data column follow
        col = page.locator("#table th", has_text="recall@5")
        col.click()
        first = [float(t) for t in page.locator("#table tbody tr td:nth-child(3)").all_inner_texts()]
        assert first == sorted(first, reverse=True)
        page.locator("#table th", has_text="recall@5").click()
        second = [float(t) for t in page.locator("#table tbody tr td:nth-child(3)").all_inner_texts()]
        assert second == sorted(second)
        # failure explorer: expand the first listed question and see retrieved text
        page.uncheck("#onlyfail")
        q = page.locator("#explorer .q").first
        assert not q.locator(".hits").is_visible()
        q.locator(".head").click()
        assert q.locator(".hits").is_visible()
        assert q.locator(".hit .snip").first.inner_text().strip() != ""
        assert errors == []
        browser.close()
