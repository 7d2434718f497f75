"""compare(): N systems against a baseline, on a fixture with known differences."""

import json

import numpy as np
import pytest

import ragtune
from ragtune import ConfigError, Report, Run, compare
from ragtune.evaluate.compare import Comparison, compare_runs
from ragtune.evaluate.evaluate import Judgement, score_judgement
from ragtune.evaluate.significance import randomization_test

N = 30
KS = (5, 10, 20)


def run_from_ranks(name, ranks, prefix="q"):
    """A system whose question i finds its single relevant anchor at ranks[i] (None: never)."""
    scores, firsts = {}, {}
    for i, r in enumerate(ranks):
        hits = np.zeros(20, dtype=bool)
        first = np.array([np.inf if r is None else float(r)])
        if r is not None:
            hits[r - 1] = True
        qid = f"{prefix}{i:03d}"
        scores[qid] = score_judgement(Judgement(first, np.ones(1), hits), KS)
        firsts[qid] = r
    return Run(name, scores, firsts, ks=KS)


@pytest.fixture
def systems():
    top = run_from_ranks("top", [1] * N)  # the answer at rank 1 for every question
    eighth = run_from_ranks("eighth", [8] * N)  # always at rank 8: same recall@10, worse recall@5 and mrr
    broken = run_from_ranks("broken", [None] * 5 + [1] * (N - 5))  # loses 5 questions entirely
    return [top, eighth, broken]


def test_deltas_counts_and_fixed_broken(systems):
    rep = compare(systems, metrics=("recall@5", "recall@10", "mrr"))
    assert rep.baseline == "top" and rep.systems == ("top", "eighth", "broken") and rep.n == N
    assert len(rep.rows) == 9 and len(rep.comparisons) == 6

    r5 = rep.row("eighth", "recall@5")
    assert r5.delta == -1.0 and (r5.wins, r5.ties, r5.losses) == (0, 0, N)
    assert r5.fixed == () and len(r5.broken) == N and r5.k == 5

    r10 = rep.row("eighth", "recall@10")
    assert r10.delta == 0.0 and (r10.wins, r10.ties, r10.losses) == (0, N, 0)
    assert r10.fixed == () and r10.broken == () and r10.p_value == 1.0 and not r10.significant

    mrr = rep.row("eighth", "mrr")
    assert mrr.delta == pytest.approx(1 / 8 - 1) and mrr.losses == N
    assert mrr.significant and mrr.p_adjusted < 0.01

    b = rep.row("broken", "recall@10")
    assert b.delta == pytest.approx(-5 / N) and (b.wins, b.ties, b.losses) == (0, N - 5, 5)
    assert b.broken == ("q000", "q001", "q002", "q003", "q004") and b.fixed == ()
    assert b.changed == 5
    # five changed questions: the randomization test cannot go below 2^-4, so after Holm it is not significant
    assert b.p_value >= 2 ** -4 - 0.01 and not b.significant

    base = rep.row("top", "recall@10")
    assert base.is_baseline and base.mean == 1.0 and base.delta is None and base.p_value is None


def test_baseline_by_name_flips_the_signs_and_fixed(systems):
    rep = compare(systems, baseline="eighth", metrics="recall@5")
    assert rep.systems[0] == "eighth"
    top = rep.row("top", "recall@5")
    assert top.delta == 1.0 and top.wins == N and len(top.fixed) == N and top.broken == ()
    assert compare(systems, baseline=2, metrics="recall@5").baseline == "broken"


def test_strong_difference_is_significant_and_a_null_one_is_not():
    rng = np.random.default_rng(0)
    ranks = [int(r) for r in rng.integers(1, 15, size=60)]
    base = run_from_ranks("base", ranks)
    better = run_from_ranks("better", [max(1, r - 6) for r in ranks])
    swapped = list(ranks)  # the same ranks, shuffled between questions: no systematic difference
    order = rng.permutation(60)
    null = run_from_ranks("null", [swapped[i] for i in order])
    rep = compare([base, better, null], metrics=("mrr",), samples=4000)
    assert rep.row("better", "mrr").delta > 0 and rep.row("better", "mrr").significant
    assert rep.row("null", "mrr").delta == pytest.approx(0.0, abs=1e-12)
    assert rep.row("null", "mrr").p_value > 0.5 and not rep.row("null", "mrr").significant


