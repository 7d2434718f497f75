"""Agreement between two label sets: Cohen's kappa on relevant/not, weighted kappa on the grades, and Kendall's
tau between the configuration rankings a sweep gets under each.

Two golden files (two people, or a person and an LLM: ``ragtune golden judge``) are compared on the
(question, anchor) pairs both judged: an anchor in ``relevant`` or ``judged`` of the same question id in both
(:attr:`~ragtune.golden.GoldenItem.judged_anchors`, with its grade; 0 = not relevant). With a pool file only the
pool's holes count, so labels copied into both files (the golden set a judge started from) do not inflate the
figures.

- :func:`cohen_kappa`: :math:`\\kappa = 1 - \\sum w_{ij} O_{ij} / \\sum w_{ij} E_{ij}` over the confusion matrix
  ``O`` of the two label lists (as shares), ``E`` the outer product of its margins (what chance would give),
  ``w_{ij} = [i \\ne j]`` unweighted, ``|g_i - g_j|`` for ``weights="linear"`` (the distance between the grade
  values, so grade 3 against 0 counts three times grade 1 against 0). ``nan`` when there is nothing to correct
  for: no pairs, or both sides using one and the same label for everything (``E`` all on the diagonal);
  scikit-learn's ``cohen_kappa_score`` gives ``nan`` there too.
- :func:`kendall_tau`: tau-b, :math:`(n_c - n_d) / \\sqrt{(n_0 - n_1)(n_0 - n_2)}`, ties counted as scipy's
  ``kendalltau`` counts them; ``nan`` when either side is all ties.
- kappa with its prevalence (Byrt, Bishop and Carlin 1993), since a kappa means little without it: each side's
  base rate of "relevant" on the pairs (:math:`p_A`, :math:`p_B`, the share it calls relevant), the prevalence
  index :math:`PI = (n_{11} - n_{00})/n` (both relevant minus both not), the bias index
  :math:`BI = (n_{01} - n_{10})/n` (B relevant where A is not, minus the reverse: above 0, B calls more
  relevant) and PABAK, the kappa with prevalence and bias adjusted, :math:`2 p_o - 1` (``p_o`` the raw
  agreement). With few relevant pairs kappa is low even where the two agree on nearly every pair; PABAK and
  the base rates say so.
- the calibration verdict (:data:`KAPPA_CALIBRATED`, :data:`MIN_PAIRS`): B is called calibrated against A only
  when A's labels on the pairs are a person's (no pair whose A label only an LLM gave, ``by: llm:<model>``: a
  judge measured against another LLM's labels says nothing about people), on at least :data:`MIN_PAIRS` pairs,
  with the lower end of kappa's interval at :data:`KAPPA_CALIBRATED` or above and the interval of
  :math:`p_B - p_A` holding 0 (no detectable bias toward relevant or away from it).
- :func:`label_agreement` adds a percentile bootstrap 95% interval to each kappa and base rate, resampling
  questions (a question's pairs stay together), ``samples`` draws with a fixed ``seed``; :func:`golden_agreement` reads the
  files and, given a sweep folder, rescores every configuration's stored rankings (``runs/<key>.json``) under
  each label set and compares the two rankings by the sweep metric.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from ..config import Opt
from ..errors import ConfigError, CorpusNotFoundError

__all__ = ["Agreement", "SweepAgreement", "cohen_kappa", "kendall_tau", "label_agreement", "golden_agreement",
           "calibration_verdict"]

CONFIDENCE = 0.95
KAPPA_CALIBRATED = 0.6  # the lower end of kappa's interval a calibrated judge reaches (substantial, Landis and Koch)
MIN_PAIRS = 30  # pairs judged by both, at least, before a judge is called calibrated


def _kappa_from(counts: np.ndarray, values: np.ndarray, weights: str | None) -> np.ndarray:
    """Kappa of each confusion matrix in ``counts`` (shape ``(..., K, K)``) over categories ``values``."""
    k = len(values)
    w = np.abs(values[:, None] - values[None, :]) if weights == "linear" else 1.0 - np.eye(k)
    total = counts.sum(axis=(-2, -1), keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        o = counts / total
        e = o.sum(axis=-1, keepdims=True) * o.sum(axis=-2, keepdims=True)
        return 1.0 - (w * o).sum(axis=(-2, -1)) / (w * e).sum(axis=(-2, -1))


def _check_weights(weights: str | None) -> None:
    if weights not in (None, "linear"):
        raise ConfigError(f"kappa weights must be None (unweighted) or 'linear', got {weights!r}")


def cohen_kappa(a: Sequence[float], b: Sequence[float], *, weights: str | None = None) -> float:
    """Cohen's kappa between two label lists of equal length (see the module docstring); ``weights="linear"``
    weighs a disagreement by the distance between the two grades. ``nan`` when undefined."""
    _check_weights(weights)
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ConfigError(f"cohen_kappa needs two label lists of one length, got {x.shape} and {y.shape}")
    if x.size == 0:
        return float("nan")
    values = np.unique(np.concatenate([x, y]))
    counts = np.zeros((len(values), len(values)))
    np.add.at(counts, (np.searchsorted(values, x), np.searchsorted(values, y)), 1.0)
    return float(_kappa_from(counts, values, weights))


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b between two lists of scores for the same items (ties in either list allowed)."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ConfigError(f"kendall_tau needs two lists of one length, got {a.shape} and {b.shape}")
    i, j = np.triu_indices(a.size, k=1)
    sa, sb = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    n0 = i.size
    n1, n2 = int((sa == 0).sum()), int((sb == 0).sum())
    denom = math.sqrt(float(n0 - n1) * float(n0 - n2))
    return float((sa * sb).sum() / denom) if denom > 0 else float("nan")


def _interval(values: np.ndarray) -> tuple[float, float]:
    v = values[np.isfinite(values)]
    if v.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.percentile(v, [50.0 * (1.0 - CONFIDENCE), 50.0 * (1.0 + CONFIDENCE)])
    return float(lo), float(hi)


@dataclass(frozen=True)
class SweepAgreement:
    """A sweep's configurations scored under each label set: ``rows`` of (key, label, value under A, value under B)
    by ``metric``, and Kendall's tau-b between the two."""

    metric: str
    rows: tuple[tuple[str, str, float, float], ...]
    tau: float

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "kendall_tau": _finite(self.tau),
                "configs": [{"key": k, "label": lab, "a": _finite(va), "b": _finite(vb)} for k, lab, va, vb in self.rows]}


