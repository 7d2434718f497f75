"""Cost as the corpus grows: index build, search latency, eval time and peak memory at 10^4 .. 10^6 chunks.

    python bench/scale.py --sizes 10000,100000,1000000 --box 900 --json out/scale.json
    python bench/scale.py --sizes 10000 --queries 100 --golden 50       # a small run, under a minute
    python bench/scale.py --sizes 10000 --engines ann --beir ../shared/datasets/scifact@test   # + real vectors
    python bench/scale.py --sizes 100000 --engines exact,server --ef 16,64,256   # a Milvus server, HNSW

Three engines over the same vectors: ``exact`` (the embedded dense retriever, numpy inner products over every
vector), ``ann`` (the embedded retriever with its usearch HNSW graph, ``ann=True``) and ``milvus`` (Milvus Lite
in a file under a temporary folder, ``milvus-dense``: a FLAT index, exact) and ``server`` (a Milvus standalone server,
the ``milvus`` package's, started for the run with its data in a temporary folder, or ``--milvus-uri URL``: an HNSW
index with M 16 and efConstruction 200, searched at each ``--ef``). Every (size, engine) runs in a fresh
subprocess, so its peak memory (the kernel's high-water mark, VmHWM, of the process plus, for Milvus, of the
Milvus Lite server it starts) is its own; each is killed after ``--box`` seconds and reports what had finished.

What is synthetic (embedding 10^6 chunks on this machine's 2 cores would take about 16 hours at the measured
16.9 texts/s): the vectors, the texts and the questions.

- vectors: 384 dimensions (MiniLM's), L2-normalised, with two levels of cluster structure: ``n/1000`` topics,
  ``n/20`` subtopics inside them, then the point; x = normalise(topic + 0.8 subtopic + 0.9 noise) with unit
  Gaussian directions, so a chunk's nearest neighbours are its subtopic's and its topic's (as with real
  embeddings, and unlike uniform random vectors, on which every ANN index is at its worst);
- texts: 40 words drawn from a 5,000-word made-up vocabulary, ten chunks per document;
- questions: a question is the vector of a chosen chunk plus noise (the same size as a subtopic's spread),
  renormalised; its relevant document is that chunk's. The query embedder is a lookup from question text to
  that vector, so no model runs and the latency is the search alone.

Latency is per query (k=10) without the query embedding (a lookup here), over ``--queries`` questions after 10
warm-up searches; eval time is ``rt.evaluate`` over ``--golden`` questions (depth 100: search, matching,
metrics). Recall@10 of each engine is against exact search over the same vectors. Build time is the retriever's
construction from chunks and vectors (the HNSW graph for ann, insert + flush + load for Milvus, and the server's
index build for ``server``); embedding is not included. The server's memory is its process's high-water mark
since it started (so a later size includes the earlier ones' peak). One run; the host is 2 shared cores.

``--beir DIR@SPLIT`` adds one check on real vectors: recall@10 of the HNSW graph against exact search over a BEIR
corpus's MiniLM vectors (one chunk per document, as bench/beir.py; from the embedding cache when it holds them),
its questions as queries.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

DIM = 384
ENGINES = ("exact", "ann", "milvus", "server")
SEED = 0


# --- synthetic data ------------------------------------------------------------------------------------------------
def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, DIM), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def make_data(n: int, folder: Path, queries: int) -> None:
    """``vectors.npy`` (n x 384), ``queries.npy`` and ``sources.npy`` (the chunk each question was made from)."""
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / "sources.npy").exists():
        return
    rng = np.random.default_rng([SEED, n])
    topics = _unit(rng, max(1, n // 1000))
    subs = _unit(rng, max(1, n // 20))
    sub_topic = rng.integers(0, len(topics), len(subs))
    subs = topics[sub_topic] + 0.8 * subs
    vectors = np.empty((n, DIM), dtype=np.float32)
    point_sub = rng.integers(0, len(subs), n)
    for lo in range(0, n, 100_000):  # in blocks: the noise for 10^6 rows at once would double the memory
        hi = min(n, lo + 100_000)
        x = subs[point_sub[lo:hi]] + 0.9 * _unit(rng, hi - lo)
        vectors[lo:hi] = x / np.linalg.norm(x, axis=1, keepdims=True)
    sources = rng.choice(n, queries, replace=False)
    q = vectors[sources] + 0.5 * _unit(rng, queries)
    np.save(folder / "vectors.npy", vectors)
    np.save(folder / "queries.npy", (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32))
    np.save(folder / "sources.npy", sources)


def make_chunks(n: int):
    """n chunks of 40 made-up words, ten to a document, and the corpus of those documents."""
    import ragtune as rt

    rng = np.random.default_rng([SEED, n, 1])
    vocab = [f"w{i}x{(i * 7919) % 997}" for i in range(5000)]
    words = rng.integers(0, len(vocab), (n, 40))
    texts = [" ".join(vocab[j] for j in row) for row in words]
    del words
    chunks, docs = [], []
    for d in range(0, n, 10):
        parts = texts[d:d + 10]
        body = "\n".join(parts)
        doc_id, start = f"d{d // 10}", 0
        for i, t in enumerate(parts):
            chunks.append(rt.Chunk(id=f"c{d + i}", doc_id=doc_id, text=t, start=start, end=start + len(t), embed_text=t))
            start += len(t) + 1
        docs.append(rt.Document(id=doc_id, title="", text=body))
    return chunks, rt.Corpus(docs)


class Lookup:
    """The query 'embedder': question text ``qN`` -> the N-th synthetic query vector (no model)."""

    model_id = cache_key = "synthetic-384"
    dim, max_tokens = DIM, 256

    def __init__(self, queries: np.ndarray):
        self.queries = queries

    def embed(self, texts):
        raise RuntimeError("the benchmark never embeds chunks: their vectors are given")

    def embed_queries(self, texts):
        return self.queries[[int(t[1:]) for t in texts]]


# --- one (size, engine), in its own process ---------------------------------------------------------------------
def _hwm_kb(pid: int | str = "self") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _descendants(root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(p.name))
    out, todo = [], [root]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class ChildPeak:
    """Samples the high-water mark of this process's descendants (the Milvus Lite server) every 0.2 s."""

    def __init__(self):
        self.kb: dict[int, int] = {}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.wait(0.2):
            self.sample()

    def sample(self):
        for pid in _descendants(os.getpid()):
            self.kb[pid] = max(self.kb.get(pid, 0), _hwm_kb(pid))

    def total_mb(self) -> float:
        self.sample()
        return round(sum(self.kb.values()) / 1024, 1)


