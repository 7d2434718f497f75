"""Search a space (:mod:`ragtune.sweep.space`) with Optuna instead of running a whole grid.

- **The study** lives in the sweep folder (``DIR/search.journal``, Optuna's journal file storage): a rerun with the
  same space and settings continues it up to ``trials`` trials in all (a trial a killed run left unfinished is
  marked failed and its configuration asked again). Changed settings start another study in the same file.
- **Caches**: every configuration a trial evaluates is a sweep run, ``DIR/runs/<key>.json``, through the same
  :func:`~ragtune.sweep.runner.run_sweep` as a grid (same state check, same caches, same records); a configuration
  suggested again, by this study or an earlier one, is served from it and not evaluated again.
- **The executor** (:class:`~ragtune.sweep.runner.Executor`) evaluates every configuration, as it does a grid's:
  the baseline, each trial's first-questions runs (a :class:`~ragtune.sweep.runner.SweepJob` on those questions,
  not timed) and its full run. :class:`~ragtune.sweep.runner.LocalExecutor` (the default) runs them in this
  process; ``ragtune.scale.RaySweepExecutor`` runs each as a Ray task, with the same scores.
- **The objective** is the sweep metric's mean over the *selection* questions only: all of them, or, with
  ``holdout``, the ones not held out, so the held-out questions never inform the search (they are scored, as every
  question is, but no trial reads them). With ``folds = K`` there are K searches, one per fold, each on the
  questions of the other folds; the fold's choice is made among the configurations its own search evaluated,
  then scored on the fold (:func:`ragtune.sweep.holdout.folds_selection`). K searches cost up to K times the
  trials, but a configuration two of them suggest is evaluated once.
- **Pruning**: before a full evaluation, a trial is scored on a first share of its selection questions (seeded,
  stratified as the holdout split); after the first trials it is pruned when that score falls below the median
  of the completed trials' scores on the same questions (the median rule; the bottom quarter pruned too few
  trials to pay for their first-questions runs). With ``prune_rungs`` N there are N such shares, each a third of
  the next (nested: the first tenth is part of the first 30%), and a trial that passes one is scored on the rest
  of the next, each rung judged on its own questions (:func:`_rung_pruner`). Pruned trials are kept in the study
  with their partial score, and listed in ``results.json`` under ``search``; they
  are neither run in full nor latency-timed. Configurations that finish are scored on the same questions from
  their full run (which reuses the chunking and index the first-questions run built: the executor keeps them, one
  :class:`~ragtune.pipeline.Resources` for the whole search), so the comparison is like for like.
- **The result** is a :class:`~ragtune.sweep.SweepResult` over the baseline and every configuration evaluated:
  the same table, ``results.json``, report, significance tests and selection as a grid.

Trials run one after the other (each suggestion depends on the scores before it), seeded by ``seed``, on any
executor: on Ray each trial's runs are tasks on the cluster, one at a time. A resumed
search continues from the trials stored, so its later suggestions may differ from those of an uninterrupted run.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from ..config import Opt, config_key
from ..corpus.corpus import Corpus
from ..errors import ConfigError, GridError, MissingDependencyError
from ..golden import GoldenSet
from ..pipeline import PipelineConfig, Resources
from ..progress import note
from .grid import Grid, load_grid, read_settings_file
from .holdout import fold_questions, question_scores, split_questions
from .results import SweepResult, _lower_better, judged_sample, summarize
from .runner import Executor, LocalExecutor, SweepJob, SweepProgress, _resumable, _write_atomic, run_sweep
from .space import Space, parse_space, share_text

__all__ = ["Search", "load_plan", "run_search", "PRUNE_PERCENTILE"]

PRUNE_PERCENTILE = 50.0  # the rung pruner keeps this top share of the trials: the bottom half is pruned
SAMPLERS = ("tpe", "random")


@dataclass(frozen=True)
class Search:
    """A search: the settings and baseline of a sweep (``grid``, without configurations), the space, the sampler,
    the trials (per study: one, or one per fold), a timeout in minutes and the share of the selection questions a
    trial is first scored on (0: no pruning)."""

    grid: Grid
    space: Space
    sampler: str = "tpe"
    trials: int = 50
    timeout: float | None = None
    prune_share: float = 0.3
    prune_rungs: int = 1

    def __post_init__(self) -> None:
        if self.sampler not in SAMPLERS:
            raise ConfigError(f"search: choose one of {', '.join(SAMPLERS)}, got {self.sampler!r}")
        if isinstance(self.trials, bool) or not isinstance(self.trials, int) or self.trials < 1:
            raise ConfigError(f"trials: expected an integer >= 1, got {self.trials!r}")
        if self.timeout is not None and not self.timeout > 0:
            raise ConfigError(f"timeout: expected minutes > 0, got {self.timeout!r}")
        if not 0 <= self.prune_share < 1:
            raise ConfigError(f"prune_share: expected a share of the selection questions from 0 (no pruning) up "
                              f"to but below 1, such as 0.3; got {self.prune_share!r}")
        rungs = self.prune_rungs
        if isinstance(rungs, bool) or not isinstance(rungs, int) or not 1 <= rungs <= 4:
            raise ConfigError(f"prune_rungs: expected 1 to 4 rungs (shares of the questions a trial may be pruned "
                              f"after), got {self.prune_rungs!r}")

    @property
    def prune_shares(self) -> tuple[float, ...]:
        """The shares of the selection questions after which a trial may be pruned: ``prune_rungs`` of them, each
        a third of the next, the last ``prune_share`` (0.3 and 2 rungs: 0.1, then 0.3)."""
        if not self.prune_share:
            return ()
        return tuple(self.prune_share / 3 ** (self.prune_rungs - 1 - i) for i in range(self.prune_rungs))

    # what a grid offers the plan line and the dry run
    specs = property(lambda self: ())
    all_specs = property(lambda self: [self.grid.baseline])
    metric = property(lambda self: self.grid.metric)

    def resolved(self, corpus_kind: str) -> "Search":
        return dataclasses.replace(self, grid=self.grid.resolved(corpus_kind))

    def listing(self, *, as_json: bool = False) -> str:
        """What a dry run prints: the space, key by key, and its number of points."""
        if as_json:
            return json.dumps({"space": self.space.to_dict(), "points": self.space.points,
                               "baseline": self.grid.baseline.to_dict()}, indent=2)
        return "\n".join(self.space.describe())

    def summary(self, n_questions: int, out: str) -> str:
        """The line a search prints before it starts."""
        n = self.space.points
        size = f"{n:,} points" if n is not None else "infinitely many points (continuous ranges)"
        held = (f", {self.grid.folds} folds (one search per fold)" if self.grid.folds else
                f", holdout {self.grid.holdout:.0%}" if self.grid.holdout else "")
        prune = f", pruning after {share_text(self.prune_shares)}" if self.prune_share else ""
        return (f"search: {self.sampler}, {self.trials} trials over a space of {size}{held}{prune}, metric "
                f"{self.grid.metric}, {n_questions} questions, baseline {self.grid.baseline.label}; results in {out}")

    @property
    def key(self) -> str:
        """Equal for the same space, metric, selection and sampler settings: the study a rerun continues."""
        g = self.grid
        rungs = {"prune_rungs": self.prune_rungs} if self.prune_rungs != 1 else {}  # one rung: the keys before rungs
        return config_key({"space": self.space.to_dict(), "metric": g.metric, "ks": list(g.ks), "depth": g.depth,
                           "holdout": g.holdout, "folds": g.folds, "seed": g.seed, "sampler": self.sampler,
                           "prune_share": self.prune_share, **rungs})


def load_plan(path: str | os.PathLike[str], *,
              metric: Annotated[str | None, Opt("rank and test on this metric (overrides the file), e.g. recall@10, "
                                                "mrr", metavar="NAME")] = None,
              holdout: Annotated[float | None, Opt("hold this share of questions out of the choice", lo=0, hi=0.99,
                                                   metavar="SHARE")] = None,
              folds: Annotated[int | None, Opt("K-fold cross-validated choice (instead of --holdout)", lo=2,
                                               metavar="K")] = None,
              search: Annotated[Literal["tpe", "random"] | None,
                                Opt("search the file's space with Optuna instead of running a grid")] = None,
              trials: Annotated[int | None, Opt("trials of the search (per fold with --folds; a rerun continues to "
                                                "this many; default 50)", lo=1, metavar="N")] = None,
              timeout: Annotated[float | None, Opt("start no trial after this many minutes", lo=0.01,
                                                   metavar="MIN")] = None,
              prune_share: Annotated[float | None, Opt("score each trial on this share of the questions first and "
                                                       "prune it when clearly worse (0: never; default 0.3)", lo=0,
                                                       hi=0.9, metavar="SHARE")] = None,
              prune_rungs: Annotated[int | None, Opt("prune at this many shares of the questions, each a third of "
                                                     "the next, the last --prune-share (2: after 10%% and 30%%; "
                                                     "default 1)", lo=1, hi=4, metavar="N")] = None,
              seed: Annotated[int | None, Opt("seed of the split, the tests and the search (overrides the file)",
                                              lo=0)] = None,
              select: Annotated[Literal["best", "significant"] | None,
                                Opt("how --holdout or --folds chooses: the best score, or the baseline unless a "
                                    "configuration is significantly better (default: best)")] = None,
              ) -> Grid | Search:
    """A grid (a ``[grid]`` file, no ``search``) or a :class:`Search` (``search`` over a ``[space]`` file, or over
    a grid file's lists as choices), validated whole before anything loads."""
    if search is None:
        given = [n for n, v in (("trials", trials), ("timeout", timeout), ("prune_share", prune_share),
                                ("prune_rungs", prune_rungs)) if v is not None]
        if given:
            raise GridError(f"{', '.join(given)} set(s) a search: give search = tpe or random too")
        data = read_settings_file(path, "grid file")
        if "space" in data and "grid" not in data:
            raise GridError(f"{path} is a space file ([space]): search it (search = tpe or random, and trials), "
                            "or give a grid file ([grid] of lists)")
        return load_grid(path, metric=metric, holdout=holdout, folds=folds, seed=seed, select=select)
    data = read_settings_file(path, "space file")
    overrides = {k: v for k, v in (("metric", metric), ("holdout", holdout), ("folds", folds), ("seed", seed),
                                   ("select", select)) if v is not None and v != ""}
    if overrides.get("holdout") and "folds" not in overrides:
        data.pop("folds", None)
    if overrides.get("folds") and "holdout" not in overrides:
        data.pop("holdout", None)
    table = "space" if "space" in data or "grid" not in data else "grid"
    grid, space = parse_space({**data, **overrides}, source=str(path), table=table)
    return Search(grid, space, sampler=search, trials=50 if trials is None else trials, timeout=timeout,
                  prune_share=0.3 if prune_share is None else prune_share,
                  prune_rungs=1 if prune_rungs is None else prune_rungs)


def _optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise MissingDependencyError("a search needs Optuna: pip install 'ragtune[search]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _rung_pruner(optuna: Any, percentile: float, n_min: int) -> Any:
    """Optuna's percentile rule, read at one rung: a trial is pruned when its score on the current rung's
    questions falls below the ``percentile`` of the completed trials' scores on the same questions (the median at
    50), once ``n_min`` completed trials have one. Optuna's own ``PercentilePruner`` compares a trial's *best*
    value over its steps, which suits a learning curve; a rung's questions are others than the last rung's, so a
    trial lucky on the first tenth would never be pruned on the rest of the share."""
    import numpy as np

    class RungPruner(optuna.pruners.BasePruner):  # type: ignore[misc, name-defined]
        def prune(self, study: Any, trial: Any) -> bool:
            step = trial.last_step
            if step is None:
                return False
            value = trial.intermediate_values[step]
            if math.isnan(value):
                return True
            others = [v for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
                      if not math.isnan(v := t.intermediate_values.get(step, math.nan))]
            if len(others) < n_min:
                return False
            if study.direction == optuna.study.StudyDirection.MAXIMIZE:
                return bool(value < np.percentile(others, 100 - percentile))
            return bool(value > np.percentile(others, percentile))

    return RungPruner()


def _journal(optuna: Any, path: Path) -> Any:
    """Optuna's journal file backend, synced to disk once per trial (``sync()``, called as each trial ends) instead
    of after each of a trial's ~15 writes (its params, attributes, report and state): Optuna fsyncs every write,
    3-4 ms apiece, about 55 ms a trial, a sixth of a BM25 trial on the FastAPI docs. Each write is still appended
    whole, under Optuna's file lock, and flushed to the operating system at once, so a killed run loses nothing
    and another process reads it; a power cut can lose only the lines of the trial then running (a torn last
    line is an unfinished tail, which Optuna's reader skips), and that trial is asked again, as after a kill."""
    journal = optuna.storages.journal
    lock = journal.JournalFileSymlinkLock(str(path))

    class Backend(journal.JournalFileBackend):  # type: ignore[misc, valid-type]
        def append_logs(self, logs: list[dict[str, Any]]) -> None:
            text = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs)
            lock.acquire()
            try:
                with open(path, "ab") as f:
                    f.write(text.encode("utf-8"))
                    f.flush()
            finally:
                lock.release()

        def sync(self) -> None:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    return Backend(str(path), lock_obj=lock)


def _mean(scores: Mapping[str, float], ids: Sequence[str]) -> float:
    vals = [scores[i] for i in ids if i in scores and not math.isnan(scores[i])]
    return sum(vals) / len(vals) if vals else math.nan


def selections(questions: Sequence[Mapping[str, Any]], grid: Grid) -> list[tuple[str, list[str]]]:
    """(study name, the ids of its selection questions): one search, or one per fold."""
    ids = sorted(q["id"] for q in questions)
    if grid.folds:
        parts = fold_questions(questions, grid.folds, grid.seed)
        return [(f"fold-{f + 1}", sorted(set(ids) - set(part))) for f, part in enumerate(parts)]
    if grid.holdout:
        return [("search", split_questions(questions, grid.holdout, grid.seed)[0])]
    return [("search", ids)]


class _Trials:
    """The objective of one study: a trial's configuration evaluated (or read from the caches) and scored on the
    selection questions."""

    def __init__(self, optuna: Any, corpus: Corpus, golden: GoldenSet, search: Search, out: Path,
                 executor: Executor, selection: list[str], rungs: list[list[str]], startup: int, show: bool):
        self.optuna, self.corpus, self.golden, self.search, self.out = optuna, corpus, golden, search, out
        self.executor, self.selection, self.rungs, self.startup, self.show = executor, selection, rungs, startup, show
        self.metric = search.grid.metric

    def __call__(self, trial: Any) -> float:
        spec = PipelineConfig.from_flags(self.search.space.suggest(trial), strict=False).resolved(self.corpus.kind)
        trial.set_user_attr("key", spec.key)
        trial.set_user_attr("label", spec.label)
        record = _resumable(self.out / "runs" / f"{spec.key}.json", spec)
        trial.set_user_attr("cached", record is not None)
        reported = 0  # rungs reported from a partial run
        if record is None and self.rungs and self._pruning(trial):
            partial = None
            for step, ids in enumerate(self.rungs):
                partial = self._partial(spec, ids, partial)
                value = _mean(partial, ids)
                trial.set_user_attr("rung", value)
                trial.set_user_attr("step", step)
                trial.set_user_attr("rung_questions", len(ids))
                trial.report(value, step)
                reported = step + 1
                if trial.should_prune():
                    raise self.optuna.TrialPruned()
        if record is None:
            grid = dataclasses.replace(self.search.grid, specs=(spec,), baseline=spec)  # this one only
            record = run_sweep(self.corpus, self.golden, grid, self.out, show_progress=False,
                               executor=self.executor)[0]
        scores = question_scores(record["result"], self.metric)
        for step, ids in enumerate(self.rungs):  # the same questions' scores from the full run: like for like
            if step >= reported:
                trial.report(_mean(scores, ids), step)
            if step == len(self.rungs) - 1:
                trial.set_user_attr("rung", _mean(scores, ids))
        value = _mean(scores, self.selection)
        if math.isnan(value):
            raise ConfigError(f"{spec.label}: no {self.metric} score on the selection questions")
        return value

    def _pruning(self, trial: Any) -> bool:
        """Whether the pruner may prune now (enough completed trials to compare with): else skip the partial run."""
        done = trial.study.get_trials(deepcopy=False, states=(self.optuna.trial.TrialState.COMPLETE,))
        return len(done) >= self.startup

    def _partial(self, spec: PipelineConfig, ids: list[str],
                 known: dict[str, float] | None = None) -> dict[str, float]:
        """The trial's scores on (at least) the questions ``ids``: those of a rung, cached in ``DIR/partial/``; a
        later rung, given the earlier rung's scores as ``known``, evaluates only the questions they lack (the rungs
        are nested). The run goes through the search's executor, as a full run does, without latency timing."""
        path = self.out / "partial" / f"{spec.key}.json"
        if known is None and path.exists():
            try:
                saved = json.loads(path.read_text())
                if saved.get("spec") == json.loads(json.dumps(spec.to_dict())):
                    known = {k: (math.nan if v is None else float(v)) for k, v in saved["scores"].items()}
            except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
                known = {}
        known = known or {}
        wanted = set(ids) - set(known)
        if not wanted:
            return known
        job = SweepJob(self.corpus, self.golden, self.search.grid, questions=frozenset(wanted), timed=False)
        (_, record), = self.executor.run(job, [(1, spec)], SweepProgress(1, False))
        scores = {**known, **question_scores(record["result"], self.metric)}
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, {"spec": spec.to_dict(), "scores": {k: (None if math.isnan(v) else v)
                                                                 for k, v in scores.items()}})
        return scores


