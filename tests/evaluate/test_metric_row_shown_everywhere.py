"""The default tables read their columns from the metric table: a row registered at run time appears in eval's
figures and per-tag table, the sweep table, the sweep report and compare's default metrics, with no other edit;
the built-in rows give the columns each table has always shown."""

import json
import re

import numpy as np
import pytest

from ragtune import Chunk, Hit, Ranking, evaluate, load_corpus, load_golden
from ragtune.errors import ConfigError
from ragtune.evaluate import compare
from ragtune.evaluate.compare import default_metrics
from ragtune.evaluate.render import render_eval
from ragtune.evaluate.table import Metric, register_metric, shown_keys, unregister_metric
from ragtune.sweep import parse_grid, summarize
from ragtune.sweep.report import render_report
from tests.helpers import write_jsonl

BASE = {"chunker": "fixed", "size": 64, "overlap": 8, "retriever": "bm25"}
KS = (1, 10)


def first_hit_is_top(j, k):
    """1 when rank 1 covers a relevant anchor and one is covered in the top k."""
    return float(bool(j.rank_hits[:1].any()) and bool(np.any(j.first_ranks <= k)))


@pytest.fixture
def top_row():
    row = register_metric(Metric("first_hit_is_top", first_hit_is_top, label="top hit",
                                 description="rank 1 covers a relevant anchor"))
    yield row
    unregister_metric(row.name)


class FixedRetriever:
    """The same chunks for every query; ``odd``: other chunks for the questions whose text ends in an odd digit."""

    name = "fixed"

    def __init__(self, chunks, odd=None):
        self.chunks, self.odd = chunks, odd

    def search(self, query, k=10):
        chunks = self.odd if self.odd is not None and int(query[-1]) % 2 else self.chunks
        return Ranking(query, tuple(Hit(c, 1.0 / (i + 1)) for i, c in enumerate(chunks[:k])), {"fixed": 0.001})


def _chunk(corpus, doc_id, needle, length=10):
    start = corpus[doc_id].text.index(needle)
    return Chunk(id=f"{doc_id}@{start}", doc_id=doc_id, text="x", start=start, end=start + length, embed_text="",
                 tokens=length)


def _two_results(md_corpus, tmp_path):
    corpus = load_corpus(md_corpus)
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [
        {"id": f"q{i}", "q": f"refunds {i}", "relevant": ["guide/billing.md#refunds"], "tags": ["billing"]}
        for i in range(6)]))
    refunds = _chunk(corpus, "guide/billing.md", "Refunds are")
    miss = _chunk(corpus, "faq.md", "Account deletion")
    good = evaluate(FixedRetriever([miss, refunds], odd=[refunds, miss]), golden, corpus, ks=KS)
    bad = evaluate(FixedRetriever([miss, refunds]), golden, corpus, ks=KS)
    return good, bad


def _sweep(good, bad):
    grid = parse_grid({"metric": "recall@1", "k": list(KS), "samples": 200, "baseline": BASE,
                       "grid": {"size": [64, 128]}})

    def rec(key, res):
        return {"key": key, "label": key, "spec": {"chunker": "fixed", "retriever": "bm25"},
                "stats": {"latency_ms": {"p50": 1.0, "p95": 2.0}, "chunks": 3}, "result": res.to_dict()}

    return summarize(grid, [rec(grid.baseline.key, bad), rec("other", good)])


def _report_columns(html):
    data = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1)
    return json.loads(data.replace("<\\/", "</"))["columns"]


def _shown(good, bad):
    """Where the four default tables put their columns, as text: eval's, the sweep's, the report's, compare's."""
    text = render_eval(good)
    sweep = _sweep(good, bad)
    report = compare({"bad": bad, "good": good}, samples=200)
    return text, sweep.table(), _report_columns(render_report(sweep)), report


