"""Sampled judgments, validated by simulation (issue 40, item 3): do the 95% intervals cover the truth?

    python bench/sampled.py --out out/bench-sampled \\
        docs:docs/golden.jsonl \\
        fastapi:../shared/datasets/fastapi_docs/md/docs/en/docs:bench/golden/fastapi.jsonl

For each set (NAME:CORPUS:GOLDEN, or docs:GOLDEN for ragtune's own docs folder): the first ``--questions`` (20)
answerable questions; the top 10 of every configuration of the demo grid (``examples/demo-grid.toml``: its grid
and its baseline) pooled with :func:`ragtune.judgments.pool.pool_runs` (depth 10, the golden set's own judgments
excluded, so the holes are what nobody judged).

The truth: nobody judged every hole, so a model labels them all, and its labels serve as the truth of the
simulation (not as relevance a person would give): all-MiniLM-L6-v2 (int8 ONNX, the bundled ``minilm`` embedder)
cosine between the question and the section's text, relevant when at least ``--threshold`` (0.5). The golden
set's own relevant anchors stay relevant.

Then the truth is hidden: for each sample share (10%, 25%, 50% of the holes) and ``--draws`` seeds (200), a pool
sample is drawn (:func:`ragtune.judgments.sample.draw_sample`), only the drawn holes are judged (with the truth),
every configuration is scored on that golden set, and :func:`ragtune.judgments.estimate.estimate_metrics` gives
recall@k and precision@k with 95% intervals. Reported per set and share: how often the interval covers the
configuration's figure under full judgments (over draws x configurations x metrics), the mean interval width,
and the width of the worst/best bounds eval gives from the same judgments (recall: judged-only to every unjudged
hit relevant; precision: the same, from the unjudged share of the top k).

With ``--demo GOLDEN`` it also counts the ``~`` marks of the demo sweep (every configuration of ``--grid`` over
ragtune's docs folder, every question of GOLDEN, scored as ``ragtune sweep`` scores them but untimed): the depth-10
pool of the sweep's runs is labelled by the same model, and at each sample size (none, each ``--shares``, every
hole) ``--demo-draws`` (5) samples are drawn, their holes judged with the model's labels, every configuration
scored again, and :meth:`ragtune.sweep.SweepResult.unsettled` given the judged sample (``sweep --pool-sample``)::

    python bench/sampled.py --out out/bench-sampled --demo docs/golden.jsonl

(``--demo-questions 20``: the first 20 answerable questions only, the coverage simulation's docs set.) The holes
of an unanswerable question are judged not relevant whatever the model says: nothing answers it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

KS = (5, 10)


def _sets(specs: list[str]) -> list[tuple[str, str, str]]:
    out = []
    for spec in specs:
        parts = spec.split(":")
        if len(parts) == 2:
            out.append((parts[0], "docs", parts[1]))
        elif len(parts) == 3:
            out.append((parts[0], parts[1], parts[2]))
        else:
            raise SystemExit(f"{spec}: expected NAME:CORPUS:GOLDEN or NAME:GOLDEN")
    return out


def _rankings(corpus, golden, specs, folder: Path, depth: int = 10):
    """Configuration label -> question id -> Ranking (top ``depth``), and one eval result file per configuration."""
    from ragtune.evaluate.evaluate import evaluate_rankings
    from ragtune.paths import default_cache_dir
    from ragtune.pipeline import Resources, build_pipeline

    folder.mkdir(parents=True, exist_ok=True)
    resources = Resources(cache_dir=default_cache_dir())
    out = {}
    for n, spec in enumerate(specs):
        pipeline = build_pipeline(corpus, spec, resources=resources)
        rankings = {item.id: pipeline.retriever.search(item.q, k=depth) for item in golden}
        out[spec.label] = rankings
        evaluate_rankings(rankings, golden, corpus, ks=KS).to_json(folder / f"c{n:02d}.json")
    return out


def _truth(corpus, golden, pool, threshold: float):
    """Question id -> hole anchor -> 1.0 / 0.0: the model's labels of every hole."""
    from ragtune.embed import get_embedder

    emb = get_embedder("minilm")
    labels = {}
    for q in pool.questions:
        if not q.holes:
            labels[q.id] = {}
            continue
        texts = []
        for h in q.holes:
            span = corpus.resolve(h.anchor)
            doc = corpus[span.doc_id]
            end = span.section.own_end if span.section is not None else span.end
            texts.append((h.title + "\n" + doc.text[span.start:end])[:2000])
        qv = np.asarray(emb.embed_queries([q.q]))[0]
        dv = np.asarray(emb.embed(texts))
        cos = dv @ qv / (np.linalg.norm(dv, axis=1) * np.linalg.norm(qv) + 1e-12)
        labels[q.id] = {h.anchor: float(c >= threshold) for h, c in zip(q.holes, cos)}
    return labels


