"""Single-shot retrieval against the built-in multi-step strategies, on multi-hop questions and conversations.

    python bench/multistep.py \\
        --set python-tutorial=../shared/datasets/formats/rst/tutorial:bench/golden/python-tutorial \\
        --set fastapi=../shared/datasets/fastapi_docs/md/docs/en/docs:bench/golden/fastapi \\
        --json out/multistep.json

Each ``--set NAME=CORPUS:PREFIX`` reads ``PREFIX-multihop.jsonl`` (questions with ``evidence`` groups: every group
needs an anchor in what reached the model) and ``PREFIX-conversations.jsonl`` (conversations, one item per turn,
each turn carrying the questions asked before it). One pipeline per corpus (``--retriever``, default: ragtune's
default pipeline) is searched through each strategy (the pipeline's ``strategy`` stage):

- multi-hop questions: ``single`` (one search, the question) against ``links`` (a second hop along the corpus's
  own cross-references from the top hits) and ``terms`` (decomposition's offline baseline: a second search of
  the question's rarest terms the first hits lack; ``decompose`` proper needs an LLM), each with its defaults
  (the first search's top 5 kept, the second search's hits after them: ranks 6-10) and with ``keep=3`` (the
  second search reaches ranks 4 and 5): evidence@5, evidence@10, evidence@1000tok (the top hits that fit 1,000
  tokens of context), recall@10, searches per question, the context tokens of the top 10 and the search latency
  per question (p50);
- conversations: ``single`` (each turn searched alone: without history) against ``history`` (the earlier turns'
  questions before the question: its default window of 2, and 1): recall@5 by turn index, overall, the context
  tokens of the top 5 and latency.

Prints one table per set and writes every figure with ``--json``. Timings are wall-clock on this machine; the
quality figures are deterministic for a given pipeline.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# (label, strategy, its options): the defaults keep the first search's top 5 and add the second search's hits after
# them, so the top 5 is single-shot's and a second search shows from rank 6; keep=3 gives it ranks 4 and 5 too
MULTIHOP = (("single", "single", {}), ("links", "links", {}), ("links k3", "links", {"keep": 3}),
            ("terms", "terms", {}), ("terms k3", "terms", {"keep": 3}))
CONVERSATION = (("no history", "single", {}), ("history", "history", {}), ("history w1", "history", {"window": 1}))
KS = (5, 10)


def parse_set(spec: str) -> tuple[str, Path, str]:
    name, eq, rest = spec.partition("=")
    corpus, colon, prefix = rest.rpartition(":")
    if not (eq and colon and name and corpus and prefix):
        raise SystemExit(f"--set {spec!r}: write NAME=CORPUS:GOLDEN_PREFIX, e.g. "
                         "fastapi=../shared/datasets/fastapi_docs/md/docs/en/docs:bench/golden/fastapi")
    return name, Path(corpus), prefix


def build(corpus: Any, retriever: str | None, strategy: str, resources: Any, options: dict | None = None) -> Any:
    """The pipeline with ``strategy`` (and its ``options``) as its strategy stage (the index built once and shared
    by ``resources``)."""
    from ragtune.pipeline import PipelineConfig, build_pipeline

    options = {"strategy": strategy, "strategy_options": tuple((options or {}).items())}
    if retriever:
        options["retriever"] = retriever
    return build_pipeline(corpus, PipelineConfig(**options), resources=resources)


def searches_of(result: Any) -> float:
    """Mean searches per answerable question (1 when no question searched more than once: a plain run)."""
    summary = getattr(result, "searches", None) or {}
    return float(summary.get("mean_searches", 1.0))


def figures(result: Any) -> dict[str, float]:
    m = result.metrics
    lat = result.latency_ms or {}
    keys = ("evidence@5", "evidence@10", "evidence@1000tok", "recall@5", "recall@10", "context_tokens@5",
            "context_tokens@10")
    return {**{k: m.get(k, float("nan")) for k in keys}, "searches": searches_of(result),
            "p50_ms": lat.get("p50", float("nan"))}


def by_turn(result: Any, golden: Any, metric: str = "recall@5") -> dict[int, float]:
    """``metric`` averaged over the answerable questions of each turn index (1-based)."""
    turn = {i.id: i.turn for i in golden}
    cells: dict[int, list[float]] = {}
    for q in result.questions:
        if q.answerable and turn.get(q.id) is not None:
            cells.setdefault(turn[q.id] + 1, []).append(q.scores[metric])
    return {t: float(np.mean(v)) for t, v in sorted(cells.items())}


def run_set(name: str, corpus_path: Path, prefix: str, retriever: str | None) -> dict[str, Any]:
    from ragtune.corpus import load_corpus
    from ragtune.golden import load_golden
    from ragtune.pipeline import Resources, run_eval

    corpus = load_corpus(corpus_path)
    multihop = load_golden(f"{prefix}-multihop.jsonl")
    conversations = load_golden(f"{prefix}-conversations.jsonl")
    resources = Resources()
    out: dict[str, Any] = {"corpus": str(corpus_path), "multihop": {"questions": len(multihop)},
                           "conversations": {"turns": len(conversations),
                                             "conversations": len({i.conversation for i in conversations})}}
    build(corpus, retriever, "single", resources).warm_up()  # the index and models once, outside every timing
    for label, strategy, options in MULTIHOP:
        t0 = time.perf_counter()
        result = run_eval(build(corpus, retriever, strategy, resources, options), multihop, ks=KS)
        out["multihop"][label] = {"strategy": strategy, "options": options, **figures(result),
                                  "wall_s": time.perf_counter() - t0}
    for label, strategy, options in CONVERSATION:
        result = run_eval(build(corpus, retriever, strategy, resources, options), conversations, ks=KS)
        out["conversations"][label] = {"strategy": strategy, "options": options, **figures(result),
                                       "recall@5_by_turn": by_turn(result, conversations)}
    return out


def fmt(v: float, digits: int = 2) -> str:
    return "n/a" if v != v else f"{v:.{digits}f}"


def render(name: str, r: dict[str, Any]) -> str:
    mh, cv = r["multihop"], r["conversations"]
    lines = [f"{name}: {mh['questions']} multi-hop questions, {cv['conversations']} conversations "
             f"({cv['turns']} turns)",
             f"  {'strategy':<12} {'evidence@5':>10} {'evidence@10':>11} {'evid@1000tok':>12} {'recall@10':>9} "
             f"{'searches':>8} {'ctx tok@10':>10} {'p50 ms':>7}"]
    for label, _, _ in MULTIHOP:
        f = mh[label]
        lines.append(f"  {label:<12} {fmt(f['evidence@5']):>10} {fmt(f['evidence@10']):>11} "
                     f"{fmt(f['evidence@1000tok']):>12} {fmt(f['recall@10']):>9} {fmt(f['searches'], 1):>8} "
                     f"{fmt(f['context_tokens@10'], 0):>10} {fmt(f['p50_ms'], 1):>7}")
    turns = sorted({t for label, _, _ in CONVERSATION for t in cv[label]["recall@5_by_turn"]})
    lines.append(f"  {'recall@5':<12} " + " ".join(f"{'turn ' + str(t):>7}" for t in turns)
                 + f" {'all':>7} {'ctx tok@5':>9} {'p50 ms':>7}")
    for label, _, _ in CONVERSATION:
        f = cv[label]
        lines.append(f"  {label:<12} " + " ".join(f"{fmt(f['recall@5_by_turn'].get(t, float('nan'))):>7}" for t in turns)
                     + f" {fmt(f['recall@5']):>7} {fmt(f['context_tokens@5'], 0):>9} {fmt(f['p50_ms'], 1):>7}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", required=True, metavar="NAME=CORPUS:GOLDEN_PREFIX",
                    help="a corpus and the prefix of its -multihop.jsonl and -conversations.jsonl (repeatable)")
    ap.add_argument("--retriever", help="first stage (default: the default pipeline's)")
    ap.add_argument("--json", help="also write every figure here")
    args = ap.parse_args(argv)
    results = {}
    for spec in args.set:
        name, corpus, prefix = parse_set(spec)
        results[name] = run_set(name, corpus, prefix, args.retriever)
        print(render(name, results[name]), flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
