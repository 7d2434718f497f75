"""Sweeps: grids of chunking x retrieval configurations, or searches of larger spaces, run and compared with a
baseline."""

from __future__ import annotations

import os
from typing import Annotated

from ..config import Opt
from ..corpus.corpus import Corpus
from ..golden import GoldenSet
from .grid import Grid, GridError, load_grid, parse_grid
from .report import render_report, write_report
from ..judgments.sample import PoolSample
from .results import SweepResult, judged_sample, summarize
from .runner import Executor, LocalExecutor, SweepJob, SweepStateError, run_config, run_sweep
from .search import Search, load_plan, run_search
from .space import Space, parse_space
from .tracking import log_to_mlflow, mlflow_uri

__all__ = ["Grid", "GridError", "Search", "Space", "SweepResult", "SweepStateError", "Executor", "LocalExecutor",
           "SweepJob", "load_grid", "load_plan", "log_to_mlflow", "mlflow_uri", "parse_grid", "parse_space",
           "render_report", "run_config", "run_grid", "run_search", "run_sweep", "summarize", "sweep", "write_report"]


def run_grid(corpus: Corpus, golden: GoldenSet, grid: Grid, out_dir: str | os.PathLike[str], *,
          show_progress: bool = True, executor: Executor | None = None,
          pool_sample: PoolSample | str | os.PathLike[str] | None = None) -> SweepResult:
    """Run (or resume) every configuration, compare each with the baseline, and write
    ``results.json`` and ``report.html`` into ``out_dir``. ``executor`` runs the configurations (default: one
    after the other in this process; ``ragtune.scale.RaySweepExecutor`` runs them in parallel as Ray tasks, with
    the results of a local run). ``pool_sample``: a judged pool sample (a pool file ``ragtune pool --sample N``
    wrote, its draws judged in ``golden``): the ``~`` marks take each unjudged hit's chance from it
    (:meth:`SweepResult.unsettled`)."""
    grid = grid.resolved(corpus.kind)
    judged = judged_sample(pool_sample, golden)  # read first: a bad file fails before the sweep runs
    records = run_sweep(corpus, golden, grid, out_dir, show_progress=show_progress, executor=executor)
    result = summarize(grid, records, judged=judged)
    result.write(out_dir)
    write_report(result, out_dir)
    return result


def sweep(corpus: Corpus, golden: GoldenSet, plan: Grid | Search, out_dir: str | os.PathLike[str], *,
          show_progress: bool = True, executor: Executor | None = None,
          pool_sample: Annotated[str | None, Opt(
              "a pool file with a judged sample (ragtune pool --sample N): the ~ marks take each unjudged hit's chance "
              "of being relevant from its judged draws", metavar="FILE")] = None) -> SweepResult:
    """:func:`run_grid` for a grid, :func:`~ragtune.sweep.search.run_search` for a search (what ``ragtune sweep``
    runs; ``rt.sweep`` is this package: ``rt.run_grid`` is the verb). ``pool_sample``: a pool file with a judged
    sample for the ``~`` marks (:func:`run_grid`, which also takes a :class:`~ragtune.judgments.sample.PoolSample`)."""
    if isinstance(plan, Search):
        return run_search(corpus, golden, plan, out_dir, show_progress=show_progress, executor=executor,
                          pool_sample=pool_sample)
    return run_grid(corpus, golden, plan, out_dir, show_progress=show_progress, executor=executor,
                    pool_sample=pool_sample)
