"""The sweep report in a real headless browser, as a reader sees it at 900 px wide.

Checks: no console errors or network requests; charts drawn with axes and legends;
identical recall@k curves merged under one legend entry that lists every member,
the baseline drawn on top; no two text boxes overlapping in any chart; one colour
scale for every heatmap, with the value printed in each cell; no horizontal
scrolling; intervals on every mean and delta; the power line; end-to-end latency
with its stages; sorting; the failure explorer. Screenshots of the page and of
each card go to ``out/report-screenshots/`` (a CI artifact).

Needs Debian's chromium (``.ci/run`` installs it); skipped with a reason elsewhere.
"""

import json
import re
from pathlib import Path

import pytest

from ragtune import load_corpus, load_golden
from ragtune.sweep import parse_grid, sweep
from tests.helpers import SWEEP_DOCS, SWEEP_GRID, SWEEP_QUESTIONS, golden_rows, write_files, write_jsonl

playwright = pytest.importorskip("playwright.sync_api")
from tests.helpers import CHROMIUM  # noqa: E402
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium binary (apt-get install chromium)")
SHOTS = Path(__file__).resolve().parents[2] / "out" / "report-screenshots"

# two sized strategies (two heatmaps), identical configurations (prefix makes no difference to some),
# BM25 next to dense retrieval (whose latency includes embedding the query)
RICH_GRID = {"metric": "recall@1", "k": [1, 5, 10], "samples": 500,
             "baseline": {"chunker": "fixed", "size": 8, "overlap": 0, "prefix": False, "retriever": "bm25"},
             "grid": {"chunker": ["fixed", "markdown"], "size": [8, 40, 400], "overlap": [0],
                      "prefix": [False, True], "retriever": ["bm25", "dense"]}}


def _sweep(tmp, grid):
    corpus = load_corpus(write_files(tmp / "c", SWEEP_DOCS))
    golden = load_golden(write_jsonl(tmp / "g.jsonl", golden_rows(SWEEP_QUESTIONS)))
    result = sweep(corpus, golden, parse_grid(grid), tmp / "out", show_progress=False)
    return result, tmp / "out" / "report.html"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return _sweep(tmp_path_factory.mktemp("report"), SWEEP_GRID)[1]


@pytest.fixture(scope="module")
def rich(tmp_path_factory):
    return _sweep(tmp_path_factory.mktemp("rich"), RICH_GRID)



def _open(browser, path, width=900):
    page = browser.new_page(viewport={"width": width, "height": 1000})
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    page.goto(path.as_uri())
    page.wait_for_selector("#table table")
    return page, errors, requests


# pairs of text elements (within one svg) whose boxes overlap by more than a sliver
OVERLAPS_JS = """() => {
  const out = [];
  for (const svg of document.querySelectorAll('svg')) {
    const boxes = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim())
      .map(t => [t.textContent, t.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, r] = boxes[i], [b, s] = boxes[j];
      const w = Math.min(r.right, s.right) - Math.max(r.left, s.left), h = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
      if (w > 0.5 && h > 0.5) out.push(`${svg.closest('section').querySelector('h2').textContent}: "${a}" / "${b}"`);
    }
  }
  return out;
}"""

# elements whose content is wider than their box (scrolled or clipped), and anything past the right edge
OVERFLOW_JS = """() => {
  const out = [], vw = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > vw) out.push(`page ${document.documentElement.scrollWidth} > ${vw}`);
  for (const e of document.querySelectorAll('section.card, section.card *')) {
    if (e.closest('details:not([open])') && e.tagName !== 'DETAILS' && e.tagName !== 'SUMMARY') continue;
    const r = e.getBoundingClientRect();
    if (r.width && r.right > vw + 0.5) out.push(`${e.tagName}.${e.className.baseVal ?? e.className} ends at ${r.right}`);
    if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible') out.push(`${e.tagName} scrolls`);
  }
  return out;
}"""


