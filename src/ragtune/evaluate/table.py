"""The metric table: every retrieval metric once, read by everything that names one.

One :class:`Metric` row per metric: its name, whether it takes a cut-off
(``recall@10``) or not (``mrr``), whether its values lie in [0, 1], which
direction is better, its per-question function over a :class:`Judgement`, a
short description and a display label. Evaluation (which scores each question
gets), grid validation, ``compare`` and the regression gate (which names are
valid, which metrics are on a 0-1 scale, which direction is worse), the sweep
ranking and the sweep report all read this table, so adding a metric is one row
and its function::

    from ragtune.evaluate.table import Metric, register_metric

    def first_hit_is_top(j, k):
        return float(j.rank_hits[:1].any()) if k >= 1 else 0.0

    register_metric(Metric("first_hit_is_top", first_hit_is_top, description="..."))

after which ``evaluate`` scores ``first_hit_is_top@k`` for every k, a grid may rank
by it, ``compare`` tests it, and the default tables show it: each row says in which
of them (``show``, every one unless told) and at which cut-offs (``show_k``), and
:func:`shown_keys` is how the renderers ask.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import ConfigError
from . import metrics as m

__all__ = ["Judgement", "Metric", "METRICS", "VIEWS", "register_metric", "unregister_metric", "parse_metric",
           "find_metric", "check_metric", "metric_table", "shown_rows", "shown_keys"]

_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
_CUTOFF = re.compile(r"[1-9][0-9]*\Z")  # plain ASCII digits, no leading zero: the key evaluation writes
_OPTIONAL = ("tokens", "judged", "hole_ranks", "evidence")  # Judgement fields a metric may need that not every source of rankings has
VIEWS = ("eval", "tags", "sweep", "report", "compare")
"""The default tables a row can be shown in: ``eval``'s figures (every k, each row on its line), ``eval``'s per-tag
table and a run file's doc-level delta (``tags``), the sweep's terminal table (``sweep``), the sweep report's ranked
table and the intervals of results.json (``report``), and ``compare``'s default metrics (``compare``)."""
_SHOW_K = ("all", "first")
UNITS = ("", "tok")
"""What a row's cut-off counts: ``""`` ranks (``recall@10``), ``"tok"`` tokens of context (``evidence@1000tok``: the
top hits whose tokens, counted as ``context_tokens`` counts them, add up to at most 1000)."""
_SPEC = re.compile(r"([1-9][0-9]*)([a-z]*)\Z")


@dataclass(frozen=True, slots=True)
class Judgement:
    """A ranking judged against one question's anchors: the arrays every metric function reads."""

    first_ranks: np.ndarray  # per relevant anchor, rank first covered (inf if never)
    grades: np.ndarray  # per relevant anchor, its grade
    rank_hits: np.ndarray  # per rank, covers any relevant anchor
    tokens: np.ndarray | None = None  # per rank, the chunk's token count; None when unknown (a run file)
    judged: np.ndarray | None = None  # per rank, covers any anchor with a judgment (relevant or judged not)
    hole_ranks: np.ndarray | None = None  # per distinct unjudged anchor retrieved, the rank first retrieved
    evidence: np.ndarray | None = None  # per evidence group, the rank where any of its anchors is first covered

    def ranks_within(self, budget: int) -> int:
        """How many top hits fit in ``budget`` tokens (each hit's tokens as ``tokens`` holds them)."""
        if self.tokens is None:
            return 0
        return int(np.count_nonzero(np.cumsum(self.tokens) <= budget))

    @property
    def first_hit_rank(self) -> int | None:
        idx = np.flatnonzero(self.rank_hits)
        return int(idx[0]) + 1 if idx.size else None