def emit(**fields) -> None:
    print("@" + json.dumps(fields), flush=True)


def search_stats(retriever, qv: np.ndarray, vectors: np.ndarray, queries: int) -> dict:
    """p50/p95 latency (k=10, after 10 warm-up searches) and recall@10 against exact search over ``vectors``."""
    names = [f"q{i}" for i in range(len(qv))]
    for q in names[:10]:
        retriever.search(q, k=10)
    lat, found = [], []
    for q in names[10:10 + queries]:
        r = retriever.search(q, k=10)
        lat.append(sum(t for s, t in r.timings.items() if s != "embed_query") * 1000)
        found.append([int(h.chunk.id[1:]) for h in r.hits])
    a = np.asarray(lat)
    recall = []
    for i, got in enumerate(found, 10):
        scores = vectors @ qv[i]
        top = np.argpartition(-scores, 10)[:10]
        recall.append(len(set(top.tolist()) & set(got)) / 10)
    return {"queries": len(lat), "p50_ms": round(float(np.percentile(a, 50)), 2),
            "p95_ms": round(float(np.percentile(a, 95)), 2), "recall_at_10": round(float(np.mean(recall)), 4)}


def worker(engine: str, n: int, folder: Path, queries: int, golden_n: int, uri: str = "", efs=(64,)) -> None:
    import ragtune as rt

    peak = ChildPeak() if engine == "milvus" else None
    start = time.perf_counter()

    def heartbeat():  # a killed run still reports its peak memory so far
        while True:
            time.sleep(30)
            emit(stage="so_far", seconds=round(time.perf_counter() - start), rss_mb=round(_hwm_kb() / 1024, 1))

    threading.Thread(target=heartbeat, daemon=True).start()
    t0 = time.perf_counter()
    vectors = np.load(folder / "vectors.npy")
    qv, sources = np.load(folder / "queries.npy"), np.load(folder / "sources.npy")
    chunks, corpus = make_chunks(n)
    emb = Lookup(qv)
    emit(stage="inputs", seconds=round(time.perf_counter() - t0, 1), rss_mb=round(_hwm_kb() / 1024, 1))
    tmp = tempfile.mkdtemp(prefix="ragtune-scale-")
    try:
        t0 = time.perf_counter()
        if engine == "milvus":
            from ragtune.engines import milvus as m

            cfg = m.MilvusDenseConfig(milvus_uri=f"{tmp}/scale.db")
            client = m.connect(cfg.milvus_uri)
            m.create_index(client, "scale", chunks, cfg, vectors=vectors, replace=True)
            retriever = m.MilvusRetriever(client, "scale", cfg, chunks=chunks, embedder=emb)
        elif engine == "server":
            from ragtune.engines import milvus as m

            cfg = m.MilvusDenseConfig(milvus_uri=uri, milvus_index="HNSW")
            client = m.connect(uri)
            m.create_index(client, f"scale_{n}", chunks, cfg, vectors=vectors, replace=True)
            retriever = m.MilvusRetriever(client, f"scale_{n}", cfg, chunks=chunks, embedder=emb, uri=uri)
        else:
            from ragtune.retrieve.dense import DenseRetriever

            retriever = DenseRetriever(chunks, vectors, emb, ann=engine == "ann")
        emit(stage="build", seconds=round(time.perf_counter() - t0, 2), config=retriever.config)
        if engine == "server":  # ef is read at search time: one index, a search at each ef
            for ef in efs:
                at_ef = m.MilvusRetriever(client, f"scale_{n}", replace(cfg, hnsw_ef=ef), chunks=chunks, embedder=emb,
                                          uri=uri)
                emit(stage=f"search_ef{ef}", ef=ef, **search_stats(at_ef, qv, vectors, queries))
        else:
            emit(stage="search", **search_stats(retriever, qv, vectors, queries))
        golden = rt.GoldenSet([rt.GoldenItem(id=f"g{i}", q=f"q{i}", relevant={chunks[int(sources[i])].doc_id: 1.0})
                               for i in range(golden_n)])
        t0 = time.perf_counter()
        res = rt.evaluate(retriever, golden, corpus, ks=(10,))
        emit(stage="eval", questions=len(golden.items), seconds=round(time.perf_counter() - t0, 2),
             recall_at_10=round(res.metrics["recall@10"], 4))
        server = peak.total_mb() if peak else 0  # 0: Milvus Lite ran inside this process
        emit(stage="memory", rss_mb=round(_hwm_kb() / 1024, 1), **({"milvus_server_mb": server} if server else {}))
        if engine == "server":  # the next size starts from an empty server
            m.drop_collection(client, f"scale_{n}")
    finally:
        if engine in ("milvus", "server"):
            from ragtune.engines import milvus as m

            m.close_all()
        shutil.rmtree(tmp, ignore_errors=True)


