"""One recommendation: every sweep and search names one configuration and why, and names the same one in the
table's first line, results.json, the report's headline card, the MLflow tag and recommended.toml."""

from __future__ import annotations

import json
import re

import pytest

from ragtune.cli import main
from ragtune.pipeline import PipelineConfig
from ragtune.sweep import parse_grid, summarize
from ragtune.sweep.holdout import split_questions
from ragtune.sweep.report import _report_data, write_report
from ragtune.sweep.tracking import _runs
from tests.helpers import SWEEP_DOCS, SWEEP_GRID, SWEEP_QUESTIONS, golden_rows, write_files, write_jsonl

N = 40


def _record(spec: PipelineConfig, hits: list[int]) -> dict:
    """A configuration's record whose every score on question i is hits[i] (one tag, all answerable)."""
    qs = [{"id": f"q{i:02d}", "q": f"question {i}", "relevant": ["a"], "tags": ["t"], "answerable": True,
           "first_hit_rank": 1 if h else None, "retrieved": [],
           "scores": {m: float(h) for m in ("recall@1", "recall@5", "mrr", "ndcg@10")}}
          for i, h in enumerate(hits)]
    m = sum(hits) / len(hits)
    return {"key": spec.key, "label": spec.label, "spec": spec.to_dict(), "stats": {"latency_ms": {"p50": 1.0}},
            "result": {"metrics": {"recall@1": m, "recall@5": m, "mrr": m, "ndcg@10": m}, "questions": qs}}


def _named(out, capsys_text: str) -> dict[str, str]:
    """The configuration each output names: the table's first line, results.json, the report's data, the MLflow
    parent tag (the runs log_to_mlflow would log) and recommended.toml."""
    results = json.loads((out / "results.json").read_text())
    label = re.match(r"recommended: (\S+) — ", capsys_text.splitlines()[0]).group(1)
    by_label = {c["label"]: c["key"] for c in results["configs"]}
    html = (out / "report.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1)
                      .replace("<\\/", "</"))
    parent, children = _runs(results, {}, out, "sweep-id")
    flagged = [c.tags["ragtune.config_key"] for c in children if c.tags["ragtune.is_recommended"] == "true"]
    return {"table": by_label[label], "results.json": results["recommended"]["key"],
            "report": data["recommended"]["key"], "mlflow": parent.tags["ragtune.recommended"],
            "mlflow child": flagged[0] if len(flagged) == 1 else str(flagged),
            "recommended.toml": PipelineConfig.from_file(out / "recommended.toml").key}


def _specs() -> list[PipelineConfig]:
    grid = parse_grid(SWEEP_GRID)
    return [grid.baseline, *(PipelineConfig.from_flags({"chunker": "fixed", "size": s, "retriever": "bm25"})
                             for s in (64, 128))]


def _lucky_and_broad():
    grid = parse_grid({**SWEEP_GRID, "holdout": 0.25})
    base, lucky, broad = _specs()
    sel, held = split_questions([{"id": f"q{i:02d}", "tags": ["t"]} for i in range(N)], 0.25, grid.seed)
    recs = [_record(base, [i % 2 for i in range(N)]),
            _record(lucky, [int(f"q{i:02d}" in sel) for i in range(N)]),
            _record(broad, [int(f"q{i:02d}" != sel[0]) for i in range(N)])]
    return summarize(grid, recs), lucky, broad


