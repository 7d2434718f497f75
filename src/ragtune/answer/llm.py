"""LLM generators: Anthropic Messages API and OpenAI-compatible chat completions.

Both send the same prompt (numbered contexts, mandatory ``[n]`` citations, a
fixed not-found marker), at temperature 0, and parse the reply with
:func:`parse_answer`. Keys come from the environment; nothing is sent
anywhere until ``generate`` is called.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from ..errors import MissingDependencyError
from ..http import APIError, JSONClient
from ..types import Chunk
from .base import NOT_FOUND, Answer, build_prompt, parse_answer

__all__ = ["OpenAIChatGenerator", "AnthropicGenerator", "chat_openai", "chat_anthropic"]


def chat_openai(client: JSONClient, model: str, system: str, user: str, *, max_tokens: int, temperature: float = 0.0):
    """One chat completion: (text, usage, refused)."""
    payload = client.post("chat/completions", {
        "model": model, "temperature": temperature, "max_tokens": max_tokens,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]})
    try:
        msg = payload["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise APIError(f"{client.base_url}/chat/completions: unexpected response shape (no choices[0].message)") from None
    usage = payload.get("usage") or {}
    tokens = {"input_tokens": int(usage.get("prompt_tokens", 0)), "output_tokens": int(usage.get("completion_tokens", 0))}
    return (msg.get("content") or ""), tokens, bool(msg.get("refusal"))


def _anthropic_client(base_url: str | None, api_key_env: str, timeout: float, max_retries: int):
    try:
        import anthropic
    except ImportError:
        raise MissingDependencyError("the Anthropic generator needs: pip install 'ragtune[llm]'") from None
    return anthropic, anthropic.Anthropic(api_key=os.environ.get(api_key_env) or "missing", base_url=base_url,
                                          timeout=timeout, max_retries=max_retries)


def chat_anthropic(client, model: str, system: str, user: str, *, max_tokens: int):
    """One Messages API call: (text, usage, refused). The SDK retries 429/5xx/timeouts itself.

    The anthropic SDK 2.x ``messages.create`` takes no ``temperature``; sampling is the model's default.
    """
    import anthropic

    try:
        msg = client.messages.create(model=model, max_tokens=max_tokens, system=system,
                                     messages=[{"role": "user", "content": user}])
    except anthropic.AuthenticationError as e:
        raise APIError(f"Anthropic API: {e}; set ANTHROPIC_API_KEY to a valid key") from None
    except anthropic.APIError as e:
        raise APIError(f"Anthropic API: {e}") from None
    text = "".join(getattr(b, "text", "") for b in msg.content if getattr(b, "type", "") == "text")
    usage = {"input_tokens": int(msg.usage.input_tokens or 0), "output_tokens": int(msg.usage.output_tokens or 0)}
    return text, usage, msg.stop_reason == "refusal"


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
    """Claude through the ``anthropic`` SDK (``ANTHROPIC_API_KEY``; ``ANTHROPIC_BASE_URL`` or ``base_url``)."""

    def __init__(self, model: str = "claude-sonnet-4-5", *, base_url: str | None = None,
                 api_key_env: str = "ANTHROPIC_API_KEY", max_tokens: int = 512, timeout: float = 60.0,
                 max_retries: int = 5):
        self.model = model
        self.name = f"anthropic:{model}"
        self.max_tokens = max_tokens
        self._args = (base_url, api_key_env, timeout, max_retries)
        self._client = None

    def _chat(self, system: str, user: str):
        if self._client is None:
            _, self._client = _anthropic_client(*self._args)
        return chat_anthropic(self._client, self.model, system, user, max_tokens=self.max_tokens)
