"""Sampled pools: inclusion probabilities, reproducible draws, and estimates that are right on average."""

import math

import numpy as np
import pytest

from ragtune import ConfigError
from ragtune.evaluate.evaluate import EvalResult, QuestionResult
from ragtune.golden import GoldenItem, GoldenSet
from ragtune.judgments.estimate import SHRINK, estimate_metrics, hole_relevance
from ragtune.judgments.sample import STRATA, allocate, draw_sample, stratum_of


def synthetic_pool(n_questions=12, seed=7):
    """Per question: a run's top 10 (anchors), one relevant anchor judged beforehand, holes found by the run and
    by other runs (with best ranks), and the truth for every hole."""
    rng = np.random.default_rng(seed)
    spec = {}
    for qi in range(n_questions):
        q = f"q{qi}"
        base = f"{q}/base"
        ranking = [f"{q}/h{r}" for r in range(10)]
        ranking[int(rng.integers(0, 10))] = base
        others = [f"{q}/o{j}" for j in range(int(rng.integers(2, 9)))]  # holes only other runs found
        holes = [(a, r + 1) for r, a in enumerate(ranking) if a != base]
        holes += [(a, int(rng.integers(1, 25))) for a in others]
        truth = {a: float(rng.random() < (0.5 if r <= 3 else 0.25 if r <= 10 else 0.1)) for a, r in holes}
        spec[q] = (base, ranking, holes, truth)
    return spec


def evaluation(spec, judged):
    """The EvalResult an eval would give when ``judged`` (question -> anchor -> 0/1) holds the judged holes."""
    questions, items = [], []
    for q, (base, ranking, _, _) in spec.items():
        relevant = {base: 2.0, **{a: 1.0 for a, y in judged.get(q, {}).items() if y}}
        not_rel = {a: 0.0 for a, y in judged.get(q, {}).items() if not y}
        rank_of = {a: r + 1 for r, a in enumerate(ranking)}
        anchor_ranks = {a: rank_of.get(a) for a in relevant}
        retrieved = tuple({"anchor": a, "relevant": a in relevant, "judged": a in relevant or a in not_rel}
                          for a in ranking)
        questions.append(QuestionResult(q, "?", (), relevant, True, None, anchor_ranks, (), (), {}, retrieved, 0.0))
        items.append(GoldenItem(q, "?", relevant=relevant, judged={**not_rel, **relevant}))
    metrics = {}
    for k in (5, 10):
        metrics[f"recall@{k}"] = float(np.mean([sum(1 for r in q.anchor_ranks.values() if r and r <= k)
                                                / len(q.relevant) for q in questions]))
        metrics[f"precision@{k}"] = float(np.mean([sum(r["relevant"] for r in q.retrieved[:k]) / k
                                                   for q in questions]))
    return EvalResult({}, (5, 10), metrics, {}, tuple(questions)), GoldenSet(items)


def truth(spec, k):
    recall, precision = [], []
    for q, (base, ranking, holes, t) in spec.items():
        top = ranking[:k]
        found = (base in top) + sum(t[a] for a in top if a != base)
        recall.append(found / (1 + sum(t.values())))
        precision.append(found / k)
    return float(np.mean(recall)), float(np.mean(precision))


def holes_of(spec):
    return {q: holes for q, (_, _, holes, _) in spec.items()}


def test_inclusion_probabilities_sum_to_the_sample_and_draws_reproduce():
    holes = holes_of(synthetic_pool())
    total = sum(len(h) for h in holes.values())
    a = draw_sample(holes, 30, seed=3)
    assert len(a.holes) == total and sum(h.sampled for h in a.holes) == 30
    assert math.isclose(sum(h.pi for h in a.holes), 30.0)
    for s in a.strata:  # equal probability within a stratum: n_h / N_h
        assert all(h.pi == s.drawn / s.size for h in a.holes if h.stratum == s.label)
        assert sum(h.sampled for h in a.holes if h.stratum == s.label) == s.drawn
    by_label = {s.label: s.pi for s in a.strata if s.size}
    assert by_label["1"] > by_label["4-6"] > by_label["11-20"]  # rank-weighted: shallow holes drawn more often
    again = draw_sample(holes, 30, seed=3)
    assert [h.sampled for h in again.holes] == [h.sampled for h in a.holes]
    assert [h.sampled for h in draw_sample(holes, 30, seed=4).holes] != [h.sampled for h in a.holes]
    assert stratum_of(1) == 0 and stratum_of(10) == 3 and stratum_of(400) == len(STRATA) - 1


