"""Load test of `ragtune serve` on loopback: N concurrent clients for a bounded time.

    python bench/load.py --corpus ../shared/datasets/fastapi_docs/md/docs/en/docs --clients 32 --seconds 20
    python bench/load.py --corpus ... --clients 32 --seconds 40 --lock-log 30   # fault: the log locked 30 s
    python bench/load.py --corpus ... --clients 32 --seconds 20 --engine milvus   # the index in Milvus Lite
    python bench/load.py --corpus ... --retriever dense --engine milvus --milvus-uri http://127.0.0.1:19530  # a server
    python bench/load.py --corpus ... --clients 32 --seconds 20 --workers 2   # two server processes
    python bench/load.py --corpus ... --clients 32 --seconds 30 --idle-sockets 1100   # a slowloris, 1,024 files
    python bench/load.py --corpus ... --golden G --retriever dense --migrate e5-small   # blue/green under load

With ``--engine milvus`` the store's version lives in a ``milvus-lite server`` started on loopback for the run
(one Lite file serves several processes only through its server): the builder and the server reach it by URI.

Builds a store (BM25 over markdown chunks by default) in a temporary folder, starts the server in a
subprocess on 127.0.0.1, then runs ``--clients`` threads, each sending /search and /answer requests
(alternating, questions from a golden set or built-in ones) until ``--seconds`` have passed, while one more
thread times GET /health every 100 ms. Reports throughput, p50/p95/p99 latency and errors per endpoint, the
/health latencies, and the server's telemetry counters. With ``--idle-sockets N``, N more connections are
opened before the clients start and held for the whole run, half of them sending part of a request head and
never finishing it, each one the server closes opened again, up to ``--idle-reopen`` a second (a slowloris
that keeps up the pressure), against
a server whose soft open-file limit is ``--server-nofile`` (1,024 by default in this mode): the figures add how
many were held, how many reopened, the most descriptors the server held, and the bytes it wrote to stderr;
the run fails unless every search succeeded and /health stayed under 100 ms at p95. With ``--lock-log S``,
another connection holds an
exclusive lock on the telemetry log for S seconds from 2 s into the run (as a retention DELETE would), and
the /health and /search figures during the lock are reported apart. With ``--migrate EMBEDDER`` (a dense or
hybrid store, ``--golden`` for the evaluation), a blue/green migration runs while the clients send requests:
from 2 s into the run, ``migrate`` builds a green version with EMBEDDER beside the blue one, evaluates both and
promotes green (``--max-drop``, 1.0 by default, so that the switch happens whatever the figures); once an
answer names green, it is served ``--seconds`` more, then the store is rolled back to blue, and once an answer
names blue again, that is served ``--seconds`` more. Every /search answer is then
checked against its version: its hits (ids and scores) must be those the version it names gives for that
question, searched afterwards through ``load_pipeline`` (an answer naming one version with hits of another
is a mixed answer); the run fails on any failed request or mixed answer, or if one version was never served.
Traffic goes to 127.0.0.1 only and stops by itself; the temporary folder is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import select
import shutil
import socket
import sqlite3
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
    ap.add_argument("--lock-log", type=float, default=0, dest="lock_log", metavar="SECONDS",
                    help="hold an exclusive lock on the telemetry log this long, from 2 s into the run")
    ap.add_argument("--engine", default="embedded", choices=["embedded", "milvus"])
    ap.add_argument("--milvus-uri", dest="milvus_uri", help="with --engine milvus: a running Milvus server's URL "
                    "(e.g. the `milvus` package's standalone server) instead of a milvus-lite server started here")
    ap.add_argument("--workers", type=int, default=1, help="server processes (ragtune serve --workers)")
    ap.add_argument("--idle-sockets", type=int, default=0, dest="idle_sockets", metavar="N",
                    help="hold N idle connections (half with an unfinished head) open through the run, reopening "
                         "the ones the server closes")
    ap.add_argument("--server-nofile", type=int, default=None, dest="server_nofile", metavar="N",
                    help="the server's soft open-file limit (default 1024 with --idle-sockets, else inherited)")
    ap.add_argument("--idle-reopen", type=float, default=100, dest="idle_reopen", metavar="PER_S",
                    help="with --idle-sockets, reopen at most this many closed idle sockets per second (default 100)")
    ap.add_argument("--migrate", metavar="EMBEDDER", help="migrate the store to EMBEDDER under load, then roll back "
                    "(needs --golden and a dense or hybrid --retriever)")
    ap.add_argument("--max-drop", type=float, default=1.0, dest="max_drop", help="with --migrate (default 1.0)")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.migrate and (not args.golden or args.retriever == "bm25"):
        ap.error("--migrate needs --golden (the migration's evaluation) and --retriever dense or hybrid")

    import ragtune as rt
    from ragtune.pipeline import PipelineConfig
    from ragtune.store import IndexStore, build_version

    questions = [i.q for i in rt.load_golden(args.golden)] if args.golden else QUESTIONS
    work = Path(tempfile.mkdtemp(prefix="ragtune-load-"))
    try:
        return run(args, questions, work, rt, PipelineConfig, IndexStore, build_version)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def percentiles(lat: list[float]) -> dict:
    a = np.asarray(lat) * 1000
    return {"n": int(a.size), **{f"p{q}_ms": float(np.percentile(a, q)) if a.size else None for q in (50, 95, 99)},
            "max_ms": float(a.max()) if a.size else None, "over_100ms": int((a > 100).sum())}


def milvus_server(work: Path) -> tuple[subprocess.Popen, str]:
    """A ``milvus-lite server`` on a free loopback port, and its URI once it accepts connections."""
    port = free_port()
    exe = Path(sys.executable).with_name("milvus-lite")
    proc = subprocess.Popen([str(exe), "server", "--data-dir", str(work / "milvus"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                raise SystemExit("milvus-lite server did not start")
            time.sleep(0.1)


def run(args, questions, work: Path, rt, PipelineConfig, IndexStore, build_version) -> int:
    store = IndexStore(work / "store")
    flags = {"chunker": "markdown", "size": 256, "retriever": args.retriever}
    milvus = None
    if args.engine == "milvus":
        from ragtune.engines import engine_retriever

        milvus, uri = (None, args.milvus_uri) if args.milvus_uri else milvus_server(work)
        flags.update(retriever=engine_retriever("milvus", args.retriever), milvus_uri=uri)
    try:
        t0 = time.perf_counter()
        build_version(store, rt.load_corpus(args.corpus), PipelineConfig.from_flags(flags))
        args.build_s = time.perf_counter() - t0
        args.store = store
        return serve(args, questions, work, store)
    finally:
        if milvus is not None:
            milvus.terminate()
            milvus.wait(10)


def serve(args, questions, work: Path, store) -> int:
    port = free_port()
    env = {**os.environ, "RAGTUNE_CACHE_DIR": str(work / "cache")}
    env.pop("RAGTUNE_API_KEY", None)
    log_path = store.root / "telemetry.sqlite"
    server_err = open(work / "server.err", "w+")
    nofile = args.server_nofile or (1024 if args.idle_sockets else None)

    def limit_files():  # in the server process only
        if nofile:
            _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))

    if args.idle_sockets:  # this process holds the idle sockets and the clients' connections
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = args.idle_sockets + args.clients + 512
        if soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard == resource.RLIM_INFINITY else min(want, hard),
                                                        hard))
    server = subprocess.Popen([sys.executable, "-m", "ragtune", "serve", "--store", str(store.root), "--port", str(port),
                               "--workers", str(args.workers)], env=env, stderr=server_err, text=True,
                              preexec_fn=limit_files)
    args.nofile = nofile
    try:
        return drive(args, questions, server, server_err, port, log_path)
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
        server_err.close()


def _until_served(version: str, served: list[str], limit: float = 300) -> float | None:
    """Seconds until an answer from now on names ``version`` (None: not within ``limit``)."""
    t0, seen = time.time(), len(served)
    while time.time() - t0 < limit:
        if version in served[seen:]:
            return time.time() - t0
        time.sleep(0.1)
    return None


def migrate_and_rollback(args, start: float, served: list[str]) -> dict:
    """From 2 s into the run: migrate the store to ``args.migrate`` (promoting green), serve it ``args.seconds``
    from its first answer, roll back to blue, serve that ``args.seconds`` from its first answer; when each step
    ended, in seconds from the start. ``served``: the version each answer named, in order."""
    import ragtune as rt
    from ragtune.store import migrate

    time.sleep(2)
    store, out = args.store, {"embedder": args.migrate}
    blue = store.current_id()
    t0 = time.time()
    report = migrate(store, args.migrate, rt.load_golden(args.golden), max_drop=args.max_drop, samples=1000)
    out.update(blue=blue, green=report["green"], promoted=report["promoted"], migrate_s=time.time() - t0,
               promoted_at_s=time.time() - start, comparison=report["text"])
    out["green_served_after_s"] = _until_served(report["green"], served)
    time.sleep(args.seconds)
    store.rollback()
    out["rolled_back_at_s"] = time.time() - start
    out["blue_served_after_s"] = _until_served(blue, served)
    time.sleep(args.seconds)
    return out


def check_answers(store, answers: list[dict], versions: list[str]) -> dict:
    """Each /search answer against the version it names: the same hits (ids, scores to 1e-4) as that version
    gives for the question when searched now through ``load_pipeline``; any other answer is mixed. Also how many
    of the questions get different hits from the ``versions`` (blue and green): where they do not, a mixed answer
    could not be told apart."""
    from ragtune.store import load_pipeline

    pipes, want, mixed, served = {}, {}, [], {}

    def expected(v: str, q: str) -> list[tuple[str, float]]:
        if (v, q) not in want:
            if v not in pipes:
                pipes[v] = load_pipeline(store, v)
            want[v, q] = [(h.chunk.id, h.score) for h in pipes[v].retriever.search(q, k=5).hits]
        return want[v, q]

    for a in answers:
        v, q = a["version"], a["query"]
        served[v] = served.get(v, 0) + 1
        got, w = [(h["chunk_id"], h["score"]) for h in a["hits"]], expected(v, q)
        if not (len(got) == len(w) and all(g[0] == x[0] and abs(g[1] - x[1]) <= 1e-4 for g, x in zip(got, w))):
            mixed.append({"version": v, "query": q, "got": got[:3], "want": w[:3]})
    questions = sorted({a["query"] for a in answers})
    differ = sum(1 for q in questions if len({tuple(i for i, _ in expected(v, q)) for v in versions}) > 1)
    return {"answers_checked": len(answers), "served": served, "mixed": len(mixed), "mixed_examples": mixed[:3],
            "questions": len(questions), "questions_whose_hits_differ_between_versions": differ}


def drive(args, questions, server, server_err, port: int, log_path: Path) -> int:
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url + "/health", timeout=1).read()
            break
        except OSError:
            if server.poll() is not None:
                break
            time.sleep(0.2)
    else:
        server_err.seek(0)
        raise SystemExit("server did not start: " + server_err.read()[-2000:])
    if server.poll() is not None:
        server_err.seek(0)
        raise SystemExit("server exited: " + server_err.read()[-2000:])

    results: dict[str, list[tuple[float, float]]] = {"/search": [], "/answer": [], "/health": []}  # (start, s)
    errors: dict[str, int] = {"/search": 0, "/answer": 0, "/health": 0}
    lock = threading.Lock()
    start = time.time()
    end = start + args.seconds
    window: list[float] = []  # when the log lock was held: [from, to] in time.time()
    answers: list[dict] = []  # with --migrate: every /search answer, checked against its version at the end
    served: list[str] = []  # the version each of those named
    migration: dict = {}

    def migrate_then_rollback() -> None:  # the clients run until this is done
        nonlocal end
        try:
            migration.update(migrate_and_rollback(args, start, served))
        except Exception as e:  # noqa: BLE001 - reported in the figures, and the run fails
            migration["failed"] = f"{type(e).__name__}: {e}"
        end = time.time()

    def request(path: str, body: bytes | None) -> None:
        req = urllib.request.Request(url + path, data=body, headers={"Content-Type": "application/json"})
        t0, p0 = time.time(), time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                got = r.read()
                ok = r.status == 200
                if ok and args.migrate and path == "/search":
                    answers.append(json.loads(got))
                    served.append(answers[-1]["version"])
        except (urllib.error.URLError, OSError):
            ok = False
        dt = time.perf_counter() - p0
        with lock:
            if ok:
                results[path].append((t0, dt))
            else:
                errors[path] += 1

    def client(cid: int) -> None:
        i = cid
        while time.time() < end:
            path = "/search" if i % 2 == 0 else "/answer"
            q = questions[(i // 2 if args.migrate else i) % len(questions)]  # --migrate: every question searched
            request(path, json.dumps({"query": q, "k": 5}).encode())
            i += 1

    def health() -> None:
        while time.time() < end:
            request("/health", None)
            time.sleep(0.1)

    def hold_lock() -> None:
        time.sleep(2)
        db = sqlite3.connect(str(log_path), isolation_level=None, timeout=10)
        db.execute("BEGIN EXCLUSIVE")
        window.append(time.time())
        time.sleep(args.lock_log)
        window.append(time.time())
        db.execute("COMMIT")
        db.close()

    idle = {"held_min": None, "held_max": 0, "opened": 0, "reopened": 0, "open_failed": 0, "server_fds_max": 0}
    idle_socks: list[socket.socket] = []

    def open_idle(i: int) -> socket.socket | None:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            idle["open_failed"] += 1
            return None
        if i % 2:
            try:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # a head never finished
            except OSError:
                pass
        idle["opened"] += 1
        return s

    def server_fds() -> int:
        pids, n = [server.pid], 0
        try:
            with open(f"/proc/{server.pid}/task/{server.pid}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
        for pid in pids:
            try:
                n += len(os.listdir(f"/proc/{pid}/fd"))
            except OSError:
                pass
        return n

    def hold_idle() -> None:  # keep args.idle_sockets open: reopen each one the server closes
        poller = select.poll()  # not select(): these descriptors go past FD_SETSIZE (1024)
        by_fd = {}
        for s in idle_socks:
            poller.register(s, select.POLLIN)
            by_fd[s.fileno()] = s
        while time.time() < end:
            for fd, _ in poller.poll(50):  # a 408 or the close: either way the server let it go
                s = by_fd.pop(fd, None)
                if s is not None:
                    poller.unregister(fd)
                    idle_socks.remove(s)
                    s.close()
            budget = int(args.idle_reopen * 0.05) + 1  # reopen at most --idle-reopen per second
            while len(idle_socks) < args.idle_sockets and time.time() < end and budget > 0:
                budget -= 1
                s = open_idle(idle["opened"])
                if s is None:
                    break
                idle_socks.append(s)
                poller.register(s, select.POLLIN)
                by_fd[s.fileno()] = s
                idle["reopened"] += 1
            held = len(idle_socks)
            idle["held_min"] = held if idle["held_min"] is None else min(idle["held_min"], held)
            idle["held_max"] = max(idle["held_max"], held)
            idle["server_fds_max"] = max(idle["server_fds_max"], server_fds())

    if args.idle_sockets:
        for i in range(args.idle_sockets):
            s = open_idle(i)
            if s is not None:
                idle_socks.append(s)
        idle["held_at_start"] = len(idle_socks)
        start = time.time()  # the clients' run starts now, with the sockets held
        end = start + args.seconds
    threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
    threads.append(threading.Thread(target=health))
    if args.lock_log:
        threads.append(threading.Thread(target=hold_lock))
    if args.idle_sockets:
        threads.append(threading.Thread(target=hold_idle))
    if args.migrate:
        end = start + 3600  # until the migration and the rollback are over
        threads.append(threading.Thread(target=migrate_then_rollback))
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    for s in idle_socks:
        s.close()
    time.sleep(1)  # let the writer catch up before reading its counters
    try:
        with urllib.request.urlopen(url + "/versions", timeout=10) as r:
            telemetry = json.loads(r.read()).get("telemetry")
    except (urllib.error.URLError, OSError):
        telemetry = None

    try:  # every worker's rows, not just the counters of the worker that answered /versions
        db = sqlite3.connect(f"file:{log_path}?mode=ro", uri=True, timeout=10)
        log_rows = db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
        db.close()
    except sqlite3.Error:
        log_rows = None
    figures: dict = {"clients": args.clients, "seconds": wall, "retriever": args.retriever, "engine": args.engine,
                     "workers": args.workers, "log_rows": log_rows, "build_s": args.build_s,
                     "load_average_1m": os.getloadavg()[0], "cpus": os.cpu_count()}
    for path, rows in results.items():
        figures[path] = {"requests": len(rows), "errors": errors[path], "per_s": len(rows) / wall,
                         **percentiles([dt for _, dt in rows])}
        if rows:  # when the slowest request started, in seconds from the start (compare with log_lock)
            figures[path]["max_at_s"] = max(rows, key=lambda r: r[1])[0] - start
    if window:
        lo, hi = window[0], window[-1]
        figures["log_lock"] = {"seconds": hi - lo, "from_s": lo - start, **{
            path: percentiles([dt for t, dt in results[path] if lo <= t <= hi]) for path in ("/health", "/search",
                                                                                             "/answer")}}
    figures["telemetry"] = telemetry
    figures["total_per_s"] = sum(len(results[p]) for p in ("/search", "/answer")) / wall
    figures["errors"] = sum(errors.values())
    ok = figures["errors"] == 0
    if args.migrate:
        migration.update(check_answers(args.store, answers, [v for v in (migration.get("blue"),
                                                                              migration.get("green")) if v]))
        server_err.seek(0)  # what the server said about loading the versions
        migration["server_said"] = [line for line in server_err.read().splitlines() if "version" in line][-6:]
        figures["migration"] = migration
        ok = ok and "failed" not in migration and migration["mixed"] == 0 and len(migration["served"]) == 2
    if args.idle_sockets:
        server_err.flush()
        p95 = figures["/health"]["p95_ms"]
        passed = errors["/search"] == 0 and errors["/health"] == 0 and p95 is not None and p95 < 100
        figures["idle_sockets"] = {"asked": args.idle_sockets, "server_nofile": args.nofile, **idle,
                                   "server_stderr_bytes": os.path.getsize(server_err.name), "passed": passed}
        ok = ok and passed
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
