"""compare(): the details mutation testing found untested. The renderings are checked in full on a report built
by hand (every value chosen, nothing random); compare() itself on runs whose differences are known."""

import json
import math

import numpy as np
import pytest

from ragtune import ConfigError, Run, compare
from ragtune.evaluate.compare import Comparison, Report, ReportRow, _comparison, metric_k, per_question


def report(correction="holm", test="randomization", confidence=0.9, mde_alpha=0.05 / 3, rows=None):
    rows = rows or (
        ReportRow("base", "mrr", 20, 0.5, 0.4, 0.6),
        ReportRow("good|pipe", "mrr", 20, 0.75, 0.65, 0.85, delta=0.25, delta_low=0.1, delta_high=0.4, p_value=0.001,
                  p_adjusted=0.002, significant=True, wins=6, ties=14, losses=0, changed=6, fixed=("q1", "q2"),
                  broken=(), k=10, sd_diff=0.3, mde=0.2, needed=12, needed_target=300),
        ReportRow("meh", "mrr", 20, 0.45, 0.35, 0.55, delta=-0.05, delta_low=-0.2, delta_high=0.1, p_value=0.5,
                  p_adjusted=0.6, significant=False, wins=1, ties=17, losses=2, changed=3, fixed=(), broken=("q3",),
                  k=10, sd_diff=0.25, mde=0.19, needed=196, needed_target=196),
        ReportRow("same", "mrr", 20, 0.5, 0.4, 0.6, delta=0.0, delta_low=0.0, delta_high=0.0, p_value=1.0,
                  p_adjusted=1.0, significant=False, wins=0, ties=20, losses=0, changed=0, fixed=(), broken=(),
                  k=10, sd_diff=0.0, mde=None, needed=None, needed_target=None),
    )
    return Report(systems=tuple(dict.fromkeys(r.system for r in rows)), baseline="base",
                  metrics=tuple(dict.fromkeys(r.metric for r in rows)), n=20, test=test, correction=correction,
                  samples=1000, seed=3, alpha=0.05, power=0.8, confidence=confidence, mde_alpha=mde_alpha,
                  target_effect=0.05, rows=rows)


TEXT = (
    'n=20 questions · randomization test, 1000 samples, seed 3 · correction holm over 3 comparisons · alpha 0.05, power 0.8 · baseline base\n'
    '\n'
    'mrr\n'
    'system                     mean [90% CI]              delta [90% CI]      p   p holm   W/T/L  fixed  broken     MDE\n'
    'base (baseline)  0.5000 [0.4000, 0.6000]\n'
    'good|pipe        0.7500 [0.6500, 0.8500]  +0.2500 [+0.1000, +0.4000]  0.001  0.002 *  6/14/0      2       0  0.2000\n'
    'meh              0.4500 [0.3500, 0.5500]  -0.0500 [-0.2000, +0.1000]    0.5      0.6  1/17/2      0       1  0.1900\n'
    'same             0.5000 [0.4000, 0.6000]  +0.0000 [+0.0000, +0.0000]      1        1  0/20/0      0       0       -\n'
    '\n'
    'fixed / broken (first relevant hit entering / leaving the top k):\n'
    '  good|pipe on mrr (top 10): fixed: 2 questions (q1, q2); broken: none\n'
    '  meh on mrr (top 10): fixed: none; broken: 1 question (q3)\n'
    '\n'
    'not significant:\n'
    '  meh vs base on mrr: -0.0500 is not significant (corrected p = 0.6). With 20 questions the smallest difference detectable at alpha 0.0167 with power 0.8 is about ±0.1900; detecting -0.0500 would take about 196 questions, a 5-point difference about 196. Only 3 question(s) changed: the randomization test cannot give p below 0.25 with so few.\n'
    '  same vs base on mrr: no question changed, so there is nothing to test (p = 1).\n'
    '\n'
    '* significant at alpha 0.05 after holm correction\n'
    'W/T/L: questions the system wins, ties and loses against the baseline; MDE: minimum detectable effect (power 0.8)\n'
    "CI: the delta's 90% interval is per comparison, not adjusted for the 3 comparisons as p holm is: it can exclude 0 while p holm is above 0.05 (the interval goes with the raw p)"
)