# --- the driver ---------------------------------------------------------------------------------------------------
def start_server(folder: str):
    """The ``milvus`` package's server (bench/milvus.py starts it; from here Python would import that file as
    ``milvus``, so it is loaded by path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_milvus", Path(__file__).with_name("milvus.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod._start_server(folder)


def run_one(engine: str, n: int, folder: Path, args) -> dict:
    cmd = [sys.executable, __file__, "--worker", engine, "--sizes", str(n), "--data", str(folder),
           "--queries", str(args.queries), "--golden", str(args.golden), "--ef", ",".join(map(str, args.ef))]
    if engine == "server":
        cmd += ["--milvus-uri", args.milvus_uri]
    row: dict = {"engine": engine, "chunks": n}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
    timer = threading.Timer(args.box, lambda: os.killpg(proc.pid, 9))
    timer.start()
    try:
        for line in proc.stdout:
            if line.startswith("@"):
                rec = json.loads(line[1:])
                row[rec.pop("stage")] = rec
                print(f"  {engine:>6} {n:>9,}: {line[1:].strip()}", flush=True)
        rc = proc.wait()
    finally:
        timer.cancel()
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    if engine == "server" and getattr(args, "server_pid", None):  # the server runs outside the worker
        row.setdefault("memory", {})["milvus_server_mb"] = round(_hwm_kb(args.server_pid) / 1024, 1)
    if rc != 0:
        row["unfinished"] = f"killed after the {args.box:.0f} s box" if rc == -9 else f"exit status {rc}"
    return row


def real_recall(spec: str) -> dict:
    """Recall@10 of ann=True against exact search on a BEIR corpus's real MiniLM vectors and questions."""
    import ragtune as rt
    from ragtune.chunking import chunk_corpus
    from ragtune.pipeline import Resources
    from ragtune.retrieve.dense import DenseRetriever

    path, _, split = spec.partition("@")
    corpus = rt.load_corpus(path)
    golden = rt.load_golden(path, split=split or "test")
    chunks = chunk_corpus(corpus, rt.default_chunker(corpus))
    emb = Resources("minilm").embedder()
    vectors = emb.embed([c.embed_text for c in chunks])
    t0 = time.perf_counter()
    ann = DenseRetriever(chunks, vectors, emb, ann=True)
    build = time.perf_counter() - t0
    out = {"data": spec, "chunks": len(chunks), "queries": len(golden.items), "build_s": round(build, 2),
           "recall_at_10": round(ann.ann_recall([g.q for g in golden], k=10), 4)}
    print(f"real vectors: {json.dumps(out)}", flush=True)
    return out


def table(rows: list[dict]) -> str:
    head = ("| engine | chunks | build s | p50 ms | p95 ms | recall@10 vs exact | eval s (questions) | peak RSS MB "
            "| inputs MB |\n|---|---|---|---|---|---|---|---|---|")
    out = [head]
    for row in rows:
        for r in _per_ef(row):
            out.append(_table_row(r))
    return "\n".join(out)


