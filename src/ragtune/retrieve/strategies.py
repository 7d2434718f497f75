"""Built-in multi-step retrieval: how a question becomes one or more searches (the ``strategy`` stage).

A strategy gets the pipeline's retriever and the question (with the questions of the earlier turns of its
conversation, when it has some) and returns one :class:`~ragtune.types.Ranking`: with more than one search, its
``searches`` hold each search (its own query, hits and timings) in the order made, and its ``hits`` are what
reached the model (below; a chunk two searches found is there once), so every metric scores it unchanged and the
per-search figures read ``searches``. Entries (registry ``STRATEGIES``):

- ``single`` (the default): one search of the question, the pipeline exactly as without a strategy stage;
- ``links``: search the question; then, as a second search, the sections the corpus's own cross-references point
  to from the top ``follow`` hits (:mod:`ragtune.corpus.links`: markdown and HTML links, reStructuredText
  ``:ref:``/``:doc:``/toctrees), at most ``linked`` of them, each as the first unit (chunk or section) of the
  linked section, in the order the links are written (the best hit's first). Offline;
- ``history``: for a turn of a conversation, one search of the earlier turns' questions (the last ``window`` of
  them; 0: all) followed by the question, so "and how do I test it?" carries what "it" is; a question without
  history is searched as it is;
- ``terms``: the offline baseline for decomposition (below);
- ``decompose``: an LLM (its ``llm`` option, ``anthropic:<model>`` or ``openai:<model>``) splits the question into
  at most ``queries`` self-contained sub-queries; the question is searched, then each sub-query (``keep`` hits);
- ``rewrite``: an LLM rewrites a conversation turn into a standalone query from its history; one search of it.

**What reaches the model** with a second search (``links``, ``terms``, ``decompose``): the first search's top
``keep`` hits, then the later searches' hits, then the rest of the first search's, a chunk seen before left out, at
most ``k``: every cut-off is filled as one search fills it, and what a later search found displaces the first
search's hits below rank ``keep`` (with the default ``keep`` of 5, the top 5 is one search's and a second search
shows from rank 6; a smaller ``keep`` lets it reach the top 5). ``searches`` keeps every search as it was made.

**The offline baseline for decomposition, ``terms``.** A question that needs two passages usually names both
things it joins ("which exception does the function that opens files raise when the file is missing?"). A first
search ranks the passages about the words that dominate the question; the other half shows up as query terms the
top hits never mention. ``terms`` searches the question, then searches again (``keep`` hits) with the ``words``
question terms that the top ``look`` hits do not contain, rarest in the corpus first (document
frequency over the indexed units, stopwords left out): the words an LLM's second sub-query would most likely be
built on, chosen without an LLM, deterministic and free. When every term was found, no second search is made.
It is a baseline to beat, not a claim that rare words are the missing hop: the benchmark says how far it gets.

Timings: each search keeps its retriever's stage timings; a strategy adds its own stage (``links``, ``terms``,
``llm``), and the Ranking's ``timings`` sum them per stage, so eval's latency and per-stage figures include every
search and the LLM calls.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from ..config import Config, Opt, check_range
from ..errors import ConfigError
from ..registry import STRATEGIES
from ..types import Chunk, Hit, Ranking
from .base import Retriever, search, warm_up

__all__ = ["StrategyRetriever", "SingleStrategy", "LinksStrategy", "HistoryStrategy", "TermsStrategy",
           "DecomposeStrategy", "RewriteStrategy", "history_query", "rare_terms"]


class StrategyRetriever:
    """The pipeline's retriever searched by a strategy: ``search(query, k, filters, history=...)`` returns the
    strategy's Ranking. ``uses_history`` tells :func:`ragtune.retrieve.base.search` to pass a question's history."""

    uses_history = True

    def __init__(self, inner: Retriever, strategy: Any):
        self.inner = inner
        self.strategy = strategy
        self.name = f"{inner.name}>>{strategy.name}"
        self.config = getattr(inner, "config", None)

    def warm_up(self) -> None:
        warm_up(self.inner)
        warm_up(self.strategy)

    def search(self, query: str, k: int = 10, filters: Any = None, history: Sequence[str] = ()) -> Ranking:
        return self.strategy.run(self.inner, query, k, filters, tuple(history))


def _stage(ranking: Ranking, stage: str, seconds: float) -> Ranking:
    """``ranking`` with ``seconds`` added to its ``timings[stage]``."""
    timings = dict(ranking.timings)
    timings[stage] = timings.get(stage, 0.0) + seconds
    return Ranking(ranking.query, ranking.hits, timings, ranking.searches)


def _merged(question: str, first: Ranking, later: Sequence[Ranking], keep: int, k: int) -> Ranking:
    """A question searched first, then ``later``: the model reads the first search's top ``keep`` hits, then the
    later searches' hits in order, then the rest of the first search's, a chunk seen before left out, at most
    ``k`` in all; every search is kept in ``searches`` (the first one whole, as it was made) and the timings are
    summed per stage."""
    whole = Ranking.from_searches(question, [first, *later])
    seen: set[str] = set()
    hits = []
    for h in (*first.hits[:keep], *(h for s in later for h in s.hits), *first.hits[keep:]):
        if h.chunk.id not in seen:
            seen.add(h.chunk.id)
            hits.append(h)
    return Ranking(question, tuple(hits[:k]), whole.timings, whole.searches)


# -- single ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SingleConfig(Config):
    """One search of the question (no options)."""


class SingleStrategy:
    """One search of the question: the retriever's Ranking as it is."""

    name = "single"

    def __init__(self, config: SingleConfig | None = None):
        self.config = config or SingleConfig()

    def run(self, retriever: Retriever, question: str, k: int, filters: Any = None,
            history: Sequence[str] = ()) -> Ranking:
        return search(retriever, question, k, filters)