MARKDOWN = (
    '_n=20 questions · randomization test, 1000 samples, seed 3 · correction holm over 3 comparisons · alpha 0.05, power 0.8 · baseline base_\n'
    '\n'
    '**mrr**\n'
    '\n'
    '| system | mean [90% CI] | delta [90% CI] | p | p holm | W/T/L | fixed | broken | MDE |\n'
    '|---|---|---|---|---|---|---|---|---|\n'
    '| base (baseline) | 0.5000 [0.4000, 0.6000] |  |  |  |  |  |  |  |\n'
    '| good\\|pipe | 0.7500 [0.6500, 0.8500] | +0.2500 [+0.1000, +0.4000] | 0.001 | 0.002 * | 6/14/0 | 2 | 0 | 0.2000 |\n'
    '| meh | 0.4500 [0.3500, 0.5500] | -0.0500 [-0.2000, +0.1000] | 0.5 | 0.6 | 1/17/2 | 0 | 1 | 0.1900 |\n'
    '| same | 0.5000 [0.4000, 0.6000] | +0.0000 [+0.0000, +0.0000] | 1 | 1 | 0/20/0 | 0 | 0 | - |\n'
    '\n'
    'Fixed / broken (first relevant hit entering / leaving the top k):\n'
    '\n'
    '- good|pipe on mrr (top 10): fixed: 2 questions (q1, q2); broken: none\n'
    '- meh on mrr (top 10): fixed: none; broken: 1 question (q3)\n'
    '\n'
    'Not significant:\n'
    '\n'
    '- meh vs base on mrr: -0.0500 is not significant (corrected p = 0.6). With 20 questions the smallest difference detectable at alpha 0.0167 with power 0.8 is about ±0.1900; detecting -0.0500 would take about 196 questions, a 5-point difference about 196. Only 3 question(s) changed: the randomization test cannot give p below 0.25 with so few.\n'
    '- same vs base on mrr: no question changed, so there is nothing to test (p = 1).\n'
    '\n'
    "_CI: the delta's 90% interval is per comparison, not adjusted for the 3 comparisons as p holm is: it can exclude 0 while p holm is above 0.05 (the interval goes with the raw p)_\n"
)

HTML = (
    '<!doctype html>\n'
    '<html lang="en"><head><meta charset="utf-8"><title>A &lt;b&gt; test</title>\n'
    '<style>body{font:14px/1.45 system-ui,sans-serif;color:#1d2330;margin:24px}table{border-collapse:collapse;margin:6px 0 18px}th,td{padding:4px 10px;border-bottom:1px solid #e4e7ec;text-align:right;white-space:nowrap}th{background:#f5f6f8}td:first-child,th:first-child{text-align:left}tr.base td{background:#eef3ff}.pos{color:#11845b}.neg{color:#c0392b}.sig{font-weight:600}.sub{color:#667085}</style></head><body>\n'
    '<h1>A &lt;b&gt; test</h1><p class="sub">n=20 questions · randomization test, 1000 samples, seed 3 · correction holm over 3 comparisons · alpha 0.05, power 0.8 · baseline base</p>\n'
    '<h2>mrr</h2><table><thead><tr><th>system</th><th>mean [90% CI]</th><th>delta [90% CI]</th><th>p</th><th>p holm</th><th>W/T/L</th><th>fixed</th><th>broken</th><th>MDE</th></tr></thead><tbody>\n'
    '<tr class="base"><td>base (baseline)</td><td>0.5000 [0.4000, 0.6000]</td><td></td><td></td><td></td><td></td><td></td><td></td><td></td></tr>\n'
    '<tr class=""><td>good|pipe</td><td>0.7500 [0.6500, 0.8500]</td><td class="pos">+0.2500 [+0.1000, +0.4000]</td><td>0.001</td><td class="sig">0.002 *</td><td>6/14/0</td><td>2</td><td>0</td><td>0.2000</td></tr>\n'
    '<tr class=""><td>meh</td><td>0.4500 [0.3500, 0.5500]</td><td class="neg">-0.0500 [-0.2000, +0.1000]</td><td>0.5</td><td>0.6</td><td>1/17/2</td><td>0</td><td>1</td><td>0.1900</td></tr>\n'
    '<tr class=""><td>same</td><td>0.5000 [0.4000, 0.6000]</td><td>+0.0000 [+0.0000, +0.0000]</td><td>1</td><td>1</td><td>0/20/0</td><td>0</td><td>0</td><td>-</td></tr>\n'
    '</tbody></table>\n'
    '<h2>Fixed / broken</h2><ul><li>good|pipe on mrr (top 10): fixed: 2 questions (q1, q2); broken: none</li><li>meh on mrr (top 10): fixed: none; broken: 1 question (q3)</li></ul>\n'
    '<h2>Not significant</h2><ul><li>meh vs base on mrr: -0.0500 is not significant (corrected p = 0.6). With 20 questions the smallest difference detectable at alpha 0.0167 with power 0.8 is about ±0.1900; detecting -0.0500 would take about 196 questions, a 5-point difference about 196. Only 3 question(s) changed: the randomization test cannot give p below 0.25 with so few.</li><li>same vs base on mrr: no question changed, so there is nothing to test (p = 1).</li></ul>\n'
    "<p class=\"sub\">CI: the delta&#x27;s 90% interval is per comparison, not adjusted for the 3 comparisons as p holm is: it can exclude 0 while p holm is above 0.05 (the interval goes with the raw p)</p>\n"
    '</body></html>\n'
)