def _judged(golden, labels):
    """The golden set with the holes in ``labels`` (question -> anchor -> 0/1) judged."""
    from ragtune.golden import GoldenSet

    items = []
    for item in golden:
        mine = labels.get(item.id, {})
        relevant = {**item.relevant, **{a: 1.0 for a, y in mine.items() if y}}
        judged = {**item.judged, **{a: float(y) for a, y in mine.items()}}
        items.append(dataclasses.replace(item, relevant=relevant, judged=judged))
    return GoldenSet(items)


def _precision_best(result, k: int) -> float:
    """precision@k if every unjudged hit in the top k were relevant."""
    qs = [q for q in result.questions if q.answerable]
    return float(np.mean([sum(r["relevant"] or not r["judged"] for r in q.retrieved[:k]) / k for q in qs]))


def simulate(name, corpus_path, golden_path, args, out: Path) -> dict:
    import ragtune as rt
    from ragtune.evaluate.evaluate import evaluate_rankings
    from ragtune.golden import GoldenSet
    from ragtune.judgments.estimate import estimate_metrics
    from ragtune.judgments.pool import pool_runs
    from ragtune.judgments.sample import draw_sample
    from ragtune.sweep.grid import load_grid

    corpus = rt.load_corpus(corpus_path)
    golden = GoldenSet([i for i in rt.load_golden(golden_path) if i.answerable][: args.questions])
    grid = load_grid(args.grid).resolved(corpus.kind)
    t0 = time.perf_counter()
    saved = out / name / f"setup-{args.configs}-{args.threshold}.pickle"  # a rerun skips retrieval and labelling
    if saved.is_file():
        runs, holes, labels = pickle.loads(saved.read_bytes())
        if any(len(h) < 3 for hs in holes.values() for h in hs):  # saved before holes kept their runs
            pool = pool_runs(sorted((out / name / "runs").glob("*.json")), golden, corpus, depth=10)
            holes = {q.id: [(h.anchor, h.best_rank, len(h.found_by)) for h in q.holes] for q in pool.questions}
    else:
        runs = _rankings(corpus, golden, grid.all_specs[: args.configs or None], out / name / "runs")
        pool = pool_runs(sorted((out / name / "runs").glob("*.json")), golden, corpus, depth=10)
        holes = {q.id: [(h.anchor, h.best_rank, len(h.found_by)) for h in q.holes] for q in pool.questions}
        labels = _truth(corpus, golden, pool, args.threshold)
        saved.write_bytes(pickle.dumps((runs, holes, labels)))
    n_holes = sum(len(h) for h in holes.values())
    relevant = sum(sum(v.values()) for v in labels.values())
    full = _judged(golden, labels)
    truth = {c: evaluate_rankings(r, full, corpus, ks=KS).metrics for c, r in runs.items()}
    per_q = sorted(int(sum(labels.get(q, {}).values())) for q in holes)
    print(f"{name}: {len(runs)} configurations, {len(golden)} questions, {n_holes} holes, {relevant:.0f} relevant by "
          f"the model ({time.perf_counter() - t0:.0f} s); relevant holes a question: {per_q}", file=sys.stderr)
    rows = {}
    for share in [float(x) for x in args.shares.split(",")]:
        n = max(int(round(share * n_holes)), 1)
        cover: dict[str, list[bool]] = {}
        width: dict[str, list[float]] = {}
        bounds: dict[str, list[float]] = {}
        inside: dict[str, list[bool]] = {}  # how often eval's worst..best holds the truth
        error: dict[str, list[float]] = {}  # estimate - truth
        t1 = time.perf_counter()
        for seed in range(args.draws):
            sample = draw_sample(holes, n, seed=seed)
            drawn = {}
            for h in sample.holes:
                if h.sampled:
                    drawn.setdefault(h.question, {})[h.anchor] = labels[h.question][h.anchor]
            judged = _judged(golden, drawn)
            for c, r in list(runs.items())[:: args.every]:
                res = evaluate_rankings(r, judged, corpus, ks=KS)
                est = estimate_metrics(res, judged, sample, corpus=corpus)
                for i in est.intervals:
                    cover.setdefault(i.metric, []).append(i.low - 1e-9 <= truth[c][i.metric] <= i.high + 1e-9)
                    width.setdefault(i.metric, []).append(i.high - i.low)
                    error.setdefault(i.metric, []).append(i.estimate - truth[c][i.metric])
                    k = int(i.metric.split("@")[1])
                    best = res.metrics[f"recall_upper@{k}"] if i.metric.startswith("recall") else _precision_best(res, k)
                    bounds.setdefault(i.metric, []).append(best - res.metrics[i.metric])
                    inside.setdefault(i.metric, []).append(
                        res.metrics[i.metric] - 1e-9 <= truth[c][i.metric] <= best + 1e-9)
        rows[f"{share:.0%}"] = {
            "n": n,
            "coverage": {m: float(np.mean(v)) for m, v in cover.items()},
            "width": {m: float(np.mean(v)) for m, v in width.items()},
            "bounds_width": {m: float(np.mean(v)) for m, v in bounds.items()},
            "bounds_coverage": {m: float(np.mean(v)) for m, v in inside.items()},
            "mean_error": {m: float(np.mean(v)) for m, v in error.items()},
            "rms_error": {m: float(np.sqrt(np.mean(np.square(v)))) for m, v in error.items()},
            "coverage_all": float(np.mean([x for v in cover.values() for x in v])),
            "seconds": time.perf_counter() - t1,
        }
        print(f"{name} {share:.0%} (n={n}): coverage {rows[f'{share:.0%}']['coverage_all']:.3f} "
              f"{json.dumps(rows[f'{share:.0%}']['coverage'])}", file=sys.stderr)
    return {"set": name, "configurations": len(runs), "questions": len(golden), "holes": n_holes,
            "relevant_holes": relevant, "threshold": args.threshold, "draws": args.draws, "shares": rows}