@dataclass(frozen=True)
class Agreement:
    """What :func:`label_agreement` measured between label sets ``a`` and ``b`` (their names)."""

    a: str
    b: str
    pairs: int  # (question, anchor) pairs both judged
    questions: int  # questions with at least one such pair
    raw: float  # share of pairs with the same relevant/not label
    kappa: float  # Cohen's kappa, relevant (grade > 0) or not
    kappa_ci: tuple[float, float]
    weighted_kappa: float  # linear weights on the grades
    weighted_ci: tuple[float, float]
    grades: tuple[float, ...] = ()  # the grade values seen
    confusion: tuple[tuple[int, ...], ...] = ()  # rows: a's grade, columns: b's grade
    samples: int = 2000
    seed: int = 0
    only: str | None = None  # the pool file restricting the pairs, if any
    sweep: SweepAgreement | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    base_rate_a: float = float("nan")  # share of pairs A calls relevant
    base_rate_b: float = float("nan")
    base_rate_a_ci: tuple[float, float] = (float("nan"), float("nan"))
    base_rate_b_ci: tuple[float, float] = (float("nan"), float("nan"))
    difference_ci: tuple[float, float] = (float("nan"), float("nan"))  # of base_rate_b - base_rate_a
    prevalence_index: float = float("nan")  # (both relevant - both not) / pairs
    bias_index: float = float("nan")  # (B relevant, A not - A relevant, B not) / pairs
    pabak: float = float("nan")  # prevalence- and bias-adjusted kappa, 2 * raw - 1
    reference_llm: int = 0  # pairs whose A label only an LLM gave
    calibrated: bool = False
    verdict: str = ""

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict[str, Any]:
        d = {"a": self.a, "b": self.b, "pairs": self.pairs, "questions": self.questions,
             "raw_agreement": _finite(self.raw), "kappa": _finite(self.kappa),
             "kappa_ci": [_finite(x) for x in self.kappa_ci], "weighted_kappa": _finite(self.weighted_kappa),
             "weighted_kappa_ci": [_finite(x) for x in self.weighted_ci], "weights": "linear",
             "grades": [_number(g) for g in self.grades], "confusion": [list(r) for r in self.confusion],
             "confidence": CONFIDENCE, "samples": self.samples, "seed": self.seed, "pool": self.only,
             "notes": list(self.notes), "base_rate_a": _finite(self.base_rate_a),
             "base_rate_b": _finite(self.base_rate_b), "base_rate_a_ci": [_finite(x) for x in self.base_rate_a_ci],
             "base_rate_b_ci": [_finite(x) for x in self.base_rate_b_ci],
             "base_rate_difference_ci": [_finite(x) for x in self.difference_ci],
             "prevalence_index": _finite(self.prevalence_index), "bias_index": _finite(self.bias_index),
             "pabak": _finite(self.pabak), "reference_llm_pairs": self.reference_llm, "calibrated": self.calibrated,
             "verdict": self.verdict}
        if self.sweep is not None:
            d["sweep"] = self.sweep.to_dict()
        return d

    def summary(self) -> str:
        """The table ``ragtune golden agreement`` prints."""
        def f(v: float) -> str:
            return "  n/a" if not math.isfinite(v) else f"{v:5.2f}"

        def ci(c: tuple[float, float]) -> str:
            return "" if not all(math.isfinite(x) for x in c) else f"  [{c[0]:.2f}, {c[1]:.2f}]"

        where = f" (holes of {self.only})" if self.only else ""
        lines = [f"agreement of {self.a} and {self.b}: {self.pairs} (question, anchor) pairs both judged{where}, "
                 f"{self.questions} questions",
                 f"  raw agreement (relevant or not)   {f(self.raw)}",
                 f"  Cohen's kappa (relevant or not)   {f(self.kappa)}{ci(self.kappa_ci)}",
                 f"  weighted kappa (grades, linear)   {f(self.weighted_kappa)}{ci(self.weighted_ci)}",
                 f"  relevant: A {f(self.base_rate_a)}{ci(self.base_rate_a_ci)}, B {f(self.base_rate_b)}"
                 f"{ci(self.base_rate_b_ci)} (base rates on the pairs)",
                 f"  prevalence index {f(self.prevalence_index).strip()}, bias index {f(self.bias_index).strip()} "
                 f"(B minus A), PABAK {f(self.pabak).strip()}",
                 f"  {int(CONFIDENCE * 100)}% bootstrap intervals over questions ({self.samples} samples, seed {self.seed})"]
        if self.grades:
            width = max(len(str(_number(g))) for g in self.grades) + 6
            lines.append("  grades (rows: A, columns: B) " + "".join(f"{_number(g):>{width}}" for g in self.grades))
            lines += ["  " + f"{_number(g):>28} " + "".join(f"{n:>{width}}" for n in row)
                      for g, row in zip(self.grades, self.confusion)]
        lines += [f"  {n}" for n in self.notes]
        if self.verdict:
            lines.append(f"  {self.verdict}")
        if self.sweep is not None:
            s = self.sweep
            lines.append(f"sweep: {len(s.rows)} configurations by {s.metric}; Kendall's tau-b between the rankings "
                         f"under A and under B: {f(s.tau).strip()}")
            width = max([len(lab) for _, lab, _, _ in s.rows] + [13])
            lines.append(f"  {'configuration':<{width}}  {'A':>6}  {'B':>6}")
            lines += [f"  {lab:<{width}}  {va:6.3f}  {vb:6.3f}"
                      for _, lab, va, vb in sorted(s.rows, key=lambda r: -r[2] if math.isfinite(r[2]) else 0.0)]
        return "\n".join(lines)