@dataclass(frozen=True)
class Metric:
    """One row of the metric table.

    ``fn(judgement, k)`` (``fn(judgement)`` when ``takes_k`` is false) returns one
    question's value, ``nan`` where it is undefined. ``bounded``: values lie in
    [0, 1] (power for a five-point difference is reported only then; the report
    shows them with decimals). ``always_k``: cut-offs scored whatever k values are
    asked for (``ndcg@10``). ``needs``: optional :class:`Judgement` fields the
    function reads (``tokens``); a question judged without them gets no value.

    ``unit``: what the cut-off counts (:data:`UNITS`): ranks (``""``, the default), or ``"tok"``, tokens of context
    (the key is ``evidence@1000tok``); a row counting tokens is scored at its ``always_k`` budgets only, and a rank
    row and a token row may share a name (``evidence@5`` and ``evidence@1000tok``).

    ``show``: the default tables (:data:`VIEWS`) that show the metric, every one
    unless told; ``()`` keeps it in the scores and out of the tables. ``show_k``:
    at which cut-offs the tables other than ``eval``'s figures show it, ``"all"``
    (every k evaluated) or ``"first"`` (the first k only); a row with ``always_k``
    is shown at those cut-offs only, and ``eval``'s figures show every k.
    """

    name: str
    fn: Callable[..., float]
    takes_k: bool = True
    bounded: bool = True
    higher_is_better: bool = True
    description: str = ""
    label: str = ""
    always_k: tuple[int, ...] = ()
    needs: tuple[str, ...] = ()
    show: tuple[str, ...] = VIEWS
    show_k: str = "all"
    unit: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ConfigError(f"metric name {self.name!r}: use lower-case letters, digits and '_', starting with a "
                              "letter (the cut-off is added as @k, so no '@')")
        if not callable(self.fn):
            raise ConfigError(f"metric {self.name!r}: fn must be a function of a Judgement (and k), got "
                              f"{type(self.fn).__name__}")
        always = tuple(self.always_k)
        if always and not self.takes_k:
            raise ConfigError(f"metric {self.name!r}: always_k={always!r} needs takes_k=True")
        if not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in always):
            raise ConfigError(f"metric {self.name!r}: always_k must be positive integers, got {always!r}")
        needs = tuple(self.needs)
        unknown = [n for n in needs if n not in _OPTIONAL]
        if unknown:
            raise ConfigError(f"metric {self.name!r}: needs {unknown!r}; a metric may need only "
                              f"{', '.join(_OPTIONAL)} (first_ranks, grades and rank_hits are always there)")
        show = (self.show,) if isinstance(self.show, str) else tuple(self.show)
        unknown = [v for v in show if v not in VIEWS]
        if unknown:
            raise ConfigError(f"metric {self.name!r}: show names {unknown!r}; the tables are {', '.join(VIEWS)} "
                              "(or show=() for none)")
        if self.unit not in UNITS:
            raise ConfigError(f"metric {self.name!r}: unit={self.unit!r}; use '' (the cut-off counts ranks) or 'tok' "
                              "(tokens of context)")
        if self.unit and not (self.takes_k and self.always_k):
            raise ConfigError(f"metric {self.name!r}: a cut-off in {self.unit} needs takes_k=True and the budgets "
                              "scored in always_k")
        if self.show_k not in _SHOW_K:
            raise ConfigError(f"metric {self.name!r}: show_k={self.show_k!r}; use 'all' (every k) or 'first' "
                              "(the first k only)")
        object.__setattr__(self, "always_k", always)
        object.__setattr__(self, "needs", needs)
        object.__setattr__(self, "show", show)
        object.__setattr__(self, "label", self.label or self.name)

    @property
    def slot(self) -> str:
        """The row's place in the table: its name, with ``@tok`` for a row whose cut-off counts tokens."""
        return f"{self.name}@{self.unit}" if self.unit else self.name

    @property
    def pattern(self) -> str:
        """``recall@k``, ``evidence@Ntok`` or ``mrr``: how the metric is written."""
        if self.unit:
            return f"{self.name}@N{self.unit}"
        return f"{self.name}@k" if self.takes_k else self.name

    def key(self, k: int | None = None) -> str:
        """The key of its value in scores and means: ``recall@10``, ``evidence@1000tok``, ``mrr``."""
        return f"{self.name}@{k}{self.unit}" if self.takes_k else self.name

    def cutoffs(self, ks: Sequence[int]) -> list[int | None]:
        """The cut-offs scored when ``ks`` are asked for: ``always_k`` first, then the rest of ``ks`` (a token row:
        its ``always_k`` budgets only)."""
        if not self.takes_k:
            return [None]
        if self.unit:
            return list(self.always_k)
        return [*self.always_k, *(k for k in ks if k not in self.always_k)]

    def shown_cutoffs(self, view: str, ks: Sequence[int]) -> list[int | None]:
        """The cut-offs ``view`` shows the metric at when ``ks`` were evaluated (``[None]`` without a cut-off, ``[]``
        when the view does not show it): ``always_k`` where the row has one, else every k in ``eval`` and where
        ``show_k`` is ``"all"``, else the first k."""
        if view not in self.show:
            return []
        if not self.takes_k:
            return [None]
        if self.always_k:
            return list(self.always_k)
        return list(ks) if view == "eval" or self.show_k == "all" else list(ks[:1])

    def applies(self, j: Judgement) -> bool:
        """Whether ``j`` carries what the function reads."""
        return all(getattr(j, n) is not None for n in self.needs)

    def value(self, j: Judgement, k: int | None = None) -> float:
        return float(self.fn(j, k) if self.takes_k else self.fn(j))

    def to_dict(self) -> dict[str, Any]:
        """What a report page needs to name, format and order by the metric (no function)."""
        return {"name": self.name, "label": self.label, "takes_k": self.takes_k, "bounded": self.bounded,
                "higher_is_better": self.higher_is_better, "description": self.description,
                "always_k": list(self.always_k), "show": list(self.show), "show_k": self.show_k,
                **({"unit": self.unit} if self.unit else {})}