def test_renderings_in_full():
    rep = report()
    assert rep.to_text() == TEXT
    assert rep.to_markdown() == MARKDOWN
    assert rep.to_html(title="A <b> test") == HTML
    assert "<title>ragtune compare</title>" in rep.to_html() and "<h1>ragtune compare</h1>" in rep.to_html()


def test_headers_follow_the_confidence_and_the_correction():
    rep = report(correction="none", confidence=0.95)
    assert rep._header() == ["system", "mean [95% CI]", "delta [95% CI]", "p", "p", "W/T/L", "fixed", "broken", "MDE"]
    text = rep.to_text()
    assert text.endswith("* significant at alpha 0.05\nW/T/L: questions the system wins, ties and loses against the "
                         "baseline; MDE: minimum detectable effect (power 0.8)")
    assert "(p = 0.6)" in text and "corrected" not in text


def note_rows(**changes):
    base = ReportRow("base", "mrr", 20, 0.5, 0.4, 0.6)
    row = dict(system="x", metric="mrr", n=20, mean=0.45, ci_low=0.35, ci_high=0.55, delta=-0.05, delta_low=-0.2,
               delta_high=0.1, p_value=0.5, p_adjusted=0.6, significant=False, wins=1, ties=17, losses=2, changed=3,
               fixed=(), broken=(), k=10, sd_diff=0.25, mde=0.19, needed=196, needed_target=150)
    row.update(changes)
    return (base, ReportRow(**row))


def test_notes_say_only_what_is_known():
    head = "x vs base on mrr: -0.0500 is not significant"
    # one comparison: nothing was corrected
    assert report(rows=note_rows(), test="t-test").notes() == [
        f"{head} (p = 0.6). With 20 questions the smallest difference detectable at alpha 0.0167 with power 0.8 is "
        "about ±0.1900; detecting -0.0500 would take about 196 questions, a 5-point difference about 150."]
    assert report(rows=note_rows(mde=None, needed=None, needed_target=None), test="t-test").notes() == [f"{head}."]
    assert report(rows=note_rows(needed=None), test="bootstrap").notes()[0].endswith(
        "±0.1900; a 5-point difference about 150.")
    assert report(rows=note_rows(needed_target=None), test="bootstrap").notes()[0].endswith(
        "±0.1900; detecting -0.0500 would take about 196 questions.")
    assert report(rows=note_rows(significant=True)).notes() == []
    assert report(rows=note_rows(changed=None)).notes() == [
        "x vs base on mrr: no question changed, so there is nothing to test (p = 1)."]


def test_the_randomization_floor_is_mentioned_only_when_it_binds():
    few = " Only 3 question(s) changed: the randomization test cannot give p below 0.25 with so few."
    assert report(rows=note_rows(), mde_alpha=0.25).notes()[0].endswith(few)  # 2^(1-3) = 0.25 reaches alpha
    assert not report(rows=note_rows(), mde_alpha=0.26).notes()[0].endswith(few)
    assert report(rows=note_rows(changed=1), mde_alpha=0.01).notes()[0].endswith(
        " Only 1 question(s) changed: the randomization test cannot give p below 1 with so few.")
    assert "Only" not in report(rows=note_rows(changed=3), mde_alpha=0.25, test="bootstrap").notes()[0]


