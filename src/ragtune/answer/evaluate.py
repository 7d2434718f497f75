"""Answer-level evaluation over a golden set: abstention, citations, support, judge verdicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import numpy as np

from ..evaluate.evaluate import covers
from ..golden import GoldenSet
from ..retrieve.base import search as run_search
from ..progress import progress_iter
from . import answer_question
from .base import Generator
from ..errors import ConfigError
from ..config import Opt
from .gate import ConfidenceGate, cross_validated_gates, threshold_text, top_score
from .abstain import LearnedGate, answer_gate

__all__ = ["evaluate_answers", "estimate_answer_cost", "answer_golden", "gate_text", "abstentions",
           "abstention_text"]


def estimate_answer_cost(retriever, golden: GoldenSet, *, generator: str, judge: str, k: int = 5, filters: Any = None,
                         price_in: float = 0.0, price_out: float = 0.0, answer_tokens: int = 150,
                         verdict_tokens: int = 80) -> dict[str, Any]:
    """What answering and judging ``golden`` would send to LLMs, from retrieval alone (about 4 characters a token).

    Every question is counted as answered (the gate and not-found answers can only make it cheaper).
    """
    from .base import build_prompt

    from ..registry import GENERATORS, JUDGES

    llm_gen = GENERATORS.get(generator).calls_llm
    llm_judge = JUDGES.get(judge).calls_llm
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


def answer_golden(
    retriever, golden: GoldenSet, corpus, *, filters: Any = None, show_progress: bool = False,
    generator: Annotated[str, Opt("extractive (offline), anthropic[:model], openai:<model>")] = "extractive",
    judge: Annotated[str, Opt("heuristic (offline), openai:<model> or anthropic:<model>")] = "heuristic",
    answer_k: Annotated[int, Opt("contexts per answer", lo=1, hi=10_000)] = 5,
    gate: Annotated[float | LearnedGate | None, Opt(
        "abstain below this top retrieval score (see calibrate), or a learned gate: the JSON file calibrate "
        "--learned FILE wrote; default: a score gate cross-validated on the golden set (5 folds)",
        metavar="T|FILE")] = None,
    price_in: Annotated[float, Opt("LLM: $ per million input tokens", lo=0.0, hi=1e9)] = 0.0,
    price_out: Annotated[float, Opt("LLM: $ per million output tokens", lo=0.0, hi=1e9)] = 0.0,
    dry_run: Annotated[bool, Opt("estimate the LLM calls, tokens and cost of --answers (retrieval only)")] = False,
) -> dict[str, Any]:
    """Answer and judge every golden question (:func:`evaluate_answers`) with the generator and judge named; with
    ``dry_run``, only :func:`estimate_answer_cost` (under the key ``estimate``): no LLM is called."""
    from ..registry import JUDGES
    from . import make_generator, make_judge

    if dry_run:
        return {"estimate": estimate_answer_cost(retriever, golden, generator=generator, judge=judge, k=answer_k,
                                                 filters=filters, price_in=price_in, price_out=price_out)}
    jdg = make_judge(judge, {"price_in": price_in, "price_out": price_out} if JUDGES.get(judge).calls_llm else None)
    return evaluate_answers(retriever, golden, corpus, make_generator(generator), judge=jdg, k=answer_k,
                            gate=ConfidenceGate(gate) if isinstance(gate, (int, float)) else gate or "cv",
                            filters=filters,
                            show_progress=show_progress)


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def evaluate_answers(retriever, golden: GoldenSet, corpus, generator: Generator, *, judge=None, k: int = 5,
                     gate: ConfidenceGate | LearnedGate | str | None = None, folds: int = 5, filters: Any = None,
                     show_progress: bool = False) -> dict[str, Any]:
    """Answer every golden question from its top ``k`` chunks and score the answers.

    Abstention counts unanswerable questions as positives: precision is the
    share of ``not_found`` answers given to unanswerable questions, recall the
    share of unanswerable questions that got ``not_found``.

    ``gate``: a :class:`ConfidenceGate`, None (no gate), or ``"cv"``: a gate calibrated on this golden set by
    ``folds``-fold cross-validation (:func:`~ragtune.answer.gate.cross_validated_gates`), so no question is
    judged by a threshold calibrated on itself. A :class:`~ragtune.answer.abstain.LearnedGate` (fitted with the
    same ``k``) is bound to ``retriever`` and ``corpus`` and applied to every question. ``gate_info`` in the result
    says which was used.
    """
    gates: list[Any]
    if isinstance(gate, str):
        if gate != "cv":
            raise ConfigError(f"gate {gate!r}: give a threshold, None, or 'cv' (cross-validated on the golden set)")
        scores, no_evidence = [], []
        for item in progress_iter(golden.items, "calibrating the gate", enabled=show_progress):
            ranking = run_search(retriever, item.q, k, filters)
            spans = [corpus.resolve(a) for a in item.relevant]
            scores.append(top_score(ranking))
            no_evidence.append(not any(covers(h.chunk, s) for h in ranking.hits for s in spans))
        thresholds, info = cross_validated_gates([i.answerable for i in golden], scores, no_evidence, folds=folds)
        gates = [ConfidenceGate(t) if t is not None else None for t in thresholds]
    elif isinstance(gate, LearnedGate):
        gates = [answer_gate(gate, retriever, corpus, k=k, filters=filters)] * len(golden)
        info = {"mode": "learned", "threshold": gate.threshold, "features": list(gate.features),
                "pipeline": gate.pipeline}
    else:
        gates = [gate] * len(golden)
        info = {"mode": "fixed", "threshold": gate.threshold} if gate is not None else {"mode": "none"}
    rows = []
    for item, item_gate in zip(progress_iter(golden.items, "answering", enabled=show_progress), gates):
        ans, ranking = answer_question(retriever, item.q, generator, k=k, gate=item_gate, filters=filters)
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
    out: dict[str, Any] = {"generator": generator.name, "k": k,
                           "gate": gate.threshold if isinstance(gate, ConfidenceGate) else None,
                           "gate_info": {**info, "text": gate_text(info)}, "metrics": metrics,
                           "abstentions": abstentions(rows), "answers": rows}
    if judge is not None:
        out["judge"] = {"name": getattr(judge, "name", "?"), "kind": getattr(judge, "kind", None)}
        usage: Mapping[str, int] | None = getattr(judge, "usage", None)
        if usage is not None:
            out["judge"].update({"usage": dict(usage), "cost": getattr(judge, "cost", None)})
    return out


def abstentions(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``not_found`` answers by who refused: the confidence ``gate`` (before generating), or the
    ``generator`` (``no_match``: no context sentence matched; ``model``: the model said the context lacks the
    answer; ``refusal``; ``no_context``), overall and for answerable and unanswerable questions, with the share
    of answerable questions each refused (what ``calibrate`` reports as refused)."""
    def split(group: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        refused = [r for r in group if r["outcome"] == "not_found"]
        by_gate = sum(1 for r in refused if r["reason"] == "gate")
        return {"questions": len(group), "refused": len(refused), "gate": by_gate, "generator": len(refused) - by_gate}

    refused = [r for r in rows if r["outcome"] == "not_found"]
    reasons: dict[str, int] = {}
    for r in refused:
        reasons[r["reason"] or "model"] = reasons.get(r["reason"] or "model", 0) + 1
    answerable = split([r for r in rows if r["answerable"]])
    n_a = answerable["questions"]
    return {**split(rows), "by_reason": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
            "answerable": {**answerable, "gate_share": answerable["gate"] / n_a if n_a else None,
                           "generator_share": answerable["generator"] / n_a if n_a else None},
            "unanswerable": split([r for r in rows if not r["answerable"]])}


def abstention_text(ab: Mapping[str, Any]) -> list[str]:
    """``abstained: 20 of 40 questions (gate 3, generator 17: no_match 17)`` and the answerable/unanswerable lines."""
    gen = {k: v for k, v in ab["by_reason"].items() if k != "gate"}
    detail = (": " + ", ".join(f"{k} {v}" for k, v in gen.items())) if gen else ""
    lines = [f"abstained: {ab['refused']} of {ab['questions']} questions (gate {ab['gate']}, generator "
             f"{ab['generator']}{detail})"]
    for kind in ("answerable", "unanswerable"):
        g = ab[kind]
        if g["questions"]:
            lines.append(f"  {kind} refused: {g['refused']} of {g['questions']} ({g['refused'] / g['questions']:.0%}): "
                         f"gate {g['gate']}, generator {g['generator']}")
    return lines


def gate_text(info: Mapping[str, Any]) -> str:
    """``gate: cross-validated, 5 folds (thresholds 2.1-2.6)``, ``gate: 3.5 (given)``, ``gate: none``."""
    mode = info.get("mode")
    if mode == "cross-validated":
        t = info["thresholds"]
        return f"gate: cross-validated, {info['folds']} folds (thresholds {min(t):.4g}-{max(t):.4g})"
    if mode == "fixed":
        return f"gate: {threshold_text(info['threshold'])} (given)"
    if mode == "learned":
        return f"gate: learned ({', '.join(info['features'])}; abstains below {info['threshold']:.6g})"
    return "gate: none" + (f" ({info['reason']})" if info.get("reason") else "")


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