def test_correction_changes_only_the_adjusted_p(systems):
    holm = compare(systems, metrics=("recall@5", "mrr"), correction="holm")
    bonf = compare(systems, metrics=("recall@5", "mrr"), correction="bonferroni")
    none = compare(systems, metrics=("recall@5", "mrr"), correction="none")
    for a, b, c in zip(holm.comparisons, bonf.comparisons, none.comparisons):
        assert a.p_value == b.p_value == c.p_value
        assert c.p_adjusted == c.p_value
        assert c.p_value <= a.p_adjusted <= b.p_adjusted == min(1.0, 4 * c.p_value)


@pytest.mark.parametrize("test", ["randomization", "bootstrap", "t-test"])
def test_every_test_is_seeded_and_recorded(systems, test):
    a = compare(systems, metrics="mrr", test=test, samples=2000, seed=3)
    b = compare(systems, metrics="mrr", test=test, samples=2000, seed=3)
    assert a == b and a.test == test and a.seed == 3
    assert a.row("eighth", "mrr").significant


def test_confidence_intervals_contain_the_mean(systems):
    rep = compare(systems, metrics="mrr", samples=2000)
    for r in rep.rows:
        assert r.ci_low <= r.mean <= r.ci_high
    b = rep.row("broken", "mrr")
    assert b.delta_low < b.delta <= b.delta_high <= 0.0


def test_mde_shrinks_with_more_questions_and_explains_a_null_result():
    small = compare([run_from_ranks("a", [1] * 30), run_from_ranks("b", [None] * 3 + [1] * 27)], metrics="recall@10")
    large = compare([run_from_ranks("a", [1] * 120), run_from_ranks("b", [None] * 12 + [1] * 108)], metrics="recall@10")
    s, l_ = small.row("b", "recall@10"), large.row("b", "recall@10")
    assert s.delta == pytest.approx(l_.delta)
    assert l_.mde < s.mde
    # same spread of differences, four times the questions: half the detectable effect
    assert l_.mde / s.mde == pytest.approx(0.5 * l_.sd_diff / s.sd_diff)
    assert not s.significant and l_.significant
    assert s.needed > 30 and s.needed_target > s.needed  # a 5-point difference needs more than the 10 observed
    note = " ".join(small.notes())
    assert "not significant" in note and f"about {s.needed} questions" in note


def test_no_changed_question_says_so(systems):
    rep = compare(systems[:2], metrics="recall@10")
    row = rep.row("eighth", "recall@10")
    assert row.mde is None and row.needed is None
    assert rep.notes() == ["eighth vs top on recall@10: no question changed, so there is nothing to test (p = 1)."]


def test_duplicate_and_mismatched_questions_are_rejected(systems):
    d = {"config": {"ks": [10]}, "metrics": {}, "questions": [
        {"id": "q1", "scores": {"recall@10": 1.0}}, {"id": "q1", "scores": {"recall@10": 0.0}}]}
    with pytest.raises(ConfigError, match="duplicate question id"):
        compare([d, d], metrics="recall@10")
    fewer = run_from_ranks("fewer", [1] * (N - 3))
    with pytest.raises(ConfigError, match=r"different questions: run 'fewer' lacks 3 question\(s\) \(q027, q028, q029\)"):
        compare([systems[0], fewer], metrics="recall@10")
    other = run_from_ranks("other", [1] * N, prefix="x")
    with pytest.raises(ConfigError, match=r"lacks 30 question\(s\) \(q000, q001, q002, q003, q004 and 25 more\)"):
        compare([systems[0], other], metrics="recall@10")