def test_to_dict_and_json_write_null_for_undefined_numbers():
    rows = (ReportRow("base", "mrr", 20, 0.5, float("nan"), float("inf")),
            *note_rows(sd_diff=float("nan"), fixed=("q1",), broken=("q2", "q3"))[1:])
    rep = report(rows=rows)
    d = rep.to_dict()
    assert d["systems"] == ["base", "x"] and d["metrics"] == ["mrr"] and d["notes"] == rep.notes()
    assert {k: d[k] for k in ("baseline", "n", "test", "correction", "samples", "seed", "alpha", "power",
                              "confidence", "target_effect")} == {
        "baseline": "base", "n": 20, "test": "randomization", "correction": "holm", "samples": 1000, "seed": 3,
        "alpha": 0.05, "power": 0.8, "confidence": 0.9, "target_effect": 0.05}
    assert d["mde_alpha"] == pytest.approx(0.05 / 3)
    assert d["rows"][0]["ci_low"] is None and d["rows"][0]["ci_high"] is None and d["rows"][0]["fixed"] is None
    assert d["rows"][1]["sd_diff"] is None and d["rows"][1]["fixed"] == ["q1"] and d["rows"][1]["broken"] == ["q2", "q3"]
    assert json.loads(rep.to_json()) == d
    assert rep.to_json(indent=None) == json.dumps(d, ensure_ascii=False)
    assert "\n  \"systems\"" in rep.to_json()
    assert "±" in rep.to_json()  # not escaped
    assert ReportRow("a", "m", 1, 0.1, 0.0, 0.2).to_dict()["broken"] is None


def test_row_lookup_names_what_exists():
    rep = report()
    assert rep.row("meh", "mrr").delta == -0.05
    with pytest.raises(ConfigError) as e:
        rep.row("meh", "ndcg@10")
    assert str(e.value) == ("no row for system 'meh' and metric 'ndcg@10'; systems: base, good|pipe, meh, same; "
                            "metrics: mrr")
    assert [r.system for r in rep.comparisons] == ["good|pipe", "meh", "same"]


@pytest.mark.parametrize("suffix,render", [(".md", "to_markdown"), (".MARKDOWN", "to_markdown"), (".html", "to_html"),
                                           (".htm", "to_html"), (".json", "to_json")])
def test_write_picks_the_format_from_the_suffix(tmp_path, suffix, render):
    rep = report()
    path = tmp_path / f"out{suffix}"
    assert rep.write(path) == str(path)
    expected = getattr(rep, render)()
    assert path.read_text(encoding="utf-8") == (expected if expected.endswith("\n") else expected + "\n")


def test_the_interval_note_appears_only_where_p_is_corrected():
    """Issue 39 item 15: beside a corrected p the (per-comparison) interval is said to be uncorrected, in every
    rendering; with no correction, or a single comparison, p and interval agree and nothing is added."""
    assert report().interval_note().startswith("the delta's 90% interval is per comparison, not adjusted for the 3 ")
    for rep in (report(correction="none"), report(rows=report().rows[:2])):
        assert rep.interval_note() is None
        assert "CI:" not in rep.to_text() and "CI:" not in rep.to_markdown() and "CI:" not in rep.to_html()
    assert "p bonferroni is: it can exclude 0" in report(correction="bonferroni").to_text()


def test_write_refuses_an_unknown_suffix(tmp_path):
    with pytest.raises(ConfigError) as e:
        report().write(tmp_path / "out.txt")
    assert str(e.value) == (f"cannot tell the report format from {str(tmp_path / 'out.txt')!r}; use a .md, .html or "
                            ".json file name")