# -- the built-in rows -------------------------------------------------------------------------------------------

def _recall(j: Judgement, k: int) -> float:
    return m.recall_at_k(j.first_ranks, k)


def _hit(j: Judgement, k: int) -> float:
    return m.hit_at_k(j.first_ranks, k)


def _precision(j: Judgement, k: int) -> float:
    return m.precision_at_k(j.rank_hits, k)


def _mrr(j: Judgement) -> float:
    return m.reciprocal_rank(j.first_ranks)


def _ndcg(j: Judgement, k: int) -> float:
    return m.ndcg_at_k(j.first_ranks, j.grades, k)


def _map(j: Judgement, k: int) -> float:
    return m.average_precision_at_k(j.first_ranks, j.rank_hits, k)


def _r_precision(j: Judgement) -> float:
    return m.r_precision(j.first_ranks, j.rank_hits)


def _context_tokens(j: Judgement, k: int) -> float:
    return float(np.sum(j.tokens[:k]))  # type: ignore[index]  # needs=("tokens",): never None here


def _judged(j: Judgement, k: int) -> float:
    return m.judged_at_k(j.judged, k)  # type: ignore[arg-type]  # needs=("judged",): never None here


def _recall_upper(j: Judgement, k: int) -> float:
    return m.recall_upper_at_k(j.first_ranks, j.hole_ranks, k)  # type: ignore[arg-type]


def _mrr_upper(j: Judgement) -> float:
    return m.reciprocal_rank_upper(j.first_ranks, j.hole_ranks)  # type: ignore[arg-type]


def _ndcg_upper(j: Judgement, k: int) -> float:
    return m.ndcg_upper_at_k(j.first_ranks, j.grades, j.hole_ranks, k)  # type: ignore[arg-type]


def _evidence(j: Judgement, k: int) -> float:
    return m.evidence_at_k(j.evidence, k)  # type: ignore[arg-type]  # needs=("evidence",): never None here


