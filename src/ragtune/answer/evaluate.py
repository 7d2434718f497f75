"""Answer-level evaluation over a golden set: abstention, citations, support, judge verdicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..evaluate.evaluate import covers
from ..golden import GoldenSet
from ..retrieve.base import search as run_search
from ..progress import progress_iter
from . import answer_question
from .base import Generator
from .gate import ConfidenceGate

__all__ = ["evaluate_answers", "estimate_answer_cost"]


def estimate_answer_cost(retriever, golden: GoldenSet, *, generator: str, judge: str, k: int = 5, filters: Any = None,
                         price_in: float = 0.0, price_out: float = 0.0, answer_tokens: int = 150,
                         verdict_tokens: int = 80) -> dict[str, Any]:
    """What answering and judging ``golden`` would send to LLMs, from retrieval alone (about 4 characters a token).

    Every question is counted as answered (the gate and not-found answers can only make it cheaper).
    """
    from .base import build_prompt

    llm_gen = generator != "extractive"
    llm_judge = judge != "heuristic"
    prompt_tokens = 0
    for item in golden:
        ranking = run_search(retriever, item.q, k, filters)
        system, user = build_prompt(item.q, [h.chunk for h in ranking.hits])
        prompt_tokens += (len(system) + len(user)) // 4
    n = len(golden)
    gen = {"name": generator, "calls": n if llm_gen else 0, "input_tokens": prompt_tokens if llm_gen else 0,
           "output_tokens": n * answer_tokens if llm_gen else 0}
    jdg = {"name": judge, "calls": n if llm_judge else 0,
           "input_tokens": prompt_tokens + n * answer_tokens if llm_judge else 0,
           "output_tokens": n * verdict_tokens if llm_judge else 0}
    cost = sum(e["input_tokens"] * price_in + e["output_tokens"] * price_out for e in (gen, jdg)) / 1e6
    return {"generator": gen, "judge": jdg, "cost": cost}


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def evaluate_answers(retriever, golden: GoldenSet, corpus, generator: Generator, *, judge=None, k: int = 5,
                     gate: ConfidenceGate | None = None, filters: Any = None, show_progress: bool = False) -> dict[str, Any]:
    """Answer every golden question from its top ``k`` chunks and score the answers.

    Abstention counts unanswerable questions as positives: precision is the
    share of ``not_found`` answers given to unanswerable questions, recall the
    share of unanswerable questions that got ``not_found``.
    """
    rows = []
    for item in progress_iter(golden.items, "answering", enabled=show_progress):
        ans, ranking = answer_question(retriever, item.q, generator, k=k, gate=gate, filters=filters)
        spans = [corpus.resolve(a) for a in item.relevant]
        evidence = any(covers(h.chunk, s) for h in ranking.hits for s in spans)
        cited_evidence = any(covers(c, s) for c in ans.contexts for s in spans
                             for n in {x.n for x in ans.citations if x.valid} if ans.contexts[n - 1] is c)
        verdict = judge.judge(ans) if judge is not None else None
        rows.append({"id": item.id, "answerable": item.answerable, "evidence_in_context": evidence,
                     "cited_evidence": cited_evidence, "top_score": ranking.hits[0].score if ranking.hits else None,
                     **ans.to_dict(), "verdict": verdict})
    unans = [r for r in rows if not r["answerable"]]
    abstained = [r for r in rows if r["outcome"] == "not_found"]
    tp = sum(1 for r in abstained if not r["answerable"])
    precision = tp / len(abstained) if abstained else None
    recall = tp / len(unans) if unans else None
    f1 = (2 * precision * recall / (precision + recall)) if precision and recall else (0.0 if unans else None)
    answered = [r for r in rows if r["outcome"] == "answered"]
    n_cites = sum(len(r["citations"]) for r in answered)
    valid = sum(sum(c["valid"] for c in r["citations"]) for r in answered)
    verdicts = [r["verdict"] for r in answered if r["verdict"] and "skipped" not in r["verdict"] and "error" not in r["verdict"]]
    metrics: dict[str, Any] = {
        "questions": len(rows),
        "answered_rate": len(answered) / len(rows) if rows else None,
        "abstention_precision": precision,
        "abstention_recall": recall,
        "abstention_f1": f1,
        "citation_validity": valid / n_cites if n_cites else None,
        "answered_with_evidence_cited": _mean([float(r["cited_evidence"]) for r in answered if r["answerable"]]),
        "answered_unanswerable": sum(1 for r in answered if not r["answerable"]),
    }
    for key in ("citation_coverage", "support", "answer_relevance"):
        metrics[key] = _mean([v[key] for v in verdicts if key in v])
    if verdicts:
        metrics["faithful_rate"] = _mean([float(v["faithful"]) for v in verdicts if "faithful" in v])
        if any("addresses_question" in v for v in verdicts):
            metrics["addresses_question_rate"] = _mean([float(v["addresses_question"]) for v in verdicts
                                                        if "addresses_question" in v])
    out: dict[str, Any] = {"generator": generator.name, "k": k, "gate": gate.threshold if gate else None,
                           "metrics": metrics, "answers": rows}
    if judge is not None:
        out["judge"] = {"name": getattr(judge, "name", "?"), "kind": getattr(judge, "kind", None)}
        usage: Mapping[str, int] | None = getattr(judge, "usage", None)
        if usage is not None:
            out["judge"].update({"usage": dict(usage), "cost": getattr(judge, "cost", None)})
    return out


def render_estimate(est: dict[str, Any], price_in: float, price_out: float) -> str:
    """The dry-run estimate as text."""
    lines = []
    for role in ("generator", "judge"):
        e = est[role]
        if e["calls"]:
            lines.append(f"dry run: the {role} ({e['name']}) would make {e['calls']} calls, about {e['input_tokens']} "
                         f"input and {e['output_tokens']} output tokens")
        else:
            lines.append(f"dry run: the {role} ({e['name']}) runs offline: no calls, no cost")
    lines.append(f"estimated cost ${est['cost']:.4f} at ${price_in}/M input and ${price_out}/M output tokens "
                 "(prices from --price-in/--price-out; about 4 characters a token)")
    return "\n".join(lines)
