"""Prediction-powered inference (PPI, PPI++) for metrics whose holes an LLM judged.

An LLM that grades a pool's holes (``ragtune golden judge``) fills every question's labels, but a biased judge
biases every metric it fills: one that calls too much relevant raises every recall. When people also judged
the holes of a subset of the questions, drawn at random, the two together give an estimate of the metric as the
people would have measured it on every question, with a confidence interval that holds whatever the judge's
bias, and that narrows as the judge agrees more with the people (Angelopoulos et al., *Prediction-powered
inference*, Science 2023; Angelopoulos, Duchi and Zrnic, *PPI++: efficient prediction-powered inference*,
2023).

Symbols, per question ``i`` of the ``N`` answerable questions scored: ``f_i`` the metric (recall@k, nDCG@k,
...) against the labels with the judge's filling the holes; ``y_i`` the metric against the people's labels,
known on the ``n`` questions of the people's subset ``L`` (a part of the ``N``):

- the judge-only (naive) figure: :math:`\\bar f_N`, with the interval :math:`\\bar f_N \\pm z\\,s_f/\\sqrt N`.
  It is exact about the wrong thing: its interval narrows around the judge's figure, biased or not.
- the people-only (classical) figure: :math:`\\bar y_L \\pm z\\,s_y/\\sqrt n`.
- PPI: :math:`\\hat\\theta_\\lambda = \\lambda \\bar f_N + \\overline{(y - \\lambda f)}_L`, the judge's mean
  corrected by the rectifier, the mean over the subset of what the people's labels change. Its expectation is
  the people's mean whatever ``f`` is, so the judge's bias cancels. ``lambda = 1`` is plain PPI; PPI++ tunes
  it (power tuning).
- its variance, the subset being part of the ``N`` (so the two means share questions):
  :math:`\\operatorname{Var}\\hat\\theta_\\lambda = s^2_{y-\\lambda f}/n + (2\\lambda s_{fy} - \\lambda^2 s_f^2)/N`
  :math:`= s_y^2/n - (2\\lambda s_{fy} - \\lambda^2 s_f^2)(1/n - 1/N)`, every ``s`` (sample variances and the
  covariance, ``n - 1`` in the denominator) over the subset. It is smallest at
  :math:`\\lambda^* = s_{fy}/s_f^2` (clipped to ``[0, 1]``), where it is
  :math:`s_y^2/n \\cdot (1 - \\rho^2 (1 - n/N))`: a judge that agrees perfectly (``rho = 1``) gives the
  precision of ``N`` people-judged questions, a useless one (``rho = 0``) that of the ``n`` the people judged,
  never worse.
- the interval: :math:`\\hat\\theta \\pm t \\sqrt{\\operatorname{Var}}` (the central limit theorem over
  questions), ``t`` the Student quantile of the confidence with ``n - 1`` degrees of freedom, ``n - 2`` when
  lambda is tuned on the same questions (and the residuals' variance over ``n - 2``, as a regression's): the
  normal quantile's small-sample correction, without which 20 people-judged questions of a synthetic problem
  covered 91% instead of 95%. The naive and classical intervals use ``N - 1`` and ``n - 1``. Coverage and widths
  under a judge biased toward "relevant", on SciFact's qrels: ``bench/ppi.py`` and BENCHMARKS.md.

What it needs: the subset drawn at random from the questions (the people judging every hole the judge labelled
for those questions), and at least :data:`MIN_PEOPLE` of them; a subset picked for being easy is no sample and
no formula fixes it. The estimand is the mean over questions like these (the set as a sample), so the
interval is wider than one over these ``N`` questions alone would be.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from functools import lru_cache
from statistics import NormalDist
from typing import Annotated, Any, Literal

import numpy as np

from ..config import Opt
from ..errors import ConfigError

__all__ = ["PPIEstimate", "PPIReport", "MIN_PEOPLE", "ppi_mean", "ppi_scores", "people_subset", "ppi_run",
           "golden_ppi", "t_quantile"]

MIN_PEOPLE = 3  # questions the people judged, at least: a variance and a tuned lambda need three
CONFIDENCE = 0.95


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must lie strictly between 0 and 1 (e.g. 0.95), got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


@lru_cache(maxsize=256)
def t_quantile(confidence: float, df: int) -> float:
    """The two-sided Student t quantile: ``t`` with ``P(|T| <= t) = confidence`` for ``df`` degrees of freedom
    (bisection on :math:`I_{\\nu/(\\nu + t^2)}(\\nu/2, 1/2)`, the two-sided tail)."""
    from ..evaluate.significance import _betainc

    z = _z(confidence)
    if df < 1:
        raise ConfigError(f"a t quantile needs at least 1 degree of freedom, got {df}")
    lo, hi = z, z
    while _betainc(df / 2.0, 0.5, df / (df + hi * hi)) > 1.0 - confidence:
        hi *= 2.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if _betainc(df / 2.0, 0.5, df / (df + mid * mid)) > 1.0 - confidence:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


@dataclass(frozen=True)
class PPIEstimate:
    """One metric estimated three ways (see the module docstring): ``estimate`` with ``[low, high]`` (PPI, or
    PPI++ with the tuned ``lam``), the judge-only ``naive`` figure and the people-only ``classical`` one, each
    with its interval at ``confidence``; ``n`` questions the people judged of ``N``."""

    metric: str
    estimate: float
    low: float
    high: float
    lam: float
    naive: float
    naive_low: float
    naive_high: float
    classical: float
    classical_low: float
    classical_high: float
    n: int
    N: int
    confidence: float = CONFIDENCE
    tuned: bool = False  # lambda tuned (PPI++), or given

    @property
    def width(self) -> float:
        return self.high - self.low

    def covers(self, value: float) -> bool:
        return self.low <= value <= self.high

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "estimate": self.estimate, "ci": [self.low, self.high], "lambda": self.lam,
                "naive": self.naive, "naive_ci": [self.naive_low, self.naive_high], "classical": self.classical,
                "classical_ci": [self.classical_low, self.classical_high], "people": self.n, "questions": self.N,
                "confidence": self.confidence, "method": "ppi++" if self.tuned else "ppi"}

    def line(self) -> str:
        """``recall@5  0.712 [0.650, 0.774] (PPI++, lambda 0.83; judge only 0.801 [0.770, 0.832]; people only
        0.700 [0.590, 0.810]; 40 of 200 questions judged by people)``."""
        kind = f"PPI++, lambda {self.lam:.2f}" if self.tuned else f"PPI, lambda {self.lam:.2f}"
        return (f"{self.metric}  {self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}] ({kind}; judge only "
                f"{self.naive:.3f} [{self.naive_low:.3f}, {self.naive_high:.3f}]; people only {self.classical:.3f} "
                f"[{self.classical_low:.3f}, {self.classical_high:.3f}]; {self.n} of {self.N} questions judged by "
                "people)")


def ppi_mean(judge: Sequence[float], people: Sequence[float], *, metric: str = "metric",
             lam: float | None = None, confidence: float = CONFIDENCE) -> PPIEstimate:
    """The PPI estimate of a mean (see the module docstring). ``judge``: the metric of each of the ``N``
    questions under the judge-filled labels; ``people``: the same questions' metric under the people's labels,
    ``nan`` where the people did not judge. ``lam=None`` tunes lambda (PPI++); ``lam=1.0`` is plain PPI."""
    f = np.asarray(judge, dtype=np.float64)
    y = np.asarray(people, dtype=np.float64)
    if f.ndim != 1 or f.shape != y.shape:
        raise ConfigError(f"ppi_mean needs two lists of one length (one value per question), got {f.shape} and "
                          f"{y.shape}")
    if not np.isfinite(f).all():
        raise ConfigError("ppi_mean: every question needs the judge's value (judge has nan); score every "
                          "question under the judge-filled labels")
    if lam is not None and not (0.0 <= float(lam) <= 1.0):
        raise ConfigError(f"lam must lie in [0, 1] (1: plain PPI) or be None (tuned, PPI++), got {lam!r}")
    _z(confidence)
    mask = np.isfinite(y)
    n, big_n = int(mask.sum()), int(f.size)
    if n < MIN_PEOPLE:
        raise ConfigError(f"PPI needs at least {MIN_PEOPLE} questions whose holes people judged, got {n}; judge "
                          "the holes of a random sample of the questions")
    fl, yl = f[mask], y[mask]
    s_f, s_y = float(np.var(fl, ddof=1)), float(np.var(yl, ddof=1))
    s_fy = float(np.cov(fl, yl, ddof=1)[0, 1])
    tuned = lam is None
    if lam is None:
        lam = min(1.0, max(0.0, s_fy / s_f)) if s_f > 0 else 0.0
    lam = float(lam)
    estimate = lam * float(f.mean()) + float((yl - lam * fl).mean())
    s_r = s_y - 2.0 * lam * s_fy + lam * lam * s_f  # the residuals' variance, s^2 of y - lambda f
    if tuned:  # lambda fitted on these residuals: n - 2 in the denominator, as a regression's residuals
        s_r *= (n - 1) / (n - 2)
    var = s_r / n + (2.0 * lam * s_fy - lam * lam * s_f) / big_n
    half = t_quantile(confidence, n - 1 - int(tuned)) * math.sqrt(max(var, 0.0))
    naive, naive_half = float(f.mean()), t_quantile(confidence, big_n - 1) * math.sqrt(float(np.var(f, ddof=1)) / big_n)
    classical, classical_half = float(yl.mean()), t_quantile(confidence, n - 1) * math.sqrt(s_y / n)
    return PPIEstimate(metric, estimate, estimate - half, estimate + half, lam, naive, naive - naive_half,
                       naive + naive_half, classical, classical - classical_half, classical + classical_half, n,
                       big_n, confidence, tuned)


def ppi_scores(judge: Mapping[str, Mapping[str, float]], people: Mapping[str, Mapping[str, float]],
               metrics: Sequence[str], *, lam: float | None = None,
               confidence: float = CONFIDENCE) -> dict[str, PPIEstimate]:
    """PPI estimates of ``metrics`` from per-question scores: ``judge`` maps every question id (the ``N``) to its
    scores under the judge-filled labels, ``people`` the questions the people judged to their scores under the
    people's labels (ids ``judge`` lacks are ignored)."""
    ids = list(judge)
    out = {}
    for m in metrics:
        missing = [q for q in ids if m not in judge[q]]
        if missing:
            raise ConfigError(f"metric {m!r} is not among the scores of question {missing[0]!r}; give a metric "
                              "the evaluation computed (e.g. recall@5, ndcg@10)")
        f = [float(judge[q][m]) for q in ids]
        y = [float(people[q][m]) if q in people and m in people[q] else math.nan for q in ids]
        out[m] = ppi_mean(f, y, metric=m, lam=lam, confidence=confidence)
    return out


