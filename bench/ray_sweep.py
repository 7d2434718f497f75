"""Sweep wall time: local serial run vs Ray with 1, 2, ... local workers (``ray.init(num_cpus=N)``).

Every timed run starts from an empty cache folder and an empty output folder, so each one chunks, embeds,
indexes, evaluates and times every configuration itself; Ray's start-up is measured apart from the sweep.
The ranking and metrics of every Ray run are checked against the serial run's.

    python bench/ray_sweep.py --corpus docs --golden docs/golden.jsonl --workers 1,2

Prints a markdown table (and writes it as JSON with ``--json FILE``). Needs ``ragtune[ray]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

# the default grid: 6 configurations, half of them dense (each embeds its own chunking once)
GRID = {"metric": "recall@5", "k": [5, 10], "samples": 1000,
        "baseline": {"chunker": "section", "retriever": "bm25"},
        "grid": {"chunker": ["fixed"], "size": [128, 256, 512], "overlap": [0], "retriever": ["bm25", "dense"]}}


def ranked(out: Path) -> list[tuple]:
    data = json.loads((out / "results.json").read_text())
    return [(c["key"], c["metrics"]) for c in data["configs"]]


def timed_sweep(corpus, golden, grid, work: Path, name: str, ray_options=None) -> float:
    from ragtune.sweep import sweep

    os.environ["RAGTUNE_CACHE_DIR"] = str(work / f"cache-{name}")
    t0 = time.perf_counter()
    sweep(corpus, golden, grid, work / name, show_progress=False, ray=ray_options)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--grid", help="a grid file (default: 6 configurations, fixed 128/256/512 x bm25/dense)")
    ap.add_argument("--workers", default="1,2", help="Ray worker counts to time, comma-separated (default 1,2)")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()

    import ray

    from ragtune import load_corpus, load_golden
    from ragtune.scale import RayOptions
    from ragtune.sweep import load_grid, parse_grid

    corpus, golden = load_corpus(args.corpus), load_golden(args.golden)
    grid = load_grid(args.grid) if args.grid else parse_grid(GRID)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ragtune-ray-bench-") as tmp:
        work = Path(tmp)
        serial = timed_sweep(corpus, golden, grid, work, "serial")
        rows.append({"run": "local, serial", "workers": 1, "init_s": 0.0, "sweep_s": serial, "speedup": 1.0})
        reference = ranked(work / "serial")
        for n in (int(w) for w in args.workers.split(",")):
            t0 = time.perf_counter()
            ray.init(address="local", num_cpus=n, include_dashboard=False, logging_level="ERROR")
            init_s = time.perf_counter() - t0
            try:
                s = timed_sweep(corpus, golden, grid, work, f"ray{n}", RayOptions())
            finally:
                ray.shutdown()
            same = ranked(work / f"ray{n}") == reference
            rows.append({"run": f"Ray, {n} worker{'s' * (n > 1)}", "workers": n, "init_s": init_s, "sweep_s": s,
                         "speedup": serial / s, "same_results": same})
            if not same:
                print(f"error: the Ray run with {n} workers ranked or scored differently", file=sys.stderr)
                return 1
    load = os.getloadavg()
    info = {"configurations": len(grid.all_specs), "documents": len(corpus), "questions": len(golden),
            "cpus": os.cpu_count(), "load_avg_1_5_15": [round(x, 2) for x in load], "python": platform.python_version(),
            "ray": ray.__version__, "rows": rows}
    print(f"{info['configurations']} configurations, {info['documents']} documents, {info['questions']} questions; "
          f"{info['cpus']} CPUs, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1/5/15 min)")
    print("| run | sweep wall time (s) | speed-up vs serial | Ray start (s) |")
    print("|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['run']} | {r['sweep_s']:.1f} | {r['speedup']:.2f}x | {r['init_s']:.1f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(info, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