def test_allocation_gives_every_stratum_two_and_refuses_what_cannot_be_drawn():
    assert allocate([1, 5, 0, 40], [1.0, 3.0, 0.0, 10.0], 10) == [1, 2, 0, 7]
    assert allocate([3, 3], [5.0, 1.0], 6) == [3, 3]
    with pytest.raises(ConfigError, match="draw at least 5"):
        allocate([1, 5, 40], [1.0, 1.0, 1.0], 4)
    with pytest.raises(ConfigError, match="only 46 holes"):
        allocate([1, 5, 40], [1.0, 1.0, 1.0], 47)


def test_the_estimates_are_right_on_average_and_their_intervals_cover():
    spec = synthetic_pool()
    holes = holes_of(spec)
    draws = {m: [] for m in ("recall@5", "precision@5", "recall@10", "precision@10")}
    covered = {m: 0 for m in draws}
    true = {"recall@5": truth(spec, 5)[0], "precision@5": truth(spec, 5)[1],
            "recall@10": truth(spec, 10)[0], "precision@10": truth(spec, 10)[1]}
    n_draws = 120
    for seed in range(n_draws):
        sample = draw_sample(holes, 40, seed=seed)
        judged = {}
        for h in sample.holes:
            if h.sampled:
                judged.setdefault(h.question, {})[h.anchor] = spec[h.question][3][h.anchor]
        est = estimate_metrics(*evaluation(spec, judged), sample)
        for m in draws:
            draws[m].append(est[m].estimate)
            covered[m] += est[m].low <= true[m] <= est[m].high
    for m, values in draws.items():
        se_mean = np.std(values) / math.sqrt(n_draws)
        assert abs(np.mean(values) - true[m]) < 4 * se_mean + 0.002, m  # right on average (over 120 seeded draws)
        assert covered[m] / n_draws >= 0.85, (m, covered[m] / n_draws)


def test_hole_relevance_is_known_where_judged_and_the_cell_share_shrunk_to_the_stratum_rate_elsewhere():
    spec = synthetic_pool(4)
    sample = draw_sample(holes_of(spec), 12, seed=1)
    judged = {}
    for h in sample.holes:
        if h.sampled:
            judged.setdefault(h.question, {})[h.anchor] = spec[h.question][3][h.anchor]
    _, golden = evaluation(spec, judged)
    p = hole_relevance(sample, golden)
    rate, cell = {}, {}
    for h in sample.holes:
        if h.sampled:
            y = judged[h.question][h.anchor]
            rate.setdefault(h.stratum, []).append(y)
            cell.setdefault((h.question, h.stratum), []).append(y)
    rate = {s: np.mean(v) for s, v in rate.items()}
    for h in sample.holes:
        mine = cell.get((h.question, h.stratum), [])
        expected = judged[h.question][h.anchor] if h.sampled else (sum(mine) + SHRINK * rate[h.stratum]) / (len(mine) + SHRINK)
        assert p[h.question][h.anchor] == pytest.approx(expected)


