"""The first hour: the tour's grid is compared with the default the user just ran, and ``compare`` leads with a short
digest (best, what is significant, what it takes to tell), the full tables on request (``--all``)."""

import json
from pathlib import Path

import numpy as np

from ragtune import compare
from ragtune.cli import main
from ragtune.pipeline import PipelineConfig
from ragtune.sweep import load_grid
from tests.evaluate.test_compare import run_from_ranks

ROOT = Path(__file__).resolve().parents[2]
N = 40


def test_the_demo_grid_compares_with_the_default_pipeline():
    grid = load_grid(ROOT / "examples" / "demo-grid.toml").resolved("markdown")
    default = PipelineConfig().resolved("markdown")
    assert grid.baseline.key == default.key  # auto (window-sized section pieces), prefix, hybrid: what `ragtune eval` ran
    assert default.key in {s.key for s in grid.all_specs}
    # the rest stays BM25, so the tour embeds nothing that eval did not already embed
    assert {s.retriever for s in grid.specs} == {"bm25"}


def many_systems():
    rng = np.random.default_rng(0)
    base = run_from_ranks("base", [1 if i % 2 else 6 for i in range(N)])
    systems = [base, run_from_ranks("great", [1] * N)]  # significantly better
    systems.append(run_from_ranks("awful", [None] * N))  # significantly worse
    for j in range(12):  # small, noisy differences: not significant
        systems.append(run_from_ranks(f"s{j:02d}", [int(r) for r in rng.choice([1, 6, 1, 6, 3], size=N)]))
    return systems


def test_the_digest_says_best_what_is_significant_and_what_it_takes_to_tell():
    rep = compare(many_systems(), metrics=("recall@5", "mrr"), samples=2000)
    digest = rep.digest()
    lines = digest.splitlines()
    assert len(lines) <= 10 and len(rep.comparisons) == 28
    assert lines[0].startswith("15 system(s) against the baseline base on 40 questions")
    assert any(line.startswith("recall@5: best great 1.0000 vs baseline 0.5000 (+0.5000") and "significant" in line
               for line in lines)
    assert "to tell: with 40 questions the smallest difference detectable here is about ±" in digest
    sig = next(line for line in lines if line.startswith("significant:"))
    assert "better" in sig and "worse" in sig
    assert "great on recall@5 +0.5000" in digest and "awful on" in digest
    # the digest names no question and no full table row
    assert "q000" not in digest and "W/T/L" not in digest


def test_the_digest_of_a_difference_too_small_to_tell_says_how_many_questions_it_needs():
    base = run_from_ranks("base", [1] * (N - 2) + [6, 6])
    close = run_from_ranks("close", [1] * (N - 1) + [6])
    digest = compare([base, close], metrics=("recall@5",), samples=2000).digest()
    assert "not significant" in digest and "significant: none of the 1 comparisons" in digest
    assert "detecting close's +0.0250 would take about" in digest


def test_compare_prints_the_digest_and_the_tables_on_request(tmp_path, capsys):
    paths = []
    for run in many_systems():
        p = tmp_path / f"{run.name}.json"
        p.write_text(json.dumps({"config": {"ks": list(run.ks)}, "metrics": {}, "questions": [
            {"id": q, "answerable": True, "first_hit_rank": run.first_hit_ranks[q], "scores": dict(run.scores[q])}
            for q in run.question_ids]}))
        paths.append(str(p))
    assert main(["compare", *paths, "--metric", "recall@5", "--samples", "500"]) == 0
    short = capsys.readouterr().out
    assert "against the baseline base" in short and "--all" in short
    assert "W/T/L" not in short and len(short.splitlines()) <= 12
    assert main(["compare", *paths, "--metric", "recall@5", "--samples", "500", "--all"]) == 0
    full = capsys.readouterr().out
    assert full.startswith(short.split("\n\n")[0]) and "W/T/L" in full and "fixed / broken" in full