def test_comparison_renderings():
    c = _comparison(report(), "mrr", "meh", ("A", "B"))
    assert (c.baseline, c.candidate, c.baseline_mean, c.candidate_mean, c.n) == ("A", "B", 0.5, 0.45, 20)
    assert c.extra == {"delta_ci": [-0.2, 0.1], "baseline_ci": [0.4, 0.6], "candidate_ci": [0.35, 0.55], "mde": 0.19,
                       "needed": 196, "needed_target": 196, "changed": 3, "sd_diff": 0.25}
    assert c.to_text() == (
        "mrr: A 0.5000 -> B 0.4500 (-0.0500, p=0.5, randomization test, 1000 samples, seed 3, n=20)\n"
        "wins 1  ties 17  losses 2\n"
        "fixed (first hit now in the top 10): none\n"
        "broken (first hit no longer in the top 10): 1 question (q3)")
    assert c.to_markdown() == (
        "| metric | A | B | delta | p | W/T/L | fixed | broken |\n"
        "|---|---|---|---|---|---|---|---|\n"
        "| mrr | 0.5000 | 0.4500 | -0.0500 | 0.5 | 1/17/2 | 0 | 1 |")
    d = json.loads(c.to_json())
    assert d["fixed"] == [] and d["broken"] == ["q3"] and d["extra"]["delta_ci"] == [-0.2, 0.1]
    assert c.to_json().startswith('{\n  "metric": "mrr"')
    nan = Comparison("m", "a", "b", 1, 0.0, 0.0, 0.0, 1.0, "t-test", 1, 0, 0, 1, 0, extra={"sd_diff": float("nan")})
    assert nan.to_dict()["extra"] == {"sd_diff": None} and nan.k == 10 and nan.fixed == ()


def test_metric_k_and_per_question():
    assert metric_k("recall@7", [5, 10]) == 7 and metric_k("mrr", [5, 20, 10]) == 20 and metric_k("ndcg@x", [3]) == 3
    result = {"questions": [{"id": "a", "scores": {"mrr": 0.5}}, {"id": "b", "answerable": False, "scores": {}},
                            {"id": "c", "answerable": True, "scores": {"mrr": None}}]}
    out = per_question(result, "mrr")
    assert list(out) == ["a", "c"] and out["a"] == 0.5 and math.isnan(out["c"])
    with pytest.raises(ConfigError) as e:
        per_question(result, "recall@5")
    assert str(e.value) == "metric 'recall@5' is not in the results (have: mrr)"
    with pytest.raises(ConfigError) as e:
        per_question({"questions": [{"id": "a", "scores": None}]}, "mrr")
    assert str(e.value) == "metric 'mrr' is not in the results (have: none)"


def run(name, values, ranks=None, metric="recall@5", meta=None, ks=(5, 10)):
    ids = [f"q{i}" for i in range(len(values))]
    return Run(name, {q: {metric: v, "mrr": v} for q, v in zip(ids, values)},
               dict(zip(ids, ranks or [None] * len(values))), ks=ks, meta=meta or {})


def test_wins_ties_losses_use_the_tolerance_but_changed_counts_any_difference():
    a = run("a", [0.5, 0.5, 0.5, 0.5, 0.5])
    b = run("b", [0.5 + 1e-12, 0.5 - 1e-12, 0.6, 0.4, 0.5])
    r = compare([a, b], metrics="recall@5", samples=200).row("b", "recall@5")
    assert (r.wins, r.ties, r.losses, r.changed) == (1, 3, 1, 4)
    r = compare([a, b], metrics="recall@5", samples=200, tolerance=0.0).row("b", "recall@5")
    assert (r.wins, r.ties, r.losses) == (2, 1, 2)
    r = compare([a, b], metrics="recall@5", samples=200, tolerance=0.2).row("b", "recall@5")
    assert (r.wins, r.ties, r.losses) == (0, 5, 0)


