"""Any retriever as a ragtune retriever: :func:`evaluate_retriever` and :class:`ExternalRetriever`.

The retriever is a callable ``(query, k) -> hits`` (or ``(query) -> hits``),
sync or async, or an object with a ``search``, ``retrieve`` or ``invoke``
method (tried in that order). Its hits are read by
:func:`~ragtune.external.hits.to_hit` and matched to the corpus by
:class:`~ragtune.evaluate.match.HitMatcher` (the matcher of run files too).

A retriever that searches several times per question (an agent calling a search tool) returns its searches
instead of hits: a list whose every item is a ``(query, hits)`` pair or a mapping with ``query`` and ``hits``
(:func:`as_searches`). Each search is matched as hits are, and the question's ranking is
:meth:`Ranking.from_searches <ragtune.types.Ranking.from_searches>` of them: what reached the model, in order,
repeats dropped, with each search kept for the per-search figures.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import Any

from ..corpus.corpus import Corpus
from ..errors import ConfigError, ParameterError, RagtuneError
from ..evaluate.evaluate import DEFAULT_KS, EvalResult
from ..golden import GoldenSet
from ..progress import progress_iter
from ..evaluate.match import HitMatcher, hits_to_ranking, score_matched, searches_to_ranking
from ..types import Ranking

__all__ = ["evaluate_retriever", "ExternalRetriever", "as_fetch", "as_searches", "hits_to_ranking", "to_ranking"]

METHOD_NAMES = ("search", "retrieve", "invoke")


def _takes_k(fn: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.name == "k" for p in params)


def as_fetch(retriever: Any) -> tuple[Callable[[str, int], Any], str]:
    """``(fetch(query, k) -> raw hits or an awaitable of them, name)`` for any supported retriever."""
    target, method = None, None
    if not callable(retriever) or any(callable(getattr(retriever, m, None)) for m in METHOD_NAMES):
        method = next((m for m in METHOD_NAMES if callable(getattr(retriever, m, None))), None)
        target = getattr(retriever, method) if method else None
    fn = target or (retriever if callable(retriever) else None)
    if fn is None:
        raise ConfigError(f"cannot call a {type(retriever).__name__} to retrieve: pass a callable (query, k) -> hits, "
                          f"or an object with a {', '.join(METHOD_NAMES)} method")
    name = getattr(retriever, "name", None) or getattr(retriever, "__name__", None) or type(retriever).__name__
    if method != "invoke" and _takes_k(fn):  # a runnable's invoke(input, config) takes no count
        return (lambda query, k: fn(query, k)), str(name)
    return (lambda query, k: fn(query)), str(name)


def _search_of(item: Any) -> tuple[str, Any] | None:
    if isinstance(item, Mapping):
        hits = item.get("hits")
        if "query" in item and hits is not None and not isinstance(hits, (str, bytes, Mapping)) \
                and hasattr(hits, "__iter__"):
            return str(item["query"] if item["query"] is not None else ""), hits
        return None
    if isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str) \
            and isinstance(item[1], (list, tuple)):
        return item[0], item[1]
    return None


def as_searches(raw: Any) -> list[tuple[str, Any]] | None:
    """``raw`` as a list of searches ``(query, hits)`` when it is one (a non-empty list whose every item is a
    ``(query, hits)`` pair or a mapping with ``query`` and ``hits``), else None (a plain list of hits)."""
    if not isinstance(raw, (list, tuple)) or not raw:
        return None
    out = [_search_of(item) for item in raw]
    return None if any(s is None for s in out) else out  # type: ignore[return-value]


def to_ranking(question: str, raw: Any, k: int, matcher: HitMatcher, *, qid: str = "", field: str | None = None,
               seconds: float | None = None) -> Ranking:
    """What a retriever returned for ``question`` as a :class:`Ranking`: its hits matched (at most ``k``), or, for a
    list of searches (:func:`as_searches`), each search matched and the searches merged by
    :meth:`Ranking.from_searches` (``seconds``, the whole call, is the ranking's time)."""
    searches = as_searches(raw)
    if searches is None:
        return hits_to_ranking(question, raw, k, matcher, question=qid or question, field=field, seconds=seconds)
    return searches_to_ranking(question, searches, k, matcher, qid=qid, field=field, seconds=seconds)


def _raw_hits(raw: Any) -> list[Any]:
    """The hits of what a retriever returned (every search's, for a list of searches), for the site rule's detection."""
    if not isinstance(raw, list):
        return []
    searches = as_searches(raw)
    return raw if searches is None else [h for _, hits in searches for h in hits]


class ExternalRetriever:
    """An outside retriever behind ragtune's ``search(query, k, filters) -> Ranking`` protocol.

    Filters are passed on only to a retriever whose method takes ``filters``;
    otherwise a filter is a :class:`ConfigError` (it would be silently ignored).
    """

    def __init__(self, retriever: Any, corpus: Corpus | None, *, matcher: HitMatcher | None = None,
                 field: str | None = None, name: str | None = None):
        self._fetch, default_name = as_fetch(retriever)
        self._target = retriever
        self.name = name or default_name
        self.matcher = matcher or HitMatcher(corpus)
        self.field = field

    def search(self, query: str, k: int = 10, filters: Any = None, *, question: str = "") -> Ranking:
        if filters is not None:
            raise ParameterError(": filters are not passed to outside retrievers; filter inside the retriever, or "
                                 "drop {}", "filters", prefix=str(self.name))
        t0 = time.perf_counter()
        raw = self._fetch(query, k)
        if inspect.isawaitable(raw):
            raw = asyncio.run(_await(raw))
        return to_ranking(query, raw, k, self.matcher, qid=question or query, field=self.field,
                          seconds=time.perf_counter() - t0)


async def _await(x: Any) -> Any:
    return await x


def _is_async(retriever: Any) -> bool:
    fn = next((getattr(retriever, m) for m in METHOD_NAMES if callable(getattr(retriever, m, None))), retriever)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def evaluate_retriever(
    retriever: Any,
    golden: GoldenSet,
    *,
    corpus: Corpus | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    depth: int = 100,
    concurrency: int = 1,
    field: str | None = None,
    base_url: str | None = None,
    path_prefix: str | None = None,
    fuzzy: bool = True,
    min_similarity: float = 0.6,
    anchor_span: str = "own",
    doc_hits: str = "credit",
    site: str = "auto",
    name: str | None = None,
    config: Mapping[str, Any] | None = None,
    show_progress: bool = False,
    deadline: float | None = None,
    fail_fast: bool = False,
) -> EvalResult:
    """Evaluate a retriever ragtune did not build, on ``golden``, with ragtune's metrics.

    ``retriever``: a callable ``(query, k) -> hits`` (or ``(query) -> hits``), sync or
    async, or an object with ``search``/``retrieve``/``invoke``; one that searched several times returns its
    searches instead, a list of ``(query, hits)`` pairs or ``{"query": ..., "hits": [...]}`` mappings in the
    order made (scored as one ranking, :meth:`Ranking.from_searches`, with per-search figures in
    ``result.searches``). A hit is an identifier
    string, a dict or an object (see :mod:`ragtune.external.hits`); ``field`` names the
    one field that identifies hits. ``corpus`` lets document ids, paths, URLs and text
    match the golden anchors they cover; without it an identifier must equal a golden
    anchor. ``depth`` hits are asked for per question; ``concurrency`` questions run at
    once (threads for a sync retriever, tasks for an async one). Each question's call
    is timed (``latency_ms`` p50/p95); ``result.matching`` says how hits matched, lists the
    ones that did not, and what hits naming a whole page contributed. ``anchor_span`` and
    ``doc_hits``: what anchor and whole-document hits cover; ``site``: the generator whose URL and heading-id
    rules URL hits follow (``auto``: detected from all the hits before any is matched; :mod:`ragtune.evaluate.match`).

    A question whose call fails (an error, an unreadable answer) is reported, not fatal: it scores as
    retrieving nothing and is listed in ``result.config["failed"]`` (``count`` and, for up to 200,
    ``questions``: id and error). ``fail_fast`` stops at the first failure instead; a rejected key (HTTP
    401/403) always stops, and so does a failure of every question (nothing was measured). ``deadline``
    (seconds) bounds the whole run: questions still unanswered then are failed the same way (a running call
    to a Python retriever is abandoned, not interrupted).
    """
    from ..evaluate.evaluate import NDCG_K, _check_ks

    ks = _check_ks(ks)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency must be an integer >= 1, got {concurrency!r}")
    depth = max(int(depth), ks[-1], NDCG_K)
    matcher = HitMatcher(corpus, base_url=base_url, path_prefix=path_prefix, fuzzy=fuzzy,
                         min_similarity=min_similarity, anchor_span=anchor_span, doc_hits=doc_hits, site=site)
    if deadline is not None and not deadline > 0:
        raise ConfigError(f"deadline must be > 0 seconds, got {deadline!r}")
    fetch, default_name = as_fetch(retriever)
    items = list(golden.items)
    end = time.monotonic() + deadline if deadline is not None else None
    raw, failed = _fetch_all(fetch, items, depth, concurrency, asynchronous=_is_async(retriever),
                             show_progress=show_progress, end=end, fail_fast=fail_fast)
    listed = {item.id: _as_list(raw[item.id][0]) for item in items if item.id not in failed}
    matcher.detect_raw(h for hits in listed.values() for h in _raw_hits(hits)[:depth])
    rankings = {}
    for item in items:
        if item.id in failed:
            continue
        hits, seconds = listed[item.id], raw[item.id][1]
        try:
            rankings[item.id] = to_ranking(item.q, hits, depth, matcher, qid=item.id, field=field, seconds=seconds)
        except RagtuneError as e:
            if fail_fast:
                raise
            failed[item.id] = e
    if items and len(failed) == len(items) and not all(getattr(e, "late", False) for e in failed.values()):
        raise next(e for e in failed.values() if not getattr(e, "late", False))  # nothing measured: say why
    cfg = {"retriever": name or default_name, "external": True, "golden": golden.source, **(dict(config or {}))}
    if deadline is not None:
        cfg["deadline_s"] = deadline
    cfg["failed"] = {"count": len(failed), "questions": [{"question": i.id, "error": str(failed[i.id])}
                                                         for i in items if i.id in failed][:MAX_LISTED]}
    return score_matched(rankings, golden, matcher, ks=ks, config=cfg)


MAX_LISTED = 200  # failed questions listed in the result (all are counted)


def _as_list(hits: Any) -> Any:
    """A retriever's hits as a list, read once (a generator too), for the site rule's detection and the matching;
    anything that is not a list of hits is left as it is, for the matching to report."""
    if hits is None or isinstance(hits, (str, bytes, Mapping)) or not hasattr(hits, "__iter__"):
        return hits
    return list(hits)


def _late(item) -> ConfigError:
    """The failure of a question the run's deadline left unanswered (marked ``late``)."""
    err = ConfigError(f"question {item.id!r}: no answer before the run's deadline")
    err.late = True  # type: ignore[attr-defined]
    return err


def _failure(item, e: Exception) -> RagtuneError:
    if isinstance(e, RagtuneError):
        return e
    err = ConfigError(f"the retriever failed on question {item.id!r}: {type(e).__name__}: {e}")
    err.__cause__ = e
    return err


def _fatal(e: BaseException) -> bool:
    """A failure every later question would repeat: a rejected key."""
    return getattr(e, "status", None) in (401, 403)


def _fetch_all(fetch: Callable[[str, int], Any], items: list, depth: int, concurrency: int, *, asynchronous: bool,
               show_progress: bool, end: float | None = None,
               fail_fast: bool = False) -> tuple[dict[str, tuple[Any, float]], dict[str, RagtuneError]]:
    """Every question's raw hits and the seconds its call took, running ``concurrency`` at once, and the
    questions that failed (id -> error; raised instead with ``fail_fast``, or when fatal)."""
    if asynchronous:
        return asyncio.run(_fetch_async(fetch, items, depth, concurrency, end=end, fail_fast=fail_fast))
    lock = threading.Lock()
    out: dict[str, tuple[Any, float]] = {}
    failed: dict[str, RagtuneError] = {}

    def one(item) -> None:
        t0 = time.perf_counter()
        try:
            if end is not None and time.monotonic() >= end:
                raise _late(item)
            hits = fetch(item.q, depth)
            if inspect.isawaitable(hits):
                hits = asyncio.run(_await(hits))
        except Exception as e:
            err = _failure(item, e)
            if fail_fast or _fatal(err):
                raise err from (None if err is e else e)
            with lock:
                failed.setdefault(item.id, err)
            return
        with lock:
            if item.id not in failed:
                out[item.id] = (hits, time.perf_counter() - t0)

    if concurrency == 1:
        for item in progress_iter(items, "retrieving", enabled=show_progress):
            one(item)
        return out, failed
    pool = ThreadPoolExecutor(concurrency)
    futures = {pool.submit(one, item): item for item in items}
    try:
        left = None if end is None else max(0.0, end - time.monotonic())
        for f in progress_iter(as_completed(futures, timeout=left), "retrieving", enabled=show_progress,
                               total=len(futures)):
            f.result()
    except FuturesTimeout:
        pass
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # a call still running past the deadline is abandoned
    with lock:
        for item in futures.values():
            if item.id not in out and item.id not in failed:
                failed[item.id] = _late(item)
        return dict(out), dict(failed)


async def _fetch_async(fetch: Callable[[str, int], Any], items: list, depth: int, concurrency: int, *,
                       end: float | None = None,
                       fail_fast: bool = False) -> tuple[dict[str, tuple[Any, float]], dict[str, RagtuneError]]:
    gate = asyncio.Semaphore(concurrency)
    out: dict[str, tuple[Any, float]] = {}
    failed: dict[str, RagtuneError] = {}

    async def one(item) -> None:
        async with gate:
            t0 = time.perf_counter()
            try:
                hits = fetch(item.q, depth)
                if inspect.isawaitable(hits):
                    hits = await hits
            except Exception as e:
                err = _failure(item, e)
                if fail_fast or _fatal(err):
                    raise err from (None if err is e else e)
                failed[item.id] = err
                return
            out[item.id] = (hits, time.perf_counter() - t0)

    tasks = [asyncio.ensure_future(one(i)) for i in items]
    left = None if end is None else max(0.0, end - time.monotonic())
    done, pending = await asyncio.wait(tasks, timeout=left, return_when=asyncio.FIRST_EXCEPTION) if tasks \
        else (set(), set())
    for t in pending:
        t.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    for t in done:
        if not t.cancelled() and t.exception() is not None:
            raise t.exception()  # type: ignore[misc]
    for item in items:
        if item.id not in out and item.id not in failed:
            failed[item.id] = _late(item)
    return out, failed