def questions_apart(n_questions=20, seed=0):
    """As :func:`synthetic_pool`, but questions differ: each question's chance of a relevant hole is the depth's
    times a factor of 0.1, 0.5, 1 or 2.5 (some questions have almost none, others many)."""
    rng = np.random.default_rng(seed)
    spec = {}
    for qi in range(n_questions):
        q = f"q{qi}"
        base = f"{q}/base"
        ranking = [f"{q}/h{r}" for r in range(10)]
        ranking[int(rng.integers(0, 10))] = base
        others = [f"{q}/o{j}" for j in range(int(rng.integers(2, 9)))]
        holes = [(a, r + 1) for r, a in enumerate(ranking) if a != base]
        holes += [(a, int(rng.integers(1, 25))) for a in others]
        factor = rng.choice([0.1, 0.5, 1.0, 2.5])
        truth = {a: float(rng.random() < min(0.95, factor * (0.4 if r <= 3 else 0.2 if r <= 10 else 0.08)))
                 for a, r in holes}
        spec[q] = (base, ranking, holes, truth)
    return spec


def judge_drawn(spec, sample):
    judged = {}
    for h in sample.holes:
        if h.sampled:
            judged.setdefault(h.question, {})[h.anchor] = spec[h.question][3][h.anchor]
    return judged


def test_precision_keeps_an_interval_when_no_draw_the_run_retrieved_is_relevant():
    # every hole relevant but none drawn relevant: the judged draws say 0, the holes the run retrieved may not be
    spec = synthetic_pool(6, seed=3)
    holes = holes_of(spec)
    sample = draw_sample(holes, 16, seed=0)
    judged = {q: {a: 0.0 for a in anchors} for q, anchors in
              {h.question: [x.anchor for x in sample.holes if x.sampled and x.question == h.question]
               for h in sample.holes if h.sampled}.items()}
    est = estimate_metrics(*evaluation(spec, judged), sample)
    for k in (5, 10):
        i = est[f"precision@{k}"]
        assert i.high - i.low > 0.01, (k, i)  # the design variance alone is 0 here: a point, not an interval


def test_intervals_cover_when_questions_differ_and_a_tenth_of_the_holes_is_judged():
    covered, n = {}, 0
    for pool_seed in range(3):
        spec = questions_apart(seed=pool_seed)
        holes = holes_of(spec)
        n_holes = sum(len(h) for h in holes.values())
        true = {f"{m}@{k}": truth(spec, k)[j] for k in (5, 10) for j, m in enumerate(("recall", "precision"))}
        for seed in range(40):
            sample = draw_sample(holes, max(14, n_holes // 10), seed=seed)
            est = estimate_metrics(*evaluation(spec, judge_drawn(spec, sample)), sample)
            for m, t in true.items():
                covered[m] = covered.get(m, 0) + (est[m].low <= t <= est[m].high)
            n += 1
    for m, c in covered.items():  # precision by the draws' spread alone: 111 of 120 (0.925)
        assert c / n >= 0.94, (m, c / n)


def test_the_summary_warns_when_too_few_draws_a_question_were_judged():
    spec = synthetic_pool(6, seed=3)
    holes = holes_of(spec)
    few = draw_sample(holes, 16, seed=0)  # under 3 a question
    text = estimate_metrics(*evaluation(spec, judge_drawn(spec, few)), few).summary()
    assert "judged draws a question: with fewer than 5, recall's estimate leans on the depth strata's rates" in text
    many = draw_sample(holes, 40, seed=0)
    assert "judged draws a question" not in estimate_metrics(*evaluation(spec, judge_drawn(spec, many)), many).summary()


def test_intervals_stay_within_zero_and_one_on_a_thin_sample():
    """A normal interval from a handful of draws can pass 0 or 1; recall and precision cannot."""
    wide = 0
    for seed in range(6):
        spec = synthetic_pool(6, seed=seed)
        sample = draw_sample(holes_of(spec), 14, seed=seed)
        est = estimate_metrics(*evaluation(spec, judge_drawn(spec, sample)), sample)
        for m in ("recall@5", "recall@10", "precision@5", "precision@10"):
            assert 0.0 <= est[m].low <= est[m].estimate <= est[m].high <= 1.0, (seed, m, est[m])
            wide += est[m].high - est[m].low > 0.5
    assert wide  # thin samples: some intervals are wide enough to have passed a bound
