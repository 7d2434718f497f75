"""Judging answers: an LLM judge (JSON verdicts) and an offline heuristic judge.

The heuristic judge needs no model and says so in its output: it measures
citation coverage (share of answer sentences carrying a valid citation),
citation validity, and support (how much of each cited sentence's content
words appear in one sentence of a cited context). It cannot tell a
paraphrase that changes meaning from a faithful one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError
from .base import Answer, build_prompt
from .sentences import split_sentences
from ..llm import ChatLLM, ask_parsed, estimate_tokens, json_values
from .text import content_terms

__all__ = ["HeuristicJudge", "LLMJudge", "parse_judge_json", "claims"]

_CITES = r"(?:\s*\[\d+(?:\s*,\s*\d+)*\])+"
_CITE_RE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def claims(text: str) -> list[tuple[str, list[int]]]:
    """Answer sentences with the context numbers each cites (a citation after the full stop counts too)."""
    moved = re.sub(r"([.!?])(" + _CITES + ")", r"\2\1", text)
    out = []
    for sent in split_sentences(moved):
        if not re.search(r"\w", _CITE_RE.sub("", sent)):
            continue
        nums = [int(n) for m in _CITE_RE.finditer(sent) for n in m.group(1).split(",")]
        out.append((re.sub(r"\s*" + _CITE_RE.pattern, "", sent).strip(), nums))
    return out


class HeuristicJudge:
    name = "heuristic"
    kind = "heuristic (lexical, no LLM)"

    def judge(self, answer: Answer) -> dict[str, Any]:
        if answer.outcome != "answered":
            return {"judge": self.kind, "skipped": "not_found"}
        cl = claims(answer.text)
        n_ctx = len(answer.contexts)
        cited = [(s, [n for n in nums if 1 <= n <= n_ctx]) for s, nums in cl]
        coverage = sum(1 for _, nums in cited if nums) / len(cl) if cl else 0.0
        total = len(answer.citations)
        validity = sum(c.valid for c in answer.citations) / total if total else 0.0
        supports = []
        for sent, nums in cited:
            terms = content_terms(sent)
            if not nums or not terms:
                continue
            best = 0.0
            for n in nums:
                for ctx_sent in split_sentences(answer.contexts[n - 1].text):
                    best = max(best, len(terms & content_terms(ctx_sent)) / len(terms))
            supports.append(best)
        support = sum(supports) / len(supports) if supports else 0.0
        q = content_terms(answer.question)
        relevance = len(q & content_terms(answer.text)) / len(q) if q else 0.0
        return {"judge": self.kind, "citation_coverage": coverage, "citation_validity": validity, "support": support,
                "faithful": bool(cl) and coverage == 1.0 and support >= 0.8, "answer_relevance": relevance}


JUDGE_SYSTEM = (
    "You check an answer against the numbered context passages it was written from. "
    "Reply with one JSON object and nothing else: "
    '{"faithful": true or false, "unsupported_claims": [list of claims not supported by the passages], '
    '"addresses_question": true or false}. '
    "faithful is true only when every claim in the answer is supported by the passages."
)


def parse_judge_json(text: str) -> dict[str, Any] | None:
    """The judge's verdict from a reply that may wrap it in code fences or add text around it."""
    for obj in json_values(text):
        if (isinstance(obj, dict) and isinstance(obj.get("faithful"), bool)
                and isinstance(obj.get("addresses_question"), bool)):
            claims_ = obj.get("unsupported_claims", [])
            if not isinstance(claims_, list):
                return None
            return {"faithful": obj["faithful"], "addresses_question": obj["addresses_question"],
                    "unsupported_claims": [str(c) for c in claims_]}
    return None


class LLMJudge:
    """An LLM grades each answer (temperature 0 on OpenAI-compatible servers; no temperature is sent to the
    Anthropic Messages API, so Claude samples at its default). Malformed verdicts are asked again
    up to ``attempts`` times; tokens and cost are counted per run.

    ``kind`` is ``openai`` (any OpenAI-compatible server) or ``anthropic``; prices
    are per million tokens, for the cost report and the dry-run estimate.
    """

    def __init__(self, kind: str, model: str, *, base_url: str | None = None, attempts: int = 3,
                 price_in: float = 0.0, price_out: float = 0.0, max_tokens: int = 300, timeout: float = 60.0,
                 max_retries: int = 5, backoff: float = 0.5):
        if kind not in ("openai", "anthropic"):
            raise ConfigError(f"unknown judge kind {kind!r}; choose openai or anthropic")
        self.kind = kind
        self.model = model
        self.name = f"{kind}:{model}"
        self.attempts = attempts
        self.price_in = price_in
        self.price_out = price_out
        self.max_tokens = max_tokens
        self.llm = ChatLLM(kind, model, base_url=base_url, max_tokens=max_tokens, timeout=timeout,
                           max_retries=max_retries, backoff=backoff, price_in=price_in, price_out=price_out)
        self.malformed = 0

    @property
    def usage(self) -> dict[str, int]:
        """Calls and tokens so far, and how many replies held no readable verdict."""
        return {**self.llm.usage, "malformed": self.malformed}

    @property
    def cost(self) -> float:
        return self.llm.cost

    def _messages(self, answer: Answer) -> tuple[str, str]:
        _, ctx = build_prompt(answer.question, answer.contexts)
        ctx = ctx.rsplit("\n\nAnswer:", 1)[0]
        return JUDGE_SYSTEM, f"{ctx}\n\nAnswer to check:\n{answer.text}\n\nVerdict (JSON):"

    def estimate(self, answers: Sequence[Answer]) -> dict[str, Any]:
        """Dry run: calls, tokens (about 4 characters a token) and cost, before spending anything."""
        todo = [a for a in answers if a.outcome == "answered"]
        tokens_in = estimate_tokens(*(t for a in todo for t in self._messages(a)))
        tokens_out = len(todo) * 80
        return {"calls": len(todo), "input_tokens": tokens_in, "output_tokens": tokens_out,
                "cost": self.llm.price(tokens_in, tokens_out)}

    def judge(self, answer: Answer) -> dict[str, Any]:
        if answer.outcome != "answered":
            return {"judge": self.name, "skipped": "not_found"}
        system, user = self._messages(answer)
        verdict, bad = ask_parsed(self.llm, system, user, parse_judge_json, attempts=self.attempts)
        self.malformed += bad
        if verdict is not None:
            return {"judge": self.name, **verdict}
        return {"judge": self.name, "error": f"no valid JSON verdict after {self.attempts} attempts"}
