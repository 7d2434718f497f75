"""``ragtune eval --endpoint/--run``: an outside retriever's rankings, scored like ragtune's own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from ..errors import ConfigError
from ..evaluate.evaluate import EvalResult
from ..evaluate.match import AnchorSpanOpt, BaseUrl, DocHitsOpt, Fuzzy, PathPrefix, SiteOpt
from ..config import Opt

__all__ = ["evaluate_outside", "parse_headers"]


def parse_headers(specs: list[str]) -> dict[str, str]:
    """``["X-API-Key=SEARCH_KEY"]`` -> ``{"X-API-Key": "SEARCH_KEY"}`` (header name -> environment variable)."""
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, env = spec.partition("=")
        if not sep or not name.strip() or not env.strip() or not env.strip().replace("_", "").isalnum():
            raise ConfigError(f"--header takes NAME=ENVVAR (the value is read from the environment variable, never "
                              f"written on the command line), got {spec.split('=')[0]!r}=...")
        out[name.strip()] = env.strip()
    return out


def evaluate_outside(
    golden: str, *, split: str | None = None, corpus: str | None = None, ks: Sequence[int] = (5, 10, 20),
    depth: int = 100, filters: Sequence[str] = (), pipeline: Sequence[str] = (), labels: str = "human",
    endpoint: Annotated[str | None, Opt("evaluate a search service over HTTP instead of a ragtune pipeline",
                                        metavar="URL")] = None,
    run: Annotated[str | None, Opt("score a run file: TREC (qid Q0 doc rank score tag), ragtune JSON or JSONL",
                                   metavar="FILE")] = None,
    body: Annotated[str | None, Opt('request body template, default {"query": "{query}", "k": "{k}"}',
                                    metavar="JSON")] = None,
    http_method: Annotated[Literal["GET", "POST"] | None, Opt("default: GET when the URL holds {query}, "
                                                              "else POST")] = None,
    hits_path: Annotated[str, Opt("where the hit list is in the answer", metavar="JMESPATH")] = "hits",
    hit_field: Annotated[str | None, Opt("what identifies a hit (default: its anchor/id/path/url/text fields)",
                                         metavar="JMESPATH")] = None,
    header: Annotated[tuple[str, ...], Opt("send header NAME with the value of environment variable ENVVAR "
                                           "(repeatable; never printed)", metavar="NAME=ENVVAR")] = (),
    concurrency: Annotated[int, Opt("questions in flight at once", lo=1, hi=256)] = 1,
    timeout: Annotated[float, Opt("seconds per request attempt, wall clock (connect, headers and body)",
                                  lo=1e-3, hi=1e6)] = 30.0,
    retries: Annotated[int, Opt("retries on 429/5xx/timeouts (each question gives up after 2 x timeout + 10 s)",
                                lo=0, hi=20)] = 3,
    deadline: Annotated[float | None, Opt("seconds for the whole evaluation; questions not answered by then are "
                                          "reported as failed", lo=1e-3, hi=1e7, metavar="SECONDS")] = None,
    fail_fast: Annotated[bool, Opt("stop at the first question that fails (default: report failed questions, "
                                   "score them as retrieving nothing, go on)")] = False,
    max_response_mb: Annotated[float, Opt("largest endpoint answer read, in MiB", lo=1e-3, hi=1e5)] = 32.0,
    base_url: BaseUrl = None,
    path_prefix: PathPrefix = None,
    fuzzy: Fuzzy = True,
    anchor_span: AnchorSpanOpt = "own",
    doc_hits: DocHitsOpt = "credit",
    site: SiteOpt = "auto",
) -> tuple[EvalResult, str]:
    """The evaluation of an outside retriever, ``endpoint`` (a search service) or ``run`` (a run file), on
    ``golden`` (a golden set, BEIR folder with ``split``, or TREC qrels), and a summary of how hits matched.
    ``pipeline`` names ragtune pipeline options that were also given: refused, since the retriever is outside.
    ``labels`` as for :func:`ragtune.load_golden`: ``human`` leaves LLM-only labels out, ``all`` scores them."""
    from ..corpus import load_corpus
    from .files import evaluate_run_file, load_golden_or_qrels
    from .http import evaluate_endpoint

    if pipeline:
        raise ConfigError(f"{', '.join(pipeline)} configure a ragtune pipeline; with endpoint or run the retriever is "
                          "outside ragtune (drop them)")
    if bool(endpoint) == bool(run):
        raise ConfigError("pass --endpoint or --run, not both" if endpoint else "pass --endpoint URL or --run FILE")
    docs = load_corpus(corpus) if corpus else None
    gold = load_golden_or_qrels(golden, split=split, labels=labels)
    if filters and run:
        raise ConfigError("--filter cannot apply to a run file; filter when you make the run")
    flt = (filters[0] if len(filters) == 1 else " and ".join(f"({f})" for f in filters)) if filters else None
    if run:
        result = evaluate_run_file(run, gold, corpus=docs, ks=ks, base_url=base_url, path_prefix=path_prefix,
                                   fuzzy=fuzzy, anchor_span=anchor_span, doc_hits=doc_hits, site=site)
    else:
        if any(not i.q.strip() for i in gold):
            raise ConfigError(f"{golden}: questions without text (qrels?) cannot be sent to an endpoint; use a "
                              "golden set with questions")
        result = evaluate_endpoint(endpoint, gold, corpus=docs, ks=ks, depth=depth, concurrency=concurrency,
                                   base_url=base_url, path_prefix=path_prefix, fuzzy=fuzzy, anchor_span=anchor_span,
                                   doc_hits=doc_hits, site=site, body=body,
                                   method=http_method, hits_path=hits_path, hit_field=hit_field,
                                   headers=parse_headers(list(header)), timeout=timeout, retries=retries, filters=flt,
                                   show_progress=True, run_deadline=deadline, fail_fast=fail_fast,
                                   max_bytes=max(1, int(max_response_mb * 2 ** 20)))
    return result, _summary(result)


def _summary(result: EvalResult) -> str:
    from ..evaluate.match import MatchReport

    m = result.matching
    lines = [MatchReport.from_dict(m).summary()] if m else []
    skipped = m.get("questions_not_in_golden") if m else None
    if skipped:
        lines.append(f"skipped {len(skipped)} question(s) of the run that the golden set lacks: "
                     f"{', '.join(skipped[:5])}{' ...' if len(skipped) > 5 else ''}")
    failed = result.config.get("failed") or {}
    if failed.get("count"):
        lines.append(f"FAILED {failed['count']} of {len(result.questions)} question(s), scored as retrieving "
                     "nothing (--fail-fast stops at the first):")
        for f in failed.get("questions", [])[:5]:
            lines.append(f"  {f['question']}: {f['error'][:300]}")
        if failed["count"] > 5:
            lines.append(f"  ... and {failed['count'] - 5} more (up to 200 listed with --json)")
    http = result.config.get("http")
    if http:
        lines.append(f"HTTP requests {http['requests']}, retries {http['retries']}")
    return "\n".join(lines)