def _per_ef(row: dict) -> list[dict]:
    """A server row per ef searched (engine ``server HNSW ef=N``), the build, eval and memory on the first."""
    efs = sorted((k for k in row if k.startswith("search_ef")), key=lambda k: row[k]["ef"])
    if not efs:
        return [row]
    out = []
    for j, k in enumerate(efs):
        r = {"engine": f"{row['engine']} HNSW ef={row[k]['ef']}", "chunks": row["chunks"], "search": row[k]}
        if j == 0:
            r.update({x: row[x] for x in ("build", "eval", "memory", "inputs", "so_far", "unfinished") if x in row})
        out.append(r)
    return out


def _table_row(r: dict) -> str:
    b, s, e, m, i = (r.get(k, {}) for k in ("build", "search", "eval", "memory", "inputs"))
    rss = m.get("rss_mb")
    if rss is not None and m.get("milvus_server_mb"):
        rss = f"{rss:,.0f} + {m['milvus_server_mb']:,.0f} server"
    elif rss is not None:
        rss = f"{rss:,.0f}"
    elif "so_far" in r:  # killed: the high-water mark at its last heartbeat
        rss = f"{r['so_far']['rss_mb']:,.0f} so far"
    cell = lambda d, k, f="{:,}": f.format(d[k]) if k in d else "-"  # noqa: E731
    evals = f"{e['seconds']:,} ({e['questions']})" if e else "-"
    line = (f"| {r['engine']} | {r['chunks']:,} | {cell(b, 'seconds')} | {cell(s, 'p50_ms')} | "
            f"{cell(s, 'p95_ms')} | {cell(s, 'recall_at_10')} | {evals} | {rss or '-'} | "
            f"{cell(i, 'rss_mb', '{:,.0f}')} |")
    return line + (f" {r['unfinished']}" if "unfinished" in r else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated chunk counts")
    ap.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated, of {', '.join(ENGINES)}")
    ap.add_argument("--queries", type=int, default=200, help="questions timed for latency and recall")
    ap.add_argument("--golden", type=int, default=200, help="questions of the timed evaluation")
    ap.add_argument("--box", type=float, default=900, help="seconds each (size, engine) may take before it is killed")
    ap.add_argument("--data", help="folder for the synthetic vectors (default: a temporary folder, removed)")
    ap.add_argument("--json", help="write the figures as JSON")
    ap.add_argument("--beir", help="DIR@SPLIT: also recall@10 of the graph on a BEIR corpus's real MiniLM vectors")
    ap.add_argument("--milvus-uri", dest="milvus_uri", help="for the server engine: a running Milvus server's URL "
                    "(default: the `milvus` package's server, started for the run)")
    ap.add_argument("--ef", type=lambda s: [int(x) for x in s.split(",")], default=[16, 64, 256],
                    help="for the server engine: the HNSW ef values searched (comma-separated)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    engines = [e.strip() for e in args.engines.split(",")]
    bad = [e for e in engines if e not in ENGINES]
    if bad or min(sizes) < 100 or args.queries < 1 or args.golden < 1:
        ap.error(f"engines are {', '.join(ENGINES)} (got {bad}); sizes >= 100; --queries and --golden >= 1")
    if args.worker:
        worker(args.worker, sizes[0], Path(args.data), args.queries, args.golden, args.milvus_uri or "", args.ef)
        return 0
    load = os.getloadavg()
    print(f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} cores, "
          f"load average {load[0]:.1f} at the start", flush=True)
    data = Path(args.data) if args.data else Path(tempfile.mkdtemp(prefix="ragtune-scale-data-"))
    rows, server = [], None
    if "server" in engines and not args.milvus_uri:
        server_dir = tempfile.mkdtemp(prefix="ragtune-scale-server-")
        server, args.milvus_uri = start_server(server_dir)
        args.server_pid = server.server_proc.pid
    try:
        for n in sizes:
            t0 = time.perf_counter()
            make_data(n, data / str(n), max(args.queries + 10, args.golden))
            print(f"{n:,} chunks: synthetic vectors ready in {time.perf_counter() - t0:.1f} s", flush=True)
            for engine in engines:
                rows.append(run_one(engine, n, data / str(n), args))
    finally:
        if server is not None:
            server.stop()
            shutil.rmtree(server_dir, ignore_errors=True)
        if not args.data:
            shutil.rmtree(data, ignore_errors=True)
    real = real_recall(args.beir) if args.beir else None
    load = os.getloadavg()
    print(f"\nload average {load[0]:.1f} at the end\n\n{table(rows)}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"rows": rows, "queries": args.queries, "golden": args.golden,
                                               "box_s": args.box, "real": real}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
