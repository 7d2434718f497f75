"""The ``llm`` reranker: a language model orders the shortlist, listwise, with its tokens and dollars counted.

One prompt per window of candidates: the query, then the candidates numbered ``[1]``..``[m]``, each with its
heading path (or anchor) and its text cut to ``max_chars``. The model answers with the numbers, best first,
joined by ``>`` (``[3] > [1] > [2]``). Reading the answer is lenient, and every repair is counted:

- prose or code fences around the order are ignored; the longest ``a > b > ...`` chain wins, and a JSON
  list of numbers is read too;
- numbers out of range and repeats are dropped; candidates the answer leaves out follow, in first-stage order
  (``repaired`` counts these answers);
- an answer with no order in it is asked again, up to ``attempts`` times (``malformed`` counts each one);
  then that window keeps its first-stage order (``fallbacks`` counts windows, ``failed_queries`` names them).

A shortlist longer than ``max_candidates`` is ordered in overlapping windows of ``max_candidates``, moving from
the bottom of the list to the top by half a window at a time, so a good candidate found low can climb to the
first place. Transport failures (429, 5xx, timeouts) are retried by the client (``max_retries``); any other
API error stops the run with :class:`~ragtune.errors.APIError`.

:attr:`LLMReranker.usage` holds calls, tokens, cost and the counts above after a run;
:func:`estimate_llm_rerank` says what a golden set would cost before anything is sent.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from ..config import Opt, check_range
from ..errors import ConfigError
from ..types import Chunk, Hit, Ranking
from .base import RerankerConfig

__all__ = ["LLMReranker", "LLMRerankerConfig", "RerankEstimate", "build_rerank_prompt", "estimate_llm_rerank",
           "parse_order", "windows"]

SYSTEM = (
    "You order search results. You get a query and numbered passages. Rank the passages from the most to the "
    "least useful for answering the query. Reply with the passage numbers only, best first, separated by ' > ', "
    "for example: [3] > [1] > [2]. Rank every passage exactly once."
)
OUTPUT_TOKENS_PER_CANDIDATE = 4  # "[12] >" is about four tokens; what the estimate and the reply limit assume
OUTPUT_TOKENS_EXTRA = 16


@dataclass(frozen=True)
class LLMRerankerConfig(RerankerConfig):
    """An LLM orders the shortlist (listwise): ``anthropic:<model>`` or ``openai:<model>``.

    ``mode`` and ``fuse_k`` as for every reranker (:class:`~ragtune.rerank.base.RerankerConfig`):
    ``replace`` keeps the model's order, ``fuse`` blends it with the first stage's by RRF.

    ``base_url`` empty: the provider's (or ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``). ``max_candidates``
    per call (longer shortlists go in overlapping windows); ``max_chars`` of each candidate's text;
    ``price_in`` / ``price_out`` in dollars per million tokens (for the cost figures only); ``attempts`` asks
    per window while the answer holds no order; ``max_retries`` per call on 429/5xx/timeouts.
    """

    model: Annotated[str, Opt("LLM as provider:model, e.g. anthropic:claude-haiku-4-5 or openai:gpt-4o-mini")] = ""
    base_url: Annotated[str, Opt("API base URL (a proxy or a local server speaking the provider's wire format)")] = ""
    max_candidates: Annotated[int, Opt("candidates the LLM orders; the rest keep their first-stage order")] = 20
    max_chars: Annotated[int, Opt("characters of each candidate shown to the LLM")] = 800
    price_in: Annotated[float, Opt("price per million input tokens, for cost accounting")] = 0.0
    price_out: Annotated[float, Opt("price per million output tokens, for cost accounting")] = 0.0
    attempts: Annotated[int, Opt("tries when the LLM's answer cannot be parsed")] = 2
    max_retries: Annotated[int, Opt("retries on rate limits and server errors")] = 5
    timeout: Annotated[float, Opt("seconds per LLM call")] = 60.0

    def __post_init__(self) -> None:
        from ..llm import parse_model_spec

        super().__post_init__()
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError("the llm reranker needs a model: --rerank-model anthropic:<model> or "
                              "openai:<model> (e.g. anthropic:claude-sonnet-4-5)")
        if ":" not in self.model:
            raise ConfigError(f"the llm reranker's model is provider:model, got {self.model!r}; use --rerank-model "
                              "anthropic:<model> or openai:<model> (e.g. anthropic:claude-sonnet-4-5)")
        parse_model_spec(self.model, what="reranker model", flag="--rerank-model")
        if not isinstance(self.base_url, str):
            raise ConfigError(f"LLMRerankerConfig: base_url must be a URL string, got {self.base_url!r}")
        check_range("LLMRerankerConfig", "max_candidates", self.max_candidates, lo=2, integer=True)
        check_range("LLMRerankerConfig", "max_chars", self.max_chars, lo=1, integer=True)
        check_range("LLMRerankerConfig", "price_in", self.price_in, lo=0)
        check_range("LLMRerankerConfig", "price_out", self.price_out, lo=0)
        check_range("LLMRerankerConfig", "attempts", self.attempts, lo=1, integer=True)
        check_range("LLMRerankerConfig", "max_retries", self.max_retries, lo=0, integer=True)
        check_range("LLMRerankerConfig", "timeout", self.timeout, lo=0.001)


def _label(chunk: Chunk) -> str:
    return " > ".join(h for h in chunk.heading_path if h) or chunk.anchor


def _cut(text: str, max_chars: int) -> str:
    """Whitespace collapsed, then at most ``max_chars`` characters (cut at a word when one ends near the limit)."""
    flat = " ".join(text.split())
    if len(flat) <= max_chars:
        return flat
    head = flat[:max_chars]
    space = head.rfind(" ")
    if space >= max_chars * 0.8:
        head = head[:space]
    return head.rstrip() + " ..."


def build_rerank_prompt(query: str, chunks: Sequence[Chunk], *, max_chars: int = 800) -> tuple[str, str]:
    """(system, user) messages asking for an order of ``chunks`` for ``query``."""
    parts = [f"[{i}] {_label(c)}\n{_cut(c.text, max_chars)}" for i, c in enumerate(chunks, start=1)]
    q = " ".join(query.split())
    user = (f"Query: {q}\n\nPassages:\n\n" + "\n\n".join(parts)
            + f"\n\nRank the {len(chunks)} passages for the query \"{q}\", best first, as [a] > [b] > ...\n"
              "Ranking:")
    return SYSTEM, user


_ITEM = r"(?:passage|doc(?:ument)?)?\s*#?\s*\[?\s*\d{1,4}\s*\]?"
_CHAIN = re.compile(rf"{_ITEM}(?:\s*>\s*{_ITEM})+", re.IGNORECASE)


@dataclass(frozen=True)
class ParsedOrder:
    """A full order of ``n`` candidates (0-based indexes, best first); ``repaired`` when the answer needed it."""

    order: tuple[int, ...]
    repaired: bool


def parse_order(text: str, n: int) -> ParsedOrder | None:
    """The order in a model's answer for ``n`` candidates numbered from 1, or None when it holds none.

    The longest ``a > b > ...`` chain in the text (else the first JSON list of two or more numbers) is read;
    numbers outside 1..n and repeats are dropped, and the candidates it leaves out follow in their given order.
    A lone number is no order (``Passage [2] is best`` could be prose about one passage).
    """
    numbers: list[int] | None = None
    chains = [re.findall(r"\d+", m.group()) for m in _CHAIN.finditer(text)]
    if chains:
        numbers = [int(x) for x in max(chains, key=len)]  # max keeps the first of the longest
    else:
        from ..llm import json_values

        for value in json_values(text):
            if isinstance(value, list) and len(value) >= min(2, n) and all(
                    isinstance(v, int) and not isinstance(v, bool) or isinstance(v, str) and v.strip().isdigit()
                    for v in value):
                numbers = [int(v) for v in value]
                break
    if not numbers:
        return None
    seen: dict[int, None] = {}
    for x in numbers:
        if 1 <= x <= n:
            seen.setdefault(x - 1)
    if not seen:
        return None
    order = list(seen) + [i for i in range(n) if i not in seen]
    return ParsedOrder(tuple(order), repaired=len(seen) != len(numbers) or len(seen) != n)


def windows(n: int, size: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` windows a shortlist of ``n`` is ordered in, in calling order: one window when
    ``n <= size``, else windows of ``size`` from the bottom up, each half a window above the last."""
    if n <= size:
        return [(0, n)]
    step = max(1, size // 2)
    out, end = [], n
    while True:
        start = max(0, end - size)
        out.append((start, end))
        if start == 0:
            return out
        end -= step


class LLMReranker:
    """Orders a ranking with an LLM (see the module docstring). Cheap to build: nothing is sent before
    :meth:`rerank`. ``usage`` and ``cost`` add up over every call of this object (safe across threads)."""

    name = "llm"

    def __init__(self, config: LLMRerankerConfig):
        from ..llm import ChatLLM

        self.options = config
        self.mode, self.fuse_k = config.mode, config.fuse_k
        self.llm = ChatLLM.from_spec(config.model, what="reranker model", flag="--rerank-model",
                                     base_url=config.base_url or None, timeout=config.timeout,
                                     max_retries=config.max_retries, price_in=config.price_in,
                                     price_out=config.price_out)
        self.config = {"model": self.llm.name, "max_candidates": config.max_candidates,
                       "max_chars": config.max_chars, "mode": self.mode, "fuse_k": self.fuse_k}
        self._lock = threading.Lock()
        self._counts = {"queries": 0, "windows": 0, "malformed": 0, "repaired": 0, "fallbacks": 0}
        self.failed_queries: list[str] = []  # queries where a window kept its first-stage order

    @property
    def cost(self) -> float:
        return self.llm.cost

    @property
    def usage(self) -> dict[str, Any]:
        """``model``; ``queries`` reranked; ``calls``, ``input_tokens`` and ``output_tokens`` as the server
        counted them; ``cost`` in dollars; ``malformed`` answers asked again, ``repaired`` answers that left out
        or repeated numbers, ``fallbacks`` windows left in first-stage order."""
        with self._lock:
            counts = dict(self._counts)
        return {"model": self.llm.name, **counts, **self.llm.usage, "cost": self.llm.cost}

    def _order(self, query: str, chunks: Sequence[Chunk]) -> tuple[int, ...]:
        from ..llm import ask_parsed

        m = len(chunks)
        system, user = build_rerank_prompt(query, chunks, max_chars=self.options.max_chars)
        parsed, bad = ask_parsed(self.llm, system, user, lambda text: parse_order(text, m),
                                 attempts=self.options.attempts,
                                 max_tokens=OUTPUT_TOKENS_EXTRA + OUTPUT_TOKENS_PER_CANDIDATE * m)
        with self._lock:
            self._counts["windows"] += 1
            self._counts["malformed"] += bad
            if parsed is None:
                self._counts["fallbacks"] += 1
                if not self.failed_queries or self.failed_queries[-1] != query:
                    self.failed_queries.append(query)
            elif parsed.repaired:
                self._counts["repaired"] += 1
        return parsed.order if parsed is not None else tuple(range(m))

    def rerank(self, query: str, ranking: Ranking) -> Ranking:
        t0 = time.perf_counter()
        hits = ranking.hits
        n = len(hits)
        order = list(range(n))
        if n > 1:
            for start, end in windows(n, self.options.max_candidates):
                idx = order[start:end]
                got = self._order(query, [hits[i].chunk for i in idx])
                order[start:end] = [idx[j] for j in got]
        with self._lock:
            self._counts["queries"] += 1
        new = tuple(Hit(hits[i].chunk, float(n - pos)) for pos, i in enumerate(order))
        return Ranking(query, new, {**ranking.timings, "rerank": time.perf_counter() - t0})

    def estimate(self, shortlists: Iterable[Ranking]) -> "RerankEstimate":
        """What reranking these shortlists would send (nothing is sent): one call per window of two or more
        candidates, :data:`~ragtune.answer.llm.CHARS_PER_TOKEN` characters a token, every answer read at the
        first attempt. Windows are priced over the first-stage order."""
        from ..llm import estimate_tokens

        queries = calls = tokens_out = 0
        prompts: list[str] = []
        for ranking in shortlists:
            queries += 1
            chunks = [h.chunk for h in ranking.hits]
            for start, end in windows(len(chunks), self.options.max_candidates):
                if end - start < 2:
                    continue
                calls += 1
                prompts.extend(build_rerank_prompt(ranking.query, chunks[start:end],
                                                   max_chars=self.options.max_chars))
                tokens_out += OUTPUT_TOKENS_EXTRA + OUTPUT_TOKENS_PER_CANDIDATE * (end - start)
        tokens_in = estimate_tokens(*prompts)
        return RerankEstimate(self.llm.name, queries, calls, tokens_in, tokens_out,
                              self.llm.price(tokens_in, tokens_out), self.llm.price_in, self.llm.price_out)


@dataclass(frozen=True)
class RerankEstimate:
    """A dry run's figures: questions, calls, tokens in and out, dollars at the given prices."""

    model: str
    questions: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost: float
    price_in: float = 0.0
    price_out: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "questions": self.questions, "calls": self.calls,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "cost": self.cost,
                "price_in": self.price_in, "price_out": self.price_out}

    def summary(self) -> str:
        """One line for a terminal."""
        price = (f"${self.cost:,.2f} at ${self.price_in:g}/${self.price_out:g} per million tokens in/out"
                 if self.price_in or self.price_out else "cost unknown: set --rerank-price-in and --rerank-price-out")
        return (f"estimate: {self.calls:,} calls for {self.questions:,} questions to {self.model}, about "
                f"{self.input_tokens:,} input and {self.output_tokens:,} output tokens; {price}")