def _evidence_tokens(j: Judgement, budget: int) -> float:
    return m.evidence_at_k(j.evidence, j.ranks_within(budget))  # type: ignore[arg-type]


_TABLE: dict[str, Metric] = {}
METRICS = MappingProxyType(_TABLE)  # slot (the name; name@tok for a token row) -> Metric, in the order scores are written
"""The metric table, read-only; add rows with :func:`register_metric`."""


def register_metric(metric: Metric, *, replace: bool = False) -> Metric:
    """Add ``metric`` to the table (at the end: its keys come last in scores). A name already in the table is a
    :class:`ConfigError` unless ``replace`` (which keeps its place). Returns the row."""
    if not isinstance(metric, Metric):
        raise ConfigError(f"register_metric takes a Metric row, got {type(metric).__name__}; build one with "
                          "Metric(name, fn, takes_k=..., bounded=..., higher_is_better=...)")
    if metric.slot in _TABLE and not replace:
        raise ConfigError(f"metric {metric.slot!r} is already in the table; pick another name, or pass "
                          "replace=True to redefine it")
    _TABLE[metric.slot] = metric
    return metric


def unregister_metric(name: str) -> Metric:
    """Remove a row (a plugin's, or one a test registered; ``name@tok`` for a token row); returns it."""
    if name not in _TABLE:
        raise ConfigError(f"metric {name!r} is not in the table ({', '.join(_TABLE)})")
    return _TABLE.pop(name)


for _row in (
    Metric("recall", _recall, description="share of the relevant anchors covered in the top k"),
    Metric("hit", _hit, show=("eval",), description="1 if any relevant anchor is covered in the top k, else 0"),
    Metric("precision", _precision, show=("eval",), description="share of the top k positions covering a relevant "
           "anchor (divided by k even when fewer were retrieved)"),
    Metric("mrr", _mrr, takes_k=False, description="1 / rank of the first chunk covering a relevant anchor, 0 if "
           "none does (as deep as retrieval went)"),
    Metric("ndcg", _ndcg, always_k=(10,), description="normalised discounted cumulative gain over graded anchors, "
           "each counted once where first covered; ndcg@10 is always scored"),
    Metric("map", _map, show=(), description="average precision over the top k (trec_eval's map_cut_k)"),
    Metric("r_precision", _r_precision, takes_k=False, show=(), description="precision at R, the number of "
           "relevant anchors (trec_eval's Rprec)"),
    Metric("context_tokens", _context_tokens, bounded=False, higher_is_better=False, label="ctx tokens",
           needs=("tokens",), show=("eval", "report"), show_k="first",
           description="tokens of the top k chunks, what the model is handed (fewer is better)"),
    Metric("judged", _judged, always_k=(10,), needs=("judged",), show=(), description="share of the top k chunks "
           "covering an anchor with a judgment (relevant or judged not relevant); judged@10 is always scored"),
    Metric("recall_upper", _recall_upper, needs=("hole_ranks",), show=(), label="recall (upper)",
           description="recall@k if every unjudged section in the top k were relevant (recall@k is the lower end)"),
    Metric("mrr_upper", _mrr_upper, takes_k=False, needs=("hole_ranks",), show=(), label="mrr (upper)",
           description="MRR if every unjudged section retrieved were relevant (mrr is the lower end)"),
    Metric("ndcg_upper", _ndcg_upper, always_k=(10,), needs=("hole_ranks",), show=(), label="ndcg (upper)",
           description="nDCG@k if every unjudged section in the top k were relevant, with the question's highest "
           "grade (ndcg@k is today's figure)"),
    Metric("evidence", _evidence, needs=("evidence",), show=("eval",), show_k="first",
           description="1 if every evidence group has an anchor covered in the top k, else 0 (questions without "
           "evidence groups are left out of its mean)"),
    Metric("evidence", _evidence_tokens, always_k=(1000,), needs=("evidence", "tokens"), show=("eval",),
           unit="tok", description="1 if every evidence group has an anchor covered by the "
           "top hits that fit in N tokens of context (counted as context_tokens counts them), else 0"),
):
    register_metric(_row)
