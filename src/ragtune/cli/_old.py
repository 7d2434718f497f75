"""The ``ragtune`` command line: a thin shell over the public API.

Exit codes: 0 success, 1 a check failed (``golden check``), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import __version__
from .chunking import chunk_documents
from .chunking.tokens import get_tokenizer
from .progress import progress_iter
from .types import Chunk
from .corpus import load_corpus
from .errors import ConfigError, RagtuneError
from .evaluate.render import render_eval
from .golden import check_golden, load_golden
from .embed import EMBEDDERS
from .evaluate.evaluate import _finite
from .pipeline import RERANKERS, RETRIEVERS, Pipeline, default_chunker, run_eval
from .retrieve.base import search as run_search
from .retrieve.filters import combine_filters
from .chunking import CHUNKERS


def _int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 5,10,20, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"k values must be positive integers, got {text!r}")
    return values


def _add_pipeline_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus", help="markdown/text folder, BEIR folder or corpus.jsonl")
    p.add_argument("--store", help="an index store: use its current version (or --version) instead of --corpus")
    p.add_argument("--version", dest="store_version", help="with --store: this version instead of the current one")
    _add_chunker_args(p)
    r = p.add_argument_group("retrieval")
    r.add_argument("--retriever", default="bm25", choices=RETRIEVERS, help="bm25 (default), dense or hybrid (RRF)")
    r.add_argument("--k1", type=float, default=None, help="BM25 k1 (default 1.5)")
    r.add_argument("--b", type=float, default=None, help="BM25 b (default 0.75)")
    r.add_argument("--ann", action="store_true", default=None, help="dense/hybrid: approximate HNSW search (usearch)")
    r.add_argument("--rrf-k", type=int, dest="rrf_k", help="hybrid: RRF constant (default 60)")
    r.add_argument("--fusion-depth", type=int, dest="depth_fuse", help="hybrid: candidates taken from each retriever (default 50)")
    r.add_argument("--weights", type=_float_list, help="hybrid: weights of bm25,dense (default 1,1)")
    r.add_argument("--rerank", choices=RERANKERS, help="rerank the shortlist: embedding (second embedder) or cross-encoder")
    r.add_argument("--rerank-model", dest="rerank_model", help="reranker model: embedder name (default e5-small) or cross-encoder id/folder")
    r.add_argument("--filter", action="append", default=[], metavar="EXPR",
                   help="metadata filter, e.g. 'dir=tutorial' or 'year>=2020 and lang in [en, de]' (repeat to AND)")


def _add_chunker_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chunker", default="auto", choices=["auto", *CHUNKERS],
                   help="auto = section for markdown, document for BEIR and text (default: auto)")
    p.add_argument("--prefix", action=argparse.BooleanOptionalAction, default=None,
                   help="index 'Title > Heading path' before each chunk (default: on for BEIR, off otherwise)")
    g = p.add_argument_group("chunking options (each strategy accepts its own; others are rejected)")
    g.add_argument("--size", type=int, help="chunk size in tokens (small_to_big: the children's)")
    g.add_argument("--overlap", type=int, help="tokens shared by consecutive chunks")
    g.add_argument("--tokenizer", help="token counting: regex (default), minilm, a tokenizer.json path or a HF model id")
    g.add_argument("--parent-size", type=int, dest="parent_size", help="small_to_big: parent size in tokens")
    g.add_argument("--parent-chunker", dest="parent", choices=["markdown", "recursive"], help="small_to_big: parents")
    g.add_argument("--merge-siblings", dest="merge_siblings", action=argparse.BooleanOptionalAction, default=None,
                   help="markdown: merge small sibling sections up to the size (default on)")
    g.add_argument("--threshold", type=float, help="semantic: cut where neighbour similarity is below this")
    g.add_argument("--percentile", type=float, help="semantic: cut at distances above this percentile (default 90)")
    g.add_argument("--embedder", help=f"embedding model for semantic chunking and dense/hybrid retrieval: "
                                      f"{', '.join(EMBEDDERS)} (default minilm)")


CHUNK_OPTIONS = ("size", "overlap", "tokenizer", "parent_size", "parent", "merge_siblings", "threshold", "percentile")


def _float_list(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers like 1,0.5, got {text!r}") from None


def _chunker_options(args: argparse.Namespace) -> dict[str, Any]:
    opts = {k: getattr(args, k) for k in CHUNK_OPTIONS if getattr(args, k, None) is not None}
    if args.chunker == "semantic" and getattr(args, "embedder", None):
        opts["embedder"] = args.embedder  # the semantic chunker embeds sentences with the same model
    return opts


def _retriever_options(args: argparse.Namespace) -> dict[str, Any]:
    names = (("k1", "k1"), ("b", "b"), ("rrf_k", "rrf_k"), ("depth_fuse", "depth"), ("weights", "weights"),
             ("ann", "ann"))
    opts = {key: getattr(args, attr) for attr, key in names if getattr(args, attr, None) is not None}
    if args.retriever != "hybrid" and set(opts) & {"rrf_k", "depth", "weights"}:
        raise ConfigError("--rrf-k, --fusion-depth and --weights apply to --retriever hybrid only")
    if args.retriever == "dense" and set(opts) & {"k1", "b"}:
        raise ConfigError("--k1 and --b apply to bm25 and hybrid retrieval only")
    return opts


def _pipeline(args: argparse.Namespace, *, candidates: int | None = None) -> Pipeline:
    """The pipeline the flags describe; ``candidates`` defaults to the first --candidates value (or 50)."""
    if candidates is None:
        given = getattr(args, "candidates", None)
        if given and not args.rerank:
            raise ConfigError("--candidates needs --rerank (embedding or cross-encoder)")
        candidates = given[0] if given else 50
    if getattr(args, "store_version", None) and not getattr(args, "store", None):
        raise ConfigError("--version selects a version of --store; give --store too")
    if getattr(args, "store", None):
        if args.corpus:
            raise ConfigError("give --corpus or --store, not both")
        if args.embedder:
            raise ConfigError("with --store the embedding model is the one the version was built with; drop --embedder "
                              "(use `ragtune index migrate` to change it)")
        given = [f"--{k.replace('_', '-')}" for k in (*CHUNK_OPTIONS, "k1", "b", "rrf_k", "depth_fuse", "weights", "ann")
                 if getattr(args, k, None) is not None]
        if args.chunker != "auto" or args.prefix is not None or args.retriever != "bm25" or given:
            raise ConfigError("with --store, chunking and retrieval come from the stored version; drop "
                              + (", ".join(given) or "--chunker/--prefix/--retriever"))
        from .store import IndexStore, load_pipeline

        p = load_pipeline(IndexStore(args.store), args.store_version, show_progress=True)
        if args.rerank:
            from .pipeline import build_reranker

            p = p.with_reranker(build_reranker(args.rerank, args.rerank_model), candidates)
        return p
    if not args.corpus:
        raise ConfigError("--corpus is required (or --store for a built index)")
    corpus = load_corpus(args.corpus)
    return Pipeline.build(corpus, chunker=args.chunker, prefix=args.prefix, retriever=args.retriever,
                          retriever_options=_retriever_options(args), chunker_options=_chunker_options(args),
                          embedder=args.embedder or "minilm", rerank=args.rerank, rerank_model=args.rerank_model,
                          candidates=candidates, show_progress=True)


def _filters(args: argparse.Namespace) -> str | None:
    """The --filter expressions as one expression (each flag ANDed), validated now."""
    if not args.filter:
        return None
    combine_filters(args.filter)  # raises on a syntax error before anything is built
    return args.filter[0] if len(args.filter) == 1 else " and ".join(f"({f})" for f in args.filter)


def _write_json(path: str, data: Any) -> None:
    import os

    try:
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False)
            f.write("\n")
    except OSError as e:
        raise ConfigError(f"cannot write {path}: {e.strerror or e}") from None


def cmd_eval(args: argparse.Namespace) -> int:
    golden = load_golden(args.golden, split=args.split)
    filters = _filters(args)
    if args.candidates and not args.rerank:
        raise ConfigError("--candidates needs --rerank (embedding or cross-encoder)")
    candidates = args.candidates or [50]
    pipeline = _pipeline(args, candidates=candidates[0])
    if args.answers and args.dry_run:
        return _answers_dry_run(args, pipeline, golden, filters)
    result = run_eval(pipeline, golden, ks=args.k, depth=args.depth, filters=filters, show_progress=True)
    table = None
    if args.rerank and len(candidates) > 1:
        rows = [_candidate_row("none", run_eval(pipeline.with_reranker(None), golden, ks=args.k, depth=args.depth,
                                                filters=filters, show_progress=True))]
        rows.append(_candidate_row(candidates[0], result))
        for n in candidates[1:]:
            r = run_eval(pipeline.with_reranker(pipeline.reranker, n), golden, ks=args.k, depth=args.depth,
                         filters=filters, show_progress=True)
            rows.append(_candidate_row(n, r))
        table = rows
    answers = _eval_answers(args, pipeline, golden, filters) if args.answers else None
    print(render_eval(result, failures=args.failures))
    if answers:
        m = answers["metrics"]
        print(f"\nanswers ({answers['generator']}, top {answers['k']} contexts"
              + (f", gate {answers['gate']:.4g}" if answers["gate"] is not None else "") + "):")
        for key, value in m.items():
            if value is not None:
                print(f"  {key:<30} {value:.3f}" if isinstance(value, float) else f"  {key:<30} {value}")
        if answers.get("judge", {}).get("usage"):
            j = answers["judge"]
            print(f"  judge {j['name']}: {j['usage']['calls']} calls, {j['usage']['input_tokens']} in / "
                  f"{j['usage']['output_tokens']} out tokens, ${j['cost']:.4f}")
    if table:
        print(f"\nreranking ({args.rerank}) by number of candidates:")
        print(f"{'candidates':>10}  {'recall@5':>8}  {'mrr':>6}  {'ndcg@10':>7}  {'p50 ms':>8}  {'p95 ms':>8}")
        for row in table:
            print(f"{row['candidates']:>10}  {row['recall@5']:>8.3f}  {row['mrr']:>6.3f}  {row['ndcg@10']:>7.3f}  "
                  f"{row['p50_ms']:>8.1f}  {row['p95_ms']:>8.1f}")
    if args.json:
        data = result.to_dict()
        if table:
            data["candidates_table"] = table
        if answers:
            data["answers"] = answers
        _write_json(args.json, _finite(data))
        print(f"\nwrote {args.json}")
    return 0


def _eval_answers(args: argparse.Namespace, pipeline: Pipeline, golden, filters) -> dict[str, Any] | None:
    from .answer import answer_question, make_generator, make_judge
    from .answer.evaluate import evaluate_answers

    generator = make_generator(args.generator)
    judge = make_judge(args.judge, **({"price_in": args.price_in, "price_out": args.price_out}
                                      if args.judge != "heuristic" else {}))
    return evaluate_answers(pipeline.retriever, golden, pipeline.corpus, generator, judge=judge, k=args.answer_k,
                            gate=_gate(args), filters=filters, show_progress=True)


def _answers_dry_run(args: argparse.Namespace, pipeline: Pipeline, golden, filters) -> int:
    """Estimate what --answers would send to LLMs (retrieval only, nothing generated or judged)."""
    from .answer.evaluate import estimate_answer_cost

    est = estimate_answer_cost(pipeline.retriever, golden, generator=args.generator, judge=args.judge, k=args.answer_k,
                               filters=filters, price_in=args.price_in, price_out=args.price_out)
    for role in ("generator", "judge"):
        e = est[role]
        if e["calls"]:
            print(f"dry run: the {role} ({e['name']}) would make {e['calls']} calls, about {e['input_tokens']} input "
                  f"and {e['output_tokens']} output tokens")
        else:
            print(f"dry run: the {role} ({e['name']}) runs offline: no calls, no cost")
    print(f"estimated cost ${est['cost']:.4f} at ${args.price_in}/M input and ${args.price_out}/M output tokens "
          "(prices from --price-in/--price-out; about 4 characters a token)")
    return 0


def _candidate_row(candidates: Any, result) -> dict[str, Any]:
    m = result.metrics
    return {"candidates": candidates, "recall@5": m.get("recall@5", float("nan")), "mrr": m.get("mrr", float("nan")),
            "ndcg@10": m.get("ndcg@10", float("nan")), "p50_ms": result.latency_ms["p50"],
            "p95_ms": result.latency_ms["p95"]}


def cmd_golden_check(args: argparse.Namespace) -> int:
    corpus = load_corpus(args.corpus)
    golden = load_golden(args.golden, split=args.split)
    report = check_golden(golden, corpus)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return 0 if report.ok else 1
    s = report.summary
    if not report.ok:
        print(f"{len(report.problems)} problem(s) in {golden.source}:")
        for p in report.problems:
            print(f"- {p.message}")
        return 1
    tags = ", ".join(f"{t} {n}" for t, n in s["tags"].items()) or "none"
    print(f"ok: {s['questions']} questions ({s['answerable']} answerable, {s['unanswerable']} unanswerable), "
          f"{s['relevant_anchors']} relevant anchors, all found in {len(corpus)} documents")
    print(f"tags: {tags}")
    return 0


def cmd_anchors(args: argparse.Namespace) -> int:
    corpus = load_corpus(args.corpus)
    docs = [corpus[args.doc]] if args.doc else list(corpus)
    rows = []
    for d in docs:
        rows.append({"anchor": d.id, "title": d.title, "heading_path": []})
        rows.extend({"anchor": s.anchor, "title": s.title, "heading_path": list(s.heading_path)} for s in d.sections)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        for r in rows:
            indent = "  " * len(r["heading_path"])
            print(f"{indent}{r['anchor']}  ({r['title']})")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    filters = _filters(args)  # a typo in a filter fails before anything is built
    pipeline = _pipeline(args)
    ranking = pipeline.retriever.search(args.query, k=args.k, filters=filters)
    if args.json:
        print(json.dumps(ranking.to_dict(), indent=2, ensure_ascii=False))
        return 0
    if not ranking.hits:
        print("no results (no query term occurs in the corpus)")
    for i, h in enumerate(ranking.hits, start=1):
        snippet = " ".join(h.chunk.text.split())[:100]
        print(f"{i:>3}. {h.score:7.3f}  {h.chunk.anchor}\n       {snippet}")
    stages = ", ".join(f"{s} {t * 1000:.1f}" for s, t in ranking.timings.items())
    print(f"({sum(ranking.timings.values()) * 1000:.1f} ms: {stages})")
    return 0


def cmd_chunk(args: argparse.Namespace) -> int:
    corpus = load_corpus(args.corpus)
    chunker = default_chunker(corpus, args.chunker, prefix=args.prefix, **_chunker_options(args))
    t0 = time.perf_counter()
    chunks, parents = chunk_documents(progress_iter(corpus.documents, "chunking", enabled=True), chunker)
    elapsed = time.perf_counter() - t0
    counter = get_tokenizer(getattr(getattr(chunker, "config", None), "tokenizer", "regex"))
    sizes = np.asarray([c.tokens if c.tokens is not None else len(counter.spans(c.text)) for c in chunks], dtype=np.int64)
    cfg = getattr(chunker, "config", None)
    print(f"chunker {chunker.name} {json.dumps(cfg.to_dict()) if cfg else ''}")
    print(f"{len(corpus)} documents -> {len(chunks)} chunks" + (f" in {len(parents)} parents" if parents else "")
          + f" ({elapsed:.2f} s)")
    if sizes.size:
        print(f"tokens per chunk: min {sizes.min()}  median {int(np.median(sizes))}  p95 {int(np.percentile(sizes, 95))}"
              f"  max {sizes.max()}  total {sizes.sum()}")
        print(render_histogram(sizes))
    for c in chunks[: args.samples]:
        print(f"\n--- {c.anchor} [{c.start}:{c.end}] {c.tokens} tokens" + (f" parent {c.parent_id}" if c.parent_id else ""))
        body = c.embed_text if len(c.embed_text) <= 400 else c.embed_text[:400] + " ..."
        print(body)
    if args.json:
        rows = [{**_chunk_record(c), "role": "child" if parents else "chunk"} for c in chunks]
        rows += [{**_chunk_record(p), "role": "parent"} for p in parents]
        try:
            with open(args.json, "w", encoding="utf-8") as f:
                for r in rows:
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
        except OSError as e:
            raise ConfigError(f"cannot write {args.json}: {e.strerror or e}") from None
        print(f"\nwrote {len(rows)} records to {args.json}")
    return 0


def _chunk_record(c: Chunk) -> dict[str, Any]:
    return {"id": c.id, "doc_id": c.doc_id, "start": c.start, "end": c.end, "text": c.text, "embed_text": c.embed_text,
            "anchors": list(c.anchors), "heading_path": list(c.heading_path), "parent_id": c.parent_id,
            "tokens": c.tokens}


def render_histogram(sizes: np.ndarray, bins: int = 8, width: int = 40) -> str:
    edges = np.unique(np.linspace(0, sizes.max() + 1, bins + 1).astype(int))
    counts, _ = np.histogram(sizes, bins=edges)
    top = max(1, counts.max())
    lines = []
    for lo, hi, n in zip(edges, edges[1:], counts):
        lines.append(f"  {lo:>6}-{hi - 1:<6} {n:>6}  {'#' * int(round(n / top * width))}")
    return "\n".join(lines)


def cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import load_grid, sweep

    grid = load_grid(args.grid)
    if args.metric:
        from .sweep.grid import parse_grid

        grid = parse_grid({**grid.raw, "metric": args.metric}, source=grid.source)
    golden = load_golden(args.golden, split=args.split)
    corpus = load_corpus(args.corpus)
    grid = grid.resolved(corpus.kind)
    specs = grid.all_specs
    print(f"sweep: {len(specs)} configurations ({len(grid.specs)} in the grid"
          f"{'' if len(specs) == len(grid.specs) else ' + the baseline'}), metric {grid.metric}, "
          f"{len(golden)} questions; results in {args.out}", file=sys.stderr)
    if args.dry_run:
        for spec in specs:
            print(f"{spec.key}  {spec.label}")
        return 0
    result = sweep(corpus, golden, grid, args.out, show_progress=True)
    print(result.table(limit=args.top))
    print(f"\nwrote {args.out}/results.json and {args.out}/report.html")
    return 0


def _load_result(path: str, config: str | None) -> tuple[dict[str, Any], str]:
    """An eval result dict from an eval --json file, a sweep results folder/file, or a sweep run file."""
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found; pass an eval --json file or a sweep output folder") from None
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"{path}: cannot read JSON ({e})") from None
    if "questions" in data and "metrics" in data:  # eval --json
        return data, p.stem
    if "result" in data and "spec" in data:  # one sweep run
        return data["result"], data["label"]
    if "configs" in data:  # sweep results.json: per-question scores are in runs/<key>.json
        configs = data["configs"]
        chosen = configs[0] if config is None else next((c for c in configs if c["key"] == config), None)
        if chosen is None:
            raise ConfigError(f"{path}: no configuration {config!r}; keys: {', '.join(c['key'] for c in configs)}")
        run = p.parent / "runs" / f"{chosen['key']}.json"
        if run.exists():
            r = json.loads(run.read_text(encoding="utf-8"))
            return r["result"], r["label"]
        return {"questions": [{"answerable": True, **q} for q in chosen["questions"]], "config": {"ks": data["ks"]},
                "metrics": chosen["metrics"]}, chosen["label"]
    raise ConfigError(f"{path}: not an eval or sweep result")


def cmd_compare(args: argparse.Namespace) -> int:
    from .evaluate.compare import compare_runs

    a, name_a = _load_result(args.a, args.config_a)
    b, name_b = _load_result(args.b, args.config_b)
    c = compare_runs(a, b, metric=args.metric, test=args.test, samples=args.samples, seed=args.seed,
                     names=(name_a, name_b))
    print(c.to_json() if args.json else c.to_text())
    return 0


def _gate(args: argparse.Namespace):
    from .answer import ConfidenceGate

    return ConfidenceGate(args.gate) if getattr(args, "gate", None) is not None else None


def cmd_answer(args: argparse.Namespace) -> int:
    from .answer import answer_question, make_generator

    generator = make_generator(args.generator)
    filters = _filters(args)
    pipeline = _pipeline(args)
    ans, ranking = answer_question(pipeline.retriever, args.query, generator, k=args.k, gate=_gate(args),
                                   filters=filters)
    log_path = None if args.no_log else (args.log or (os.path.join(args.store, "telemetry.sqlite") if args.store else None))
    if log_path:
        from .serve.telemetry import TelemetryLog

        TelemetryLog(log_path).log(query=args.query, outcome=ans.outcome, reason=ans.reason, filters=filters,
                                   version=getattr(pipeline, "version", None), latency_ms=ans.latency_s * 1000,
                                   retrieved=[{"anchor": h.chunk.anchor, "score": h.score} for h in ranking.hits])
    if args.json:
        print(json.dumps(ans.to_dict(), indent=2, ensure_ascii=False))
        return 0
    if ans.outcome == "not_found":
        why = {"gate": "retrieval confidence below the gate", "model": "the context does not contain the answer",
               "refusal": "the model refused", "no_match": "no context sentence matches the question",
               "no_context": "nothing was retrieved"}.get(ans.reason or "", ans.reason)
        print(f"not found in the context ({why})")
    else:
        print(ans.text)
        if ans.invalid_citations:
            print(f"\nwarning: citation(s) to contexts that were not given: {ans.invalid_citations}")
        print("\nsources:")
        for c in {c.n: c for c in ans.citations if c.valid}.values():
            print(f"  [{c.n}] {c.anchor}  (characters {c.start}-{c.end} of {c.doc_id})")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import os

    from .serve.app import create_app

    try:
        import uvicorn
    except ImportError:
        from .errors import MissingDependencyError

        raise MissingDependencyError("the server needs: pip install 'ragtune[serve]'") from None
    log = None if args.no_log else (args.log or os.path.join(args.store, "telemetry.sqlite"))
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    app = create_app(args.store, api_key=key, log_path=log, generator=args.generator, gate=args.gate)
    print(f"serving {args.store} (version {app.state.holder.version}) on http://{args.host}:{args.port}  docs: /docs"
          + (f"; telemetry: {log}" if log else "; telemetry off") + ("; API key required" if key else ""),
          file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", workers=1)
    return 0


def _existing_log(path: str):
    """A telemetry log to read: a missing file is a mistake, not an empty log."""
    from .serve.telemetry import TelemetryLog

    if not os.path.isfile(path):
        raise ConfigError(f"telemetry log {path!r} does not exist (a server writes STORE/telemetry.sqlite by default)")
    return TelemetryLog(path)


def cmd_gaps(args: argparse.Namespace) -> int:
    from .embed import get_embedder
    from .serve.gaps import cluster_gaps
    from .serve.telemetry import TelemetryLog, parse_since

    log = _existing_log(args.log)
    rows = list(log.rows(since=parse_since(args.since), outcome="not_found"))
    retriever = None
    if args.store:
        from .store import IndexStore, load_pipeline

        retriever = load_pipeline(IndexStore(args.store)).retriever
    clusters = cluster_gaps([r["query"] for r in rows], get_embedder(args.embedder), distance=args.distance,
                            retriever=retriever)
    if args.json:
        print(json.dumps({"not_found": len(rows), "clusters": clusters}, indent=2, ensure_ascii=False))
        return 0
    print(f"{len(rows)} not-found answers" + (f" since {args.since}" if args.since else "") + f", {len(clusters)} clusters")
    for i, c in enumerate(clusters, start=1):
        times = "once" if c["size"] == 1 else f"{c['size']} times"
        print(f"\n{i}. asked {times} ({c['distinct']} distinct)")
        for q in c["examples"]:
            print(f"   - {q}")
        if c.get("nearest_anchors"):
            print("   nearest anchors: " + ", ".join(a["anchor"] for a in c["nearest_anchors"]))
    return 0


def cmd_log_export(args: argparse.Namespace) -> int:
    from .serve.telemetry import TelemetryLog, parse_since

    log = _existing_log(args.log)
    try:
        out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    except OSError as e:
        raise ConfigError(f"cannot write {args.out}: {e.strerror or e}") from None
    n = 0
    try:
        for row in log.rows(since=parse_since(args.since)):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    finally:
        if args.out:
            out.close()
    if args.out:
        print(f"wrote {n} rows to {args.out}", file=sys.stderr)
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .answer import calibrate_threshold, top_score
    from .evaluate.evaluate import covers

    golden = load_golden(args.golden, split=args.split)
    filters = _filters(args)
    pipeline = _pipeline(args)
    corpus = pipeline.corpus
    answerable, unanswerable, no_evidence = [], [], []
    for item in progress_iter(golden.items, "calibrating", enabled=True):
        ranking = run_search(pipeline.retriever, item.q, args.k, filters)
        score = top_score(ranking)
        if item.answerable:
            spans = [corpus.resolve(a) for a in item.relevant]
            answerable.append(score)
            no_evidence.append(not any(covers(h.chunk, s) for h in ranking.hits for s in spans))
        else:
            unanswerable.append(score)
    cal = calibrate_threshold(answerable, unanswerable, no_evidence=no_evidence)
    if args.json:
        _write_json(args.json, {**cal.to_dict(), "config": pipeline.describe(), "k": args.k})
    print(f"threshold {cal.threshold:.4g} on the top {pipeline.retriever.name} score "
          f"({cal.n_answerable} answerable, {cal.n_unanswerable} unanswerable questions)")
    print(f"abstention precision {cal.precision:.3f}  recall {cal.recall:.3f}  F1 {cal.f1:.3f}  "
          f"(answerable questions refused: {cal.false_abstention:.3f})")
    print(f"separation AUC {cal.auc:.3f} (0.5 = the top score cannot tell answerable from unanswerable)")
    print("\ncoverage vs risk (risk = answered questions that are unanswerable or lack evidence in the top k):")
    for point in cal.curve[:: max(1, len(cal.curve) // 10)]:
        print(f"  threshold {point['threshold']:>9.4g}  coverage {point['coverage']:.2f}  risk {point['risk']:.2f}")
    print(f"\nuse it: ragtune answer ... --gate {cal.threshold:.4g}   (valid for this retrieval configuration only)")
    return 0


def _index_config(args: argparse.Namespace):
    from .store import IndexConfig

    flags: dict[str, Any] = {}
    if args.config:
        from pathlib import Path

        import tomllib

        import yaml

        path = Path(args.config)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"cannot read {path}: {e.strerror or e}") from None
        try:
            data = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
        except (tomllib.TOMLDecodeError, yaml.YAMLError) as e:
            raise ConfigError(f"{path}: cannot parse: {e}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a table of eval flag names, e.g. chunker = \"markdown\"")
        flags.update(data)
    for k in ("chunker", "prefix", "retriever", "embedder", *CHUNK_OPTIONS, "k1", "b", "rrf_k", "weights", "ann"):
        v = getattr(args, k, None)
        if v is not None and not (k == "chunker" and v == "auto" and "chunker" in flags) \
                and not (k == "retriever" and v == "bm25" and "retriever" in flags):
            flags[k] = v
    if getattr(args, "depth_fuse", None) is not None:
        flags["fusion_depth"] = args.depth_fuse
    return IndexConfig.from_flags(flags)


def _version_line(v, current: str | None) -> str:
    m = v.manifest
    emb = (m.get("embedding") or {}).get("model", "-")
    mark = "*" if v.id == current else " "
    return (f"{mark} {v.id}  {m['created']}  {m['corpus']['documents']:>6} docs {m['chunks']:>7} chunks  "
            f"{m['config']['chunker']}/{m['config']['retriever']}  {emb}  build {m['build_s']:.1f}s")


def cmd_index(args: argparse.Namespace) -> int:
    from .store import IndexStore, build_version, migrate, refresh_version

    store = IndexStore(args.store)
    op = args.index_command
    if op == "build":
        corpus = load_corpus(args.corpus)
        v = build_version(store, corpus, _index_config(args), promote=True if args.promote else None,
                          show_progress=True)
        print(f"built {v.id}: {v.manifest['chunks']} chunks from {v.manifest['corpus']['documents']} documents in "
              f"{v.manifest['build_s']:.1f} s; current: {store.current_id()}")
    elif op == "refresh":
        corpus = load_corpus(args.corpus)
        v, st = refresh_version(store, corpus, promote=not args.no_promote, show_progress=True)
        print(f"refreshed into {v.id} (from {v.manifest['parent_version']}): {len(st['added'])} added, "
              f"{len(st['changed'])} changed, {len(st['removed'])} removed; {st['chunks_new']} chunks new, "
              f"{st['chunks_reused']} reused, {st.get('texts_embedded', 0)} texts embedded, {v.manifest['build_s']:.2f} s; "
              f"current: {store.current_id()}")
    elif op == "list":
        versions = store.list()
        if args.json:
            print(json.dumps([{"id": v.id, "current": v.id == store.current_id(), **v.manifest} for v in versions],
                             indent=2, default=str))
        else:
            cur = store.current_id()
            for v in versions:
                print(_version_line(v, cur))
            if not versions:
                print(f"no versions in {args.store}")
    elif op == "show":
        v = store.get(args.version)
        m = dict(v.manifest)
        m["documents"] = f"{len(m['documents'])} documents (content hashes in manifest.json)"
        print(json.dumps(m, indent=2, default=str))
    elif op == "diff":
        d = store.diff(args.a, args.b)
        if args.json:
            print(json.dumps(d, indent=2, default=str))
        else:
            print(f"{d['from']} -> {d['to']}: {len(d['added'])} added, {len(d['changed'])} changed, "
                  f"{len(d['removed'])} removed documents")
            for k in ("added", "changed", "removed"):
                for doc in d[k][:20]:
                    print(f"  {k[0].upper()} {doc}")
            for k, ch in d["config"].items():
                print(f"  config {k}: {ch['from']!r} -> {ch['to']!r}")
            if d["embedding"]:
                print(f"  embedding: {d['embedding']['from']} -> {d['embedding']['to']}")
    elif op == "promote":
        v = store.promote(args.version)
        print(f"current: {v.id}")
    elif op == "rollback":
        v = store.rollback()
        print(f"rolled back; current: {v.id}")
    elif op == "gc":
        removed = store.gc(args.keep)
        print(f"removed {len(removed)} version(s): {', '.join(removed) or '-'}")
    elif op == "migrate":
        golden = load_golden(args.golden, split=args.split)
        r = migrate(store, args.embedder, golden, max_drop=args.max_drop, metric=args.metric, show_progress=True)
        print(r["text"])
        verdict = "promoted" if r["promoted"] else f"NOT promoted (drop larger than {args.max_drop})"
        print(f"\ngreen {r['green']} {verdict}; blue {r['blue']} kept for rollback; current: {store.current_id()}")
        return 0 if r["promoted"] else 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragtune", description="Measure and tune RAG retrieval.")
    parser.add_argument("--version", action="version", version=f"ragtune {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("eval", help="evaluate retrieval on a golden set")
    _add_pipeline_args(p)
    p.add_argument("--golden", required=True, help="golden set (.jsonl, .yaml) or a BEIR folder with --split")
    p.add_argument("--split", default=None, help="BEIR qrels split (e.g. test)")
    p.add_argument("--k", type=_int_list, default=[5, 10, 20], help="cutoffs, comma-separated (default 5,10,20)")
    p.add_argument("--depth", type=int, default=100, help="chunks retrieved per question (default 100)")
    p.add_argument("--candidates", type=_int_list, help="with --rerank: shortlist sizes to compare, e.g. 20,50,100")
    a = p.add_argument_group("answers")
    a.add_argument("--answers", action="store_true", help="also generate and judge answers for every question")
    a.add_argument("--generator", default="extractive", help="extractive (offline), anthropic[:model], openai:<model>")
    a.add_argument("--judge", default="heuristic", help="heuristic (offline), openai:<model> or anthropic:<model>")
    a.add_argument("--answer-k", type=int, default=5, dest="answer_k", help="contexts per answer (default 5)")
    a.add_argument("--gate", type=float, help="abstain below this top retrieval score (see calibrate)")
    a.add_argument("--price-in", type=float, default=0.0, dest="price_in", help="LLM judge: $ per million input tokens")
    a.add_argument("--price-out", type=float, default=0.0, dest="price_out", help="LLM judge: $ per million output tokens")
    a.add_argument("--dry-run", action="store_true", dest="dry_run",
                   help="estimate the LLM calls, tokens and cost of --answers (retrieval only), then stop")
    p.add_argument("--failures", type=int, default=5, help="worst failures to print (default 5)")
    p.add_argument("--json", metavar="FILE", help="write the full result as JSON")
    p.set_defaults(func=cmd_eval)

    g = sub.add_parser("golden", help="golden set tools")
    gsub = g.add_subparsers(dest="golden_command", required=True)
    p = gsub.add_parser("check", help="validate a golden set against a corpus")
    p.add_argument("--corpus", required=True)
    p.add_argument("--golden", required=True)
    p.add_argument("--split", default=None)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_golden_check)

    p = sub.add_parser("anchors", help="list the anchors of a corpus")
    p.add_argument("--corpus", required=True)
    p.add_argument("--doc", default=None, help="only this document")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_anchors)

    p = sub.add_parser("answer", help="answer a question from the corpus, with citations")
    _add_pipeline_args(p)
    p.add_argument("query")
    p.add_argument("-k", type=int, default=5, help="contexts given to the generator (default 5)")
    p.add_argument("--generator", default="extractive", help="extractive (offline), anthropic[:model], openai:<model>")
    p.add_argument("--gate", type=float, help="answer not_found below this top retrieval score (see calibrate)")
    p.add_argument("--candidates", type=_int_list, help="with --rerank: shortlist size (default 50)")
    p.add_argument("--log", help="append the answer to this telemetry log (default with --store: STORE/telemetry.sqlite)")
    p.add_argument("--no-log", action="store_true", dest="no_log", help="do not log the answer")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_answer)

    p = sub.add_parser("serve", help="HTTP server over an index store")
    p.add_argument("--store", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--generator", default="extractive")
    p.add_argument("--gate", type=float)
    p.add_argument("--log", help="telemetry log (default STORE/telemetry.sqlite)")
    p.add_argument("--no-log", action="store_true", dest="no_log", help="do not log answers")
    p.add_argument("--api-key-env", dest="api_key_env", default="RAGTUNE_API_KEY",
                   help="environment variable holding the API key clients must send as X-API-Key (unset: no key)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("gaps", help="cluster the questions answered 'not found': what the corpus is missing")
    p.add_argument("--log", required=True)
    p.add_argument("--since", help="only answers this recent, e.g. 7d, 12h")
    p.add_argument("--store", help="show the nearest existing anchors from this store")
    p.add_argument("--embedder", default="minilm")
    p.add_argument("--distance", type=float, default=0.5, help="cosine distance that joins clusters (default 0.5)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gaps)

    lg = sub.add_parser("log", help="telemetry log tools")
    lsub = lg.add_subparsers(dest="log_command", required=True)
    p = lsub.add_parser("export", help="write the telemetry log as JSON Lines")
    p.add_argument("--log", required=True)
    p.add_argument("--since")
    p.add_argument("--out", help="file to write (default: standard output)")
    p.set_defaults(func=cmd_log_export)

    p = sub.add_parser("calibrate", help="pick the abstention threshold from a golden set")
    _add_pipeline_args(p)
    p.add_argument("--golden", required=True)
    p.add_argument("--split", default=None)
    p.add_argument("-k", type=int, default=5, help="contexts an answer would use (default 5)")
    p.add_argument("--candidates", type=_int_list, help="with --rerank: shortlist size (default 50)")
    p.add_argument("--json", metavar="FILE", help="write the calibration and its curve as JSON")
    p.set_defaults(func=cmd_calibrate)

    ix = sub.add_parser("index", help="build and operate a versioned index store")
    isub = ix.add_subparsers(dest="index_command", required=True)
    p = isub.add_parser("build", help="build a new immutable version")
    p.add_argument("--store", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--config", help="TOML/YAML with eval flag names (chunker, size, retriever, embedder, ...)")
    _add_chunker_args(p)
    p.add_argument("--retriever", choices=RETRIEVERS, default=None)
    p.add_argument("--k1", type=float)
    p.add_argument("--b", type=float)
    p.add_argument("--rrf-k", type=int, dest="rrf_k")
    p.add_argument("--fusion-depth", type=int, dest="depth_fuse")
    p.add_argument("--weights", type=_float_list)
    p.add_argument("--ann", action="store_true", default=None)
    p.add_argument("--promote", action="store_true", help="make it current (the first version always is)")
    p = isub.add_parser("refresh", help="new version re-chunking and re-embedding only changed documents")
    p.add_argument("--store", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--no-promote", action="store_true", dest="no_promote")
    p = isub.add_parser("list", help="list versions (* = current)")
    p.add_argument("--store", required=True)
    p.add_argument("--json", action="store_true")
    p = isub.add_parser("rollback", help="back to the previous promoted version")
    p.add_argument("--store", required=True)
    p = isub.add_parser("show", help="a version's manifest")
    p.add_argument("--store", required=True)
    p.add_argument("version", nargs="?")
    p = isub.add_parser("diff", help="documents and configuration changed between two versions")
    p.add_argument("--store", required=True)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--json", action="store_true")
    p = isub.add_parser("promote", help="make a version current (atomically)")
    p.add_argument("--store", required=True)
    p.add_argument("version")
    p = isub.add_parser("gc", help="delete old versions")
    p.add_argument("--store", required=True)
    p.add_argument("--keep", type=int, required=True)
    p = isub.add_parser("migrate", help="blue/green: new embedder, evaluated, promoted only if not worse")
    p.add_argument("--store", required=True)
    p.add_argument("--embedder", required=True)
    p.add_argument("--golden", required=True)
    p.add_argument("--split", default=None)
    p.add_argument("--max-drop", type=float, default=0.01, dest="max_drop")
    p.add_argument("--metric", default="recall@10")
    ix.set_defaults(func=cmd_index)

    p = sub.add_parser("sweep", help="run a grid of chunking x retrieval configurations")
    p.add_argument("--corpus", required=True)
    p.add_argument("--golden", required=True)
    p.add_argument("--split", default=None)
    p.add_argument("--grid", required=True, help="grid file (.toml or .yaml)")
    p.add_argument("--out", required=True, help="output folder: runs/, results.json, report.html (rerun to resume)")
    p.add_argument("--metric", help="rank and test on this metric (overrides the grid file), e.g. recall@10, mrr, ndcg@10")
    p.add_argument("--top", type=int, default=None, help="rows of the ranked table to print (default all)")
    p.add_argument("--dry-run", action="store_true", help="validate and list the configurations, run nothing")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("compare", help="compare two eval or sweep results question by question")
    p.add_argument("a", help="baseline: eval --json file, sweep folder or results.json")
    p.add_argument("b", help="candidate: same kinds")
    p.add_argument("--metric", default="recall@10")
    p.add_argument("--config-a", dest="config_a", help="sweep configuration key for A (default: the top-ranked)")
    p.add_argument("--config-b", dest="config_b", help="sweep configuration key for B (default: the top-ranked)")
    p.add_argument("--test", choices=["randomization", "bootstrap"], default="randomization")
    p.add_argument("--samples", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("chunk", help="chunk a corpus and show what came out")
    p.add_argument("--corpus", required=True)
    _add_chunker_args(p)
    p.add_argument("--samples", type=int, default=3, help="sample chunks to print (default 3)")
    p.add_argument("--json", metavar="FILE", help="write one JSON record per chunk (JSON Lines)")
    p.set_defaults(func=cmd_chunk)

    p = sub.add_parser("search", help="search a corpus")
    _add_pipeline_args(p)
    p.add_argument("query")
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--candidates", type=_int_list, help="with --rerank: shortlist size (default 50)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_search)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except RagtuneError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into head and closed early
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