# -- links ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LinksConfig(Config):
    """Follow the corpus's cross-references from the top hits as a second search."""

    follow: Annotated[int, Opt("top hits whose cross-references are followed")] = 3
    linked: Annotated[int, Opt("most linked sections added by the second search")] = 5
    keep: Annotated[int, Opt("hits of the first search kept before the later searches' hits")] = 5

    def __post_init__(self) -> None:
        check_range("LinksConfig", "follow", self.follow, lo=1, integer=True)
        check_range("LinksConfig", "linked", self.linked, lo=1, integer=True)
        check_range("LinksConfig", "keep", self.keep, lo=1, integer=True)


class _Units:
    """The units a search returns (chunks, or parents for small-to-big) by document, to find the first unit of a
    linked section."""

    def __init__(self, units: Sequence[Chunk]):
        self.by_doc: dict[str, list[Chunk]] = {}
        for u in units:
            self.by_doc.setdefault(u.doc_id, []).append(u)
        for us in self.by_doc.values():
            us.sort(key=lambda u: (u.start, u.end))

    def first_in(self, doc_id: str, start: int, end: int) -> Chunk | None:
        """The unit that covers ``start`` (else the first starting in ``[start, end)``)."""
        inside = None
        for u in self.by_doc.get(doc_id, ()):
            if u.start <= start < max(u.end, u.start + 1):
                return u
            if inside is None and start <= u.start < end:
                inside = u
        return inside


