"""LLM calls: the two wire formats and the one call path every LLM user shares (the generators in
:mod:`ragtune.answer.llm`, the judge, golden-set drafting, the ``llm`` reranker, reranker training).

- :func:`chat_openai` / :func:`chat_anthropic`: one call in the OpenAI chat-completions or the Anthropic
  Messages format, returning ``(text, usage, refused)``.
- :class:`ChatLLM`: a provider and a model (``anthropic[:<model>]`` or ``openai:<model>``) behind a
  ``chat(system, user) -> str`` that builds its client on first use and counts calls, tokens and dollars.
- :func:`ask_parsed`: ask, parse, ask again while the reply cannot be read; :func:`json_values` reads JSON out
  of a reply wrapped in prose or code fences; :func:`estimate_tokens` is the dry runs' token count.
  The judge (:mod:`.judge`), golden-set drafting (:mod:`ragtune.judgments.draft`) and the ``llm`` reranker
  (:mod:`ragtune.rerank.llm`) all go through these.

Keys come from the environment; nothing is sent anywhere until a call is made.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from .errors import ConfigError
from .http import APIError, JSONClient, redact_url

__all__ = ["chat_openai", "chat_anthropic", "ChatLLM", "ask_parsed",
           "json_values", "estimate_tokens", "parse_model_spec", "CHARS_PER_TOKEN", "DEFAULT_ANTHROPIC_MODEL"]

T = TypeVar("T")

CHARS_PER_TOKEN = 4  # what every dry-run estimate assumes (English prose; code and other scripts cost more)
DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"  # what a bare ``anthropic`` means
KINDS = ("anthropic", "openai")


ANTHROPIC_VERSION = "2023-06-01"  # the Messages API version sent as ``anthropic-version``
DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com"


def _tokens(usage: Any, *names: str) -> int:
    """A token count read leniently: a missing, null, negative or non-numeric count is 0."""
    value = usage.get(names[0]) if isinstance(usage, dict) else None
    for name in names[1:]:
        if value is None and isinstance(usage, dict):
            value = usage.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return 0
    try:
        n = float(value)
    except ValueError:
        return 0
    return int(n) if n == n and 0 <= n < 1e15 else 0


def _text_of(content: Any, where: str, what: str) -> str:
    """The text of a reply's ``content``: a string, or a list of parts/blocks whose ``text`` parts are joined
    (other block types, tool calls and images, are skipped); anything else is an APIError."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type", "text") == "text":
                text = block.get("text")
                if text is not None and not isinstance(text, str):
                    raise APIError(f"{where}: unexpected response shape ({what} has a text block whose text is a "
                                   f"{type(text).__name__}, expected a string)")
                parts.append(text or "")
        return "".join(parts)
    raise APIError(f"{where}: unexpected response shape ({what} is {_kind(content)}, expected text or a list of "
                   "text blocks); is this the API it claims to be?")


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__}"


def chat_openai(client: JSONClient, model: str, system: str, user: str, *, max_tokens: int, temperature: float = 0.0):
    """One chat completion: (text, usage, refused).

    Read leniently where the meaning is plain (``message`` as a bare string, ``content`` as a list of text parts,
    a null or missing token count as 0); any other shape is an :class:`APIError` saying what came back.
    """
    payload = client.post("chat/completions", {
        "model": model, "temperature": temperature, "max_tokens": max_tokens,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]})
    where = f"{redact_url(client.base_url.rstrip('/'))}/chat/completions"
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise APIError(f"{where}: unexpected response shape (no choices[0].message: choices is "
                       f"{_kind(choices) if not isinstance(choices, list) else f'a list of {len(choices)}'}); "
                       "is this an OpenAI-compatible server?")
    choice = choices[0]
    msg = choice.get("message")
    if msg is None and isinstance(choice.get("text"), str):  # a completions-style choice
        msg = choice["text"]
    if isinstance(msg, str):
        msg = {"content": msg}
    if not isinstance(msg, dict):
        raise APIError(f"{where}: unexpected response shape (choices[0].message is {_kind(msg)}, expected an "
                       "object with content); is this an OpenAI-compatible server?")
    content = msg.get("content")
    text = "" if content is None else _text_of(content, where, "choices[0].message.content")
    usage = payload.get("usage")
    tokens = {"input_tokens": _tokens(usage, "prompt_tokens", "input_tokens"),
              "output_tokens": _tokens(usage, "completion_tokens", "output_tokens")}
    return text, tokens, bool(msg.get("refusal"))


def _anthropic_client(base_url: str | None, api_key_env: str, timeout: float, max_retries: int,
                      backoff: float = 0.5) -> JSONClient:
    """The Messages API over :class:`JSONClient` (ragtune's one HTTP policy: same-origin redirects only, a size
    cap, wall-clock timeouts); ``base_url`` or ``ANTHROPIC_BASE_URL``, default the Anthropic API."""
    base = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_ANTHROPIC_URL).rstrip("/")
    return JSONClient(base, api_key_env=api_key_env, timeout=timeout, max_retries=max_retries, backoff=backoff,
                      headers={"anthropic-version": ANTHROPIC_VERSION}, key_header="x-api-key",
                      kind="the Anthropic Messages API")


def chat_anthropic(client: JSONClient, model: str, system: str, user: str, *, max_tokens: int):
    """One Messages API call: (text, usage, refused). 429, 5xx (529 overloaded) and timeouts are retried.

    No ``temperature`` is sent; sampling is the model's default. The key is read from the client's
    ``api_key_env`` at each call. ``content: []`` is an empty reply; ``content: null`` or any other shape is an
    :class:`APIError` saying what came back.
    """
    client.api_key = os.environ.get(client.api_key_env) or "missing"
    payload = client.post("v1/messages", {"model": model, "max_tokens": max_tokens, "system": system,
                                          "messages": [{"role": "user", "content": user}]})
    where = f"{redact_url(client.base_url)}/v1/messages"
    if payload.get("type") == "error":
        err = payload.get("error")
        detail = err.get("message") if isinstance(err, dict) else err
        raise APIError(f"{where}: the API answered an error: {str(detail)[:200]}")
    if "content" not in payload:
        raise APIError(f"{where}: unexpected response shape (no content; top-level keys: "
                       f"{', '.join(map(str, list(payload)[:10])) or 'none'}); is this the Anthropic Messages API?")
    text = _text_of(payload["content"], where, "content")
    usage = payload.get("usage")
    tokens = {"input_tokens": _tokens(usage, "input_tokens"), "output_tokens": _tokens(usage, "output_tokens")}
    return text, tokens, payload.get("stop_reason") == "refusal"


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

    ``kind`` is ``anthropic`` (the Messages API: ``ANTHROPIC_API_KEY``; ``base_url`` or
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
                    self._client = _anthropic_client(self.base_url, "ANTHROPIC_API_KEY", self._timeout,
                                                     self._max_retries, self._backoff)
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
