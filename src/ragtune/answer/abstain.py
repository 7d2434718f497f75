"""A learned abstention gate: several retrieval signals combined by a logistic regression fitted on a golden set.

The confidence gate (:mod:`ragtune.answer.gate`) refuses when one number, the top retrieval score, is low. This
module combines the evidence ragtune already has about each question's top ``k`` hits:

==================  ===================================================================================
feature             value for one question (``s1 >= s2`` the two best scores, ``k`` the contexts used)
==================  ===================================================================================
``top_score``       ``s1``, on the retriever's own scale (0 when nothing was retrieved)
``margin``          ``(s1 - s2) / |s1|``, the lead of the best hit, scale-free (0 with fewer than 2 hits)
``agreement``       hybrid pipelines only: ``|A & B| / max(|A|, |B|)`` for ``A``, ``B`` the chunks (their parents
                    with small-to-big) in the top ``k`` of BM25 and of dense retrieval: how far the two agree
``rare_terms``      share of the question's rare terms (document frequency at most ``rare_share`` of the
                    corpus's sections, or absent from the corpus) found in the top ``k`` texts; 1 with none
``term_coverage``   IDF-weighted share of all the question's terms found in the top ``k`` texts
``sections``        distinct section anchors among the top ``k`` hits, divided by ``k``
``documents``       distinct documents among the top ``k`` hits, divided by ``k``
==================  ===================================================================================

Terms are lower-cased words, English stop words dropped, stemmed (Snowball, PyStemmer). Document frequencies
are counted over the corpus's sections (each section's own text), or its documents when they have no sections.

The model, :math:`P(\\text{answerable}) = \\sigma(b + w \\cdot z)` with ``z`` the features standardised on the
training questions, is fitted by Newton's method with an L2 penalty ``l2 * |w|^2 / 2`` (the intercept is not
penalised) and balanced class weights (each class weighs half, however rare the unanswerable questions are). The
gate abstains when the answerability score ``b + w . z`` is below ``threshold``, chosen on the training questions
by the confidence gate's own rule (:func:`~ragtune.answer.gate.calibrate_threshold`, balanced objective).

With few unanswerable questions, more features can fit noise: each fit keeps every feature or the top score
alone, whichever separates the classes better by an inner cross-validation on its own training questions (the
pooled AUC; a tie keeps the top score alone). A gate on the top score alone orders questions as the score
threshold does, so the learned gate falls back to the baseline where the other signals do not help.

:func:`compare_gates` reports both gates held out: stratified ``folds``-fold cross-validation, each fold scored
(and its threshold chosen) by a model fitted on the other folds only. A :class:`LearnedGate` saves to and loads
from a JSON file (:meth:`LearnedGate.save`, :func:`load_gate`); :meth:`LearnedGate.bind` ties it to a retriever
and corpus so it has the ``allows(ranking)`` of a :class:`~ragtune.answer.gate.ConfidenceGate`.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..types import Ranking
from .gate import calibrate_threshold

__all__ = ["FEATURES", "GateComparison", "GoldenFeatures", "LearnedGate", "TermStats", "answer_gate", "gate_value",
           "calibrate_learned", "compare_gates", "cross_validate", "fit_logistic", "gate_figures", "golden_features",
           "load_gate", "precision_at_recall", "question_features", "stratified_folds"]

FEATURES = ("top_score", "margin", "agreement", "rare_terms", "term_coverage", "sections", "documents")
FORMAT = "ragtune-learned-gate"
FORMAT_VERSION = 1

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset("""a about above after again all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have having he her
here hers him his how i if in into is it its itself just me more most my no nor not now of off on once only or
other our ours out over own same she should so some such than that the their theirs them then there these they
this those through to too under until up very was we were what when where which while who whom why will with
would you your yours""".split())


def _stemmer():
    try:
        import Stemmer
    except ImportError:  # PyStemmer is a core dependency; without it, words are compared unstemmed
        return None
    return Stemmer.Stemmer("english").stemWord


class TermStats:
    """Document frequencies of the corpus's terms, over its sections (each section's own text) or documents."""

    def __init__(self, df: Mapping[str, int], units: int):
        self.df = dict(df)
        self.units = int(units)
        self._stem = _stemmer()

    @classmethod
    def from_corpus(cls, corpus: Any) -> "TermStats":
        stats = cls({}, 0)
        df: Counter[str] = Counter()
        units = 0
        for doc in corpus.documents:
            sections = getattr(doc, "sections", ()) or ()
            texts = [doc.text[s.start:s.own_end] for s in sections] or [doc.text]
            for text in texts:
                df.update(set(stats.terms(text)))
                units += 1
        stats.df, stats.units = dict(df), units
        return stats

    def terms(self, text: str) -> list[str]:
        words = [w for w in _WORD.findall(text.lower()) if w not in _STOP]
        return [self._stem(w) for w in words] if self._stem is not None else words

    def idf(self, term: str) -> float:
        """``log((N + 1) / (df + 0.5))``: positive for every term, highest for a term the corpus lacks."""
        return math.log((self.units + 1) / (self.df.get(term, 0) + 0.5))

    def is_rare(self, term: str, rare_share: float) -> bool:
        return self.df.get(term, 0) <= rare_share * self.units


def question_features(ranking: Ranking, stats: TermStats, *, k: int, rare_share: float = 0.05,
                      agreement: tuple[Ranking, Ranking] | None = None) -> dict[str, float]:
    """The features of one question from its ranking's top ``k`` hits (see the module's table); ``agreement``
    (the BM25 and the dense ranking of a hybrid pipeline) adds the ``agreement`` feature."""
    hits = ranking.hits[:k]
    scores = [h.score for h in hits]
    s1 = scores[0] if scores else 0.0
    margin = (s1 - scores[1]) / abs(s1) if len(scores) > 1 and s1 != 0 else 0.0
    q_terms = list(dict.fromkeys(stats.terms(ranking.query)))
    found = set()
    for h in hits:
        found.update(stats.terms(h.chunk.text))
    rare = [t for t in q_terms if stats.is_rare(t, rare_share)]
    weights = {t: stats.idf(t) for t in q_terms}
    total = sum(weights.values())
    out = {
        "top_score": float(s1),
        "margin": float(margin),
        "rare_terms": sum(t in found for t in rare) / len(rare) if rare else 1.0,
        "term_coverage": sum(w for t, w in weights.items() if t in found) / total if total else 0.0,
        "sections": len({h.chunk.anchor for h in hits}) / k,
        "documents": len({h.chunk.doc_id for h in hits}) / k,
    }
    if agreement is not None:
        a, b = ({h.chunk.parent_id or h.chunk.id for h in r.hits[:k]} for r in agreement)
        out["agreement"] = len(a & b) / max(len(a), len(b), 1)
    return out


def _first_stages(retriever: Any) -> tuple[Any, Any] | None:
    """The BM25 and dense retrievers a hybrid retriever fuses (its ``retrievers``), looked for through the
    wrappers around it (small-to-big's ``inner``, a reranker's ``base``); None when there is no hybrid."""
    for _ in range(8):
        parts = getattr(retriever, "retrievers", None)
        if parts is not None:
            return (parts[0], parts[1]) if len(parts) >= 2 else None
        retriever = getattr(retriever, "inner", None) or getattr(retriever, "base", None)
        if retriever is None:
            return None
    return None


class _Extractor:
    """Features of a ranking, given the retriever that made it (for the hybrid's two first stages) and corpus."""

    def __init__(self, retriever: Any, corpus: Any, *, k: int, rare_share: float, filters: Any = None,
                 stats: TermStats | None = None):
        self.retriever, self.k, self.rare_share, self.filters = retriever, k, rare_share, filters
        self.stats = stats if stats is not None else TermStats.from_corpus(corpus)
        self.stages = _first_stages(retriever)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f for f in FEATURES if f != "agreement" or self.stages is not None)

    def __call__(self, ranking: Ranking) -> dict[str, float]:
        from ..retrieve.base import search

        pair = None
        if self.stages is not None:
            pair = tuple(search(r, ranking.query, self.k, self.filters) for r in self.stages)
        return question_features(ranking, self.stats, k=self.k, rare_share=self.rare_share, agreement=pair)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def fit_logistic(z: np.ndarray, y: np.ndarray, *, l2: float = 1.0, balanced: bool = True,
                 iterations: int = 100) -> tuple[np.ndarray, float]:
    """L2-penalised logistic regression of ``y`` (0/1) on ``z`` (already standardised) by Newton's method.

    Minimises :math:`\\sum_i c_i\\,\\ell(y_i, b + w \\cdot z_i) + \\tfrac{l2}{2}|w|^2` with :math:`\\ell` the log
    loss and :math:`c_i` the class weights (balanced: ``n / (2 n_class)``; else 1). Returns ``(w, b)``."""
    z = np.asarray(z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = z.shape
    if balanced:
        pos = max(float(y.sum()), 1.0)
        neg = max(float(n - y.sum()), 1.0)
        c = np.where(y > 0.5, n / (2 * pos), n / (2 * neg))
    else:
        c = np.ones(n)
    x = np.hstack([z, np.ones((n, 1))])
    beta = np.zeros(d + 1)
    penalty = np.full(d + 1, float(l2))
    penalty[-1] = 1e-9  # the intercept is (almost) free
    for _ in range(iterations):
        p = _sigmoid(x @ beta)
        grad = x.T @ (c * (p - y)) + penalty * beta
        hess = (x * (c * p * (1 - p))[:, None]).T @ x + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return beta[:-1], float(beta[-1])


@dataclass(frozen=True)
class LearnedGate:
    """A fitted gate: abstain when ``intercept + weights . (x - mean) / scale`` is below ``threshold``.

    ``features`` names the columns of ``x`` (from :data:`FEATURES`), ``k`` the contexts they were computed from,
    ``rare_share`` the rare-term cut. ``pipeline`` records the retrieval configuration it was fitted on (its
    ``top_score`` is on that configuration's scale), ``fitted_on`` the golden set, ``held_out`` the
    cross-validated figures :func:`compare_gates` measured, ``selection`` whether every feature or the top score
    alone was kept and the inner cross-validated AUC of each."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    intercept: float
    threshold: float
    k: int = 5
    rare_share: float = 0.05
    l2: float = 1.0
    pipeline: str | None = None
    fitted_on: dict[str, Any] = field(default_factory=dict)
    held_out: dict[str, Any] = field(default_factory=dict)
    selection: dict[str, Any] = field(default_factory=dict)

    def score(self, x: Sequence[float] | np.ndarray) -> np.ndarray | float:
        """The answerability score of one feature row (a float) or of a matrix's rows."""
        z = (np.asarray(x, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
        s = z @ np.asarray(self.weights) + self.intercept
        return float(s) if np.ndim(s) == 0 else s

    def bind(self, retriever: Any, corpus: Any, *, filters: Any = None,
             stats: TermStats | None = None) -> "BoundGate":
        """This gate over ``retriever`` and ``corpus``: an object with ``allows(ranking)``, as ConfidenceGate.
        ``stats``: the corpus's :class:`TermStats` when the caller keeps them (computed from ``corpus`` otherwise)."""
        extract = _Extractor(retriever, corpus, k=self.k, rare_share=self.rare_share, filters=filters, stats=stats)
        if "agreement" in self.features and extract.stages is None:
            raise ConfigError("this learned gate uses the agreement of BM25 and dense retrieval, fitted on a hybrid "
                              f"pipeline ({self.pipeline or 'unknown'}); use it with that pipeline or refit it on "
                              "this one")
        return BoundGate(self, extract)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": FORMAT_VERSION, **asdict(self)}

    def save(self, path: str | Path) -> None:
        from ..io import write_json

        write_json(path, self.to_dict())

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "gate") -> "LearnedGate":
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ConfigError(f"{where}: not a learned gate file (expected a JSON object with \"format\": "
                              f"\"{FORMAT}\"), as calibrate writes one")
        if data.get("version") != FORMAT_VERSION:
            raise ConfigError(f"{where}: learned gate format version {data.get('version')!r}, this ragtune reads "
                              f"version {FORMAT_VERSION}; refit it with calibrate")
        names = data.get("features")
        if not isinstance(names, (list, tuple)) or not names or any(f not in FEATURES for f in names):
            raise ConfigError(f"{where}: features must be a non-empty list of {', '.join(FEATURES)}; got {names!r}")
        for key in ("mean", "scale", "weights"):
            v = data.get(key)
            if (not isinstance(v, (list, tuple)) or len(v) != len(names)
                    or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)):
                raise ConfigError(f"{where}: {key} must list one finite number per feature ({len(names)}); got {v!r}")
        if any(s <= 0 for s in data["scale"]):
            raise ConfigError(f"{where}: every scale must be > 0; got {data['scale']!r}")
        for key in ("intercept", "threshold"):
            v = data.get(key)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or math.isnan(v):
                raise ConfigError(f"{where}: {key} must be a number; got {v!r}")
        k = data.get("k", 5)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ConfigError(f"{where}: k must be an integer >= 1; got {k!r}")
        known = {f.name for f in cls.__dataclass_fields__.values()} | {"format", "version"}
        if unknown := sorted(set(data) - known):
            raise ConfigError(f"{where}: unknown keys {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
        return cls(features=tuple(names), mean=tuple(map(float, data["mean"])), scale=tuple(map(float, data["scale"])),
                   weights=tuple(map(float, data["weights"])), intercept=float(data["intercept"]),
                   threshold=float(data["threshold"]), k=k, rare_share=float(data.get("rare_share", 0.05)),
                   l2=float(data.get("l2", 1.0)), pipeline=data.get("pipeline"),
                   fitted_on=dict(data.get("fitted_on") or {}), held_out=dict(data.get("held_out") or {}),
                   selection=dict(data.get("selection") or {}))

    def table(self) -> str:
        """The features and their weights as text: positive weights push toward answering."""
        lines = [f"{'feature':<14} {'weight':>8} {'mean':>10} {'scale':>10}"]
        for f, w, m, s in zip(self.features, self.weights, self.mean, self.scale):
            lines.append(f"{f:<14} {w:>+8.3f} {m:>10.4g} {s:>10.4g}")
        lines.append(f"{'(intercept)':<14} {self.intercept:>+8.3f}")
        lines.append(f"abstain when the score is below {self.threshold:.6g} (k={self.k}, l2={self.l2:g})")
        if aucs := self.selection.get("inner_auc"):
            lines.append(f"kept: {self.selection['chosen']} (inner cross-validated AUC: "
                         + ", ".join(f"{k} {v:.3f}" for k, v in aucs.items()) + ")")
        return "\n".join(lines)


def load_gate(path: str | Path) -> LearnedGate:
    """Read a gate file written by :meth:`LearnedGate.save`; a missing or malformed file is a ConfigError."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"learned gate file {p} not found; fit one with calibrate, which writes it") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"learned gate file {p} is not readable JSON ({exc}); fit it again with calibrate"
                          ) from None
    return LearnedGate.from_dict(data, where=str(p))


def answer_gate(gate: Any, retriever: Any, corpus: Any, *, k: int, filters: Any = None,
                stats: TermStats | None = None, pipeline: str | None = None) -> Any:
    """The gate :func:`~ragtune.answer.answer_question` applies, from what a user gives: None (no gate); a number
    or its text, the top-score threshold (a :class:`~ragtune.answer.gate.ConfidenceGate`, within +-1e12); a
    ConfidenceGate or another object with ``allows(ranking)`` as it is; a :class:`LearnedGate`, or the path of its
    file (read with :func:`load_gate`), bound to ``retriever`` and ``corpus`` (``stats``: the corpus's
    :class:`TermStats` when the caller keeps them). A learned gate answers from the top ``k`` contexts and on the
    ``pipeline`` (a configuration's label) it was fitted on: another ``k`` or pipeline is a ConfigError."""
    from ..config import parse_number
    from .gate import ConfidenceGate

    if gate is None or hasattr(gate, "allows"):
        return gate
    if isinstance(gate, (int, float, str)) and not isinstance(gate, bool):
        try:
            float(gate)
        except ValueError:
            gate = load_gate(gate)
        else:
            return ConfidenceGate(parse_number(gate, float, -1e12, 1e12))
    if isinstance(gate, Path):
        gate = load_gate(gate)
    if not isinstance(gate, LearnedGate):
        raise ConfigError(f"gate: give a score threshold, a LearnedGate or the path of its file; got "
                          f"{type(gate).__name__}")
    if gate.pipeline and pipeline and gate.pipeline != pipeline:
        raise ConfigError(f"the learned gate was fitted on the pipeline {gate.pipeline}, this one is {pipeline}: "
                          "use the options it was fitted with, or refit it on this one with calibrate")
    if gate.k != k:
        raise ConfigError(f"the learned gate was fitted on the top {gate.k} contexts, answers use {k}: answer "
                          f"with k={gate.k} or refit the gate with k={k}")
    return gate.bind(retriever, corpus, filters=filters, stats=stats)


def gate_value(gate: Any, pipeline: str | None = None) -> Any:
    """A gate as a user gives it, read: None, a number or its text (a score threshold, within +-1e12), or the path
    of a learned gate's file (:func:`load_gate`); a learned gate fitted on another ``pipeline`` (a configuration's
    label) is a ConfigError. :func:`answer_gate` binds it to a retriever later."""
    from ..config import parse_number

    if gate is None or isinstance(gate, (int, float, LearnedGate)):
        value = gate
    else:
        try:
            float(gate)
        except ValueError:
            value = load_gate(gate)
        else:
            value = parse_number(gate, float, -1e12, 1e12)
    if isinstance(value, LearnedGate) and value.pipeline and pipeline and value.pipeline != pipeline:
        raise ConfigError(f"the learned gate was fitted on the pipeline {value.pipeline}, this one is {pipeline}: "
                          "use the options it was fitted with, or refit it on this one with calibrate")
    return value


class BoundGate:
    """A :class:`LearnedGate` over one retriever and corpus; ``allows(ranking)`` as a ConfidenceGate's."""

    def __init__(self, gate: LearnedGate, extract: _Extractor):
        self.gate, self._extract = gate, extract
        self.threshold = gate.threshold

    def score(self, ranking: Ranking) -> float:
        if not ranking.hits:
            return float("-inf")
        values = self._extract(ranking)
        return float(self.gate.score([values[f] for f in self.gate.features]))

    def allows(self, ranking: Ranking) -> bool:
        return self.score(ranking) >= self.gate.threshold


def stratified_folds(unanswerable: Sequence[bool], folds: int, *, seed: int = 0) -> np.ndarray:
    """A fold number per question: each class shuffled (``seed``) and dealt round-robin, so every fold holds both.
    The number of folds is at most the size of the smaller class."""
    y = np.asarray(unanswerable, dtype=bool)
    n = min(int(folds), int(y.sum()), int((~y).sum()))
    if n < 2:
        raise ConfigError(f"cross-validation needs at least 2 answerable and 2 unanswerable questions, got "
                          f"{int((~y).sum())} and {int(y.sum())}")
    rng = np.random.default_rng(seed)
    fold_of = np.empty(y.size, dtype=int)
    for cls in (True, False):
        idx = np.flatnonzero(y == cls)
        fold_of[rng.permutation(idx)] = np.arange(idx.size) % n
    return fold_of


def _fit(x: np.ndarray, unanswerable: np.ndarray, names: Sequence[str], *, l2: float, k: int,
         rare_share: float, empty: np.ndarray | None = None) -> LearnedGate:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale = np.where(scale > 1e-12, scale, 1.0)
    w, b = fit_logistic((x - mean) / scale, ~unanswerable, l2=l2)
    gate = LearnedGate(tuple(names), tuple(mean.tolist()), tuple(scale.tolist()), tuple(w.tolist()), b, 0.0, k=k,
                       rare_share=rare_share, l2=l2)
    s = _scores(gate, x, empty)
    t = calibrate_threshold(s[~unanswerable], s[unanswerable]).threshold
    return replace(gate, threshold=t)


def _scores(gate: LearnedGate, x: np.ndarray, empty: np.ndarray | None, names: Sequence[str] | None = None
            ) -> np.ndarray:
    """The gate's scores of the rows of ``x``, whose columns are ``names`` (default: the gate's features)."""
    if names is not None:
        x = x[:, [list(names).index(f) for f in gate.features]]
    s = np.asarray(gate.score(x), dtype=np.float64).reshape(-1)
    return np.where(empty, -np.inf, s) if empty is not None else s


def _fit_selected(x: np.ndarray, y: np.ndarray, names: Sequence[str], *, l2: float, k: int, rare_share: float,
                  empty: np.ndarray, folds: int = 5, seed: int = 0) -> LearnedGate:
    """The gate on every feature or on the top score alone, whichever separates better held out within these
    questions (pooled inner cross-validation AUC; a tie keeps the top score alone): with few unanswerable
    questions, more features can fit noise, and the choice is made without the questions being scored."""
    from .gate import _auc

    names = list(names)
    if len(names) == 1 or "top_score" not in names:
        return _fit(x, y, names, l2=l2, k=k, rare_share=rare_share, empty=empty)
    try:
        inner = stratified_folds(y, folds, seed=seed)
    except ConfigError:
        inner = None
    aucs: dict[str, float] = {}
    for label, cand in (("all features", names), ("top score alone", ["top_score"])):
        if inner is None:
            break
        cols = [names.index(c) for c in cand]
        s, _ = cross_validate(x[:, cols], y, inner, cand, l2=l2, k=k, rare_share=rare_share, empty=empty,
                              select=False)
        finite = np.where(np.isfinite(s), s, -1e300)
        aucs[label] = _auc(finite[~y], finite[y])
    chosen = names if aucs and aucs["all features"] > aucs["top score alone"] else ["top_score"]
    gate = _fit(x[:, [names.index(c) for c in chosen]], y, chosen, l2=l2, k=k, rare_share=rare_share, empty=empty)
    return replace(gate, selection={"candidates": list(names), "inner_auc": aucs,
                                    "chosen": "all features" if chosen is names else "top score alone"})


def cross_validate(x: np.ndarray, unanswerable: Sequence[bool], fold_of: Sequence[int], names: Sequence[str], *,
                   l2: float = 1.0, k: int = 5, rare_share: float = 0.05,
                   empty: Sequence[bool] | None = None, select: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Held-out answerability scores and thresholds: each fold's questions scored by a gate fitted (features
    chosen with ``select`` as :func:`_fit_selected` does, model and threshold) on the other folds only. ``empty``
    marks questions with no hits (always refused). Returns (score per question, threshold per question)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(unanswerable, dtype=bool)
    fold_of = np.asarray(fold_of)
    e = np.asarray(empty, dtype=bool) if empty is not None else np.zeros(y.size, dtype=bool)
    scores = np.empty(y.size)
    thresholds = np.empty(y.size)
    for f in np.unique(fold_of):
        test = fold_of == f
        fit = _fit_selected if select else _fit
        gate = fit(x[~test], y[~test], names, l2=l2, k=k, rare_share=rare_share, empty=e[~test])
        scores[test] = _scores(gate, x[test], e[test], names)
        thresholds[test] = gate.threshold
    return scores, thresholds


def _baseline_cv(top: np.ndarray, y: np.ndarray, fold_of: np.ndarray) -> np.ndarray:
    thresholds = np.empty(y.size)
    for f in np.unique(fold_of):
        test = fold_of == f
        train_a, train_u = top[~test & ~y], top[~test & y]
        thresholds[test] = calibrate_threshold(train_a, train_u).threshold
    return thresholds


def precision_at_recall(scores: np.ndarray, unanswerable: np.ndarray, recall: float = 0.7) -> float | None:
    """Abstention precision at the lowest threshold whose abstention recall reaches ``recall`` (abstaining on every
    question scored at or below it, ties together); None without unanswerable questions."""
    y = np.asarray(unanswerable, dtype=bool)
    if not y.any():
        return None
    s = np.asarray(scores, dtype=np.float64)
    for v in np.unique(s):
        refused = s <= v
        tp = int(np.count_nonzero(refused & y))
        if tp / y.sum() >= recall - 1e-12:
            return tp / int(refused.sum())
    return float(y.mean())


def gate_figures(scores: np.ndarray, thresholds: np.ndarray, unanswerable: Sequence[bool], *,
                 recall: float = 0.7) -> dict[str, Any]:
    """Abstention figures of 'refuse when score < threshold' (per question): precision, recall, F1, answered rate,
    answerable refused, the separation AUC, and precision at abstention ``recall``."""
    from .gate import _auc

    y = np.asarray(unanswerable, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    refused = s < np.asarray(thresholds, dtype=np.float64)
    tp = int(np.count_nonzero(refused & y))
    p = tp / int(refused.sum()) if refused.any() else 0.0
    r = tp / int(y.sum()) if y.any() else 0.0
    finite = np.where(np.isfinite(s), s, -1e300)
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0,
            "answered_rate": float(np.mean(~refused)), "false_abstention": float(np.mean(refused[~y])),
            "auc": _auc(finite[~y], finite[y]), f"precision_at_recall_{recall:g}": precision_at_recall(s, y, recall)}


@dataclass(frozen=True)
class GateComparison:
    """The learned gate against the score threshold, both held out by the same folds; ``gate`` is the learned gate
    fitted on every question (what :meth:`LearnedGate.save` writes)."""

    gate: LearnedGate
    baseline: dict[str, Any]
    learned: dict[str, Any]
    folds: int
    seed: int
    n_answerable: int
    n_unanswerable: int
    recall: float = 0.7

    def to_dict(self) -> dict[str, Any]:
        return {"folds": self.folds, "seed": self.seed, "answerable": self.n_answerable,
                "unanswerable": self.n_unanswerable, "baseline": self.baseline, "learned": self.learned,
                "gate": self.gate.to_dict()}

    def to_text(self) -> str:
        par = f"precision_at_recall_{self.recall:g}"
        lines = [f"learned gate vs score threshold, held out ({self.folds}-fold stratified cross-validation, seed "
                 f"{self.seed}; {self.n_answerable} answerable, {self.n_unanswerable} unanswerable questions; the "
                 "gate alone):",
                 f"  {'gate':<16} {'P@R=' + format(self.recall, 'g'):>8} {'precision':>9} {'recall':>7} {'F1':>6} "
                 f"{'answered':>8} {'AUC':>6}"]
        for name, fig in (("score threshold", self.baseline), ("learned", self.learned)):
            pr = fig[par]
            lines.append(f"  {name:<16} {'n/a' if pr is None else format(pr, '.3f'):>8} {fig['precision']:>9.3f} "
                         f"{fig['recall']:>7.3f} {fig['f1']:>6.3f} {fig['answered_rate']:>8.3f} {fig['auc']:>6.3f}")
        lines += ["", "features and weights (fitted on every question; positive weights push toward answering):",
                  *("  " + line for line in self.gate.table().splitlines())]
        return "\n".join(lines)


def compare_gates(x: np.ndarray, unanswerable: Sequence[bool], names: Sequence[str], *, folds: int = 5,
                  seed: int = 0, l2: float = 1.0, k: int = 5, rare_share: float = 0.05,
                  empty: Sequence[bool] | None = None, recall: float = 0.7, select: bool = True) -> GateComparison:
    """Held-out figures of the learned gate and of the plain score threshold (the ``top_score`` column) on the
    same stratified folds, and the learned gate fitted on every question. With ``select`` (default), each fit
    keeps every feature or the top score alone, by inner cross-validation on its own training questions."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(unanswerable, dtype=bool)
    e = np.asarray(empty, dtype=bool) if empty is not None else np.zeros(y.size, dtype=bool)
    if "top_score" not in names:
        raise ConfigError(f"the score-threshold baseline needs the top_score feature; got {list(names)}")
    fold_of = stratified_folds(y, folds, seed=seed)
    top = np.where(e, -np.inf, x[:, list(names).index("top_score")])
    base = gate_figures(top, _baseline_cv(top, y, fold_of), y, recall=recall)
    s, t = cross_validate(x, y, fold_of, names, l2=l2, k=k, rare_share=rare_share, empty=e, select=select)
    learned = gate_figures(s, t, y, recall=recall)
    gate = (_fit_selected if select else _fit)(x, y, names, l2=l2, k=k, rare_share=rare_share, empty=e)
    n = int(fold_of.max()) + 1
    gate = replace(gate, held_out={"folds": n, "seed": seed, "learned": learned, "score_threshold": base})
    return GateComparison(gate, base, learned, n, seed, int((~y).sum()), int(y.sum()), recall)


@dataclass(frozen=True)
class GoldenFeatures:
    """Every golden question's features: ``x`` (one row each, columns ``names``), ``unanswerable``, and ``empty``
    (nothing retrieved: always refused)."""

    x: np.ndarray
    unanswerable: np.ndarray
    empty: np.ndarray
    names: tuple[str, ...]


def golden_features(retriever: Any, golden: Any, corpus: Any, *, k: int = 5, filters: Any = None,
                    rare_share: float = 0.05, show_progress: bool = False) -> GoldenFeatures:
    """Search every golden question and compute its features from its top ``k`` hits."""
    from ..progress import progress_iter
    from ..retrieve.base import search

    extract = _Extractor(retriever, corpus, k=k, rare_share=rare_share, filters=filters)
    rows, y, empty = [], [], []
    for item in progress_iter(golden.items, "learning the gate", enabled=show_progress):
        ranking = search(retriever, item.q, k, filters)
        values = extract(ranking)
        rows.append([values[f] for f in extract.names])
        y.append(not item.answerable)
        empty.append(not ranking.hits)
    x = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(extract.names))
    return GoldenFeatures(x, np.asarray(y, dtype=bool), np.asarray(empty, dtype=bool), extract.names)


def calibrate_learned(retriever: Any, golden: Any, corpus: Any, *, k: int = 5, filters: Any = None,
                      folds: int = 5, seed: int = 0, l2: float = 1.0, rare_share: float = 0.05,
                      pipeline: str | None = None, show_progress: bool = False) -> GateComparison:
    """:func:`golden_features`, then :func:`compare_gates`; the saved gate records ``pipeline`` (the
    configuration's label) and the golden set it was fitted on."""
    f = golden_features(retriever, golden, corpus, k=k, filters=filters, rare_share=rare_share,
                        show_progress=show_progress)
    cmp = compare_gates(f.x, f.unanswerable, f.names, folds=folds, seed=seed, l2=l2, k=k, rare_share=rare_share,
                        empty=f.empty)
    fitted_on = {"golden": str(getattr(golden, "source", "") or ""), "answerable": cmp.n_answerable,
                 "unanswerable": cmp.n_unanswerable}
    return replace(cmp, gate=replace(cmp.gate, pipeline=pipeline, fitted_on=fitted_on))
