"""Run a sweep: every configuration of a grid, cached, resumable, with progress.

- Chunkings are computed once per (chunker, prefix, options) and shared by the
  configurations that differ only in retrieval; first-stage indexes are shared
  by configurations that differ only in reranking.
- Embeddings go through the on-disk cache: a text embedded by one
  configuration (or one earlier sweep) is never embedded again.
- Each finished configuration is written to ``DIR/runs/<key>.json`` at once
  (atomically); rerunning the same sweep skips what is there.
- Latency is timed end to end after the evaluation pass (which warms every
  cache and model): a fixed sample of questions, each searched
  ``LATENCY_REPEATS`` times, the median per question, then p50/p95 across the
  questions, in total and per stage. Sweeps embed each question once and serve
  it from memory, so the query embedding is timed on the model itself, the
  same way, and put back in place of that lookup.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..corpus.corpus import Corpus
from ..errors import SweepStateError
from ..golden import GoldenSet
from ..io import write_atomic
from ..pipeline import PipelineConfig, Resources, build_pipeline, run_eval
from ..retrieve.base import search as run_search
from .grid import Grid

__all__ = ["run_sweep", "run_config", "SweepJob", "Executor", "LocalExecutor", "SweepProgress", "golden_fingerprint",
           "SweepStateError", "LATENCY_QUESTIONS", "LATENCY_REPEATS"]

LATENCY_QUESTIONS = 50  # questions timed per configuration (evenly spaced over the golden set)
LATENCY_REPEATS = 3  # timings per question; the median is kept
LATENCY_METHOD = "end-to-end-median-v1"  # records timed otherwise (older releases) are recomputed


def golden_fingerprint(golden: GoldenSet) -> str:
    import hashlib

    h = hashlib.sha256()
    for item in golden:
        d = item.to_dict()
        if getattr(item, "history", ()):  # a conversation's turn: its earlier questions are part of what it asks
            d = {**d, "history": list(item.history)}
        h.update(json.dumps(d, sort_keys=True).encode())
    return h.hexdigest()[:16]


def _ms_percentiles(seconds: list[float]) -> dict[str, float]:
    import numpy as np

    a = np.asarray(seconds, dtype=np.float64) * 1000 if seconds else np.zeros(1)
    return {"p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95))}


def latency_sample(golden: GoldenSet, n: int = LATENCY_QUESTIONS) -> list[str]:
    """The questions timed: all distinct ones when there are at most ``n``, else ``n`` evenly spaced."""
    qs = list(dict.fromkeys(item.q for item in golden))
    if len(qs) <= n:
        return qs
    return [qs[(i * len(qs)) // n] for i in range(n)]


class _NoGC:
    """Timings without garbage-collection pauses (as :mod:`timeit` does)."""

    def __enter__(self) -> None:
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: Any) -> None:
        if self.was:
            gc.enable()


def time_query_embedding(embedder: Any, queries: list[str], repeats: int = LATENCY_REPEATS) -> dict[str, float]:
    """Seconds the model takes to embed each query: median of ``repeats`` calls after one warm-up call.
    A memoizing cache is bypassed (its ``inner`` model is timed)."""
    model = getattr(embedder, "inner", embedder)
    out: dict[str, float] = {}
    if not queries:
        return out
    model.embed_queries([queries[0]])  # warm-up (first call may load or compile)
    with _NoGC():
        for q in queries:
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                model.embed_queries([q])
                times.append(time.perf_counter() - t0)
            out[q] = statistics.median(times)
    return out


def time_searches(retriever: Any, queries: list[str], *, depth: int, filters: Any = None,
                  query_embedding: dict[str, float] | None = None, repeats: int = LATENCY_REPEATS) -> dict[str, Any]:
    """End-to-end search latency in ms: each query searched ``repeats`` times (call it after a warm-up, such as
    the evaluation pass), the median per query, then p50/p95 across queries, in total and per stage.

    With ``query_embedding`` (seconds per query, see :func:`time_query_embedding`) the searches' own
    ``embed_query`` stage, a lookup of a memoized vector, is replaced by the model's time for that query."""
    totals: list[float] = []
    stages: dict[str, list[float]] = {}
    with _NoGC():
        for q in queries:
            walls, per_stage = [], {}
            for _ in range(repeats):
                t0 = time.perf_counter()
                ranking = run_search(retriever, q, depth, filters)
                walls.append(time.perf_counter() - t0)
                for stage, t in ranking.timings.items():
                    per_stage.setdefault(stage, []).append(t)
            total = statistics.median(walls)
            med = {stage: statistics.median(ts) for stage, ts in per_stage.items()}
            if query_embedding is not None and q in query_embedding:
                total += query_embedding[q] - med.get("embed_query", 0.0)
                med["embed_query"] = query_embedding[q]
            totals.append(total)
            for stage, t in med.items():
                stages.setdefault(stage, []).append(t)
    order = sorted(stages, key=lambda st: (st != "embed_query", list(stages).index(st)))  # pipeline order
    return {**_ms_percentiles(totals), "stages": {st: _ms_percentiles(stages[st]) for st in order},
            "questions": len(queries), "repeats": repeats, "method": LATENCY_METHOD}