def _finite(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def _number(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def _pool_pairs(path: str | os.PathLike[str]) -> set[tuple[str, str]]:
    from ..corpus.loaders import iter_jsonl

    p = Path(path)
    if not p.is_file():
        raise CorpusNotFoundError(f"{p}: no such pool file (`ragtune pool ... --out FILE` writes one)")
    out = set()
    for lineno, row in iter_jsonl(p):
        if not isinstance(row, Mapping) or "id" not in row or not isinstance(row.get("holes"), list):
            raise ConfigError(f"{p}:{lineno}: not a pool line (expected {{\"id\", \"q\", \"holes\": [...]}} as "
                              "`ragtune pool` writes)")
        out.update((str(row["id"]), str(h["anchor"])) for h in row["holes"] if isinstance(h, Mapping) and "anchor" in h)
    return out


def label_agreement(a: Any, b: Any, *, only: set[tuple[str, str]] | None = None, samples: int = 2000,
                    seed: int = 0, names: tuple[str, str] = ("A", "B")) -> Agreement:
    """Agreement of golden sets ``a`` and ``b`` on the (question id, anchor) pairs both judged (``only``: just
    these pairs), with bootstrap intervals over questions (see the module docstring)."""
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ConfigError(f"samples must be a whole number >= 1, got {samples!r}")
    by_id = {i.id: i for i in b}
    rows: list[tuple[int, float, float]] = []  # (question index, grade in a, grade in b)
    qids: list[str] = []
    reference_llm = 0  # pairs whose label in a only an LLM gave
    for item in a:
        other = by_id.get(item.id)
        if other is None:
            continue
        ga, gb = item.judged_anchors, other.judged_anchors
        shared = [x for x in ga if x in gb and (only is None or (item.id, x) in only)]
        if shared:
            by_llm = set(item.llm_only)
            reference_llm += sum(x in by_llm for x in shared)
            rows += [(len(qids), ga[x], gb[x]) for x in shared]
            qids.append(item.id)
    notes = []
    if not rows:
        notes.append("no (question, anchor) pair is judged in both; judge the same pool in both files")
    q = np.array([r[0] for r in rows], dtype=np.int64)
    x = np.array([r[1] for r in rows], dtype=np.float64)
    y = np.array([r[2] for r in rows], dtype=np.float64)
    values = np.unique(np.concatenate([x, y])) if rows else np.zeros(0)
    ix, iy = np.searchsorted(values, x), np.searchsorted(values, y)
    k = len(values)
    per_q = np.zeros((len(qids), k, k))  # per question, the confusion matrix of its pairs
    np.add.at(per_q, (q, ix, iy), 1.0)
    binary = np.stack([per_q[:, values == 0][:, :, values == 0].sum(axis=(1, 2)),
                       per_q[:, values == 0][:, :, values > 0].sum(axis=(1, 2)),
                       per_q[:, values > 0][:, :, values == 0].sum(axis=(1, 2)),
                       per_q[:, values > 0][:, :, values > 0].sum(axis=(1, 2))], axis=1).reshape(-1, 2, 2)
    both = np.array([0.0, 1.0])
    total_g, total_b = per_q.sum(axis=0), binary.sum(axis=0)
    kappa = float(_kappa_from(total_b, both, None)) if rows else float("nan")
    wkappa = float(_kappa_from(total_g, values, "linear")) if rows else float("nan")
    nan2 = (float("nan"), float("nan"))
    kappa_ci = weighted_ci = rate_a_ci = rate_b_ci = diff_ci = nan2
    if len(qids) > 1:
        rng = np.random.default_rng(seed)
        draws = np.stack([np.bincount(rng.integers(0, len(qids), len(qids)), minlength=len(qids))
                          for _ in range(samples)]).astype(np.float64)  # (samples, questions): times drawn
        resampled = np.einsum("sq,qij->sij", draws, binary)
        kappa_ci = _interval(_kappa_from(resampled, both, None))
        weighted_ci = _interval(_kappa_from(np.einsum("sq,qij->sij", draws, per_q), values, "linear"))
        with np.errstate(invalid="ignore", divide="ignore"):
            rate_a, rate_b = (resampled[:, 1, :].sum(axis=1) / resampled.sum(axis=(1, 2)),
                              resampled[:, :, 1].sum(axis=1) / resampled.sum(axis=(1, 2)))
        rate_a_ci, rate_b_ci, diff_ci = _interval(rate_a), _interval(rate_b), _interval(rate_b - rate_a)
    n = float(total_b.sum())
    raw = float(np.trace(total_b) / n) if rows else float("nan")
    if rows and not math.isfinite(kappa):
        notes.append("kappa is undefined: both label sets give every pair the same label (no chance agreement "
                     "to correct for); the raw agreement stands alone")
    nan = float("nan")
    base_a, base_b = (float(total_b[1].sum() / n), float(total_b[:, 1].sum() / n)) if rows else (nan, nan)
    result = Agreement(names[0], names[1], len(rows), len(qids), raw, kappa, kappa_ci, wkappa, weighted_ci,
                       tuple(float(v) for v in values), tuple(tuple(int(n) for n in r) for r in total_g),
                       samples, seed, None, None, tuple(notes), base_a, base_b, rate_a_ci, rate_b_ci, diff_ci,
                       float((total_b[1, 1] - total_b[0, 0]) / n) if rows else nan,
                       float((total_b[0, 1] - total_b[1, 0]) / n) if rows else nan,
                       2.0 * raw - 1.0 if rows else nan, reference_llm)
    calibrated, verdict = calibration_verdict(result)
    return replace(result, calibrated=calibrated, verdict=verdict)


def calibration_verdict(r: Agreement) -> tuple[bool, str]:
    """Whether B may be called calibrated against A (see the module docstring), and the one line that says why
    or why not."""
    def pct(v: float) -> str:
        return f"{v:.0%}" if math.isfinite(v) else "n/a"

    if r.reference_llm:
        return False, (f"not called calibrated: {r.reference_llm} of {r.pairs} of A's labels on the pairs came from "
                       "an LLM (by: llm:<model>), and a judge checked against an LLM's labels says nothing about "
                       "people's; compare against labels a person gave")
    if r.pairs < MIN_PAIRS:
        return False, (f"not called calibrated: {r.pairs} pairs, fewer than the {MIN_PAIRS} a verdict needs; judge "
                       "more of the same holes in both")
    low = r.kappa_ci[0]
    if not math.isfinite(low):
        return False, "not called calibrated: kappa or its interval is undefined on these pairs (one label for all)"
    if low < KAPPA_CALIBRATED:
        return False, f"not calibrated: the lower end of kappa's interval is {low:.2f}, below {KAPPA_CALIBRATED}"
    lo, hi = r.difference_ci
    if math.isfinite(lo) and (lo > 0 or hi < 0):
        toward = "toward relevant" if lo > 0 else "away from relevant"
        return False, (f"not calibrated: B calls {pct(r.base_rate_b)} of the pairs relevant, A {pct(r.base_rate_a)} "
                       f"(B minus A within [{lo:+.2f}, {hi:+.2f}]): B is biased {toward}")
    return True, (f"B is calibrated against A's people-given labels: kappa's lower end {low:.2f} >= "
                  f"{KAPPA_CALIBRATED}, base rates {pct(r.base_rate_a)} and {pct(r.base_rate_b)} within their "
                  f"interval")


def sweep_agreement(sweep: str | os.PathLike[str], a: Any, b: Any, corpus: Any) -> SweepAgreement:
    """Rescore every configuration's stored rankings (``runs/<key>.json``) of a sweep folder under golden sets
    ``a`` and ``b``; Kendall's tau-b between the configurations' values of the sweep metric."""
    from ..evaluate.run import score_run_file

    p = Path(sweep)
    results = p / "results.json" if p.is_dir() else p
    if not results.is_file():
        raise CorpusNotFoundError(f"{p}: not a sweep output folder (no results.json)")
    data = json.loads(results.read_text(encoding="utf-8"))
    metric, ks = data.get("metric"), data.get("ks") or [5, 10, 20]
    rows = []
    for c in data.get("configs", []):
        run = results.parent / "runs" / f"{c['key']}.json"
        if not run.is_file():
            raise CorpusNotFoundError(f"{run}: missing; rescoring needs each configuration's stored rankings")
        va, vb = (score_run_file(run, g, corpus=corpus, ks=ks).metrics.get(metric, float("nan")) for g in (a, b))
        rows.append((str(c["key"]), str(c.get("label") or c["key"]), float(va), float(vb)))
    if len(rows) < 2:
        raise ConfigError(f"{p}: a ranking needs at least two configurations, the sweep has {len(rows)}")
    return SweepAgreement(str(metric), tuple(rows), kendall_tau([r[2] for r in rows], [r[3] for r in rows]))


def golden_agreement(
    a: Annotated[str, Opt("the first golden set (e.g. a person's labels)", flag="A")],
    b: Annotated[str, Opt("the second golden set (another person's, or `golden judge` output)", flag="B")],
    *,
    pool: Annotated[str | None, Opt("compare only the holes of this pool file (`ragtune pool --out`)",
                                    metavar="FILE")] = None,
    sweep: Annotated[str | None, Opt("a sweep output folder: rescore its configurations under A and B and give "
                                     "Kendall's tau between the two rankings (needs --corpus)", metavar="DIR")] = None,
    corpus: Annotated[str | None, Opt("the corpus the sweep ran on (with --sweep)")] = None,
    samples: Annotated[int, Opt("bootstrap samples", lo=1, hi=1_000_000)] = 2000,
    seed: Annotated[int, Opt("bootstrap seed", lo=0)] = 0,
) -> Agreement:
    """Read golden files ``a`` and ``b`` (every label, LLM ones included) and measure their agreement
    (:func:`label_agreement`); ``pool`` restricts it to a pool's holes; ``sweep`` adds the ranking agreement
    (:class:`SweepAgreement`), rescored against ``corpus``."""
    from ..golden import load_golden

    ga, gb = load_golden(a, labels="all"), load_golden(b, labels="all")
    result = label_agreement(ga, gb, only=_pool_pairs(pool) if pool else None, samples=samples, seed=seed,
                             names=(str(a), str(b)))
    s = None
    if sweep is not None:
        if corpus is None:
            raise ConfigError("rescoring a sweep needs the corpus it ran on: give corpus= (CLI: --corpus)")
        from ..corpus import load_corpus

        s = sweep_agreement(sweep, ga, gb, load_corpus(corpus))
    return replace(result, only=None if pool is None else str(pool), sweep=s)