def _records(grid, specs, runs, golden, corpus) -> list[dict]:
    """Sweep run records (what ``runs/<key>.json`` holds, untimed) of every configuration scored on ``golden``."""
    from ragtune.evaluate.evaluate import evaluate_rankings

    return [{"key": spec.key, "label": spec.label, "spec": spec.to_dict(), "stats": {},
             "result": evaluate_rankings(runs[spec.label], golden, corpus, ks=grid.ks).to_dict()} for spec in specs]


def demo_marks(golden_path: str, args, out: Path) -> dict:
    """How many ``~`` marks the demo sweep keeps (every configuration of ``--grid`` over ragtune's docs, every
    question of ``golden_path``) when a pool sample's drawn holes are judged with the model's labels, at each
    sample share (0: no sample, the depth estimate; 1: every hole of the depth-10 pool judged)."""
    import ragtune as rt
    from ragtune.judgments.pool import pool_runs
    from ragtune.judgments.sample import draw_sample
    from ragtune.sweep import summarize
    from ragtune.sweep.grid import load_grid

    from ragtune.golden import GoldenSet

    corpus = rt.load_corpus("docs")
    golden = rt.load_golden(golden_path)
    if args.demo_questions:  # the first N answerable questions (the coverage simulation's docs set with N = 20)
        golden = GoldenSet([i for i in golden if i.answerable][: args.demo_questions])
    grid = load_grid(args.grid).resolved(corpus.kind)
    specs = grid.all_specs
    saved = out / "demo" / f"setup-{args.threshold}-{args.demo_questions}.pickle"
    if saved.is_file():
        runs, holes, labels = pickle.loads(saved.read_bytes())
        if any(len(h) < 3 for hs in holes.values() for h in hs):  # saved before holes kept their runs
            pool = pool_runs(sorted((out / "demo" / "runs").glob("*.json")), golden, corpus, depth=10)
            holes = {q.id: [(h.anchor, h.best_rank, len(h.found_by)) for h in q.holes] for q in pool.questions}
    else:
        runs = _rankings(corpus, golden, specs, out / "demo" / "runs", depth=max(grid.ks))
        pool = pool_runs(sorted((out / "demo" / "runs").glob("*.json")), golden, corpus, depth=10)
        holes = {q.id: [(h.anchor, h.best_rank, len(h.found_by)) for h in q.holes] for q in pool.questions}
        labels = _truth(corpus, golden, pool, args.threshold)
        saved.write_bytes(pickle.dumps((runs, holes, labels)))
    unanswerable = {i.id for i in golden if not i.answerable}  # nothing answers them: every hole judged not relevant
    labels = {q: {a: 0.0 if q in unanswerable else y for a, y in v.items()} for q, v in labels.items()}
    n_holes = sum(len(h) for h in holes.values())
    rows = []
    for share in [0.0, *(float(x) for x in args.shares.split(",")), 1.0]:
        n = int(round(share * n_holes))
        marks, chosen = [], set()
        t1 = time.perf_counter()
        for seed in range(1 if share in (0.0, 1.0) else args.demo_draws):
            sample = draw_sample(holes, n, seed=seed) if n else None
            drawn: dict[str, dict[str, float]] = {}
            for h in sample.holes if sample is not None else ():
                if h.sampled:
                    drawn.setdefault(h.question, {})[h.anchor] = labels[h.question][h.anchor]
            judged = _judged(golden, drawn)
            result = summarize(grid, _records(grid, specs, runs, judged, corpus),
                               judged=None if sample is None else (sample, judged))
            marks.append(len(result.unsettled()))
            chosen.add(result.recommended()["label"])
        rows.append({"share": share, "n": n, "draws": len(marks), "marks": marks, "mean": float(np.mean(marks)),
                     "recommended": sorted(chosen), "seconds": time.perf_counter() - t1})
        print(f"demo {share:.0%} (n={n}): ~ on {marks} of {len(specs)}; recommended {sorted(chosen)}",
              file=sys.stderr)
    return {"configurations": len(specs), "questions": sum(1 for i in golden if i.answerable), "holes": n_holes,
            "relevant_holes": sum(sum(v.values()) for v in labels.values()), "rows": rows}


