"""An outside retriever's rankings, scored like ragtune's own: a search service over HTTP (``endpoint``) or a run
file (``run``). Takes typed values; the command line (``ragtune eval --endpoint/--run``) turns its flags into them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from ..config import Opt
from ..errors import ConfigError, ParameterError
from ..evaluate.evaluate import EvalResult
from ..evaluate.match import MatchOptions

__all__ = ["EndpointOptions", "evaluate_outside", "parse_header"]


def parse_header(spec: str) -> tuple[str, str]:
    """``"X-API-Key=SEARCH_KEY"`` -> ``("X-API-Key", "SEARCH_KEY")``: a header's name and the environment variable
    holding its value (an entry of :attr:`EndpointOptions.headers`)."""
    name, sep, env = spec.partition("=")
    if not sep or not name.strip() or not env.strip() or not env.strip().replace("_", "").isalnum():
        raise ConfigError(f"expected NAME=ENVVAR (the value is read from the environment variable, never written "
                          f"on the command line), got {spec.split('=')[0]!r}=...")
    return name.strip(), env.strip()


@dataclass(frozen=True)
class EndpointOptions:
    """How a search service is called (:class:`ragtune.external.http.HTTPRetriever`) and how long the run may take.
    ``headers``: header name -> the environment variable holding its value (values are never printed)."""

    body: Annotated[str | None, Opt('request body template, default {"query": "{query}", "k": "{k}"}',
                                    metavar="JSON")] = None
    http_method: Annotated[Literal["GET", "POST"] | None, Opt("default: GET when the URL holds {query}, "
                                                              "else POST")] = None
    hits_path: Annotated[str, Opt("where the hit list is in the answer", metavar="JMESPATH")] = "hits"
    hit_field: Annotated[str | None, Opt("what identifies a hit (default: its anchor/id/path/url/text fields)",
                                         metavar="JMESPATH")] = None
    searches_path: Annotated[str | None, Opt("where the list of searches is in the answer, for a service that "
                                             "searched several times per question (each search's query at 'query', "
                                             "its hits at the hits path)", metavar="JMESPATH")] = None
    headers: Mapping[str, str] = field(default_factory=dict)
    concurrency: Annotated[int, Opt("questions in flight at once", lo=1, hi=256)] = 1
    timeout: Annotated[float, Opt("seconds per request attempt, wall clock (connect, headers and body)",
                                  lo=1e-3, hi=1e6)] = 30.0
    retries: Annotated[int, Opt("retries on 429/5xx/timeouts (each question gives up after 2 x timeout + 10 s)",
                                lo=0, hi=20)] = 3
    deadline: Annotated[float | None, Opt("seconds for the whole evaluation; questions not answered by then are "
                                          "reported as failed", lo=1e-3, hi=1e7, metavar="SECONDS")] = None
    fail_fast: Annotated[bool, Opt("stop at the first question that fails (default: report failed questions, "
                                   "score them as retrieving nothing, go on)")] = False
    max_response_mb: Annotated[float, Opt("largest endpoint answer read, in MiB", lo=1e-3, hi=1e5)] = 32.0

    def evaluate_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`ragtune.external.http.evaluate_endpoint` these options are."""
        return {"body": self.body, "method": self.http_method, "hits_path": self.hits_path,
                "hit_field": self.hit_field, "searches_path": self.searches_path, "headers": dict(self.headers), "timeout": self.timeout,
                "retries": self.retries, "concurrency": self.concurrency, "run_deadline": self.deadline,
                "fail_fast": self.fail_fast, "max_bytes": max(1, int(self.max_response_mb * 2 ** 20))}


def evaluate_outside(
    golden: str, *,
    endpoint: Annotated[str | None, Opt("evaluate a search service over HTTP instead of a ragtune pipeline",
                                        metavar="URL")] = None,
    run: Annotated[str | None, Opt("score a run file: TREC (qid Q0 doc rank score tag), ragtune JSON or JSONL, a "
                                   "JSONL trace or OpenInference spans (OTLP JSON)",
                                   metavar="FILE")] = None,
    split: str | None = None, corpus: Any = None, ks: Sequence[int] = (5, 10, 20), depth: int = 100,
    filters: Sequence[str] = (), labels: str = "human", request: EndpointOptions = EndpointOptions(),
    match: MatchOptions = MatchOptions(),
) -> EvalResult:
    """The evaluation of an outside retriever, ``endpoint`` (a search service, called as ``request`` says) or
    ``run`` (a run file), on ``golden`` (a golden set, BEIR folder with ``split``, or TREC qrels), hits matched as
    ``match`` says (``result.matching`` reports how). ``corpus``: a path or a :class:`~ragtune.Corpus`; ``filters``:
    filter expressions the endpoint receives, ANDed. ``labels`` as for :func:`ragtune.load_golden`: ``human`` leaves
    LLM-only labels out, ``all`` scores them."""
    from ..corpus import Corpus, load_corpus
    from .files import evaluate_run_file, load_golden_or_qrels
    from .http import evaluate_endpoint

    if endpoint and run:
        raise ParameterError("give {} or {}, not both", "endpoint", "run")
    if not endpoint and not run:
        raise ParameterError("give {} (a search service's URL) or {} (a run file)", "endpoint", "run")
    if filters and run:
        raise ParameterError("{} cannot apply to a run file; filter when you make the run", "filters")
    flt = (filters[0] if len(filters) == 1 else " and ".join(f"({f})" for f in filters)) if filters else None
    docs = corpus if corpus is None or isinstance(corpus, Corpus) else load_corpus(corpus)
    gold = load_golden_or_qrels(golden, split=split, labels=labels)
    m = {"base_url": match.base_url, "path_prefix": match.path_prefix, "fuzzy": match.fuzzy,
         "anchor_span": match.anchor_span, "doc_hits": match.doc_hits, "site": match.site}
    if run:
        result = evaluate_run_file(run, gold, corpus=docs, ks=ks, **m)
    else:
        if any(not i.q.strip() for i in gold):
            raise ConfigError(f"{golden}: questions without text (qrels?) cannot be sent to an endpoint; use a "
                              "golden set with questions")
        result = evaluate_endpoint(endpoint, gold, corpus=docs, ks=ks, depth=depth, filters=flt,
                                   show_progress=True, **m, **request.evaluate_kwargs())
    return result