@pytest.mark.parametrize("kwargs,message", [
    ({"test": "wilcoxon"}, "unknown test 'wilcoxon'; choose one of randomization, bootstrap, t-test"),
    ({"correction": "fdr"}, "unknown correction 'fdr'; choose one of holm, bonferroni, none"),
    ({"baseline": "nobody"}, "no run named 'nobody' to use as the baseline; runs: top, eighth, broken"),
    ({"metrics": ("recall@7",)}, "'recall@7' is not in the results"),
    ({"metrics": ()}, "at least one metric"),
    ({"alpha": 1.5}, "alpha must be between 0 and 1"),
])
def test_bad_options_are_rejected(systems, kwargs, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compare(systems, **kwargs)


def test_runs_need_unique_names_and_at_least_two(systems):
    with pytest.raises(ConfigError, match="two or more runs are named 'top'"):
        compare([systems[0], systems[0]])
    with pytest.raises(ConfigError, match="at least two runs"):
        compare([systems[0]])
    with pytest.raises(ConfigError, match="got a single one"):
        compare(systems[0])
    rep = compare({"first": systems[0], "second": systems[0]}, metrics="mrr")  # a mapping renames
    assert rep.systems == ("first", "second") and rep.row("second", "mrr").delta == 0.0


def test_paths_and_eval_dicts_are_accepted(tmp_path, systems):
    def as_dict(run):
        return {"config": {"ks": list(run.ks)}, "metrics": {}, "questions": [
            {"id": q, "answerable": True, "first_hit_rank": run.first_hit_ranks[q], "scores": dict(run.scores[q])}
            for q in run.question_ids]}

    (tmp_path / "top.json").write_text(json.dumps(as_dict(systems[0])))
    rep = compare([tmp_path / "top.json", as_dict(systems[1])], metrics="recall@5")
    assert rep.systems == ("top", "run2") and rep.row("run2", "recall@5").delta == -1.0


def test_report_renderings(tmp_path, systems):
    rep = compare(systems, metrics=("recall@5", "mrr"), samples=1000)
    assert isinstance(rep, Report)
    d = json.loads(rep.to_json())
    assert d["baseline"] == "top" and len(d["rows"]) == 6 and d["correction"] == "holm"
    assert d["rows"][1]["system"] == "eighth" and d["rows"][1]["delta"] == -1.0 and len(d["rows"][1]["broken"]) == N
    md = rep.to_markdown()
    assert md.count("| eighth |") == 2 and "**recall@5**" in md
    page = rep.to_html()
    assert page.startswith("<!doctype html>") and "<table>" in page
    assert "http" not in page and "<script" not in page
    text = rep.to_text()
    assert "top (baseline)" in text and "q000" in text
    for suffix, check in ((".md", "| system |"), (".html", "<table>"), (".json", '"rows"')):
        path = tmp_path / f"report{suffix}"
        rep.write(path)
        assert check in path.read_text()
    with pytest.raises(ConfigError, match="use a .md, .html or .json"):
        rep.write(tmp_path / "report.txt")


def test_names_are_escaped_in_html():
    a = run_from_ranks("<b>base</b>", [1] * 5)
    b = run_from_ranks("a & b", [2] * 5)
    page = compare([a, b], metrics="mrr", samples=200).to_html()
    assert "&lt;b&gt;base&lt;/b&gt;" in page and "a &amp; b" in page and "<b>base" not in page


def test_compare_runs_keeps_its_contract(systems):
    def as_dict(run):
        return {"config": {"ks": list(run.ks)}, "questions": [
            {"id": q, "first_hit_rank": run.first_hit_ranks[q], "scores": dict(run.scores[q])}
            for q in run.question_ids]}

    a, b = as_dict(systems[0]), as_dict(systems[2])
    c = compare_runs(a, b, metric="recall@10", samples=2000, seed=1, names=("A", "B"))
    assert isinstance(c, Comparison) and not hasattr(c, "p_adjusted")
    x = [a["questions"][i]["scores"]["recall@10"] for i in range(N)]
    y = [b["questions"][i]["scores"]["recall@10"] for i in range(N)]
    assert c.p_value == randomization_test(x, y, n=2000, seed=1)
    assert (c.baseline, c.candidate, c.wins, c.losses, c.broken[:2]) == ("A", "B", 0, 5, ("q000", "q001"))
    assert c.extra["delta_ci"][1] <= 0 and c.extra["changed"] == 5
    assert json.loads(c.to_json())["delta"] == c.delta
    assert "broken (first hit no longer in the top 10): 5 questions (q000, q001, " in c.to_text()
    # the same names on both sides are fine here (as when a file is compared with itself)
    assert compare_runs(a, a, metric="mrr", names=("A", "A")).p_value == 1.0


def test_exported_from_the_package():
    assert ragtune.compare is compare and ragtune.Run is Run


def test_p_values_print_readably():
    """Issue 25 item 13: the randomization test's floor 1/10001 printed as 9.999e-05 and 100/10001 as 0.009999."""
    from ragtune.evaluate.significance import format_p, p_equals

    assert format_p(9.999e-05) == "< 0.001" and format_p(0.009999) == "0.01" and format_p(0.0625) == "0.0625"
    assert format_p(1.0) == "1" and format_p(None) == "-" and format_p(float("nan")) == "-"
    assert p_equals(0.5) == "= 0.5" and p_equals(1e-5, tight=True) == "<0.001"
    base = run_from_ranks("base", [1] * N)
    worse = run_from_ranks("worse", [None] * N)
    text = compare([base, worse], baseline="base", metrics=["recall@10"], correction="none").to_text()
    row = next(line for line in text.splitlines() if line.startswith("worse"))
    assert "< 0.001" in row and "e-0" not in text and "0.0000999" not in text