class LinksStrategy:
    """Search, then the sections the top hits link to (see the module docstring)."""

    name = "links"

    def __init__(self, config: LinksConfig, corpus: Any, units: Sequence[Chunk]):
        self.config = config
        self.corpus = corpus
        self._units_given = units
        self._links: Any = None
        self._units: _Units | None = None
        self._sections: dict[str, tuple[int, int]] = {}

    def warm_up(self) -> None:
        self._load()

    def _load(self) -> None:
        if self._links is None:
            from ..corpus.links import find_links

            if self.corpus is None:
                raise ConfigError("the links strategy follows the corpus's cross-references: build it with the "
                                  "corpus (build_pipeline does)")

            self._units = _Units(self._units_given)
            self._sections = {s.anchor: (s.start, s.own_end) for d in self.corpus for s in d.sections}
            self._links = find_links(self.corpus)

    @property
    def links(self) -> Any:
        """The corpus's :class:`~ragtune.corpus.links.CorpusLinks` (read on first use)."""
        self._load()
        return self._links

    def describe(self) -> dict[str, Any]:
        """What a result records of the links followed: how many resolved (by kind), were dropped as
        unresolvable, pointed outside the corpus, and the documents whose source could not be read."""
        summary = self.links.summary()
        return {"links": {k: v for k, v in summary.items() if k != "examples"}}

    def linked_units(self, hits: Sequence[Hit]) -> tuple[list[Hit], list[str]]:
        """The second search's hits for the first search's kept ``hits``: the first unit of each section the top
        ``follow`` of them link to (a unit among ``hits`` left out), scored by the hit that links to it, in the
        order written; with the anchors whose links were followed."""
        self._load()
        seen = {h.chunk.id for h in hits}
        out: list[Hit] = []
        sources: list[str] = []
        targets: set[str] = set()
        for h in hits[:self.config.follow]:
            c = h.chunk
            found = self._links.within(c.doc_id, c.start, c.end, self._sections)
            if found:
                sources.append(c.anchor)
            for link in found:
                if link.target in targets:
                    continue
                targets.add(link.target)
                span = self.corpus.resolve(link.target)
                unit = self._units.first_in(span.doc_id, span.start, span.end)  # type: ignore[union-attr]
                if unit is not None and unit.id not in seen:
                    seen.add(unit.id)
                    out.append(Hit(unit, h.score))
                    if len(out) >= self.config.linked:
                        return out, sources
        return out, sources

    def run(self, retriever: Retriever, question: str, k: int, filters: Any = None,
            history: Sequence[str] = ()) -> Ranking:
        first, keep = search(retriever, question, k, filters), min(self.config.keep, k)
        t0 = time.perf_counter()
        hits, sources = self.linked_units(first.hits[:keep])
        second = Ranking("links from " + ", ".join(sources), tuple(hits), {"links": time.perf_counter() - t0})
        return _merged(question, first, [second] if hits else [], keep, k)


# -- history --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HistoryConfig(Config):
    """The earlier turns' questions (the last ``window``; 0: all) put before the question."""

    window: Annotated[int, Opt("earlier turns put before the question (0: all of them)")] = 2

    def __post_init__(self) -> None:
        check_range("HistoryConfig", "window", self.window, lo=0, integer=True)


def history_query(question: str, history: Sequence[str], window: int = 0) -> str:
    """The query of a turn: the last ``window`` questions of ``history`` (all when 0), then ``question``, one per
    line."""
    earlier = [h.strip() for h in history if h and h.strip()]
    if window:
        earlier = earlier[-window:]
    return "\n".join([*earlier, question])


class HistoryStrategy:
    """One search of the conversation so far (see the module docstring)."""

    name = "history"

    def __init__(self, config: HistoryConfig | None = None):
        self.config = config or HistoryConfig()

    def run(self, retriever: Retriever, question: str, k: int, filters: Any = None,
            history: Sequence[str] = ()) -> Ranking:
        query = history_query(question, history, self.config.window)
        if query == question:
            return search(retriever, question, k, filters)
        ranking = search(retriever, query, k, filters)
        return Ranking.from_searches(question, [Ranking(query, ranking.hits, dict(ranking.timings))])


# -- terms: the offline decomposition baseline ------------------------------------------------------------------
_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.U)