def _write_atomic(path: Path, data: Any) -> None:
    # one string: json.dump's streaming encoder is pure Python, ~5x slower
    write_atomic(path, json.dumps(data, ensure_ascii=False))


class SweepProgress:
    """One line per configuration: i/N, label, stage, ETA (rich on a terminal, plain lines otherwise)."""

    def __init__(self, total: int, enabled: bool):
        import sys

        self.total = total
        self.done = 0
        self.t0 = time.perf_counter()
        self.timed = 0
        self.enabled = enabled
        self.tty = enabled and sys.stderr.isatty()
        self._live = None
        if self.tty:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            # stderr: stdout carries the table or --json output
            self._live = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TimeRemainingColumn(), transient=False, console=Console(stderr=True))
            self._live.start()
            self._task = self._live.add_task("sweep", total=total)

    def stage(self, i: int, label: str, stage: str) -> None:
        if not self.enabled:
            return
        msg = f"[{i}/{self.total}] {label}: {stage}"
        if self._live is not None:
            self._live.update(self._task, description=msg)
        elif stage == "building":  # plain output: one line per configuration
            import sys

            eta = ""
            if self.timed:
                per = (time.perf_counter() - self.t0) / max(self.timed, 1)
                eta = f" (ETA {per * (self.total - self.done) / 60:.1f} min)"
            print(f"[{i}/{self.total}] {label}{eta}", file=sys.stderr, flush=True)

    def finished(self, label: str) -> None:
        """A configuration finished elsewhere (a Ray task): one line, as :meth:`stage` prints when one starts."""
        if not self.enabled:
            return
        if self._live is not None:
            self._live.update(self._task, description=f"[{self.done + 1}/{self.total}] {label}: done")
        else:
            import sys

            print(f"[{self.done + 1}/{self.total}] {label}: done", file=sys.stderr, flush=True)

    def advance(self, computed: bool) -> None:
        self.done += 1
        if computed:  # resumed configurations take no time and do not count towards the ETA
            self.timed += 1
        if self._live is not None:
            self._live.advance(self._task)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()


def run_sweep(corpus: Corpus, golden: GoldenSet, grid: Grid, out_dir: str | os.PathLike[str], *,
              show_progress: bool = True, on_record: Callable[[dict], None] | None = None,
              executor: Executor | None = None) -> list[dict]:
    """Run (or resume) every configuration; returns one record per configuration, grid order.

    ``executor`` runs the configurations left to run (default :class:`LocalExecutor`: one after the other in
    this process; ``ragtune.scale.RaySweepExecutor`` runs them as Ray tasks, in parallel). Each record comes
    back here, and this process writes it (``on_record`` is called in the order they finish)."""
    grid = grid.resolved(corpus.kind)
    out = Path(out_dir)
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    for debris in runs.glob("*.json.tmp*"):  # half-written files of a killed run
        debris.unlink(missing_ok=True)
    state = {"corpus": corpus.fingerprint, "golden": golden_fingerprint(golden), "ks": list(grid.ks),
             "depth": grid.depth}
    state_path = out / "sweep-state.json"
    if state_path.exists():
        old = json.loads(state_path.read_text())
        if old != state:
            differs = ", ".join(k for k in state if old.get(k) != state[k])
            raise SweepStateError(f"{out} holds results computed with a different {differs}; use another --out "
                                  "folder (or delete this one) to start afresh")
    else:
        _write_atomic(state_path, state)

    specs = grid.all_specs
    progress = SweepProgress(len(specs), show_progress)
    records: dict[int, dict] = {}
    todo: list[tuple[int, PipelineConfig]] = []
    for i, spec in enumerate(specs, start=1):
        record = _resumable(runs / f"{spec.key}.json", spec)
        if record is not None:
            records[i] = record
            progress.advance(computed=False)
        else:
            todo.append((i, spec))

    executor = executor or LocalExecutor()
    job = SweepJob(corpus, golden, grid)
    try:
        for i, record in executor.run(job, todo, progress):
            _write_atomic(runs / f"{specs[i - 1].key}.json", record)
            records[i] = record
            progress.advance(computed=True)
            if on_record:
                on_record(record)
    finally:
        progress.close()
    return [records[i] for i in sorted(records)]


@dataclass(frozen=True)
class SweepJob:
    """What every configuration of one sweep is run against: the corpus, the golden set and the grid (its ks,
    depth). ``questions``: the ids of the questions evaluated (default all; a search scores a trial on a first
    share of them before it runs it in full); ``timed``: whether each configuration's latency is measured (a
    first-questions run is not timed, and its record's ``latency_ms`` is None)."""

    corpus: Corpus
    golden: GoldenSet
    grid: Grid
    questions: frozenset[str] | None = None
    timed: bool = True

    @property
    def key(self) -> tuple:
        """Equal for the same corpus, golden set and grid settings (executors keep caches per job): the jobs of one
        search, first-questions runs included, share one key, so they share what an executor keeps."""
        return (self.corpus.fingerprint, golden_fingerprint(self.golden), self.grid.ks, self.grid.depth)

    @property
    def evaluated(self) -> GoldenSet:
        """The golden set's questions this job evaluates, in their order."""
        if self.questions is None:
            return self.golden
        return GoldenSet([item for item in self.golden if item.id in self.questions], source=self.golden.source,
                         labels=self.golden.labels)