del _row


def _choices() -> str:
    return ", ".join(r.pattern for r in _TABLE.values())


def parse_metric(spec: Any) -> tuple[Metric, int | None]:
    """``"recall@10"`` -> (the recall row, 10); ``"mrr"`` -> (the mrr row, None). A name not in the table, a
    cut-off on a metric without one, or a missing or malformed cut-off is a :class:`ConfigError`."""
    if not isinstance(spec, str):
        raise ConfigError(f"metric {spec!r}: expected a metric name such as recall@10 or mrr")
    name, at, k = spec.partition("@")
    cut = _SPEC.match(k)
    unit = cut.group(2) if cut and cut.group(2) in UNITS else ""
    row = _TABLE.get(f"{name}@{unit}" if unit else name)
    if row is None and unit and name in _TABLE:
        raise ConfigError(f"metric {spec!r}: {name} takes no budget in {unit}; e.g. {_TABLE[name].key(10)}")
    if row is None:
        raise ConfigError(f"metric {spec!r}: choose one of {_choices()} (with @k where it takes one)")
    if not row.takes_k:
        if at:
            raise ConfigError(f"metric {spec!r}: {name} takes no @k")
        return row, None
    if not k:
        raise ConfigError(f"metric {spec!r}: {name} needs a cut-off, e.g. {name}@10")
    if not _CUTOFF.match(k[:len(k) - len(unit)]):
        raise ConfigError(f"metric {spec!r}: the cut-off must be a positive whole number in plain digits, e.g. "
                          f"{row.key(row.always_k[0] if row.unit else 10)}")
    return row, int(k[:len(k) - len(unit)])


def find_metric(spec: Any) -> Metric | None:
    """The row of ``spec`` (``recall@10``, ``mrr``), or None when it is not a valid metric of the table."""
    try:
        return parse_metric(spec)[0]
    except ConfigError:
        return None


def check_metric(spec: Any, ks: Sequence[int]) -> str | None:
    """Why ``spec`` is not scored when evaluating at ``ks``, or None when it is: the name must be in the table,
    with a cut-off exactly when the row takes one, and the cut-off among ``ks`` (or the row's ``always_k``)."""
    try:
        row, k = parse_metric(spec)
    except ConfigError as e:
        return str(e)
    if k is not None and row.unit and k not in row.always_k:
        return (f"metric {spec!r}: the budget {k} is not scored; the budgets scored are "
                f"{', '.join(row.key(b) for b in row.always_k)}")
    if k is not None and k not in ks and k not in row.always_k:
        return f"metric {spec!r}: k={k} is not among the evaluated k values {list(ks)}; add it to k"
    return None


def shown_rows(view: str) -> list[Metric]:
    """The rows ``view`` (one of :data:`VIEWS`) shows, in table order."""
    if view not in VIEWS:
        raise ConfigError(f"no default table {view!r}; the tables are {', '.join(VIEWS)}")
    return [r for r in _TABLE.values() if view in r.show]


def shown_keys(view: str, ks: Sequence[int]) -> list[str]:
    """The columns ``view`` shows when ``ks`` were evaluated, in table order: each shown row at its
    :meth:`Metric.shown_cutoffs` (``["recall@5", "recall@10", "mrr", "ndcg@10"]`` for ``tags`` at k 5 and 10)."""
    return [r.key(k) for r in shown_rows(view) for k in r.shown_cutoffs(view, ks)]


def metric_table() -> list[dict[str, Any]]:
    """Every row as plain data (for a report page): name, label, takes_k, bounded, higher_is_better, ..."""
    return [r.to_dict() for r in _TABLE.values()]
