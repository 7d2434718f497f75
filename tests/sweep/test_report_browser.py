"""The sweep report in a real headless browser: no console errors, charts drawn, sorting, failure rows expand.

Needs Debian's chromium (``.ci/run`` installs it); skipped with a reason elsewhere.
"""

import os
import shutil

import pytest

from ragtune import load_corpus, load_golden
from ragtune.sweep import parse_grid, sweep
from tests.helpers import SWEEP_DOCS, SWEEP_GRID, SWEEP_QUESTIONS, golden_rows, write_files, write_jsonl

playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = os.environ.get("RAGTUNE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium binary (apt-get install chromium)")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    corpus = load_corpus(write_files(tmp / "c", SWEEP_DOCS))
    golden = load_golden(write_jsonl(tmp / "g.jsonl", golden_rows(SWEEP_QUESTIONS)))
    sweep(corpus, golden, parse_grid(SWEEP_GRID), tmp / "out", show_progress=False)
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
        assert page.locator("#scatter svg circle").count() == 6
        assert page.locator("#heat svg rect").count() >= 2  # fixed: sizes 8 and 40 at overlap 0
        # sorting: click recall@1 (the first data column) -> descending, again -> ascending
        col = page.locator("#table th", has_text="recall@1")
        col.click()
        first = [float(t) for t in page.locator("#table tbody tr td:nth-child(3)").all_inner_texts()]
        assert first == sorted(first, reverse=True) and first[0] > first[-1]
        page.locator("#table th", has_text="recall@1").click()
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