class Executor(Protocol):
    """Runs sweep configurations: ``run(job, todo, progress)`` yields ``(position, record)`` for each
    ``(position, config)`` in ``todo``, in any order, each record what :func:`run_config` returns.
    ``progress.stage(position, label, stage)`` may be called to show what is running.

    Every configuration ragtune evaluates goes through one: the configurations of a grid, and each trial of a
    search (:func:`~ragtune.sweep.search.run_search`: its first-questions runs and its full run, one
    configuration per call, as each suggestion depends on the scores before it), folds included."""

    def run(self, job: SweepJob, todo: Sequence[tuple[int, PipelineConfig]],
            progress: Any) -> Iterator[tuple[int, dict]]: ...


class LocalExecutor:
    """One configuration after the other in this process, sharing one :class:`~ragtune.pipeline.Resources`
    (chunkings, first-stage indexes, embedders; chunkings and BM25 indexes also cached on disk)."""

    def __init__(self, resources: Resources | None = None):
        self.resources = resources

    def run(self, job: SweepJob, todo: Sequence[tuple[int, PipelineConfig]],
            progress: Any) -> Iterator[tuple[int, dict]]:
        if self.resources is None:
            from ..embed.cache import default_cache_dir

            self.resources = Resources(cache_dir=default_cache_dir(), show_progress=getattr(progress, "tty", False))
        for i, spec in todo:
            yield i, run_config(job, spec, self.resources, position=i, progress=progress)


def _resumable(path: Path, spec: PipelineConfig) -> dict | None:
    """The record a previous run wrote for ``spec`` (None: absent, damaged, or timed another way: recompute)."""
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text())
        timed = (record.get("stats") or {}).get("latency_ms", {}).get("method") == LATENCY_METHOD
        if timed and record.get("spec") == json.loads(json.dumps(spec.to_dict())):  # tuples: lists
            return record
    except (OSError, json.JSONDecodeError, AttributeError):
        pass  # a damaged file is recomputed
    return None


def run_config(job: SweepJob, spec: PipelineConfig, resources: Resources, *, position: int = 0,
               progress: Any = None) -> dict:
    """One configuration of a sweep, built (through :func:`~ragtune.pipeline.build_pipeline` with the shared
    ``resources``), evaluated (on ``job.questions``) and timed (unless ``job.timed`` is false): the run record
    ``runs/<key>.json`` holds. Executors call this."""
    corpus, golden, grid = job.corpus, job.golden, job.grid
    label, i = spec.label, position
    progress = progress or SweepProgress(0, False)
    view = resources.for_embedder(spec.embedder_id)
    query_s = None
    if spec.uses_vectors:
        # every configuration asks the same questions: embed them once (all of them, whichever a job evaluates)
        fingerprint = golden_fingerprint(golden)
        memo = f"queries|{spec.embedder_id}|{fingerprint}"
        if memo not in resources.memo:
            view.embedder().memoize_queries([item.q for item in golden])
            resources.memo[memo] = True
        timed = f"query_s|{spec.embedder_id}|{fingerprint}"
        if job.timed and timed not in resources.memo:  # and time the model once
            resources.memo[timed] = time_query_embedding(view.embedder(), latency_sample(golden))
        query_s = resources.memo.get(timed) if job.timed else None
    progress.stage(i, label, "building")
    pipeline = build_pipeline(corpus, spec, resources=view)
    chunker, stats = pipeline.chunker, pipeline.stats
    progress.stage(i, label, "evaluating")
    result = run_eval(pipeline, job.evaluated, ks=grid.ks, depth=grid.depth, filters=spec.filter)
    latency = None
    if job.timed:
        progress.stage(i, label, "timing")
        latency = time_searches(pipeline.retriever, latency_sample(golden), depth=result.config["depth"],
                                filters=spec.filter, query_embedding=query_s)
    return {
        "key": spec.key,
        "label": label,
        "spec": spec.to_dict(),
        "chunker_config": {"name": chunker.name, **(chunker.config.to_dict() if getattr(chunker, "config", None) else {})},
        "stats": {
            "chunks": stats["chunks"],
            "parents": stats["parents"],
            "texts_embedded": stats["texts_embedded"],
            "embedding_cache_hits": stats["embedding_cache_hits"],
            "index_build_s": stats["index_build_s"],
            "index_reused": stats["index_reused"],
            # end to end per question, query embedding included; its share is also under stages
            "latency_ms": latency,
            "query_embedding_ms": _ms_percentiles(list(query_s.values())) if query_s else None,
        },
        "result": json.loads(result.to_json(indent=None)),
    }