def test_row_values_are_the_paired_statistics():
    a = run("a", [0.0, 0.5, 1.0, 0.5, 0.0, 1.0])
    b = run("b", [1.0, 0.5, 1.0, 1.0, 0.0, 0.0])
    rep = compare([a, b], metrics=("recall@5",), test="t-test", samples=500, seed=2, correction="none")
    r = rep.row("b", "recall@5")
    d = np.array([1.0, 0.0, 0.0, 0.5, 0.0, -1.0])
    assert r.mean == pytest.approx(0.5833333333) and rep.row("a", "recall@5").mean == 0.5
    assert r.delta == pytest.approx(d.mean()) and r.sd_diff == pytest.approx(d.std(ddof=1)) and r.n == 6
    from ragtune.evaluate.significance import bootstrap_ci, detectable_effect, questions_needed, t_test

    assert r.p_value == t_test(list(a.values("recall@5").values()), list(b.values("recall@5").values()))
    assert r.p_adjusted == r.p_value and rep.mde_alpha == 0.05
    assert (r.delta_low, r.delta_high) == bootstrap_ci(d, n=500, seed=2, confidence=0.95)
    assert (r.ci_low, r.ci_high) == bootstrap_ci([1.0, 0.5, 1.0, 1.0, 0.0, 0.0], n=500, seed=2)
    assert r.mde == detectable_effect(r.sd_diff, 6, alpha=0.05, power=0.8)
    assert r.needed == questions_needed(r.sd_diff, r.delta, alpha=0.05, power=0.8)
    assert r.needed_target == questions_needed(r.sd_diff, 0.05, alpha=0.05, power=0.8)
    holm = compare([a, b, run("c", [0.0] * 6)], metrics=("recall@5", "mrr"), samples=500, power=0.9,
                   target_effect=0.1, confidence=0.8)
    assert holm.mde_alpha == 0.05 / 4 and (holm.power, holm.target_effect, holm.confidence) == (0.9, 0.1, 0.8)
    r = holm.row("b", "mrr")
    assert r.needed_target == questions_needed(r.sd_diff, 0.1, alpha=0.05 / 4, power=0.9)
    assert r.mde == detectable_effect(r.sd_diff, 6, alpha=0.05 / 4, power=0.9)
    assert (r.ci_low, r.ci_high) == bootstrap_ci([1.0, 0.5, 1.0, 1.0, 0.0, 0.0], n=500, seed=0, confidence=0.8)
    assert holm.row("c", "mrr").significant is False and isinstance(holm.row("b", "mrr").significant, bool)


def test_context_tokens_have_no_target_effect_and_one_question_no_spread():
    a = Run("a", {"q0": {"context_tokens@5": 100.0}, "q1": {"context_tokens@5": 300.0}}, ks=(5,))
    b = Run("b", {"q0": {"context_tokens@5": 150.0}, "q1": {"context_tokens@5": 330.0}}, ks=(5,))
    r = compare([a, b], metrics="context_tokens@5", samples=100).row("b", "context_tokens@5")
    assert r.needed_target is None and r.needed is not None
    one = compare([run("a", [0.0]), run("b", [1.0])], metrics="recall@5", samples=100).row("b", "recall@5")
    assert math.isnan(one.sd_diff) and one.mde is None and one.changed == 1


def test_fixed_and_broken_use_the_metric_cut_off_or_the_largest_k():
    a = run("a", [1.0, 1.0, 0.0, 0.0], ranks=[3, 7, None, 12])
    b = run("b", [0.0, 1.0, 1.0, 0.0], ranks=[6, 2, 4, 9])
    rep = compare([a, b], metrics=("recall@5", "mrr"), samples=100)
    r5, mrr = rep.row("b", "recall@5"), rep.row("b", "mrr")
    assert (r5.k, r5.fixed, r5.broken) == (5, ("q1", "q2"), ("q0",))
    assert (mrr.k, mrr.fixed, mrr.broken) == (10, ("q2", "q3"), ())  # the baseline's largest k


def test_baseline_choices():
    runs = [run("a", [0.0, 1.0]), run("b", [1.0, 1.0], meta={"sweep_baseline": True}), run("c", [0.5, 0.5])]
    assert compare(runs, baseline=-1, metrics="recall@5", samples=50).baseline == "c"
    assert compare(runs, baseline=-3, metrics="recall@5", samples=50).baseline == "a"
    assert compare(runs, baseline=2, metrics="recall@5", samples=50).systems == ("c", "a", "b")
    assert compare(runs, baseline="baseline", metrics="recall@5", samples=50).baseline == "b"
    for bad, text in ((3, "baseline index 3 is out of range for 3 runs"),
                      (-4, "baseline index -4 is out of range for 3 runs"),
                      (True, "no run named True to use as the baseline; runs: a, b, c; or 'baseline' / "
                             "'recommended' for a sweep's baseline or recommended configuration")):
        with pytest.raises(ConfigError) as e:
            compare(runs, baseline=bad, metrics="recall@5")
        assert str(e.value) == text
    two = [runs[1], run("d", [0.0, 0.0], meta={"sweep_baseline": True})]
    with pytest.raises(ConfigError) as e:
        compare(two, baseline="baseline", metrics="recall@5")
    assert str(e.value) == "no run named 'baseline' to use as the baseline; runs: b, d"