def estimate_llm_rerank(pipeline: Any, questions: Iterable[Any], *, filters: Any = None) -> RerankEstimate:
    """Dry run of ``eval --rerank llm`` over a golden set: runs the first stage only (no LLM call) to get each
    question's shortlist of ``pipeline.candidates`` chunks, and prices the prompts the reranker would send.

    ``pipeline`` is a :class:`~ragtune.pipeline.Pipeline` whose reranker is an :class:`LLMReranker`;
    ``questions`` a golden set (items with ``q``) or plain strings; ``filters`` as for ``evaluate``.
    """
    reranker = getattr(pipeline, "reranker", None)
    if not isinstance(reranker, LLMReranker):
        name = getattr(reranker, "name", None)
        raise ConfigError(f"a cost estimate needs the llm reranker (--rerank llm), got {name or 'no reranker'}")
    from ..retrieve.base import search

    shortlists = []
    for item in questions:
        text = item if isinstance(item, str) else item.q
        ranking = search(pipeline.base, text, pipeline.candidates, filters)
        shortlists.append(Ranking(text, ranking.hits[:pipeline.candidates], ranking.timings))
    return reranker.estimate(shortlists)


def _build(config: LLMRerankerConfig) -> LLMReranker:
    return LLMReranker(config)


from ..registry import RERANKERS  # noqa: E402

RERANKERS.register("llm", LLMRerankerConfig, _build, calls_llm=True,
                   summary="an LLM orders the shortlist, listwise (--rerank-model anthropic:<model> or "
                           "openai:<model>), tokens and cost counted")