def test_report_renders_sorts_and_expands(report, browser):
    page, errors, requests = _open(browser, report)
    assert errors == [] and requests == []
    assert page.locator("#curves svg polyline.curve").count() >= 2
    assert page.locator("#headroom svg rect").count() >= 2
    assert page.locator("#scatter svg circle.pt").count() == 6
    assert page.locator("#heat svg rect").count() >= 2  # fixed: sizes 8 and 40 at overlap 0
    # sorting: click recall@1 (the first data column) -> descending, again -> ascending
    value = "#table tbody tr td:nth-child(3)"
    page.locator("#table th", has_text="recall@1").click()
    first = [float(t.split()[0]) for t in page.locator(value).all_inner_texts()]
    assert first == sorted(first, reverse=True) and first[0] > first[-1]
    page.locator("#table th", has_text="recall@1").click()
    second = [float(t.split()[0]) for t in page.locator(value).all_inner_texts()]
    assert second == sorted(second)
    # failure explorer: expand the first listed question and see retrieved text
    page.uncheck("#onlyfail")
    q = page.locator("#explorer .q").first
    assert not q.locator(".hits").is_visible()
    q.locator(".head").click()
    assert q.locator(".hits").is_visible()
    assert q.locator(".hit .snip").first.inner_text().strip() != ""
    assert errors == []
    page.close()


def test_report_reads_right_at_900px(rich, browser):
    result, path = rich
    data = json.loads((path.parent / "results.json").read_text())
    configs = data["configs"]
    page, errors, requests = _open(browser, path)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "report-900.png"), full_page=True)
    for i, card in enumerate(page.locator("section.card").all()):
        slug = re.sub(r"[^a-z0-9]+", "-", card.locator("h2").inner_text().lower()).strip("-")
        card.screenshot(path=str(SHOTS / f"card-{i}-{slug}.png"))
    assert errors == [] and requests == []

    # nothing scrolls out of view, no text box overlaps another
    assert page.evaluate(OVERFLOW_JS) == []
    assert page.evaluate(OVERLAPS_JS) == []

    # axes and legends
    for chart in ("#curves", "#scatter"):
        assert page.locator(f"{chart} svg text.axis-title").count() == 2
        assert page.locator(f"{chart} svg text.tick").count() >= 3
        assert page.locator(f"{chart} .legend .item").count() >= 2
    assert "end to end" in page.locator("#scatter svg text.axis-title").first.text_content()

    # recall@k curves: one line per distinct curve, every configuration named in the legend, baseline on top
    curves = {tuple(c["metrics"][f"recall@{k}"] for k in data["ks"]) for c in configs}
    assert 1 < len(curves) < len(configs) <= 30  # the fixture has identical configurations to merge
    assert page.locator("#curves svg polyline.curve").count() == min(len(curves), 8)
    legend = page.locator("#curves .legend").inner_text()
    if len(curves) <= 8:
        assert all(c["label"] in legend for c in configs)
    assert page.locator("#curves svg polyline.curve").last.get_attribute("stroke-dasharray")
    assert page.locator("#curves svg g.ebar").count() >= len(data["ks"])  # error bars

    # heatmaps: one colour per value across all maps, and the value printed in every cell
    cells = page.evaluate("""() => [...document.querySelectorAll('#heat svg.heatmap')].flatMap((svg, m) =>
        [...svg.querySelectorAll('g.cell')].map(g => ({map: m, value: +g.dataset.value,
          fill: g.querySelector('rect').getAttribute('fill'), text: g.querySelector('text.v').textContent,
          ci: g.querySelector('text.ci').textContent})))""")
    assert len({c["map"] for c in cells}) == 2
    fill_of = {}
    for c in cells:
        assert c["text"] == f"{c['value']:.3f}"
        assert re.fullmatch(r"\d\.\d\d–\d\.\d\d", c["ci"])
        assert fill_of.setdefault(c["value"], c["fill"]) == c["fill"]
    shared = [v for v in fill_of if len({c["map"] for c in cells if c["value"] == v}) == 2]
    assert shared, "the fixture should give two maps a cell of the same value"
    assert len(set(fill_of.values())) == len(fill_of)  # different values, different colours
    darkness = [sum(int(x) for x in re.findall(r"\d+", fill_of[v])) for v in sorted(fill_of)]
    assert darkness == sorted(darkness, reverse=True)  # higher recall, darker cell, in every map

    # intervals on every mean and every delta of the ranked table
    rows = page.locator("#table tbody tr")
    assert rows.count() == len(configs)
    heads = page.locator("#table th").all_inner_texts()
    mean_cols = [i for i, h in enumerate(heads) if h.split(" ")[0].replace("\n", "").startswith(("recall", "mrr", "ndcg", "ctx"))]
    assert len(mean_cols) == 6
    for r in range(rows.count()):
        cells_ = rows.nth(r).locator("td")
        for i in mean_cols:
            assert re.search(r"\n\d+(\.\d\d)?–\d+(\.\d\d)?$", cells_.nth(i).inner_text()), heads[i]
        delta = cells_.nth(heads.index("Δ")).inner_text()
        assert delta == "" or re.search(r"\[[−+±]\d\.\d\d, [−+±]\d\.\d\d\]$", delta)
    assert "bootstrap intervals" in page.locator("#rule").inner_text()
    assert page.locator("#interval-note").inner_text() == f"Under Δ: {result.interval_note()}."
    assert f"ties broken by {result.tie_metric}" in page.locator("#rule").inner_text()
    # nothing is significant with ten questions: the line says how many it would take
    assert result.significant == []
    note = page.locator("#power-note")
    assert note.is_visible() and note.inner_text() == result.power_note()
    assert re.search(r"would take about \d+ questions", note.inner_text())

    # latency: stages in the table, dense slower than BM25 because the query is embedded
    page.locator("#stages summary").click()
    stage_heads = page.locator("#stages details table").locator("th").all_inner_texts()
    assert any("embed_query" in h for h in stage_heads)
    by_retriever = {}
    for c in configs:
        by_retriever.setdefault(c["config"]["retriever"], []).append(c["stats"]["latency_ms"]["p50"])
    assert min(by_retriever["dense"]) > max(by_retriever["bm25"])
    assert page.locator("#table td[title*='embed_query']").count() == len(by_retriever["dense"])
    page.close()


