"""The same rankings measured four ways: native, a Python callable, HTTP (`ragtune serve`) and a TREC run file.

    python bench/external.py                                   # ragtune's own docs and golden set
    python bench/external.py --corpus docs --golden docs/golden.jsonl --chunker fixed --size 64 --json out.json

Builds a BM25 store over ``--corpus`` in a temporary folder, then evaluates its rankings on ``--golden``:

1. native:   ``run_eval`` on the store's pipeline (what ``ragtune eval --store`` does);
2. callable: ``ragtune.evaluate_retriever`` over a function returning the pipeline's hits as
             ``{"doc_id", "start", "end", "score"}`` dicts;
3. HTTP:     ``ragtune eval --endpoint http://127.0.0.1:PORT/search`` against ``ragtune serve --store`` started
             in a subprocess (real uvicorn, loopback only), one question in flight at a time;
4. TREC:     ``ragtune export --format trec --ids span`` of the native result, then ``ragtune eval --run``.

Every mode asks for ``--depth`` hits and the native result keeps them all (its largest k is the depth), so the
exported run holds the same rankings and MRR sees as deep in every mode. Prints recall@5/10/20, MRR and
nDCG@10 per mode, whether they are identical (to 1e-12), and per-question latency medians: the HTTP mode's
overhead is its median minus the native median (loopback request, JSON both ways, the server's own work).
The corpus and golden set are copied into a temporary folder first (a snapshot every mode reads), and the
folder is removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

METRICS = ("recall@5", "recall@10", "recall@20", "mrr", "ndcg@10")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(argv: list[str]) -> None:
    """Run a ragtune command in this process, its report discarded; a non-zero exit stops the benchmark."""
    from ragtune.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    if code != 0:
        raise SystemExit(f"ragtune {' '.join(argv)} exited {code}")


def wait_for(url: str, server: subprocess.Popen, err: Path, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if server.poll() is not None:
            raise SystemExit("ragtune serve exited: " + err.read_text()[-2000:])
        try:
            urllib.request.urlopen(url + "/health", timeout=1).read()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("ragtune serve did not start: " + err.read_text()[-2000:])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="docs")
    ap.add_argument("--golden", default="docs/golden.jsonl")
    ap.add_argument("--chunker", default="auto", help="chunker of the store (default auto: sections for markdown)")
    ap.add_argument("--size", type=int, help="chunk size for fixed/recursive/markdown")
    ap.add_argument("--depth", type=int, default=100, help="hits asked for per question (default 100)")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ragtune-external-"))
    try:
        return run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, work: Path) -> int:
    import numpy as np

    import ragtune as rt
    from ragtune.pipeline import run_eval
    from ragtune.pipeline import PipelineConfig
    from ragtune.store import IndexStore, build_version, load_pipeline

    flags = {"chunker": args.chunker, "retriever": "bm25", **({"size": args.size} if args.size else {})}
    # a snapshot: every mode must see the same documents even if someone edits them during the run
    corpus_dir, golden_file = work / "corpus", work / Path(args.golden).name
    shutil.copytree(args.corpus, corpus_dir) if Path(args.corpus).is_dir() else shutil.copy(args.corpus, corpus_dir)
    shutil.copy(args.golden, golden_file)
    source = (args.corpus, args.golden)
    args.corpus, args.golden = str(corpus_dir), str(golden_file)
    store = IndexStore(work / "store")
    build_version(store, rt.load_corpus(args.corpus), PipelineConfig.from_flags(flags))
    pipeline = load_pipeline(store)
    golden = rt.load_golden(args.golden)
    ks = (5, 10, 20, args.depth)
    k_flag = ",".join(map(str, ks))
    results: dict[str, dict] = {}

    # 1. native
    native = run_eval(pipeline, golden, ks=ks, depth=args.depth)
    results["native"] = native.to_dict()

    # 2. a Python callable returning spans
    def search(query: str, k: int) -> list[dict]:
        return [{"doc_id": h.chunk.doc_id, "start": h.chunk.start, "end": h.chunk.end, "score": h.score}
                for h in pipeline.retriever.search(query, k=k).hits]

    results["callable"] = rt.evaluate_retriever(search, golden, corpus=pipeline.corpus, ks=ks,
                                                depth=args.depth).to_dict()

    # 3. HTTP: ragtune serve in a subprocess, ragtune eval --endpoint against it
    port = free_port()
    env = {**os.environ, "RAGTUNE_CACHE_DIR": str(work / "cache")}
    env.pop("RAGTUNE_API_KEY", None)
    err = work / "serve.err"
    with open(err, "w") as err_f:
        server = subprocess.Popen([sys.executable, "-m", "ragtune", "serve", "--store", str(store.root), "--port",
                                   str(port), "--no-log"], env=env, stderr=err_f, stdout=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_for(url, server, err)
            cli(["eval", "--endpoint", url + "/search", "--golden", args.golden, "--corpus", args.corpus, "-k", k_flag,
                 "--depth", str(args.depth), "--out", str(work / "http.json")])
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
    results["http"] = json.loads((work / "http.json").read_text())

    # 4. TREC: export the native result (one line per chunk span), score the file with eval --run
    (work / "native.json").write_text(native.to_json())
    cli(["export", "--format", "trec", "--result", str(work / "native.json"), "--ids", "span", "--out",
         str(work / "native")])
    cli(["eval", "--run", str(work / "native.run"), "--golden", args.golden, "--corpus", args.corpus, "-k", k_flag,
         "--out", str(work / "trec.json")])
    results["trec"] = json.loads((work / "trec.json").read_text())

    # the table
    ref = results["native"]
    rows = []
    for mode, r in results.items():
        same_questions = all(
            abs((a["scores"].get(m) or 0) - (b["scores"].get(m) or 0)) <= 1e-12
            for a, b in zip(ref["questions"], r["questions"]) for m in METRICS if a["answerable"])
        rows.append({"mode": mode, **{m: r["metrics"][m] for m in METRICS},
                     "identical": same_questions and len(r["questions"]) == len(ref["questions"]),
                     "p50_ms": (r.get("latency_ms") or {}).get("p50"),
                     "p95_ms": (r.get("latency_ms") or {}).get("p95")})
    native_p50 = rows[0]["p50_ms"]
    for row in rows:
        row["overhead_ms"] = row["p50_ms"] - native_p50 if row["p50_ms"] is not None else None

    n = sum(q["answerable"] for q in ref["questions"])
    print(f"{source[0]} / {source[1]}: {len(ref['questions'])} questions ({n} answerable), BM25 store "
          f"({', '.join(f'{k}={v}' for k, v in flags.items())}), depth {args.depth}")
    head = ["mode", *METRICS, "same per question", "p50 ms", "p95 ms", "overhead p50 ms"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        lat = [f"{row[c]:.2f}" if row[c] is not None else "-" for c in ("p50_ms", "p95_ms", "overhead_ms")]
        print("| " + " | ".join([row["mode"], *(f"{row[m]:.4f}" for m in METRICS),
                                 "yes" if row["identical"] else "NO", *lat]) + " |")
    identical = all(r["identical"] for r in rows)
    spread = {m: float(np.ptp([r[m] for r in rows])) for m in METRICS}
    print(f"identical metrics in all four modes: {'yes' if identical else 'NO'} (largest spread of a mean: "
          f"{max(spread.values()):.2e})")
    http = next(r for r in rows if r["mode"] == "http")
    print(f"HTTP overhead per question: {http['overhead_ms']:.2f} ms at the median "
          f"(native {native_p50:.2f} ms, HTTP {http['p50_ms']:.2f} ms)")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "identical": identical, "flags": flags,
                                               "questions": len(ref["questions"]), "answerable": n}, indent=2))
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
