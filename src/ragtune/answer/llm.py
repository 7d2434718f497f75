"""The LLM generators: one prompt (numbered contexts, mandatory ``[n]`` citations, a fixed not-found marker) sent
through :mod:`ragtune.llm` (the wire formats and the shared call path, a layer down so that rerankers and
drafting use it too), the reply parsed with :func:`~ragtune.answer.base.parse_answer`.

Keys come from the environment; nothing is sent anywhere until a call is made.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from ..http import JSONClient
from ..llm import (CHARS_PER_TOKEN, DEFAULT_ANTHROPIC_MODEL, ChatLLM, _anthropic_client, ask_parsed,  # noqa: F401
                   chat_anthropic, chat_openai, estimate_tokens, json_values, parse_model_spec)
from ..types import Chunk
from .base import NOT_FOUND, Answer, build_prompt, parse_answer

__all__ = ["OpenAIChatGenerator", "AnthropicGenerator", "chat_openai", "chat_anthropic", "ChatLLM", "ask_parsed",
           "json_values", "estimate_tokens", "parse_model_spec", "CHARS_PER_TOKEN", "DEFAULT_ANTHROPIC_MODEL"]


class _ChatGenerator:
    """Shared flow: no context -> not_found; prompt; one chat call; refusal -> not_found; parse the reply."""

    name: str
    max_tokens: int

    def _chat(self, system: str, user: str) -> tuple[str, dict[str, int], bool]:
        raise NotImplementedError

    def generate(self, question: str, contexts: Sequence[Chunk]) -> Answer:
        t0 = time.perf_counter()
        if not contexts:
            return Answer(question, NOT_FOUND, "not_found", (), (), self.name, "no_context")
        system, user = build_prompt(question, contexts)
        text, usage, refused = self._chat(system, user)
        if refused:
            return Answer(question, NOT_FOUND, "not_found", (), tuple(contexts), self.name, "refusal", usage,
                          time.perf_counter() - t0)
        return parse_answer(text, question, contexts, generator=self.name, usage=usage,
                            latency_s=time.perf_counter() - t0)


class OpenAIChatGenerator(_ChatGenerator):
    """Any OpenAI-compatible ``/chat/completions`` server (OpenAI, vLLM, llama.cpp, Ollama...)."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 max_tokens: int = 512, timeout: float = 60.0, max_retries: int = 5, backoff: float = 0.5):
        self.model = model
        self.name = f"openai:{model}"
        self.max_tokens = max_tokens
        self.api_key_env = api_key_env
        base = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self.client = JSONClient(base, api_key_env=api_key_env, timeout=timeout, max_retries=max_retries,
                                 backoff=backoff)

    def _chat(self, system: str, user: str):
        self.client.api_key = os.environ.get(self.api_key_env)
        return chat_openai(self.client, self.model, system, user, max_tokens=self.max_tokens)


class AnthropicGenerator(_ChatGenerator):
    """Claude through the Anthropic Messages API (``ANTHROPIC_API_KEY``; ``ANTHROPIC_BASE_URL`` or ``base_url``)."""

    def __init__(self, model: str = "claude-sonnet-4-5", *, base_url: str | None = None,
                 api_key_env: str = "ANTHROPIC_API_KEY", max_tokens: int = 512, timeout: float = 60.0,
                 max_retries: int = 5, backoff: float = 0.5):
        self.model = model
        self.name = f"anthropic:{model}"
        self.max_tokens = max_tokens
        self._args = (base_url, api_key_env, timeout, max_retries, backoff)
        self._client: JSONClient | None = None

    def _chat(self, system: str, user: str):
        if self._client is None:
            self._client = _anthropic_client(*self._args)
        return chat_anthropic(self._client, self.model, system, user, max_tokens=self.max_tokens)