def test_metrics_are_deduplicated_and_checked():
    runs = [run("a", [0.0, 1.0]), run("b", [1.0, 1.0])]
    rep = compare(runs, metrics=["mrr", "recall@5", "mrr"], samples=50)
    assert rep.metrics == ("mrr", "recall@5") and len(rep.rows) == 4
    bad = [run("a", [0.0, 1.0]), Run("b", {"q0": {"recall@5": 1.0}, "q1": {"recall@5": float("nan")}})]
    with pytest.raises(ConfigError) as e:
        compare(bad, metrics="recall@5")
    assert str(e.value) == "metric 'recall@5' is undefined in run 'b' for question(s) q1; compare on another metric"
    for alpha in (0.0, 1.0):
        with pytest.raises(ConfigError) as e:
            compare(runs, alpha=alpha)
        assert str(e.value) == f"alpha must be between 0 and 1, got {alpha!r}"
    with pytest.raises(ConfigError) as e:
        compare(runs, metrics=[])
    assert str(e.value) == "compare needs at least one metric, such as recall@10"


def test_inputs_that_are_not_runs():
    a = run("a", [0.0, 1.0])
    for single in (a, "results.json", {"questions": []}):
        with pytest.raises(ConfigError) as e:
            compare(single)
        assert str(e.value) == "compare takes a list (or a name -> run mapping) of at least two runs, got a single one"
    with pytest.raises(ConfigError) as e:
        compare([a, 3])
    assert str(e.value) == ("cannot compare a int; give Run objects, evaluation results (or their to_dict()), or "
                            "paths to eval JSON, sweep folders or run files (TREC, ranx JSON, JSONL)")
    with pytest.raises(ConfigError) as e:
        compare([a])
    assert str(e.value) == "compare needs at least two runs, got 1"
    with pytest.raises(ConfigError) as e:
        compare([a, a])
    assert str(e.value) == ("two or more runs are named 'a'; give each a unique name (pass a {name: run} mapping, "
                            "or Run.renamed)")
    empty = [Run("x", {}), Run("y", {})]
    with pytest.raises(ConfigError) as e:
        compare(empty)
    assert str(e.value) == "the baseline 'x' has no answerable questions to compare"

    class Result:
        def to_dict(self):
            return {"config": {"ks": [5]}, "questions": [{"id": "q0", "scores": {"recall@5": 1.0, "mrr": 1.0}},
                                                         {"id": "q1", "scores": {"recall@5": 0.0, "mrr": 0.0}}]}

    rep = compare({"mine": Result(), "theirs": a}, metrics="recall@5", samples=50)
    r = rep.row("theirs", "recall@5")
    assert rep.systems == ("mine", "theirs") and (r.delta, r.wins, r.losses) == (0.0, 1, 1)


def test_question_mismatch_messages():
    a = run("a", [0.0] * 7)
    b = Run("b", {f"q{i}": {"recall@5": 0.0} for i in range(2, 13)})
    with pytest.raises(ConfigError) as e:
        compare([a, b], metrics="recall@5")
    assert str(e.value) == ("the two results cover different questions: run 'b' lacks 2 question(s) (q0, q1) and has "
                            "6 extra (q10, q11, q12, q7, q8 and 1 more) of baseline 'a'; compare runs of the same "
                            "golden set")
    c = Run("c", {f"q{i}": {"recall@5": 0.0} for i in range(2, 7)})
    with pytest.raises(ConfigError) as e:
        compare([a, c], metrics="recall@5")
    assert "lacks 2 question(s) (q0, q1) of baseline" in str(e.value)
    d = Run("d", {f"q{i}": {"recall@5": 0.0} for i in range(12)})
    with pytest.raises(ConfigError) as e:
        compare([a, d], metrics="recall@5")
    assert "run 'd' has 5 extra (q10, q11, q7, q8, q9) of baseline" in str(e.value)


def test_the_detectable_effect_is_computed_at_the_corrected_alpha_only_under_a_correction():
    a = run("a", [0.0, 0.5, 1.0, 0.5, 0.0, 1.0])
    b = run("b", [1.0, 0.5, 1.0, 1.0, 0.0, 0.0])
    metrics = ("recall@5", "mrr")  # two comparisons
    assert compare([a, b], metrics=metrics, samples=200, correction="none").mde_alpha == 0.05
    assert compare([a, b], metrics=metrics, samples=200, correction="holm").mde_alpha == 0.025
    assert compare([a, b], metrics=metrics, samples=200, correction="bonferroni").mde_alpha == 0.025