def test_a_holdout_choice_below_the_top_row_is_the_one_recommendation_everywhere(tmp_path):
    """'lucky' is perfect on the selection questions and useless held out; 'broad' misses one selection question and
    answers every held-out one: the table's top row (in-sample) is broad, the holdout chooses lucky, and every
    output names lucky, with the in-sample figures labelled as such."""
    result, lucky, broad = _lucky_and_broad()
    assert result.ranked()[0]["key"] == broad.key and result.selection()["chosen"] == lucky.key  # the premise
    result.write(tmp_path)
    write_report(result, tmp_path)
    table = result.table()
    named = _named(tmp_path, table)
    assert set(named.values()) == {lucky.key}, named
    rec = json.loads((tmp_path / "results.json").read_text())["recommended"]
    assert rec["basis"] == "holdout" and rec["held_out"] == 0.0 and rec["in_sample"] == 0.75
    assert table.splitlines()[0].startswith(f"recommended: {lucky.label} — chosen on the 30 selection questions "
                                            "(select = best); recall@1 0.000 [0.000, 0.000] held out on the other 10")
    assert "worse than the baseline there" in rec["reason"] and "in-sample recall@1 0.750 on all 40" in rec["reason"]
    # in-sample figures say so wherever a held-out figure exists: the table, results.json, the report
    assert "in-sample: every configuration's figures" in table.splitlines()[1]
    assert json.loads((tmp_path / "results.json").read_text())["in_sample"].startswith("in-sample")
    assert _report_data(result)["in_sample"] is True
    # and no other line names a winner
    assert "best on" not in table


def test_a_grid_where_nothing_beats_the_baseline_significantly_recommends_the_baseline(tmp_path):
    grid = parse_grid({**SWEEP_GRID, "samples": 500})
    base, close, better = _specs()
    hits = [i % 2 for i in range(N)]
    recs = [_record(base, hits), _record(close, [1, *hits[1:]])]  # one question better: not significant
    result = summarize(grid, recs)
    assert result.ranked()[0]["key"] == close.key  # the top row is not the baseline
    result.write(tmp_path)
    write_report(result, tmp_path)
    table = result.table()
    assert set(_named(tmp_path, table).values()) == {base.key}
    assert table.splitlines()[0] == (
        f"recommended: {base.label} — no configuration is significantly better than the baseline on recall@1 (the "
        f"top-ranked, {close.label}, +0.025, Holm-corrected p=1): keep the baseline")
    assert json.loads((tmp_path / "results.json").read_text())["in_sample"] is None  # no held-out figure
    # one configuration significantly better: it is recommended, and the baseline is not
    result = summarize(grid, [*recs, _record(better, [1] * N)])
    rec = result.recommendation()
    assert rec["key"] == better.key and rec["basis"] == "significant" and rec["reason"].endswith("it ranks first")


def test_with_folds_the_rule_chooses_on_every_question(tmp_path):
    """K folds measure the choosing; the recommendation is the rule's choice on all the questions."""
    base, a, b = _specs()
    recs = [_record(base, [i % 2 for i in range(N)]), _record(a, [int(i % 4 != 0) for i in range(N)]),
            _record(b, [int(i % 8 != 0) for i in range(N)])]
    result = summarize(parse_grid({**SWEEP_GRID, "folds": 4, "samples": 500}), recs)
    rec = result.recommendation()
    assert rec["key"] == b.key == result.ranked()[0]["key"] and rec["basis"] == "folds"
    assert rec["reason"].startswith("chosen on all 40 questions (select = best); choosing this way scored recall@1 ")
    assert "held out over 4 folds" in rec["reason"] and rec["held_out"] == result.selection()["held_out_score"]


@pytest.fixture
def tiny(tmp_path):
    docs = write_files(tmp_path / "c", SWEEP_DOCS)
    golden = write_jsonl(tmp_path / "g.jsonl", golden_rows(SWEEP_QUESTIONS))
    grid = tmp_path / "grid.yaml"  # JSON is YAML
    grid.write_text(json.dumps({**SWEEP_GRID, "grid": {"chunker": ["fixed"], "size": [8, 40], "retriever": ["bm25"]},
                                "samples": 200}))
    return docs, golden, grid


