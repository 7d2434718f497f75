"""The sweep report's curve of recall against context tokens, in a real headless browser: drawn for a configuration
that searched more than once per question (the links strategy following the corpus's own links), absent from a
sweep of single searches."""

import json
from pathlib import Path

import pytest

from ragtune import load_corpus, load_golden
from ragtune.sweep import parse_grid, sweep
from tests.helpers import write_files, write_jsonl

playwright = pytest.importorskip("playwright.sync_api")
from tests.helpers import CHROMIUM  # noqa: E402
from tests.sweep.test_report_browser import OVERFLOW_JS, OVERLAPS_JS, _open  # noqa: E402
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium binary (apt-get install chromium)")

# the refunds page links to the invoices section, which shares no word with the question: only a second hop finds it
DOCS = {"refunds.md": "# Refunds\n\nRefunds take fourteen days after a cancelled order. The amount shows on the next "
                      "[invoice](billing.md#invoices).\n",
        "billing.md": "# Billing\n\nBilling overview.\n\n## Invoices\n\nInvoices are emailed monthly.\n",
        "shipping.md": "# Shipping\n\nParcels ship within two days; see [returns](returns.md).\n",
        "returns.md": "# Returns\n\nSend a parcel back within thirty days.\n"}
QUESTIONS = [{"id": "m1", "q": "how long do refunds take", "evidence": [["refunds.md#refunds"], ["billing.md#invoices"]]},
             {"id": "m2", "q": "when do parcels ship", "evidence": [["shipping.md#shipping"], ["returns.md#returns"]]}]


def _sweep(tmp, strategies):
    corpus = load_corpus(write_files(tmp / "c", DOCS))
    golden = load_golden(write_jsonl(tmp / "g.jsonl", QUESTIONS))
    grid = {"metric": "evidence@5", "k": [1, 5], "samples": 200, "baseline": {"chunker": "section", "retriever": "bm25"},
            "grid": {"chunker": ["section"], "retriever": ["bm25"], "strategy": strategies}}
    sweep(corpus, golden, parse_grid(grid), tmp / "out", show_progress=False)
    return tmp / "out"


def test_the_report_draws_recall_against_tokens_for_multi_search_configurations(tmp_path, browser):
    out = _sweep(tmp_path, ["single", "links"])
    runs = {json.loads(p.read_text())["label"]: json.loads(p.read_text())["result"] for p in (out / "runs").glob("*.json")}
    links = next(r for label, r in runs.items() if label.endswith(">>links"))
    single = next(r for label, r in runs.items() if not label.endswith(">>links"))
    assert "searches" not in single and links["searches"]["by_search"][1]["questions"] == 1  # m1 followed a link
    assert links["metrics"]["evidence@5"] == 1.0 and single["metrics"]["evidence@5"] == 0.5
    page, errors, requests = _open(browser, out / "report.html")
    assert page.is_visible("#tokens-card")
    assert "evidence@5" in page.locator("#table thead").inner_text()  # the sweep metric, named as the table names it
    assert page.locator("#tokens polyline.tok-curve").count() == 1  # one configuration searched twice
    header = page.locator("#tokens table.by-search thead").inner_text()
    assert "after search 1" in header and "after search 2" in header
    cells = page.locator("#tokens table.by-search tbody td").all_inner_texts()
    recall_after = [float(c.split(" · ")[0]) for c in cells[1:]]
    assert recall_after == [pytest.approx(r["recall"], abs=1e-3) for r in links["searches"]["by_search"]]
    assert page.evaluate(OVERLAPS_JS) == [] and page.evaluate(OVERFLOW_JS) == []
    assert not errors and not requests
    Path(out / "shot.png").write_bytes(page.locator("#tokens-card").screenshot())
    page.close()


def test_a_sweep_of_single_searches_has_no_tokens_card(tmp_path, browser):
    page, errors, _ = _open(browser, _sweep(tmp_path, ["single"]) / "report.html")
    assert page.locator("#tokens-card").count() == 0 and not errors
    page.close()
