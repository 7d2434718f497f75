"""What ``ragtune eval --endpoint/--run`` does with its flags (the command itself stays a thin shell)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..evaluate.evaluate import EvalResult

__all__ = ["evaluate_outside", "parse_headers"]

_PIPELINE_ONLY = ("store", "rerank", "retriever", "chunker", "embedder", "answers", "candidates")


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


def evaluate_outside(args: Any) -> tuple[EvalResult, str]:
    """The evaluation ``--endpoint URL`` or ``--run FILE`` asks for, and a summary of how hits matched."""
    from ..corpus import load_corpus
    from .files import evaluate_run_file, load_golden_or_qrels
    from .http import evaluate_endpoint

    if args.endpoint and args.run:
        raise ConfigError("pass --endpoint or --run, not both")
    given = [f"--{n}" for n in _PIPELINE_ONLY if getattr(args, n, None)]
    if given:
        raise ConfigError(f"{', '.join(given)} configure a ragtune pipeline; with --endpoint/--run the retriever is "
                          "outside ragtune (drop them)")
    corpus = load_corpus(args.corpus) if args.corpus else None
    golden = load_golden_or_qrels(args.golden, split=args.split)
    flt = None
    if getattr(args, "filter", None):
        if args.run:
            raise ConfigError("--filter cannot apply to a run file; filter when you make the run")
        flt = args.filter[0] if len(args.filter) == 1 else " and ".join(f"({f})" for f in args.filter)
    if args.run:
        result = evaluate_run_file(args.run, golden, corpus=corpus, ks=args.k, base_url=args.base_url,
                                   path_prefix=args.path_prefix, fuzzy=args.fuzzy)
    else:
        if any(not i.q.strip() for i in golden):
            raise ConfigError(f"{args.golden}: questions without text (qrels?) cannot be sent to an endpoint; use a "
                              "golden set with questions")
        result = evaluate_endpoint(args.endpoint, golden, corpus=corpus, ks=args.k, depth=args.depth,
                                   concurrency=args.concurrency, base_url=args.base_url, path_prefix=args.path_prefix,
                                   fuzzy=args.fuzzy, body=args.body, method=args.http_method, hits_path=args.hits_path,
                                   hit_field=args.hit_field, headers=parse_headers(args.header), timeout=args.timeout,
                                   retries=args.retries, filters=flt, show_progress=True)
    return result, _summary(result)


def _summary(result: EvalResult) -> str:
    from .match import MatchReport

    m = result.matching
    lines = []
    if m:
        report = MatchReport()
        report.counts.update(m.get("by_method", {}))
        lines.append(report.summary().splitlines()[0])
        for u in m.get("unmatched", [])[:5]:
            lines.append(f"  unmatched: question {u['question']!r} rank {u['rank']}: {u['hit']} ({u['reason']})")
        more = m.get("by_method", {}).get("unmatched", 0) - min(5, len(m.get("unmatched", [])))
        if more > 0:
            lines.append(f"  ... and {more} more unmatched (all counted; up to 200 listed with --json)")
    skipped = m.get("questions_not_in_golden") if m else None
    if skipped:
        lines.append(f"skipped {len(skipped)} question(s) of the run that the golden set lacks: "
                     f"{', '.join(skipped[:5])}{' ...' if len(skipped) > 5 else ''}")
    http = result.config.get("http")
    if http:
        lines.append(f"HTTP requests {http['requests']}, retries {http['retries']}")
    return "\n".join(lines)
