"""Sweeps: grids of chunking x retrieval configurations, run and compared with a baseline."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..corpus.corpus import Corpus
from ..golden import GoldenSet
from .grid import Grid, GridError, RunSpec, load_grid, parse_grid
from .report import render_report, write_report
from .results import SweepResult, summarize
from .runner import SweepStateError, run_sweep

if TYPE_CHECKING:
    from ..scale import RayOptions

__all__ = ["Grid", "GridError", "RunSpec", "SweepResult", "SweepStateError", "load_grid", "parse_grid",
           "render_report", "run_sweep", "summarize", "sweep", "write_report"]


def sweep(corpus: Corpus, golden: GoldenSet, grid: Grid, out_dir: str | os.PathLike[str], *,
          show_progress: bool = True, ray: RayOptions | None = None) -> SweepResult:
    """Run (or resume) every configuration, compare each with the baseline, and write
    ``results.json`` and ``report.html`` into ``out_dir``. With ``ray`` the configurations run in parallel as
    Ray tasks (:mod:`ragtune.scale`); the results are those of a local run."""
    grid = grid.resolved(corpus.kind)
    records = run_sweep(corpus, golden, grid, out_dir, show_progress=show_progress, ray=ray)
    result = summarize(grid, records)
    result.write(out_dir)
    write_report(result, out_dir)
    return result
