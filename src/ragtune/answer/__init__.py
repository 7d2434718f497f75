"""Answers from retrieved context only, with citations and an explicit "not found"; abstention and judging."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from ..retrieve.base import search as run_search
from .config import (AnthropicChatConfig, ExtractiveConfig, HeuristicJudgeConfig, LLMJudgeConfig,
                     OpenAIChatConfig)
from .base import NOT_FOUND, Answer, Citation, Generator, build_prompt, parse_answer
from .extractive import ExtractiveGenerator
from .gate import Calibration, ConfidenceGate, calibrate_threshold, top_score
from .judge import HeuristicJudge, LLMJudge, parse_judge_json

__all__ = ["NOT_FOUND", "Answer", "Calibration", "Citation", "ConfidenceGate", "ExtractiveGenerator", "Generator",
           "HeuristicJudge", "LLMJudge", "answer_question", "build_prompt", "calibrate_threshold", "make_generator",
           "make_judge", "parse_answer", "parse_judge_json", "top_score"]

def _extractive(config: ExtractiveConfig) -> Generator:
    return ExtractiveGenerator(max_sentences=config.max_sentences, min_overlap=config.min_overlap)


def _chat_options(config: OpenAIChatConfig) -> dict[str, Any]:
    return {"base_url": config.base_url or None, "api_key_env": config.api_key_env, "max_tokens": config.max_tokens,
            "timeout": config.timeout, "max_retries": config.max_retries, "backoff": config.backoff}


def _anthropic(config: AnthropicChatConfig, model: str | None) -> Generator:
    from .llm import AnthropicGenerator

    return AnthropicGenerator(model, **_chat_options(config)) if model else AnthropicGenerator(**_chat_options(config))


def _openai_chat(config: OpenAIChatConfig, model: str) -> Generator:
    from .llm import OpenAIChatGenerator

    return OpenAIChatGenerator(model, **_chat_options(config))


def _heuristic(config: HeuristicJudgeConfig) -> HeuristicJudge:
    return HeuristicJudge()


def _llm_judge(kind: str):
    def build(config: LLMJudgeConfig, model: str) -> LLMJudge:
        return LLMJudge(kind, model, base_url=config.base_url or None, attempts=config.attempts,
                        price_in=config.price_in, price_out=config.price_out, max_tokens=config.max_tokens,
                        timeout=config.timeout, max_retries=config.max_retries, backoff=config.backoff)

    return build


from ..registry import GENERATORS, JUDGES  # noqa: E402 - registered where they are built

GENERATORS.register("extractive", ExtractiveConfig, _extractive, replace=True,
                    summary="offline: quotes the best-matching context sentences, cited (a baseline)")
GENERATORS.register("anthropic", AnthropicChatConfig, _anthropic, argument="optional",
                    summary="Anthropic Messages API", calls_llm=True, replace=True)
GENERATORS.register("openai", OpenAIChatConfig, _openai_chat, argument="required", calls_llm=True, replace=True,
                    summary="any OpenAI-compatible chat completions server")
JUDGES.register("heuristic", HeuristicJudgeConfig, _heuristic, replace=True,
                summary="offline: citation coverage, validity and lexical support (a heuristic)")
for _kind in ("openai", "anthropic"):
    JUDGES.register(_kind, LLMJudgeConfig, _llm_judge(_kind), argument="required",
                    summary=f"an LLM judge through the {_kind} API", calls_llm=True, replace=True)


def make_generator(name: str = "extractive", options: Mapping[str, Any] | None = None) -> Generator:
    """``extractive`` (offline), ``anthropic`` / ``anthropic:<model>``, ``openai:<model>``, with that entry's
    typed ``options`` (:mod:`ragtune.answer.config`; a misspelt one is a ConfigError listing the valid ones)."""
    return GENERATORS.build(name, options=options)


def make_judge(name: str = "heuristic", options: Mapping[str, Any] | None = None):
    """``heuristic`` (offline, lexical) or ``openai:<model>`` / ``anthropic:<model>`` (LLM judge), with that
    entry's typed ``options`` (:class:`~ragtune.answer.config.LLMJudgeConfig`)."""
    return JUDGES.build(name, options=options)


def answer_question(retriever, question: str, generator: Generator, *, k: int = 5, gate: ConfidenceGate | None = None,
                    filters: Any = None, documents: Any = None) -> tuple[Answer, Any]:
    """Retrieve ``k`` chunks and answer from them; below the gate's threshold, answer not_found
    without generating. With ``documents`` (the pipeline's corpus), citations carry where they are in the
    source file (:meth:`Answer.located`: the lines of a markdown or text file). Returns (answer, ranking)."""
    if not question.strip():
        raise ConfigError("empty question")
    t0 = time.perf_counter()
    ranking = run_search(retriever, question, k, filters)
    contexts = tuple(h.chunk for h in ranking.hits)
    if gate is not None and not gate.allows(ranking):
        return Answer(question, NOT_FOUND, "not_found", (), contexts, generator.name, "gate",
                      latency_s=time.perf_counter() - t0), ranking
    ans = generator.generate(question, contexts)
    if documents is not None:
        ans = ans.located(documents)
    return ans, ranking