def _recover(optuna: Any, study: Any) -> int:
    """Trials a killed run left running are marked failed (``interrupted``) and their configurations asked
    again; returns how many trials are finished and count towards the total."""
    state = optuna.trial.TrialState
    for t in study.get_trials(deepcopy=False, states=(state.RUNNING,)):
        study._storage.set_trial_user_attr(t._trial_id, "interrupted", True)
        study._storage.set_trial_state_values(t._trial_id, state.FAIL)
        if t.params:
            study.enqueue_trial(t.params, skip_if_exists=False)
    return sum(1 for t in study.get_trials(deepcopy=False)
               if t.state in (state.COMPLETE, state.PRUNED) or (t.state == state.FAIL
                                                                and not t.user_attrs.get("interrupted")))


def run_search(corpus: Corpus, golden: GoldenSet, search: Search, out_dir: str | os.PathLike[str], *,
               show_progress: bool = True, executor: Executor | None = None, pool_sample: Any = None) -> SweepResult:
    """Run (or continue) the search, then summarise every configuration evaluated as a sweep and write
    ``results.json`` and ``report.html`` into ``out_dir`` (see the module docstring).

    ``executor`` evaluates every configuration, the baseline's and each trial's (its first-questions runs and its
    full run), as it runs a grid's (:class:`~ragtune.sweep.runner.Executor`; default :class:`LocalExecutor`, one
    :class:`~ragtune.pipeline.Resources` for the whole search; ``ragtune.scale.RaySweepExecutor`` runs each as a
    Ray task). ``pool_sample``: a judged pool sample for the ``~`` marks, as :func:`~ragtune.sweep.run_grid`
    takes it."""
    judged = judged_sample(pool_sample, golden)
    optuna = _optuna()
    from ..embed.cache import default_cache_dir
    from .report import write_report

    t0 = time.perf_counter()
    search = search.resolved(corpus.kind)
    grid, out = search.grid, Path(out_dir)
    executor = executor or LocalExecutor(Resources(cache_dir=default_cache_dir(), show_progress=False))
    base = run_sweep(corpus, golden, grid, out, show_progress=False, executor=executor)[0]
    questions = base["result"]["questions"]
    answerable = {q["id"] for q in questions if q["answerable"]}
    journal = _journal(optuna, out / "search.journal")
    storage = optuna.storages.JournalStorage(journal)
    direction = "minimize" if _lower_better(grid.metric) else "maximize"
    startup = max(4, min(10, search.trials // 5))
    deadline = time.monotonic() + search.timeout * 60 if search.timeout else None
    studies = []
    for name, selection in selections(questions, grid):
        sel = [i for i in selection if i in answerable]
        sel_questions = [q for q in questions if q["id"] in set(selection)]
        # nested: split_questions draws each stratum's order once per seed, and a share takes its first ones
        rungs = [[i for i in split_questions(sel_questions, share, grid.seed)[1] if i in answerable]
                 for share in search.prune_shares]
        rungs = [r for r in rungs if len(r) >= 5]  # too few questions to tell anything apart: no pruning there
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study = optuna.create_study(study_name=f"{name}-{search.key}", storage=storage, load_if_exists=True,
                                        direction=direction)
            done = _recover(optuna, study)
            seed = grid.seed + done  # a resumed search does not draw its first suggestions again
            study.sampler = (optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup, multivariate=True,
                                                        group=True)
                             if search.sampler == "tpe" else optuna.samplers.RandomSampler(seed=seed))
            study.pruner = _rung_pruner(optuna, PRUNE_PERCENTILE, startup)
            left = search.trials - done
            if left > 0 and (deadline is None or time.monotonic() < deadline):
                objective = _Trials(optuna, corpus, golden, search, out, executor, sel, rungs, startup, show_progress)
                shown = [_printer(name, search.trials, grid.metric)] if show_progress else []
                try:
                    study.optimize(objective, n_trials=left, catch=(ConfigError,),
                                   timeout=None if deadline is None else max(0.0, deadline - time.monotonic()),
                                   callbacks=[lambda study, trial: journal.sync(), *shown])
                finally:
                    journal.sync()
        studies.append(_study_info(optuna, study, name, sel, rungs))
    keys = list(dict.fromkeys(t["key"] for s in studies for t in s["trials"] if t["state"] == "complete"))
    records = {base["key"]: base}
    specs = []
    for key in keys:
        path = out / "runs" / f"{key}.json"
        record = json.loads(path.read_text())
        spec = PipelineConfig.from_dict(record["spec"])
        records.setdefault(key, record)
        specs.append(spec)
    result = summarize(dataclasses.replace(grid, specs=tuple(specs)), list(records.values()), judged=judged)
    result.search = {"sampler": search.sampler, "seed": grid.seed, "trials": search.trials,
                     "timeout_min": search.timeout, "prune_share": search.prune_share,
                     "prune_rungs": search.prune_rungs, "prune_shares": list(search.prune_shares),
                     "pruner": f"below the {100 - PRUNE_PERCENTILE:g}th percentile of the completed trials at each "
                               f"rung, after {startup} completed trials",
                     "space": search.space.to_dict(), "space_points": search.space.points,
                     "evaluated": len(keys),
                     "wall_s": round(time.perf_counter() - t0, 1), "studies": studies}
    result.write(out)
    write_report(result, out)
    return result


def _printer(name: str, total: int, metric: str) -> Any:
    def show(study: Any, t: Any) -> None:
        label = t.user_attrs.get("label", "?")
        state = t.state.name.lower()
        best = max((x.value for x in study.get_trials(deepcopy=False, states=(t.state,)) if x.value is not None),
                   default=math.nan) if state == "complete" else math.nan
        if study.direction.name == "MINIMIZE" and state == "complete":
            best = min(x.value for x in study.get_trials(deepcopy=False, states=(t.state,)) if x.value is not None)
        what = (f"{metric} {t.value:.3f} (best {best:.3f})" if state == "complete" else
                f"pruned at {t.user_attrs.get('rung', math.nan):.3f} on its first "
                f"{t.user_attrs.get('rung_questions', '')} questions" if state == "pruned" else
                state)
        cached = " (cached)" if t.user_attrs.get("cached") else ""
        note(f"[{name} trial {t.number + 1}/{total}] {label}: {what}{cached}")
    return show


def _study_info(optuna: Any, study: Any, name: str, selection: list[str], rungs: list[list[str]]) -> dict[str, Any]:
    """One study as results.json lists it: every trial with its state, configuration and scores."""
    trials = []
    for t in study.get_trials(deepcopy=False):
        if t.user_attrs.get("interrupted"):
            continue
        value = t.value if t.state == optuna.trial.TrialState.COMPLETE else None
        rung_value = t.user_attrs.get("rung")
        trials.append({"number": t.number, "state": t.state.name.lower(), "key": t.user_attrs.get("key"),
                       "label": t.user_attrs.get("label"), "value": value,
                       "rung": None if rung_value is None or math.isnan(rung_value) else rung_value,
                       "step": t.user_attrs.get("step") if t.state == optuna.trial.TrialState.PRUNED else None,
                       "cached": bool(t.user_attrs.get("cached")), "params": dict(t.params),
                       "seconds": (round((t.datetime_complete - t.datetime_start).total_seconds(), 2)
                                   if t.datetime_complete and t.datetime_start else None)})
    complete = [t for t in trials if t["state"] == "complete"]
    best = None
    if complete:
        b = study.best_trial
        best = {"number": b.number, "key": b.user_attrs.get("key"), "label": b.user_attrs.get("label"),
                "value": b.value}
    return {"name": name, "selection_questions": len(selection), "rung_questions": len(rungs[-1]) if rungs else 0,
            "rungs": [len(r) for r in rungs], "trials": trials,
            "best": best, "candidates": list(dict.fromkeys(t["key"] for t in complete))}
