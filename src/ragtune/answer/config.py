"""The typed options of each registered generator and judge, validated once by
:meth:`ragtune.registry.Registry.build`: a misspelt option is a :class:`~ragtune.errors.ConfigError` listing the
valid ones, never a keyword swallowed on the way to a constructor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from ..config import Config, Opt, check_range
from .extractive import DEFAULT_MIN_OVERLAP

__all__ = ["ExtractiveConfig", "OpenAIChatConfig", "AnthropicChatConfig", "HeuristicJudgeConfig", "LLMJudgeConfig"]


def _check_call(owner: str, max_tokens: int, timeout: float, max_retries: int, backoff: float) -> None:
    check_range(owner, "max_tokens", max_tokens, lo=1, integer=True)
    check_range(owner, "timeout", timeout, lo=0, lo_open=True)
    check_range(owner, "max_retries", max_retries, lo=0, integer=True)
    check_range(owner, "backoff", backoff, lo=0)


@dataclass(frozen=True)
class ExtractiveConfig(Config):
    """The offline baseline: quotes the context sentences that share the most content words with the question."""

    max_sentences: Annotated[int, Opt("sentences quoted per answer")] = 2
    min_overlap: Annotated[float, Opt("share of the question's content words a sentence must hold", lo=0,
                                      hi=1)] = DEFAULT_MIN_OVERLAP

    def __post_init__(self) -> None:
        check_range(type(self).__name__, "max_sentences", self.max_sentences, lo=1, integer=True)
        check_range(type(self).__name__, "min_overlap", self.min_overlap, lo=0, hi=1)


@dataclass(frozen=True)
class OpenAIChatConfig(Config):
    """Any OpenAI-compatible ``/chat/completions`` server; ``base_url`` empty: ``OPENAI_BASE_URL`` or OpenAI's."""

    base_url: Annotated[str, Opt("API base URL")] = ""
    api_key_env: Annotated[str, Opt("environment variable holding the API key")] = "OPENAI_API_KEY"
    max_tokens: Annotated[int, Opt("most tokens per answer")] = 512
    timeout: Annotated[float, Opt("seconds per call")] = 60.0
    max_retries: Annotated[int, Opt("retries on rate limits and server errors")] = 5
    backoff: Annotated[float, Opt("seconds before the first retry (doubling)")] = 0.5

    def __post_init__(self) -> None:
        _check_call(type(self).__name__, self.max_tokens, self.timeout, self.max_retries, self.backoff)


@dataclass(frozen=True)
class AnthropicChatConfig(OpenAIChatConfig):
    """The Anthropic Messages API; ``base_url`` empty: ``ANTHROPIC_BASE_URL`` or Anthropic's."""

    api_key_env: Annotated[str, Opt("environment variable holding the API key")] = "ANTHROPIC_API_KEY"


@dataclass(frozen=True)
class HeuristicJudgeConfig(Config):
    """The offline judge (citation coverage, validity and lexical support) takes no options."""


@dataclass(frozen=True)
class LLMJudgeConfig(Config):
    """An LLM judge; prices per million tokens are for the cost report and the dry-run estimate only."""

    base_url: Annotated[str, Opt("API base URL (default: the provider's, or its *_BASE_URL variable)")] = ""
    attempts: Annotated[int, Opt("asks per answer while the verdict cannot be read")] = 3
    price_in: Annotated[float, Opt("price per million input tokens")] = 0.0
    price_out: Annotated[float, Opt("price per million output tokens")] = 0.0
    max_tokens: Annotated[int, Opt("most tokens per verdict")] = 300
    timeout: Annotated[float, Opt("seconds per call")] = 60.0
    max_retries: Annotated[int, Opt("retries on rate limits and server errors")] = 5
    backoff: Annotated[float, Opt("seconds before the first retry (doubling)")] = 0.5

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_range(owner, "attempts", self.attempts, lo=1, integer=True)
        check_range(owner, "price_in", self.price_in, lo=0)
        check_range(owner, "price_out", self.price_out, lo=0)
        _check_call(owner, self.max_tokens, self.timeout, self.max_retries, self.backoff)
