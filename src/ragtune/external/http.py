"""A search service behind HTTP as a retriever: :class:`HTTPRetriever` and :func:`evaluate_endpoint`.

The request is a template: a JSON body (POST) or a URL with a query string
(GET), where ``{query}``, ``{k}`` and ``{filters}`` are filled in per question.
In a JSON body a string that is exactly a placeholder becomes the typed value
(``"{k}"`` -> ``10``, ``"{filters}"`` -> ``null`` when there are none); inside
a longer string or a URL it is text (URL-encoded in a URL). The hit list is
found in the answer by a JMESPath expression (``hits``, ``data.results``,
``response.docs``), and each hit is identified by its fields (see
:mod:`ragtune.external.hits`) or by a second JMESPath expression. A service that searched several times per
question (an agent) gives its searches: ``searches_path`` is the JMESPath to the list of searches, each an object
whose ``query`` is the search's query and in which ``hits_path`` finds its hits.

Headers come from environment variables (``{"X-API-Key": "SEARCH_KEY"}``) and
are never printed. Requests retry with backoff on 429, 5xx, timeouts and
connection errors, within a wall-clock ``timeout`` per attempt and a ``deadline``
per question; answers are read up to ``max_bytes``; redirects are followed only
within the endpoint's origin (:class:`ragtune.http.JSONClient`). URLs are shown
and recorded through :func:`ragtune.http.redact_url`.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import APIError, ConfigError, MissingDependencyError, ParameterError
from ..evaluate.evaluate import DEFAULT_KS, EvalResult
from ..golden import GoldenSet
from ..http import DEFAULT_MAX_BYTES, JSONClient, redact_url
from .hits import ExternalHit, to_hit

__all__ = ["HTTPRetriever", "evaluate_endpoint", "DEFAULT_BODY"]

DEFAULT_BODY = '{"query": "{query}", "k": "{k}"}'
PLACEHOLDERS = ("{query}", "{k}", "{filters}")


def _jmespath():
    try:
        import jmespath
    except ImportError:
        raise MissingDependencyError("reading hits from an HTTP answer needs JMESPath: pip install 'ragtune[external]'") \
            from None
    return jmespath


def _compile(expr: str, what: str):
    jp = _jmespath()
    try:
        return jp.compile(expr)
    except jp.exceptions.JMESPathError as e:
        raise ConfigError(f"{what} {expr!r} is not a valid JMESPath expression ({str(e).splitlines()[0]}); e.g. "
                          "'hits' or 'data.results'") from None


def _fill(node: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(node, str):
        if node in values:
            return values[node]
        for ph, v in values.items():
            if ph in node:
                node = node.replace(ph, "" if v is None else str(v))
        return node
    if isinstance(node, list):
        return [_fill(v, values) for v in node]
    if isinstance(node, dict):
        return {k: _fill(v, values) for k, v in node.items()}
    return node


class HTTPRetriever:
    """``(query, k) -> hits`` over an HTTP search endpoint.

    ``url``: the endpoint; with ``{query}`` in it and no ``body`` it is fetched with GET.
    ``body``: a JSON template (a string or a dict), default ``{"query": "{query}", "k": "{k}"}``.
    ``hits_path``: JMESPath to the hit list in the answer; ``hit_field``: JMESPath to what
    identifies one hit (default: read its anchor/id/url/text fields). ``searches_path``: JMESPath to the list of
    searches, when the service searched more than once (each search's hits are then at ``hits_path`` inside it,
    and its query at ``query``); the call returns ``[{"query": ..., "hits": [...]}, ...]``. ``headers``: header
    name -> environment variable holding its value. ``filters`` fills ``{filters}``.
    ``timeout``: wall-clock seconds of one attempt; ``deadline``: seconds for one question, retries included
    (default ``2 * timeout + max_wait``); ``until``: a :func:`time.monotonic` instant no request may pass (the
    run's deadline); ``max_bytes``: the largest answer read.
    """

    def __init__(self, url: str, *, body: str | Mapping[str, Any] | None = None, method: str | None = None,
                 hits_path: str = "hits", hit_field: str | None = None, headers: Mapping[str, str] | None = None,
                 timeout: float = 30.0, retries: int = 3, backoff: float = 0.5, filters: str | None = None,
                 deadline: float | None = None, max_wait: float = 10.0, max_bytes: int = DEFAULT_MAX_BYTES,
                 until: float | None = None, searches_path: str | None = None):
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"endpoint must be an http:// or https:// URL, got {redact_url(url)!r}")
        if timeout <= 0 or retries < 0:
            raise ConfigError(f"timeout must be > 0 and retries >= 0, got {timeout!r} and {retries!r}")
        if (deadline is not None and deadline <= 0) or max_wait < 0 or max_bytes < 1:
            raise ConfigError(f"deadline must be > 0, max_wait >= 0 and max_bytes >= 1, got {deadline!r}, "
                              f"{max_wait!r} and {max_bytes!r}")
        get = body is None and "{query}" in url
        self.method = (method or ("GET" if get else "POST")).upper()
        if self.method not in ("GET", "POST"):
            raise ConfigError(f"method must be GET or POST, got {method!r}")
        if self.method == "GET" and "{query}" not in url:
            raise ConfigError(f"a GET endpoint needs {{query}} in its URL (e.g. {redact_url(url)}?q={{query}}&k={{k}})")
        self.body: Any = None
        if self.method == "POST":
            template = DEFAULT_BODY if body is None else body
            if isinstance(template, str):
                try:
                    template = json.loads(template)
                except ValueError as e:
                    raise ConfigError(f"request body template is not JSON ({e}); write it like {DEFAULT_BODY}") from None
            if "{query}" not in json.dumps(template):
                raise ConfigError(f"request body template has no {{query}}; write it like {DEFAULT_BODY}")
            self.body = template
        self.url = url
        self.name = urllib.parse.urlsplit(url).netloc.rpartition("@")[2] or redact_url(url)  # no userinfo
        self._hits = _compile(hits_path, "hits path")
        self.hits_path = hits_path
        self._searches = _compile(searches_path, "searches path") if searches_path else None
        self.searches_path = searches_path
        self._field = _compile(hit_field, "hit field") if hit_field else None
        self.hit_field = hit_field
        self.filters = filters
        self._header_env = dict(headers or {})
        self.timeout, self.retries, self.backoff = float(timeout), int(retries), float(backoff)
        self.deadline, self.max_wait, self.max_bytes = deadline, float(max_wait), int(max_bytes)
        self.until = until
        self._lock = threading.Lock()
        self.requests = 0
        self.retried = 0

    def _headers(self) -> dict[str, str]:
        out = {}
        for name, env in self._header_env.items():
            value = os.environ.get(env)
            if not value:
                raise ConfigError(f"header {name}: environment variable {env} is not set; export it before running")
            out[name] = value
        return out

    def __call__(self, query: str, k: int) -> list[Any]:
        values = {"{query}": query, "{k}": int(k), "{filters}": self.filters}
        deadline = self.deadline if self.deadline is not None else 2 * self.timeout + self.max_wait
        if self.until is not None:
            left = self.until - time.monotonic()
            if left <= 0:
                raise APIError(f"{redact_url(self.url)}: not asked, the run's deadline had passed")
            deadline = min(deadline, left)
        client = JSONClient(self.url, api_key_env=", ".join(self._header_env.values()) or "the header's variable",
                            timeout=min(self.timeout, deadline), max_retries=self.retries, backoff=self.backoff,
                            headers=self._headers(), deadline=deadline, max_wait=self.max_wait,
                            max_bytes=self.max_bytes, kind="a JSON search service")
        try:
            if self.method == "GET":
                quoted = {ph: urllib.parse.quote("" if v is None else str(v), safe="") for ph, v in values.items()}
                url = self.url
                for ph, v in quoted.items():
                    url = url.replace(ph, v)
                client.base_url = url
                answer = client.post("", None, method="GET", any_json=True)
            else:
                answer = client.post("", _fill(self.body, values), any_json=True)
        finally:  # a failed question's requests count too
            with self._lock:
                self.requests += client.requests
                self.retried += client.retries
        if self._searches is None:
            return self._hit_list(answer, "the answer")
        searches = self._searches.search(answer)
        if not isinstance(searches, list):
            keys = ", ".join(answer) if isinstance(answer, dict) else type(answer).__name__
            raise ParameterError("; pass the JMESPath to the list of searches ({})", "searches_path",
                                 prefix=f"{redact_url(self.url)}: the searches path {self.searches_path!r} gives "
                                        f"{type(searches).__name__ if searches is not None else 'nothing'}, not a "
                                        f"list of searches (top-level keys: {keys})")
        out = []
        for n, one in enumerate(searches, start=1):
            if not isinstance(one, dict):
                raise ConfigError(f"{redact_url(self.url)}: search {n} at {self.searches_path!r} is a "
                                  f"{type(one).__name__}, not an object with a query and hits")
            query = one.get("query")
            out.append({"query": "" if query is None else str(query), "hits": self._hit_list(one, f"search {n}")})
        return out

    def _hit_list(self, node: Any, what: str) -> list[Any]:
        """The hits ``hits_path`` finds in ``node`` (the answer, or one search of it), identified by ``hit_field``."""
        hits = self._hits.search(node)
        if hits is None:
            keys = ", ".join(node) if isinstance(node, dict) else type(node).__name__
            raise ParameterError("; pass the JMESPath to the hit list ({})", "hits_path",
                                 prefix=f"{redact_url(self.url)}: the hits path {self.hits_path!r} finds nothing in "
                                        f"{what} (top-level keys: {keys})")
        if not isinstance(hits, list):
            raise ConfigError(f"{redact_url(self.url)}: the hits path {self.hits_path!r} gives a "
                              f"{type(hits).__name__}, not a list of hits")
        if self._field is None:
            return hits
        return [self._identify(h, i) for i, h in enumerate(hits, start=1)]

    def _identify(self, hit: Any, rank: int) -> ExternalHit:
        value = self._field.search(hit)  # type: ignore[union-attr]
        if value is None or value == "":
            raise ParameterError("; pass the JMESPath to the field that identifies a hit ({})", "hit_field",
                                 prefix=f"{redact_url(self.url)}: hit {rank} has nothing at {self.hit_field!r}")
        if isinstance(value, (dict, list)):
            return to_hit(value, where=f"hit {rank}")
        base = to_hit(hit, where=f"hit {rank}") if isinstance(hit, dict) and _has_any(hit) else ExternalHit()
        return ExternalHit(str(value), base.text, base.score)


def _has_any(hit: Mapping[str, Any]) -> bool:
    try:
        to_hit(hit)
        return True
    except ConfigError:
        return False


def evaluate_endpoint(url: str, golden: GoldenSet, *, corpus: Any = None, ks: Sequence[int] = DEFAULT_KS,
                      depth: int = 100, concurrency: int = 1, base_url: str | None = None,
                      path_prefix: str | None = None, fuzzy: bool = True, anchor_span: str = "own",
                      doc_hits: str = "credit", site: str = "auto", show_progress: bool = False, run_deadline: float | None = None, fail_fast: bool = False,
                      **http_options: Any) -> EvalResult:
    """Evaluate the search endpoint at ``url`` on ``golden`` (options: :class:`HTTPRetriever`, :func:`evaluate_retriever`).

    ``run_deadline``: seconds for the whole evaluation (no request outlives it; questions not answered by then
    are reported as failed). A question whose request fails is reported and scored as retrieving nothing,
    unless ``fail_fast`` (see :func:`evaluate_retriever`). The result's config records the endpoint (credentials
    in the URL redacted), the request counts and retries; headers never appear.
    """
    from .adapter import evaluate_retriever

    if run_deadline is not None and not run_deadline > 0:
        raise ConfigError(f"the run's deadline must be > 0 seconds, got {run_deadline!r}")
    retriever = HTTPRetriever(url, **http_options)
    retriever._headers()  # a header's variable that is not set fails before any question is sent
    if run_deadline is not None:
        retriever.until = time.monotonic() + run_deadline
    result = evaluate_retriever(retriever, golden, corpus=corpus, ks=ks, depth=depth, concurrency=concurrency,
                                base_url=base_url, path_prefix=path_prefix, fuzzy=fuzzy, anchor_span=anchor_span,
                                doc_hits=doc_hits, site=site, name=retriever.name,
                                config={"endpoint": redact_url(url), "method": retriever.method,
                                        "hits_path": retriever.hits_path,
                                        **({"searches_path": retriever.searches_path} if retriever.searches_path
                                           else {})},
                                show_progress=show_progress, deadline=run_deadline, fail_fast=fail_fast)
    result.config["http"] = {"requests": retriever.requests, "retries": retriever.retried}  # type: ignore[index]
    return result
