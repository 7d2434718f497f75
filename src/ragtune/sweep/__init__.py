"""Sweeps: grids of chunking x retrieval configurations, run and compared with a baseline."""

from __future__ import annotations

import os
from ..corpus.corpus import Corpus
from ..golden import GoldenSet
from .grid import Grid, GridError, load_grid, parse_grid
from .report import render_report, write_report
from .results import SweepResult, summarize
from .runner import Executor, LocalExecutor, SweepJob, SweepStateError, run_config, run_sweep

__all__ = ["Grid", "GridError", "SweepResult", "SweepStateError", "Executor", "LocalExecutor", "SweepJob",
           "load_grid", "parse_grid", "render_report", "run_config", "run_grid", "run_sweep", "summarize", "sweep",
           "write_report"]


def run_grid(corpus: Corpus, golden: GoldenSet, grid: Grid, out_dir: str | os.PathLike[str], *,
          show_progress: bool = True, executor: Executor | None = None) -> SweepResult:
    """Run (or resume) every configuration, compare each with the baseline, and write
    ``results.json`` and ``report.html`` into ``out_dir``. ``executor`` runs the configurations (default: one
    after the other in this process; ``ragtune.scale.RaySweepExecutor`` runs them in parallel as Ray tasks, with
    the results of a local run)."""
    grid = grid.resolved(corpus.kind)
    records = run_sweep(corpus, golden, grid, out_dir, show_progress=show_progress, executor=executor)
    result = summarize(grid, records)
    result.write(out_dir)
    write_report(result, out_dir)
    return result


sweep = run_grid  # the name the CLI and earlier releases use (`rt.sweep` is this package: `rt.run_grid` is the verb)