def test_eval_takes_the_recommended_toml_a_sweep_writes(tiny, tmp_path, capsys):
    docs, golden, grid = tiny
    out = tmp_path / "out"
    (out).mkdir()
    (out / "best.toml").write_text('chunker = "fixed"\n')  # what an earlier release wrote: removed
    assert main(["sweep", "--corpus", str(docs), "--golden", str(golden), "--grid", str(grid), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("recommended: ") and f"{out}/recommended.toml" in printed
    assert not (out / "best.toml").exists()
    key = json.loads((out / "results.json").read_text())["recommended"]["key"]
    assert main(["eval", "--corpus", str(docs), "--golden", str(golden), "--config", str(out / "recommended.toml"),
                 "--json"]) == 0
    ran = json.loads(capsys.readouterr().out)["config"]["pipeline"]
    assert PipelineConfig.from_dict(ran).key == PipelineConfig.from_file(out / "recommended.toml").resolved(
        "markdown").key
    assert PipelineConfig.from_file(out / "recommended.toml").key == key


def test_a_search_whose_top_row_is_not_its_holdout_choice_names_the_choice_everywhere(tmp_path, capsys):
    """A search among configurations that differ only by noise: the top row in-sample is one, the configuration
    chosen on the selection questions another (seed 2), and every output names the chosen one."""
    pytest.importorskip("optuna")
    from tests.sweep.noise import noise_corpus, noise_retriever

    out = tmp_path / "out"
    plan = tmp_path / "space.yaml"
    plan.write_text(json.dumps({"metric": "recall@5", "samples": 200, "holdout": 0.4, "seed": 2,
                                "baseline": {"chunker": "document", "retriever": "noise"},
                                "space": {"chunker": ["document"], "retriever": ["noise"],
                                          "salt": {"low": 1, "high": 500}}}))  # JSON is YAML
    with noise_retriever():
        c, g = noise_corpus(tmp_path)
        assert main(["sweep", "--corpus", str(c), "--golden", str(g), "--grid", str(plan), "--out", str(out),
                     "--search", "tpe", "--trials", "6", "--prune-share", "0"]) == 0
        printed = capsys.readouterr().out
        named = _named(out, printed)  # recommended.toml names the noise retriever: read while it is registered
    results = json.loads((out / "results.json").read_text())
    chosen = results["selection"]["chosen"]
    assert results["configs"][0]["key"] != chosen  # the premise: the top row in-sample is not the choice
    assert set(named.values()) == {chosen}, named
    assert results["recommended"]["basis"] == "holdout" and "held out on the other" in printed.splitlines()[0]
    assert "best on its" not in printed  # the search line names no winner of its own


def test_the_report_headline_card_is_the_recommendation_with_its_held_out_figure(tmp_path, browser):
    result, lucky, broad = _lucky_and_broad()
    path = write_report(result, tmp_path)
    page = browser.new_page(viewport={"width": 900, "height": 1000})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector("#table table")
    card = page.locator("#recommended").inner_text()
    assert lucky.label in card and broad.label not in card and "held out" in card and "in-sample" in card
    assert result.recommendation()["reason"] in card
    tagged = page.locator("#table tbody tr", has=page.locator(".tag", has_text="recommended"))
    assert tagged.count() == 1 and lucky.label in tagged.inner_text()
    assert "(in-sample)" in page.locator("#table thead").inner_text()
    assert errors == []
    page.close()


def test_with_folds_equal_means_are_told_apart_as_the_table_ranks_them():
    """Two configurations with the same recall@1 on every question: the ranking breaks the tie by mrr, and so does
    the recommendation (not by label)."""
    base, a, b = _specs()
    hits = [int(i % 4 != 0) for i in range(N)]
    ra, rb = _record(a, hits), _record(b, hits)
    ra["result"]["metrics"]["mrr"] = 0.9  # a ranks above b, though b's label comes first
    assert b.label < a.label
    result = summarize(parse_grid({**SWEEP_GRID, "folds": 4, "samples": 200}),
                       [_record(base, [i % 2 for i in range(N)]), ra, rb])
    assert result.ranked()[0]["key"] == a.key == result.recommendation()["key"]
