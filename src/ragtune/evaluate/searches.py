"""Figures of a question searched more than once, and of conversations turn by turn.

A question an agent searched several times is one :class:`~ragtune.types.Ranking` whose ``searches`` holds each
search in order and whose ``hits`` are what reached the model (the searches' hits in order, repeats dropped). The
metric table scores the merged hits as any ranking; this module says what each search added to the top ``k``
of the merged hits (the largest k evaluated, what the figures at that k score):

- ``recall`` after 1, 2, ... searches: the share of the relevant anchors covered in the top k by hits of the
  first n searches (a question with fewer searches keeps its last value);
- ``new_relevant``: relevant anchors the n-th search covered first (none of the earlier ones had);
- ``redundant``: hits of the n-th search the model had already been handed (a chunk an earlier search, or the
  same search, returned before), over all its hits;
- ``first_found``: for each relevant anchor, the search that first covered it in the top k (``never`` when none
  did);
- ``context_tokens`` after n searches (the tokens of the top k hits the first n searches gave), and recall against
  tokens spent: ``by_tokens`` is the mean recall of the top hits that fit in each budget of :data:`TOKEN_BUDGETS`
  (a curve, drawn in the report; no k applies).

A plain ranking (``searches == ()``) counts as one search. The figures are computed only when some question of a
run searched more than once, so a plain run's result is what it was.

Conversation turns (golden items with ``turn``): ``turns`` holds every metric's mean by turn index, so a drop on
the second turn (ellipsis, pronouns) is a number; :func:`compare_turns` sets two results side by side (with and
without history).

Only the question results and the rankings are read (the merged ranks of ``QuestionResult.anchor_ranks``), so this
module depends on nothing else of ``evaluate``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

__all__ = ["TOKEN_BUDGETS", "question_searches", "search_figures", "summarize_searches", "turn_figures",
           "compare_turns", "render_searches", "render_turns"]

TOKEN_BUDGETS = (250, 500, 1000, 2000, 4000, 8000)
"""The context budgets (tokens) at which recall is read for the curve of recall against tokens."""


def question_searches(ranking: Any, anchor_ranks: Mapping[str, int | None], k: int) -> dict[str, Any]:
    """One question's per-search figures in the top ``k``: ``ranking`` (a :class:`~ragtune.types.Ranking`, merged
    when it holds ``searches``) and ``anchor_ranks`` (relevant anchor -> the merged rank where it is first covered,
    None if never, as :class:`~ragtune.evaluate.evaluate.QuestionResult` holds them)."""
    searches = list(ranking.searches) or [ranking]
    origin: dict[str, int] = {}  # chunk id -> the search (1-based) that first returned it
    redundant = []
    for n, s in enumerate(searches, start=1):
        again = 0
        for h in s.hits:
            if h.chunk.id in origin:
                again += 1
            else:
                origin[h.chunk.id] = n
        redundant.append(again)
    merged = list(ranking.hits)
    source = [origin.get(h.chunk.id, 1) for h in merged]  # the search each merged rank came from
    tokens = np.array([h.chunk.tokens or 0 for h in merged], dtype=np.float64)
    top = min(k, len(source))
    first_found = {a: (source[r - 1] if r is not None and r <= top else None) for a, r in anchor_ranks.items()}
    n_rel = len(anchor_ranks)
    rows = []
    for n in range(1, len(searches) + 1):
        found = sum(1 for v in first_found.values() if v is not None and v <= n)
        rows.append({
            "query": searches[n - 1].query,
            "hits": len(searches[n - 1].hits),
            "new_relevant": [a for a, v in first_found.items() if v == n],
            "redundant": redundant[n - 1],
            "recall": found / n_rel if n_rel else math.nan,
            "context_tokens": float(sum(t for t, src in zip(tokens[:top], source[:top]) if src <= n)),
        })
    cum = np.cumsum(tokens)
    ranks = [r for r in anchor_ranks.values() if r is not None]
    by_tokens = [[b, (sum(1 for r in ranks if r <= int(np.count_nonzero(cum <= b))) / n_rel) if n_rel else math.nan]
                 for b in TOKEN_BUDGETS]
    return {"searches": rows, "first_found": first_found, "by_tokens": by_tokens}


def search_figures(results: Sequence[Any], rankings: Mapping[str, Any], k: int) -> tuple[list[Any], dict[str, Any]]:
    """The question results with their per-search figures in the top ``k`` (``QuestionResult.searches``) and the
    run's summary (:func:`summarize_searches`), when some ranking holds more than one search; else the results
    unchanged and ``{}``."""
    if not any(len(getattr(r, "searches", ())) > 1 for r in rankings.values()):
        return list(results), {}
    out = [replace(q, searches=question_searches(rankings[q.id], q.anchor_ranks, k))
           if q.answerable and q.id in rankings else q for q in results]
    return out, {"k": k, **summarize_searches(out)}


def _mean(values: Sequence[float]) -> float:
    v = [x for x in values if not (isinstance(x, float) and math.isnan(x))]
    return float(np.mean(v)) if v else math.nan


def summarize_searches(results: Sequence[Any]) -> dict[str, Any]:
    """The run's per-search figures over the answerable questions with figures: by search index, the questions
    that made that many searches, mean recall and context tokens after it (a question with fewer searches keeps its
    last value), mean new relevant anchors and redundant hits of that search (over the questions that made it);
    how many anchors each search found first; mean recall within each token budget."""
    qs = [q.searches for q in results if q.answerable and q.searches]
    if not qs:
        return {}
    most = max(len(s["searches"]) for s in qs)
    by_search = []
    for n in range(1, most + 1):
        made = [s["searches"][n - 1] for s in qs if len(s["searches"]) >= n]
        upto = [s["searches"][min(n, len(s["searches"])) - 1] for s in qs]
        by_search.append({"search": n, "questions": len(made), "recall": _mean([r["recall"] for r in upto]),
                          "context_tokens": _mean([r["context_tokens"] for r in upto]),
                          "new_relevant": _mean([float(len(r["new_relevant"])) for r in made]),
                          "redundant": _mean([float(r["redundant"]) for r in made])})
    first: dict[str, int] = {}
    for s in qs:
        for v in s["first_found"].values():
            key = "never" if v is None else str(v)
            first[key] = first.get(key, 0) + 1
    order = sorted((k for k in first if k != "never"), key=int) + (["never"] if "never" in first else [])
    curve = [{"tokens": b, "recall": _mean([s["by_tokens"][i][1] for s in qs])} for i, b in enumerate(TOKEN_BUDGETS)]
    return {"questions": len(qs), "mean_searches": _mean([float(len(s["searches"])) for s in qs]),
            "by_search": by_search, "first_found": {k: first[k] for k in order}, "by_tokens": curve}


def turn_figures(results: Sequence[Any], keys: Sequence[str]) -> dict[str, Any]:
    """Every metric of ``keys`` by turn index (1 for a conversation's first question) over the answerable
    conversation turns, with how many questions each turn index has; ``{}`` without conversation turns."""
    turns = [q for q in results if q.answerable and getattr(q, "turn", None) is not None]
    if not turns:
        return {}
    rows = []
    for t in sorted({q.turn for q in turns}):
        at = [q for q in turns if q.turn == t]
        means = {k: _mean([q.scores[k] for q in at if k in q.scores]) for k in keys}
        rows.append({"turn": t + 1, "n": len(at), **{k: v for k, v in means.items() if not math.isnan(v)}})
    return {"conversations": len({q.conversation for q in turns}), "by_turn": rows}


def compare_turns(with_history: Any, without: Any, metric: str) -> list[dict[str, Any]]:
    """``metric`` by turn in two results of the same conversations (e.g. with and without history in the query):
    per turn index, both means and their difference (with minus without). Each result is an
    :class:`~ragtune.evaluate.evaluate.EvalResult` or its dict."""
    def rows(r: Any) -> dict[int, Mapping[str, Any]]:
        turns = r.turns if hasattr(r, "turns") else (r.get("turns") or {})
        return {row["turn"]: row for row in turns.get("by_turn", [])}

    a, b = rows(with_history), rows(without)
    out = []
    for t in sorted(set(a) & set(b)):
        x, y = a[t].get(metric, math.nan), b[t].get(metric, math.nan)
        out.append({"turn": t, "n": a[t]["n"], "with": x, "without": y, "delta": x - y})
    return out


def _f(v: float, digits: int = 2) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def render_searches(searches: Mapping[str, Any]) -> list[str]:
    """The per-search table of eval's text output (no lines without figures)."""
    if not searches:
        return []
    top = f" in the top {searches['k']}" if "k" in searches else ""
    lines = [f"searches: {searches['questions']} questions, {_f(searches['mean_searches'], 1)} searches each on "
             f"average (recall and tokens{top} after n searches; new relevant anchors and redundant hits of "
             "search n)",
             f"{'search':>6} {'questions':>9} {'recall':>7} {'ctx tokens':>10} {'new relevant':>12} {'redundant':>9}"]
    for r in searches["by_search"]:
        lines.append(f"{r['search']:>6} {r['questions']:>9} {_f(r['recall']):>7} {_f(r['context_tokens'], 0):>10} "
                     f"{_f(r['new_relevant']):>12} {_f(r['redundant']):>9}")
    first = ", ".join(f"{'never' if k == 'never' else 'search ' + k} {v}" for k, v in searches["first_found"].items())
    lines.append(f"relevant anchors first found by: {first}")
    lines.append("recall within a context budget: " + "  ".join(
        f"{p['tokens']} tok {_f(p['recall'])}" for p in searches["by_tokens"]))
    return lines


def render_turns(turns: Mapping[str, Any], columns: Sequence[str]) -> list[str]:
    """The by-turn table of eval's text output: each of ``columns`` (the per-tag table's) by turn index."""
    if not turns:
        return []
    cols = [c for c in columns if any(c in r for r in turns["by_turn"])]
    lines = [f"by turn ({turns['conversations']} conversations):",
             f"{'turn':>4} {'n':>4}  " + "  ".join(f"{c:>9}" for c in cols)]
    for r in turns["by_turn"]:
        lines.append(f"{r['turn']:>4} {r['n']:>4}  " + "  ".join(f"{_f(r.get(c, math.nan), 3):>9}" for c in cols))
    return lines