def test_report_at_a_wide_window_has_no_overlaps(rich, browser):
    page, errors, _ = _open(browser, rich[1], width=1400)
    page.screenshot(path=str(SHOTS / "report-1400.png"), full_page=True)
    assert errors == [] and page.evaluate(OVERFLOW_JS) == [] and page.evaluate(OVERLAPS_JS) == []
    page.close()


def test_a_metric_added_at_run_time_is_named_and_ordered_by_the_page(tmp_path, browser):
    """The page reads names, labels and direction from the metric table in its data: a lower-is-better metric
    registered at run time gets its label as column header and the darker heatmap cells for fewer."""
    import numpy as np

    from ragtune.evaluate.table import Metric, register_metric, unregister_metric

    def misses(j, k):
        return float(np.count_nonzero(j.first_ranks > k))

    register_metric(Metric("misses", misses, bounded=False, higher_is_better=False, label="missed"))
    try:
        result, path = _sweep(tmp_path, {**SWEEP_GRID, "metric": "misses@1"})
        values = [result.value(r) for r in result.ranked()]
    finally:
        unregister_metric("misses")
    assert values == sorted(values) and len(set(values)) > 1  # fewest misses first
    page, errors, _ = _open(browser, path)
    assert errors == []
    heads = [h.replace("\n", "").replace(" ▲", "").replace(" ▼", "") for h in page.locator("#table th").all_inner_texts()]
    assert "missed@1" in heads and "ctx tokens@1" in heads and "recall@1" in heads
    assert "ranked by misses@1 (lower is better)" in page.locator("#rule").inner_text()
    cells = page.evaluate("""() => [...document.querySelectorAll('#heat g.cell')].map(g => ({value: +g.dataset.value,
        fill: g.querySelector('rect').getAttribute('fill'), text: g.querySelector('text.v').textContent}))""")
    fill_of = {c["value"]: c["fill"] for c in cells}
    assert len(fill_of) > 1 and all(c["text"] == f"{c['value']:.0f}" for c in cells)  # a count: no decimals
    darkness = [sum(int(x) for x in re.findall(r"\d+", fill_of[v])) for v in sorted(fill_of)]
    assert darkness == sorted(darkness)  # fewer misses, darker cell
    page.close()
