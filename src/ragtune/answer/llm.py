"""LLM calls: the two wire formats, the generators, and the one call path every other LLM user shares.

- :func:`chat_openai` / :func:`chat_anthropic`: one call in the OpenAI chat-completions or the Anthropic
  Messages format, returning ``(text, usage, refused)``.
- :class:`ChatLLM`: a provider and a model (``anthropic[:<model>]`` or ``openai:<model>``) behind a
  ``chat(system, user) -> str`` that builds its client on first use and counts calls, tokens and dollars.
- :func:`ask_parsed`: ask, parse, ask again while the reply cannot be read; :func:`json_values` reads JSON out
  of a reply wrapped in prose or code fences; :func:`estimate_tokens` is the dry runs' token count.
  The judge (:mod:`.judge`), golden-set drafting (:mod:`ragtune.golden_draft`) and the ``llm`` reranker
  (:mod:`ragtune.retrieve.llm_rerank`) all go through these.
- The generators send one prompt (numbered contexts, mandatory ``[n]`` citations, a fixed not-found marker)
  and parse the reply with :func:`parse_answer`.

Keys come from the environment; nothing is sent anywhere until a call is made.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from ..errors import ConfigError, MissingDependencyError
from ..http import APIError, JSONClient
from ..types import Chunk
from .base import NOT_FOUND, Answer, build_prompt, parse_answer

__all__ = ["OpenAIChatGenerator", "AnthropicGenerator", "chat_openai", "chat_anthropic", "ChatLLM", "ask_parsed",
           "json_values", "estimate_tokens", "parse_model_spec", "CHARS_PER_TOKEN", "DEFAULT_ANTHROPIC_MODEL"]

T = TypeVar("T")

CHARS_PER_TOKEN = 4  # what every dry-run estimate assumes (English prose; code and other scripts cost more)
DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"  # what a bare ``anthropic`` means
KINDS = ("anthropic", "openai")


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


# -- the shared call path -----------------------------------------------------------------------------------------

def parse_model_spec(spec: str, *, what: str = "generator", flag: str = "--generator") -> tuple[str, str]:
    """``anthropic``, ``anthropic:<model>`` or ``openai:<model>`` -> (kind, model); ``what`` and ``flag`` name
    the option in errors."""
    kind, _, model = str(spec).partition(":")
    model = model.strip()
    if kind not in KINDS:
        raise ConfigError(f"unknown {what} {spec!r}; use {flag} anthropic, anthropic:<model> or openai:<model>")
    if kind == "openai" and not model:
        raise ConfigError(f"openai needs a model: {flag} openai:<model>, e.g. openai:gpt-4o-mini")
    return kind, model or DEFAULT_ANTHROPIC_MODEL


def estimate_tokens(*texts: str) -> int:
    """Tokens a dry run assumes for ``texts``: :data:`CHARS_PER_TOKEN` characters a token."""
    return sum(len(t) for t in texts) // CHARS_PER_TOKEN


_FENCE = re.compile(r"```[A-Za-z0-9_-]*")


def json_values(text: str) -> Iterator[Any]:
    """Every JSON object or array found in ``text``, in order of where it starts (code fences and prose around
    it ignored; an object nested in another is yielded too, after it)."""
    body = _FENCE.sub("", text)
    decoder = json.JSONDecoder()
    for i, ch in enumerate(body):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(body[i:])
            except json.JSONDecodeError:
                continue
            yield value


def ask_parsed(llm: Any, system: str, user: str, parse: Callable[[str], T | None], *,
               attempts: int = 2, **chat_options: Any) -> tuple[T | None, int]:
    """Ask ``llm`` (anything with ``chat(system, user) -> str``; ``chat_options`` go to each call) until
    ``parse(reply)`` is not None, at most ``attempts`` times. Returns (the parsed value or None, how many
    replies could not be parsed)."""
    bad = 0
    for _ in range(max(1, attempts)):
        value = parse(llm.chat(system, user, **chat_options))
        if value is not None:
            return value, bad
        bad += 1
    return None, bad


class ChatLLM:
    """One model through one wire format, one ``chat(system, user)`` at a time, with usage counted.

    ``kind`` is ``anthropic`` (the ``anthropic`` SDK, extra ``llm``: ``ANTHROPIC_API_KEY``; ``base_url`` or
    ``ANTHROPIC_BASE_URL``) or ``openai`` (any OpenAI-compatible chat-completions server: ``OPENAI_API_KEY``;
    ``base_url`` or ``OPENAI_BASE_URL``). 429, 5xx, timeouts and dropped connections are retried by the client
    up to ``max_retries`` times with backoff (honouring ``Retry-After``); other errors raise
    :class:`~ragtune.errors.APIError`. Nothing is built or sent before the first :meth:`chat`.

    ``usage`` counts ``calls``, ``input_tokens`` and ``output_tokens`` as the server reports them (safe to share
    between threads); ``cost`` prices them at ``price_in`` / ``price_out`` dollars per million tokens.
    """

    def __init__(self, kind: str, model: str, *, base_url: str | None = None, max_tokens: int = 512,
                 timeout: float = 60.0, max_retries: int = 5, backoff: float = 0.5, price_in: float = 0.0,
                 price_out: float = 0.0):
        if kind not in KINDS:
            raise ConfigError(f"unknown LLM kind {kind!r}; choose openai or anthropic")
        self.kind, self.model = kind, model
        self.name = f"{kind}:{model}"
        self.max_tokens = max_tokens
        self.price_in, self.price_out = price_in, price_out
        self.base_url = base_url or None
        self._timeout, self._max_retries, self._backoff = timeout, max_retries, backoff
        self._client: Any = None
        self._lock = threading.Lock()
        self.usage = {"calls": 0, "input_tokens": 0, "output_tokens": 0}

    @classmethod
    def from_spec(cls, spec: str, *, what: str = "generator", flag: str = "--generator",
                  **options: Any) -> "ChatLLM":
        """``anthropic``, ``anthropic:<model>`` or ``openai:<model>``."""
        return cls(*parse_model_spec(spec, what=what, flag=flag), **options)

    def price(self, input_tokens: int, output_tokens: int) -> float:
        """Dollars for these token counts."""
        return (input_tokens * self.price_in + output_tokens * self.price_out) / 1e6

    @property
    def cost(self) -> float:
        return self.price(self.usage["input_tokens"], self.usage["output_tokens"])

    def _connect(self) -> Any:
        with self._lock:
            if self._client is None:
                if self.kind == "openai":
                    base = self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
                    self._client = JSONClient(base, timeout=self._timeout, max_retries=self._max_retries,
                                              backoff=self._backoff)
                else:
                    _, self._client = _anthropic_client(self.base_url, "ANTHROPIC_API_KEY", self._timeout,
                                                        self._max_retries)
            return self._client

    def chat(self, system: str, user: str, *, max_tokens: int | None = None) -> str:
        """The reply's text (one call; transport failures retried by the client)."""
        client = self._connect()
        limit = max_tokens or self.max_tokens
        if self.kind == "openai":
            client.api_key = os.environ.get("OPENAI_API_KEY")
            text, usage, _ = chat_openai(client, self.model, system, user, max_tokens=limit)
        else:
            text, usage, _ = chat_anthropic(client, self.model, system, user, max_tokens=limit)
        with self._lock:
            self.usage["calls"] += 1
            self.usage["input_tokens"] += int(usage.get("input_tokens", 0))
            self.usage["output_tokens"] += int(usage.get("output_tokens", 0))
        return text
