"""Selection that does not fool itself: choose the configuration on one part of the questions, score it on the rest.

A sweep's winner is reported on the very questions it won on, so its figure is optimistic (the winner's curse): with
many configurations and few questions, one of them does well by luck. With ``holdout = SHARE`` the answerable
questions are split once (seeded, stratified by tag, unanswerable questions on both sides), the configurations are
ranked on the *selection* part only, and the chosen one is scored on the *held-out* part, with its interval, against
the baseline on the same held-out questions. The optimism is the chosen configuration's selection score minus its
held-out score: how much choosing flattered it. Nothing is run twice: the split reads the per-question scores every
configuration already has.

With ``folds = K`` (:func:`folds_selection`) the questions are dealt into K folds, stratified the same way, and each
fold is scored by the configuration chosen on the other folds: every question is held out once, so the held-out
figure is a mean over all of them, with its interval, and the optimism is the chosen configurations' score where they
were chosen minus it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["SELECT_RULES", "choose", "question_scores", "split_questions", "holdout_selection", "selection_text", "fold_questions",
           "folds_selection", "folds_text"]


def split_questions(questions: Sequence[Mapping[str, Any]], share: float, seed: int = 0) -> tuple[list[str], list[str]]:
    """(selection ids, held-out ids): ``share`` of each stratum held out, a stratum being the answerable questions
    of one first tag (or of no tag), or the unanswerable ones. A stratum of one question stays in selection; every
    other stratum keeps at least one question on each side."""
    strata: dict[tuple[bool, str], list[str]] = {}
    for q in questions:
        tags = list(q.get("tags") or [])
        strata.setdefault((bool(q.get("answerable", True)), tags[0] if tags else ""), []).append(str(q["id"]))
    rng = random.Random(seed)
    selection: list[str] = []
    held: list[str] = []
    for key in sorted(strata):
        ids = sorted(strata[key])
        rng.shuffle(ids)
        n = len(ids)
        k = 0 if n < 2 else min(n - 1, max(1, round(share * n)))
        held.extend(ids[:k])
        selection.extend(ids[k:])
    return sorted(selection), sorted(held)


def question_scores(result: Mapping[str, Any], metric: str) -> dict[str, float]:
    """Per answerable question of an evaluation result: its score on ``metric`` (NaN when not scored)."""
    return {q["id"]: (math.nan if q["scores"].get(metric) is None else float(q["scores"][metric]))
            for q in result["questions"] if q["answerable"]}


def _mean(scores: Mapping[str, float], ids: Sequence[str]) -> float:
    vals = [scores[i] for i in ids if i in scores and not math.isnan(scores[i])]
    return float(np.mean(vals)) if vals else float("nan")


SELECT_RULES = ("best", "significant")
SELECT_ALPHA = 0.05  # the significance level of the "significant" rule (the sweep's own)


def choose(per: Mapping[str, Mapping[str, float]], keys: Sequence[str], sel: Sequence[str], *, baseline_key: str,
           rule: str = "best", labels: Mapping[str, str] | None = None, lower_better: bool = False,
           test: str = "randomization", samples: int = 10000, seed: int = 0) -> str:
    """The key ``rule`` chooses among ``keys`` on the questions ``sel``, from per-question scores ``per[key][id]``.

    - ``best``: the best mean (ties by label).
    - ``significant``: the best mean among the configurations significantly better than the baseline on ``sel``
      (paired ``test``, Holm-adjusted over every configuration compared, at :data:`SELECT_ALPHA`); the baseline
      when none is.
    """
    from ..errors import ConfigError
    from ..evaluate.significance import holm, paired_test

    if rule not in SELECT_RULES:
        raise ConfigError(f"select: expected one of {', '.join(SELECT_RULES)}; got {rule!r}")
    labels = labels or {}
    keys = list(dict.fromkeys([*keys, baseline_key]))
    sign = 1.0 if lower_better else -1.0
    mean = {k: _nan_last(_mean(per[k], sel), lower_better) for k in keys}
    ranked = sorted(keys, key=lambda k: (sign * mean[k], labels.get(k, k)))
    if rule == "best":
        return ranked[0]
    ids = [i for i in sel if not math.isnan(per[baseline_key].get(i, math.nan))]
    base = np.array([per[baseline_key][i] for i in ids])
    others = [k for k in keys if k != baseline_key]
    p = []
    for k in others:  # only a configuration better on average is tested: the others keep p = 1
        x = np.array([per[k].get(i, math.nan) for i in ids])
        ok = ~np.isnan(x)
        gain = float(np.mean(base[ok] - x[ok] if lower_better else x[ok] - base[ok])) if ok.any() else 0.0
        p.append(paired_test(test, base[ok], x[ok], n=samples, seed=seed) if gain > 0 else 1.0)
    adjusted = dict(zip(others, holm(p))) if others else {}
    winners = [k for k in ranked if k != baseline_key and adjusted[k] < SELECT_ALPHA]
    return winners[0] if winners else baseline_key


def holdout_selection(records: Sequence[Mapping[str, Any]], *, metric: str, share: float, seed: int,
                      baseline_key: str, lower_better: bool = False, samples: int = 10000, rule: str = "best",
                      test: str = "randomization") -> dict[str, Any]:
    """Choose on the selection questions, report on the held-out ones (see the module docstring)."""
    from ..evaluate.significance import bootstrap_ci, paired_test

    questions = records[0]["result"]["questions"]
    selection, held = split_questions(questions, share, seed)
    per = {r["key"]: question_scores(r["result"], metric) for r in records}
    sel = [i for i in selection if i in per[records[0]["key"]]]
    out = [i for i in held if i in per[records[0]["key"]]]
    if not sel or not out:
        return {"share": share, "seed": seed, "problem": "too few answerable questions to hold any out"}
    labels = {r["key"]: r["label"] for r in records}
    key = choose(per, list(per), sel, baseline_key=baseline_key, rule=rule, labels=labels, lower_better=lower_better,
                 test=test, samples=samples, seed=seed)
    chosen = next(r for r in records if r["key"] == key)
    x = np.array([per[baseline_key][i] for i in out])
    y = np.array([per[chosen["key"]][i] for i in out])
    lo, hi = bootstrap_ci(y, n=samples, seed=seed)
    chosen_sel, chosen_out = _mean(per[chosen["key"]], sel), float(y.mean())
    better = chosen["key"] != baseline_key and (chosen_out > float(x.mean()) if not lower_better
                                                else chosen_out < float(x.mean()))
    p = paired_test("randomization", x, y, n=samples, seed=seed) if chosen["key"] != baseline_key else None
    return {"share": share, "seed": seed, "rule": rule, "selection_questions": len(sel),
            "held_out_questions": len(out),
            "chosen": chosen["key"], "chosen_label": chosen["label"], "selection_score": chosen_sel,
            "held_out_score": chosen_out, "held_out_ci": [lo, hi], "optimism": chosen_sel - chosen_out,
            "baseline_held_out": float(x.mean()), "delta_vs_baseline": chosen_out - float(x.mean()),
            "p_vs_baseline": p, "beats_baseline": bool(better and p is not None and p < 0.05),
            "held_out_ids": out}


def _nan_last(v: float, lower_better: bool) -> float:
    if math.isnan(v):
        return math.inf if lower_better else -math.inf
    return v


def selection_text(s: Mapping[str, Any], metric: str) -> str:
    """The lines the sweep table ends with when it held questions out."""
    if "problem" in s:
        return f"holdout {s['share']:.0%}: {s['problem']}"
    kept = s.get("rule", "best") == "significant"
    verdict = ("it still beats the baseline there" if s["beats_baseline"] else
               "no configuration was significantly better than the baseline where chosen, so the baseline was kept"
               if kept and s["p_vs_baseline"] is None else
               "the baseline itself was chosen" if s["p_vs_baseline"] is None else
               "not significantly better than the baseline there")
    p = "" if s["p_vs_baseline"] is None else f", p={s['p_vs_baseline']:.3f}"
    how = " (select = significant: the best of those significantly better than the baseline)" if kept else ""
    return (f"holdout {s['share']:.0%}: chosen{how} on {s['selection_questions']} questions, scored on the other "
            f"{s['held_out_questions']}: {s['chosen_label']} {metric} {s['selection_score']:.3f} where chosen, "
            f"{s['held_out_score']:.3f} [{s['held_out_ci'][0]:.3f}, {s['held_out_ci'][1]:.3f}] held out (optimism "
            f"{s['optimism']:+.3f}); baseline {s['baseline_held_out']:.3f} held out ({s['delta_vs_baseline']:+.3f}"
            f"{p}): {verdict}. Quote the held-out figure.")


# -- K-fold cross-validated selection ----------------------------------------------------------------------------

def fold_questions(questions: Sequence[Mapping[str, Any]], k: int, seed: int = 0) -> list[list[str]]:
    """``k`` folds of question ids, stratified as :func:`split_questions` (answerable questions by first tag, the
    unanswerable ones apart): each stratum shuffled (seeded) and dealt round the folds, the dealing carried on from
    one stratum to the next so that the folds differ in size by one question at most."""
    strata: dict[tuple[bool, str], list[str]] = {}
    for q in questions:
        tags = list(q.get("tags") or [])
        strata.setdefault((bool(q.get("answerable", True)), tags[0] if tags else ""), []).append(str(q["id"]))
    rng = random.Random(seed)
    folds: list[list[str]] = [[] for _ in range(k)]
    n = 0
    for key in sorted(strata):
        ids = sorted(strata[key])
        rng.shuffle(ids)
        for i in ids:
            folds[n % k].append(i)
            n += 1
    return [sorted(f) for f in folds]


def folds_selection(records: Sequence[Mapping[str, Any]], *, metric: str, folds: int, seed: int, baseline_key: str,
                    lower_better: bool = False, samples: int = 10000,
                    candidates: Sequence[Sequence[str]] | None = None, rule: str = "best",
                    test: str = "randomization") -> dict[str, Any]:
    """K-fold cross-validated selection: for each fold, the configuration ranked first on the other folds'
    questions (among ``candidates[fold]`` when given: the keys a search of that fold evaluated) is scored on the
    fold's own. Every answerable question is held out once, so the held-out score is the mean over all of them,
    each scored by a configuration chosen without it: the figure to expect from the choice on new questions. The
    optimism is the mean selection score (the chosen configuration on the questions it was chosen on, each fold
    weighted by its held-out questions) minus that."""
    from ..evaluate.significance import bootstrap_ci, paired_test

    questions = records[0]["result"]["questions"]
    per = {r["key"]: question_scores(r["result"], metric) for r in records}
    by_key = {r["key"]: r for r in records}
    answerable = per[records[0]["key"]]
    parts = [[i for i in f if i in answerable] for f in fold_questions(questions, folds, seed)]
    if sum(1 for p in parts if p) < 2:
        return {"folds": folds, "seed": seed, "problem": "too few answerable questions to make two folds"}
    labels = {k: r["label"] for k, r in by_key.items()}
    rows, chosen_scores, base_scores = [], [], []
    for f, held in enumerate(parts):
        if not held:
            continue
        sel = [i for g, part in enumerate(parts) if g != f for i in part]
        keys = [k for k in (candidates[f] if candidates is not None else by_key) if k in by_key]
        best = choose(per, keys, sel, baseline_key=baseline_key, rule=rule, labels=labels, lower_better=lower_better,
                      test=test, samples=samples, seed=seed)
        held_scores = [per[best][i] for i in held]
        chosen_scores.extend(held_scores)
        base_scores.extend(per[baseline_key][i] for i in held)
        rows.append({"fold": f + 1, "selection_questions": len(sel), "held_out_questions": len(held), "chosen": best,
                     "chosen_label": by_key[best]["label"], "selection_score": _mean(per[best], sel),
                     "held_out_score": float(np.nanmean(held_scores))})
    x, y = np.array(base_scores), np.array(chosen_scores)
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = x[ok], y[ok]
    lo, hi = bootstrap_ci(y, n=samples, seed=seed)
    held_out = float(y.mean())
    selection = float(sum(r["selection_score"] * r["held_out_questions"] for r in rows)
                      / sum(r["held_out_questions"] for r in rows))
    differs = bool(np.any(x != y))
    p = paired_test("randomization", x, y, n=samples, seed=seed) if differs else None
    delta = held_out - float(x.mean())
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["chosen_label"]] = counts.get(r["chosen_label"], 0) + 1
    better = delta < 0 if lower_better else delta > 0
    return {"folds": folds, "seed": seed, "rule": rule, "questions": int(len(y)), "per_fold": rows,
            "chosen_counts": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
            "selection_score": selection, "held_out_score": held_out, "held_out_ci": [lo, hi],
            "optimism": selection - held_out, "baseline_held_out": float(x.mean()), "delta_vs_baseline": delta,
            "p_vs_baseline": p, "beats_baseline": bool(better and p is not None and p < 0.05)}


def folds_text(s: Mapping[str, Any], metric: str) -> str:
    """The lines the sweep table ends with after a K-fold selection."""
    if "problem" in s:
        return f"{s['folds']}-fold selection: {s['problem']}"
    worse = s["p_vs_baseline"] is not None and s["p_vs_baseline"] < 0.05 and not s["beats_baseline"]
    verdict = ("it beats the baseline there" if s["beats_baseline"] else
               "the baseline itself was chosen in every fold" if s["p_vs_baseline"] is None else
               "significantly worse than the baseline there: choosing did harm" if worse else
               "not significantly better than the baseline there")
    p = "" if s["p_vs_baseline"] is None else f", p={s['p_vs_baseline']:.3f}"
    chosen = ", ".join(f"{label} x{n}" for label, n in s["chosen_counts"].items())
    how = (" (select = significant: the best of those significantly better than the baseline, else the baseline)"
           if s.get("rule", "best") == "significant" else "")
    return (f"{s['folds']}-fold selection: each fold chosen{how} on the other folds' questions, scored on its own "
            f"({s['questions']} questions in all): {metric} {s['selection_score']:.3f} where chosen, "
            f"{s['held_out_score']:.3f} [{s['held_out_ci'][0]:.3f}, {s['held_out_ci'][1]:.3f}] held out (optimism "
            f"{s['optimism']:+.3f}); baseline {s['baseline_held_out']:.3f} on the same questions "
            f"({s['delta_vs_baseline']:+.3f}{p}): {verdict}. Chosen per fold: {chosen}. Quote the held-out figure.")