def people_subset(judged: Any, people: Any) -> tuple[list[str], list[str]]:
    """Which questions the people judged completely: the ids of golden set ``people`` whose every anchor an LLM
    alone labelled in golden set ``judged`` (:attr:`~ragtune.golden.GoldenItem.llm_only`) carries a person's
    label in ``people``; and the ids of ``people`` left out (a hole the judge labelled that no person did).
    Both sets are read with every label (``labels="all"``)."""
    by_id = {i.id: i for i in judged}
    full, partial = [], []
    for item in people:
        other = by_id.get(item.id)
        if other is None:
            continue
        theirs = item.judged_anchors
        mine = set(item.llm_only)
        holes = [a for a in other.llm_only if a not in theirs or a in mine]
        (partial if holes else full).append(item.id)
    return full, partial


DEFAULT_METRICS = ("recall@5", "precision@5", "ndcg@10")


@dataclass(frozen=True)
class PPIReport:
    """What :func:`ppi_run` found: per run (``runs``: its label and an estimate per metric; one run, or every
    configuration of a sweep), which questions the people judged (``people``, the ``n``; ``partial``: in the
    people's file, but with a hole the judge labelled that no person did), the ``N`` questions scored, and the
    agreement of the people and the judge on the people's questions' holes (base rates, kappa with prevalence,
    the calibration verdict)."""

    source: str
    judged: str
    people_file: str
    runs: tuple[tuple[str, tuple[PPIEstimate, ...]], ...]
    people: tuple[str, ...]
    partial: tuple[str, ...]
    questions: int
    agreement: Any = None  # ragtune.judgments.agreement.Agreement, people (A) against the judge-filled labels (B)
    notes: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "judged": self.judged, "people_file": self.people_file,
                "runs": [{"label": label, "estimates": [e.to_dict() for e in est]} for label, est in self.runs],
                "people": list(self.people), "partial": list(self.partial), "questions": self.questions,
                "agreement": None if self.agreement is None else self.agreement.to_dict(), "notes": list(self.notes)}

    def summary(self) -> str:
        """The text ``ragtune golden ppi`` prints."""
        lines = [f"{self.source}: {self.questions} answerable questions scored with the judge's labels "
                 f"({self.judged}); people judged every hole of {len(self.people)} ({self.people_file})"]
        first = next((est[0] for _, est in self.runs if est), None)
        if first is not None:
            lines.append(f"prediction-powered {first.confidence:.0%} intervals (the people's figure over every "
                         "question, the judge's bias corrected by the people's questions):")
        for label, est in self.runs:
            if len(self.runs) > 1:
                lines.append(f"  {label}")
            lines += [f"  {'  ' if len(self.runs) > 1 else ''}{e.line()}" for e in est]
        a = self.agreement
        if a is not None and a.pairs:
            def f(v: float) -> str:
                return f"{v:.2f}" if math.isfinite(v) else "n/a"

            lines.append(f"judge against people on those questions' holes ({a.pairs} pairs): relevant {f(a.base_rate_b)} "
                         f"by the judge, {f(a.base_rate_a)} by the people; kappa {f(a.kappa)} with prevalence index "
                         f"{f(a.prevalence_index)}, PABAK {f(a.pabak)}")
            lines.append(f"  {a.verdict}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _sweep_runs(folder: Path) -> tuple[list[tuple[str, Path]], str | None, list[int]]:
    """A sweep folder's configurations as (label, runs/<key>.json), its metric and cutoffs."""
    import json

    from ..errors import CorpusNotFoundError

    results = folder / "results.json"
    if not results.is_file():
        raise CorpusNotFoundError(f"{folder}: not a sweep output folder (no results.json); give a run file or a "
                                  "sweep folder")
    data = json.loads(results.read_text(encoding="utf-8"))
    runs = []
    for c in data.get("configs", []):
        path = folder / "runs" / f"{c['key']}.json"
        if not path.is_file():
            raise CorpusNotFoundError(f"{path}: missing; estimating a sweep needs each configuration's stored rankings")
        runs.append((str(c.get("label") or c["key"]), path))
    return runs, data.get("metric"), list(data.get("ks") or [])


def ppi_run(run: Any, judged: Any, people: Any, *, corpus: Any = None, ks: Sequence[int] = (5, 10, 20),
            metrics: Sequence[str] = (), lam: float | None = None, confidence: float = CONFIDENCE) -> PPIReport:
    """PPI estimates of ``metrics`` for the rankings in ``run`` (a run file or an eval result's JSON, as
    :func:`~ragtune.evaluate.run.score_run_file` reads them; or a sweep folder: every configuration's
    ``runs/<key>.json``), scored under golden set ``judged`` (the judge's labels filling the holes) on every
    question and under ``people`` (the people's labels) on the questions whose every hole a person judged
    (:func:`people_subset`). ``metrics``: default :data:`DEFAULT_METRICS` for a run, the sweep metric for a
    sweep."""
    from ..golden import GoldenSet
    from .agreement import label_agreement

    subset, partial = people_subset(judged, people)
    keep = set(subset)
    if not keep:
        raise ConfigError(f"{getattr(people, 'source', None) or 'the people-judged set'}: no question has every hole "
                          f"the judge labelled judged by a person ({len(partial)} partly); judge the holes of a "
                          "random sample of the questions")
    mine = GoldenSet([i for i in people if i.id in keep], source=getattr(people, "source", None)).human()
    folder = Path(run)
    if folder.is_dir():
        runs, sweep_metric, sweep_ks = _sweep_runs(folder)
        metrics = tuple(metrics) or ((sweep_metric,) if sweep_metric else DEFAULT_METRICS)
        ks = sorted({*ks, *sweep_ks})
    else:
        runs, metrics = [(str(run), folder)], tuple(metrics) or DEFAULT_METRICS
    if not runs:
        raise ConfigError(f"{run}: the sweep holds no configuration to estimate")
    rows, used, notes, n_questions = [], set(subset), [], 0
    for label, path in runs:
        estimates, n_questions, scored = _estimates(path, judged, mine, corpus, ks, metrics, lam, confidence)
        rows.append((label, estimates))
        used &= scored
    dropped = sorted(keep - used)
    if dropped:
        notes.append(f"{len(dropped)} people-judged question(s) are left out, answerable under one label set and "
                     f"not the other (e.g. {dropped[0]!r})")
    if partial:
        notes.append(f"{len(partial)} question(s) of the people's file have a hole the judge labelled and no person "
                     f"did (e.g. {partial[0]!r}): left out of the people's subset")
    notes.append("valid when the people's questions were drawn at random from these; a subset picked for being "
                 "easy or hard biases the correction")
    holes = {(i.id, a) for i in judged if i.id in used for a in i.llm_only}
    agreement = label_agreement(mine, judged, only=holes, names=("people", "judge")) if holes else None
    return PPIReport(str(run), str(getattr(judged, "source", None) or "judged"),
                     str(getattr(people, "source", None) or "people"), tuple(rows),
                     tuple(q for q in subset if q in used), tuple(partial), n_questions, agreement, tuple(notes))


def _estimates(path: Any, judged: Any, people: Any, corpus: Any, ks: Sequence[int], metrics: Sequence[str],
               lam: float | None, confidence: float) -> tuple[tuple[PPIEstimate, ...], int, set[str]]:
    """One run's estimates, its number of answerable questions under the judge, and the people's questions
    scored (answerable under both label sets)."""
    from ..evaluate.run import score_run_file

    judge_scores = {q.id: q.scores for q in score_run_file(path, judged, corpus=corpus, ks=ks).questions
                    if q.answerable}
    people_scores = {q.id: q.scores for q in score_run_file(path, people, corpus=corpus, ks=ks).questions
                     if q.answerable and q.id in judge_scores}
    estimates = ppi_scores(judge_scores, people_scores, list(metrics), lam=lam, confidence=confidence)
    return tuple(estimates.values()), len(judge_scores), set(people_scores)


def golden_ppi(
    run: Annotated[str, Opt("the rankings: a run file, an eval result's JSON (`ragtune eval --out FILE`) or a sweep "
                            "folder (every configuration)", flag="RUN")],
    *,
    judged: Annotated[str, Opt("the golden set whose holes an LLM judged (`ragtune golden judge` output)",
                               metavar="FILE")],
    people: Annotated[str, Opt("the golden set where people judged every hole of a random sample of the questions",
                               metavar="FILE")],
    corpus: Annotated[str | None, Opt("the corpus the run's hits are matched to (as eval --run)")] = None,
    metric: Annotated[tuple[str, ...], Opt("a metric to estimate, e.g. recall@5 (repeat the flag for more; default "
                                           "recall@5, precision@5 and ndcg@10 for a run, the sweep metric for a "
                                           "sweep)", metavar="METRIC")] = (),
    method: Annotated[Literal["ppi++", "ppi"], Opt("ppi++: lambda tuned to the judge's quality (never worse than "
                                                    "the people alone); ppi: lambda 1")] = "ppi++",
    confidence: Annotated[float, Opt("the intervals' confidence", lo=0.5, hi=0.999)] = CONFIDENCE,
) -> PPIReport:
    """Read the files and estimate (:func:`ppi_run`): ``ragtune golden ppi``."""
    from ..golden import load_golden

    cutoffs = sorted({int(m.split("@", 1)[1]) for m in metric if "@" in m and m.split("@", 1)[1].isdigit()})
    docs = None
    if corpus is not None:
        from ..corpus import load_corpus

        docs = load_corpus(corpus)
    return ppi_run(run, load_golden(judged, labels="all"), load_golden(people, labels="all"), corpus=docs,
                   ks=cutoffs or (5, 10, 20), metrics=metric, lam=1.0 if method == "ppi" else None,
                   confidence=confidence)