def demo_table(demo: dict) -> str:
    lines = [f"| holes judged | draws | ~ marks of {demo['configurations']} (mean; per draw) | recommended |",
             "|---|---|---|---|"]
    for r in demo["rows"]:
        judged = ("none (depth estimate)" if r["share"] == 0 else "all" if r["share"] == 1
                  else f"{r['share']:.0%} ({r['n']} of {demo['holes']})")
        lines.append(f"| {judged} | {r['draws']} | {r['mean']:.1f}; {', '.join(map(str, r['marks']))} | "
                     f"{', '.join(r['recommended'])} |")
    return "\n".join(lines)


def table(results: list[dict]) -> str:
    lines = ["| set | sample | holes judged | coverage of the 95% interval (recall@5, recall@10, precision@5, "
             "precision@10) | all | mean width recall@10 / precision@10 | worst..best width recall@10 / "
             "precision@10 | worst..best holds the truth, recall@10 / precision@10 | recall@10 estimate - truth: mean, "
             "root mean square |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for share, row in r["shares"].items():
            c, w, b, h = row["coverage"], row["width"], row["bounds_width"], row["bounds_coverage"]
            e, rms = row["mean_error"]["recall@10"], row["rms_error"]["recall@10"]
            lines.append(f"| {r['set']} | {share} | {row['n']} of {r['holes']} | "
                         f"{c['recall@5']:.3f}, {c['recall@10']:.3f}, {c['precision@5']:.3f}, {c['precision@10']:.3f} "
                         f"| {row['coverage_all']:.3f} | {w['recall@10']:.3f} / {w['precision@10']:.3f} | "
                         f"{b['recall@10']:.3f} / {b['precision@10']:.3f} | {h['recall@10']:.3f} / "
                         f"{h['precision@10']:.3f} | {e:+.3f}, {rms:.3f} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sets", nargs="*", help="NAME:CORPUS:GOLDEN (or docs:GOLDEN for the docs folder)")
    p.add_argument("--out", default="out/bench-sampled")
    p.add_argument("--grid", default="examples/demo-grid.toml")
    p.add_argument("--questions", type=int, default=20)
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--configs", type=int, default=0, help="only the first N configurations (0: all; for a quick try)")
    p.add_argument("--every", type=int, default=1, help="score every Nth configuration in the draws (all are pooled)")
    p.add_argument("--shares", default="0.1,0.25,0.5", help="sample shares of the holes, comma-separated")
    p.add_argument("--demo", metavar="GOLDEN", help="also count the ~ marks of the demo sweep (--grid over the docs "
                                                     "folder, every question of GOLDEN) at each sample share")
    p.add_argument("--demo-draws", type=int, default=5, help="samples drawn per share for the ~ count")
    p.add_argument("--demo-questions", type=int, default=0, help="only the first N answerable questions (0: all)")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = [simulate(name, c, g, args, out) for name, c, g in _sets(args.sets)]
    demo = demo_marks(args.demo, args, out) if args.demo else None
    (out / "results.json").write_text(json.dumps({"sets": results, "demo": demo}, indent=2))
    print(table(results))
    if demo is not None:
        print("\n" + demo_table(demo))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
