"""Answers from retrieved context only, with citations and an explicit "not found"; abstention and judging."""

from __future__ import annotations

import time
from typing import Any

from ..errors import ConfigError
from ..retrieve.base import search as run_search
from .base import NOT_FOUND, Answer, Citation, Generator, build_prompt, parse_answer
from .extractive import ExtractiveGenerator
from .gate import Calibration, ConfidenceGate, calibrate_threshold, top_score
from .judge import HeuristicJudge, LLMJudge, parse_judge_json

__all__ = ["NOT_FOUND", "Answer", "Calibration", "Citation", "ConfidenceGate", "ExtractiveGenerator", "Generator",
           "HeuristicJudge", "LLMJudge", "answer_question", "build_prompt", "calibrate_threshold", "make_generator",
           "make_judge", "parse_answer", "parse_judge_json", "top_score"]

def _anthropic(model: str | None, **_: Any) -> Generator:
    from .llm import AnthropicGenerator

    return AnthropicGenerator(model) if model else AnthropicGenerator()


def _openai_chat(model: str | None, **_: Any) -> Generator:
    from .llm import OpenAIChatGenerator

    return OpenAIChatGenerator(model or "")


def _register() -> None:
    from ..registry import GENERATORS, JUDGES

    GENERATORS.register("extractive", None, lambda _arg, **_: ExtractiveGenerator(), replace=True,
                        summary="offline: quotes the best-matching context sentences, cited (a baseline)")
    GENERATORS.register("anthropic", None, _anthropic, argument="optional", summary="Anthropic Messages API",
                        calls_llm=True, replace=True)
    GENERATORS.register("openai", None, _openai_chat, argument="required", calls_llm=True, replace=True,
                        summary="any OpenAI-compatible chat completions server")
    JUDGES.register("heuristic", None, lambda _arg, **_: HeuristicJudge(), replace=True,
                    summary="offline: citation coverage, validity and lexical support (a heuristic)")
    for kind in ("openai", "anthropic"):
        JUDGES.register(kind, None, lambda model, _kind=kind, **options: LLMJudge(_kind, model, **options),
                        argument="required", summary=f"an LLM judge through the {kind} API", calls_llm=True,
                        replace=True)


_register()


def make_generator(name: str = "extractive") -> Generator:
    """``extractive`` (offline), ``anthropic`` / ``anthropic:<model>``, ``openai:<model>``."""
    from ..registry import GENERATORS

    return GENERATORS.build(name)


def make_judge(name: str = "heuristic", **options: Any):
    """``heuristic`` (offline, lexical) or ``openai:<model>`` / ``anthropic:<model>`` (LLM judge)."""
    from ..registry import JUDGES

    return JUDGES.build(name, **options)


def answer_question(retriever, question: str, generator: Generator, *, k: int = 5, gate: ConfidenceGate | None = None,
                    filters: Any = None) -> tuple[Answer, Any]:
    """Retrieve ``k`` chunks and answer from them; below the gate's threshold, answer not_found
    without generating. Returns (answer, ranking)."""
    if not question.strip():
        raise ConfigError("empty question")
    t0 = time.perf_counter()
    ranking = run_search(retriever, question, k, filters)
    contexts = tuple(h.chunk for h in ranking.hits)
    if gate is not None and not gate.allows(ranking):
        return Answer(question, NOT_FOUND, "not_found", (), contexts, generator.name, "gate",
                      latency_s=time.perf_counter() - t0), ranking
    ans = generator.generate(question, contexts)
    return ans, ranking