def test_a_registered_row_appears_in_eval_the_sweep_table_the_report_and_compare(top_row, md_corpus, tmp_path):
    good, bad = _two_results(md_corpus, tmp_path)
    text, table, report_cols, report = _shown(good, bad)

    # eval: a line of its own under the built-in figures, and a column of the per-tag table
    assert "first_hit_is_top@1 0.500  first_hit_is_top@10 0.500" in text.splitlines()
    head = next(line for line in text.splitlines() if line.startswith("tag"))
    assert head.split()[-2:] == ["first_hit_is_top@1", "first_hit_is_top@10"]
    # the sweep's terminal table: a column (at the two smallest k), with its interval under each row
    assert "first_hit_is_top@1" in table.splitlines()[2] and "first_hit_is_top@10" in table.splitlines()[2]
    # the report's ranked table, at every k
    assert report_cols[-3:] == ["first_hit_is_top@1", "first_hit_is_top@10", "context_tokens@1"]
    # compare's default metrics, at k 10, tested like the built-in ones
    assert report.metrics == ("recall@10", "mrr", "ndcg@10", "first_hit_is_top@10")
    row = report.row("good", "first_hit_is_top@10")
    assert (row.delta, row.wins, row.losses) == (0.5, 3, 0)
    assert "first_hit_is_top@10" in report.to_text() and "first_hit_is_top@10:" in report.digest()


def test_without_the_row_none_of_the_tables_has_it(md_corpus, tmp_path):
    good, bad = _two_results(md_corpus, tmp_path)
    text, table, report_cols, report = _shown(good, bad)
    assert "first_hit_is_top" not in text + table + " ".join(report_cols) + report.to_text()
    assert report.metrics == ("recall@10", "mrr", "ndcg@10")


def test_a_row_shown_in_some_tables_only(md_corpus, tmp_path):
    """``show`` picks the tables; ``show=()`` keeps a metric scored and out of every table."""
    row = register_metric(Metric("first_hit_is_top", first_hit_is_top, show=("report",), show_k="first"))
    try:
        good, bad = _two_results(md_corpus, tmp_path)
        text, table, report_cols, report = _shown(good, bad)
        assert good.metrics["first_hit_is_top@10"] == 0.5  # scored all the same
        assert "first_hit_is_top" not in text + table + report.to_text()
        assert "first_hit_is_top@1" in report_cols and "first_hit_is_top@10" not in report_cols
        register_metric(Metric("first_hit_is_top", first_hit_is_top, show=()), replace=True)
        assert "first_hit_is_top" not in " ".join(_report_columns(render_report(_sweep(good, bad))))
    finally:
        unregister_metric(row.name)


def test_compare_by_default_skips_a_row_the_runs_were_scored_without(md_corpus, tmp_path):
    good, bad = _two_results(md_corpus, tmp_path)  # scored before the row existed
    row = register_metric(Metric("first_hit_is_top", first_hit_is_top))
    try:
        assert "first_hit_is_top@10" in default_metrics()
        assert compare({"bad": bad, "good": good}, samples=200).metrics == ("recall@10", "mrr", "ndcg@10")
        with pytest.raises(ConfigError, match="first_hit_is_top@10"):  # asked for by name: still an error
            compare({"bad": bad, "good": good}, metrics=["first_hit_is_top@10"], samples=200)
    finally:
        unregister_metric(row.name)


def test_a_bad_show_is_refused_with_the_choices():
    with pytest.raises(ConfigError, match="the tables are eval, tags, sweep, report, compare"):
        Metric("x", first_hit_is_top, show=("sweeps",))
    with pytest.raises(ConfigError, match="use 'all'"):
        Metric("x", first_hit_is_top, show_k="last")


@pytest.mark.parametrize("ks", [(1, 5), (5, 10, 20), (10,)])
def test_the_built_in_rows_give_the_columns_each_table_always_showed(ks):
    """What the five renderers wrote by hand before they read the table."""
    every = [f"recall@{k}" for k in ks]
    assert shown_keys("eval", ks) == [*every, *(f"hit@{k}" for k in ks), *(f"precision@{k}" for k in ks), "mrr",
                                      "ndcg@10", *(f"context_tokens@{k}" for k in ks), *(f"evidence@{k}" for k in ks),
                                      "evidence@1000tok"]
    assert shown_keys("tags", ks) == [*every, "mrr", "ndcg@10"]
    assert shown_keys("sweep", ks[:2]) == [*every[:2], "mrr", "ndcg@10"]
    assert shown_keys("report", ks) == [*every, "mrr", "ndcg@10", f"context_tokens@{ks[0]}"]
    assert default_metrics() == ("recall@10", "mrr", "ndcg@10")