@dataclass(frozen=True)
class TermsConfig(Config):
    """Search the question, then its rarest terms the top hits lack (the offline decomposition baseline)."""

    keep: Annotated[int, Opt("hits of the first search kept before the later searches' hits")] = 5
    look: Annotated[int, Opt("top hits whose words count as found")] = 3
    words: Annotated[int, Opt("rare missing question terms searched as the second query")] = 3

    def __post_init__(self) -> None:
        check_range("TermsConfig", "keep", self.keep, lo=1, integer=True)
        check_range("TermsConfig", "look", self.look, lo=1, integer=True)
        check_range("TermsConfig", "words", self.words, lo=1, integer=True)


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(text)]


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def rare_terms(question: str, found: Sequence[str], df: Mapping[str, int], n: int,
               stop: frozenset[str] = frozenset()) -> list[str]:
    """The ``n`` words of ``question`` not in any text of ``found`` and not stopwords, rarest first by ``df``
    (document frequency; a word no unit holds is left out: no search finds it), ties in question order."""
    seen = set()
    for text in found:
        seen.update(_words(text))
    out: dict[str, int] = {}
    for i, w in enumerate(_words(question)):
        if w in stop or w in seen or w in out or len(w) < 2 or not df.get(w):
            continue
        out[w] = i
    return sorted(out, key=lambda w: (df[w], out[w]))[:n]


class TermsStrategy:
    """Search the question, then its rare missing terms (see the module docstring)."""

    name = "terms"

    def __init__(self, config: TermsConfig, units: Sequence[Chunk]):
        self.config = config
        self._units = units
        self._df: dict[str, int] | None = None
        self._stop: frozenset[str] = frozenset()

    def warm_up(self) -> None:
        self._load()

    def _load(self) -> None:
        if self._df is None:
            df: dict[str, int] = {}
            for u in self._units:
                for w in set(_words(u.embed_text)):
                    df[w] = df.get(w, 0) + 1
            self._df, self._stop = df, _stopwords()

    def run(self, retriever: Retriever, question: str, k: int, filters: Any = None,
            history: Sequence[str] = ()) -> Ranking:
        first, keep = search(retriever, question, k, filters), min(self.config.keep, k)
        t0 = time.perf_counter()
        self._load()
        terms = rare_terms(question, [h.chunk.embed_text for h in first.hits[:self.config.look]],
                           self._df or {}, self.config.words, self._stop)
        spent = time.perf_counter() - t0
        if not terms:
            return _merged(question, _stage(first, "terms", spent), [], keep, k)
        second = search(retriever, " ".join(terms), keep, filters)
        return _merged(question, first, [_stage(second, "terms", spent)], keep, k)


# -- LLM strategies -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _LLMOptions(Config):
    llm: Annotated[str, Opt("the LLM, anthropic:<model> or openai:<model>")] = ""
    base_url: Annotated[str, Opt("the LLM's API base URL (empty: the provider's)")] = ""
    timeout: Annotated[float, Opt("seconds per LLM call")] = 60.0

    def _check_llm(self, strategy: str) -> None:
        from ..llm import parse_model_spec

        if not isinstance(self.llm, str) or not self.llm.strip():
            raise ConfigError(f"the {strategy} strategy needs an LLM: set its llm option to anthropic:<model> or "
                              "openai:<model> (offline, the terms strategy searches the question and then its "
                              "rarest missing terms; the history strategy puts a conversation's turns in the query)")
        parse_model_spec(self.llm, what=f"{strategy} strategy LLM", flag="the strategy's llm option")
        check_range(type(self).__name__, "timeout", self.timeout, lo=0, lo_open=True)


@dataclass(frozen=True)
class DecomposeConfig(_LLMOptions):
    """An LLM splits the question into sub-queries, each searched after the question."""

    keep: Annotated[int, Opt("hits of the first search kept before the later searches' hits")] = 5
    queries: Annotated[int, Opt("most sub-queries the LLM may write")] = 3

    def __post_init__(self) -> None:
        self._check_llm("decompose")
        check_range("DecomposeConfig", "keep", self.keep, lo=1, integer=True)
        check_range("DecomposeConfig", "queries", self.queries, lo=1, hi=10, integer=True)


@dataclass(frozen=True)
class RewriteConfig(_LLMOptions):
    """An LLM rewrites a conversation turn into a standalone query."""

    def __post_init__(self) -> None:
        self._check_llm("rewrite")


_DECOMPOSE_SYSTEM = ("You turn a question into search queries for a documentation search engine. Reply with a JSON "
                     "list of strings only: at most {n} short, self-contained queries, one per thing the question "
                     "needs looked up. A question that needs one lookup gets one query.")
