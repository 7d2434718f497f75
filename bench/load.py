"""Load test of `ragtune serve` on loopback: N concurrent clients for a bounded time.

    python bench/load.py --corpus ../shared/datasets/fastapi_docs/md/docs/en/docs --clients 32 --seconds 20

Builds a store (BM25 over markdown chunks by default), starts the server in a subprocess on 127.0.0.1, then
runs ``--clients`` threads, each sending /search and /answer requests (alternating, questions from a golden
set or built-in ones) until ``--seconds`` have passed. Reports throughput, p50/p95/p99 latency and errors per
endpoint. Traffic goes to 127.0.0.1 only and stops by itself.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

QUESTIONS = ["How do I declare a query parameter with a default value?", "What is dependency injection?",
             "How do I return a custom status code?", "How can I upload files?", "How do I run tests?",
             "What does response_model do?", "How do I add CORS middleware?", "Is there a GraphQL guide?"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--golden", help="take the questions from this golden set")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--retriever", default="bm25", choices=["bm25", "dense", "hybrid"])
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    import ragtune as rt
    from ragtune.store import IndexConfig, IndexStore, build_version

    questions = [i.q for i in rt.load_golden(args.golden)] if args.golden else QUESTIONS
    work = Path(tempfile.mkdtemp(prefix="ragtune-load-"))
    store = IndexStore(work / "store")
    build_version(store, rt.load_corpus(args.corpus),
                  IndexConfig.from_flags({"chunker": "markdown", "size": 256, "retriever": args.retriever}))
    port = free_port()
    env = {**os.environ, "RAGTUNE_CACHE_DIR": str(work / "cache")}
    server = subprocess.Popen([sys.executable, "-m", "ragtune", "serve", "--store", str(store.root), "--port", str(port)],
                              env=env, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url + "/health", timeout=1).read()
            break
        except OSError:
            time.sleep(0.2)
    else:
        server.kill()
        raise SystemExit("server did not start: " + (server.stderr.read() if server.stderr else ""))

    results: dict[str, list[float]] = {"/search": [], "/answer": []}
    errors: dict[str, int] = {"/search": 0, "/answer": 0}
    lock = threading.Lock()
    end = time.time() + args.seconds

    def client(cid: int) -> None:
        i = cid
        while time.time() < end:
            path = "/search" if i % 2 == 0 else "/answer"
            body = json.dumps({"query": questions[i % len(questions)], "k": 5}).encode()
            req = urllib.request.Request(url + path, data=body, headers={"Content-Type": "application/json"})
            t0 = time.perf_counter()
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    r.read()
                    ok = r.status == 200
            except (urllib.error.URLError, OSError):
                ok = False
            dt = time.perf_counter() - t0
            with lock:
                if ok:
                    results[path].append(dt)
                else:
                    errors[path] += 1
            i += 1

    threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    server.terminate()
    server.wait(10)

    figures: dict = {"clients": args.clients, "seconds": wall, "retriever": args.retriever}
    for path, lat in results.items():
        a = np.asarray(lat) * 1000
        figures[path] = {"requests": len(lat), "errors": errors[path], "per_s": len(lat) / wall,
                         "p50_ms": float(np.percentile(a, 50)) if a.size else None,
                         "p95_ms": float(np.percentile(a, 95)) if a.size else None,
                         "p99_ms": float(np.percentile(a, 99)) if a.size else None}
    figures["total_per_s"] = sum(len(v) for v in results.values()) / wall
    figures["errors"] = sum(errors.values())
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0 if figures["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