_REWRITE_SYSTEM = ("You rewrite the last question of a conversation into one standalone search query that needs no "
                   "earlier turn to be understood (replace pronouns and ellipsis by what they refer to). Reply with "
                   "the query only, on one line.")


def _queries(reply: str, n: int) -> list[str] | None:
    from ..llm import json_values

    for value in json_values(reply):
        if isinstance(value, list) and value and all(isinstance(q, str) for q in value):
            qs = [" ".join(q.split()) for q in value if q.strip()]
            return qs[:n] or None
    return None


class _LLMStrategy:
    calls_llm = True

    def __init__(self, config: Any):
        self.config = config
        self._llm: Any = None

    @property
    def llm(self) -> Any:
        if self._llm is None:
            from ..llm import ChatLLM

            self._llm = ChatLLM.from_spec(self.config.llm, what=f"{self.name} strategy LLM",  # type: ignore[attr-defined]
                                          flag="the strategy's llm option", base_url=self.config.base_url or None,
                                          timeout=self.config.timeout, max_tokens=300)
        return self._llm

    @property
    def usage(self) -> dict[str, int]:
        return dict(self._llm.usage) if self._llm is not None else {}


class DecomposeStrategy(_LLMStrategy):
    """The question, then the LLM's sub-queries (see the module docstring)."""

    name = "decompose"

    def run(self, retriever: Retriever, question: str, k: int, filters: Any = None,
            history: Sequence[str] = ()) -> Ranking:
        from ..llm import ask_parsed

        t0 = time.perf_counter()
        asked = history_query(question, history) if history else question
        subs, _ = ask_parsed(self.llm, _DECOMPOSE_SYSTEM.format(n=self.config.queries), asked,
                             lambda r: _queries(r, self.config.queries))
        spent = time.perf_counter() - t0
        keep = min(self.config.keep, k)
        first = _stage(search(retriever, question, k, filters), "llm", spent)
        later = [search(retriever, q, keep, filters) for q in subs or () if q.lower() != question.lower()]
        return _merged(question, first, later, keep, k)


class RewriteStrategy(_LLMStrategy):
    """One search of the turn rewritten by the LLM from its history (the question itself without history)."""

    name = "rewrite"

    def run(self, retriever: Retriever, question: str, k: int, filters: Any = None,
            history: Sequence[str] = ()) -> Ranking:
        if not history:
            return search(retriever, question, k, filters)
        from ..llm import ask_parsed

        t0 = time.perf_counter()
        turns = "\n".join(f"Q{i + 1}: {h}" for i, h in enumerate(history))
        user = f"{turns}\nLast question: {question}"
        query, _ = ask_parsed(self.llm, _REWRITE_SYSTEM, user,
                              lambda r: " ".join(r.strip().strip('"').split()) or None)
        spent = time.perf_counter() - t0
        query = query or question
        ranking = search(retriever, query, k, filters)
        return Ranking.from_searches(question, [_stage(Ranking(query, ranking.hits, dict(ranking.timings)), "llm",
                                                       spent)])


STRATEGIES.register("single", SingleConfig, lambda config, **_: SingleStrategy(config),
                    summary="one search of the question (default)")
STRATEGIES.register("links", LinksConfig, lambda config, *, corpus=None, units=(), **_:
                    LinksStrategy(config, corpus, units),
                    summary="search, then the sections the top hits link to (the corpus's cross-references)")
STRATEGIES.register("history", HistoryConfig, lambda config, **_: HistoryStrategy(config),
                    summary="a conversation turn searched with the earlier turns' questions before it")
STRATEGIES.register("terms", TermsConfig, lambda config, *, units=(), **_: TermsStrategy(config, units),
                    summary="search, then the question's rarest terms the top hits lack (offline decomposition)")
STRATEGIES.register("decompose", DecomposeConfig, lambda config, **_: DecomposeStrategy(config),
                    summary="an LLM splits the question into sub-queries, each searched", calls_llm=True)
STRATEGIES.register("rewrite", RewriteConfig, lambda config, **_: RewriteStrategy(config),
                    summary="an LLM rewrites a conversation turn into a standalone query", calls_llm=True)
