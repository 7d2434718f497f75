"""``compare``: N systems against a baseline on the same questions, as one report.

:func:`compare` takes runs (:class:`~ragtune.evaluate.run.Run`, eval results or
paths) and returns a :class:`Report`: for every system and metric the mean with a
bootstrap confidence interval; for every system other than the baseline the
delta with its interval, a paired test's p-value, the p-value corrected across
all comparisons, wins/ties/losses, the questions fixed and broken, and the
minimum detectable effect for this many questions.

:func:`compare_runs` and :class:`Comparison` are the two-system form kept for
existing callers; they run on the same code.
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Annotated, Any

import numpy as np

from ..io import json_finite, some
from ..errors import ConfigError
from ..config import Opt
from .run import PARTIAL, Run, load_runs
from .significance import (
    bootstrap_ci,
    check_correction,
    check_test,
    correct,
    detectable_effect,
    format_p,
    interval_note,
    p_equals,
    paired_test,
    questions_needed,
    questions_text,
)
from .table import parse_metric, shown_keys

__all__ = ["Comparison", "Report", "ReportRow", "compare", "compare_runs", "default_metrics", "metric_k",
           "per_question"]

DEFAULT_K = 10  # the cut-off of the default metrics that take one
TARGET_EFFECT = 0.05  # "a 5-point difference" on metrics between 0 and 1


def default_metrics() -> tuple[str, ...]:
    """What :func:`compare` compares unless told: the metric table's ``compare`` rows at k 10, now
    ``recall@10``, ``mrr`` and ``ndcg@10``."""
    return tuple(shown_keys("compare", (DEFAULT_K,)))


def metric_k(metric: str, ks: tuple[int, ...] | list[int]) -> int:
    """The cut-off that decides 'fixed' and 'broken': the metric's own k, else the largest k."""
    _, _, k = metric.partition("@")
    return int(k) if k.isdigit() else max(ks)


def per_question(result: Mapping[str, Any], metric: str) -> dict[str, float]:
    """Per-question values of ``metric`` from an eval result dict (answerable questions only)."""
    out = {}
    for q in result["questions"]:
        if not q.get("answerable", True):
            continue
        scores = q.get("scores") or {}
        if metric not in scores:
            have = ", ".join(sorted(scores)) or "none"
            raise ConfigError(f"metric {metric!r} is not in the results (have: {have})")
        v = scores[metric]
        out[q["id"]] = float("nan") if v is None else float(v)
    return out



@dataclass(frozen=True)
class ReportRow:
    """One system on one metric. Fields after ``ci_high`` are ``None`` on the baseline's rows.

    ``mde`` is the minimum detectable effect (see :func:`compare`); ``needed`` the
    questions it would take to detect the observed ``delta``, ``needed_target``
    those for a difference of ``target_effect`` (``None`` for metrics not on a 0-1
    scale); ``changed`` the questions whose value differs from the baseline's.
    """

    system: str
    metric: str
    n: int
    mean: float
    ci_low: float
    ci_high: float
    delta: float | None = None
    delta_low: float | None = None
    delta_high: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    significant: bool | None = None
    wins: int | None = None
    ties: int | None = None
    losses: int | None = None
    changed: int | None = None
    fixed: tuple[str, ...] | None = None
    broken: tuple[str, ...] | None = None
    k: int | None = None
    sd_diff: float | None = None
    mde: float | None = None
    needed: int | None = None
    needed_target: int | None = None
    upper: float | None = None  # the mean if every unjudged section retrieved were relevant (None: not known)

    @property
    def is_baseline(self) -> bool:
        return self.delta is None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("fixed", "broken"):
            if d[key] is not None:
                d[key] = list(d[key])
        return d


@dataclass(frozen=True)
class Report:
    """The result of :func:`compare`: settings, systems and one row per (system, metric)."""

    systems: tuple[str, ...]
    baseline: str
    metrics: tuple[str, ...]
    n: int
    test: str
    correction: str
    samples: int
    seed: int
    alpha: float
    power: float
    confidence: float
    mde_alpha: float  # the per-comparison alpha the MDE is computed at (alpha / comparisons when corrected)
    target_effect: float
    rows: tuple[ReportRow, ...]
    baseline_basis: str = "first"  # why it is the baseline: first, named, index, sweep baseline, recommended

    def row(self, system: str, metric: str) -> ReportRow:
        for r in self.rows:
            if r.system == system and r.metric == metric:
                return r
        raise ConfigError(f"no row for system {system!r} and metric {metric!r}; systems: "
                          f"{', '.join(self.systems)}; metrics: {', '.join(self.metrics)}")

    @property
    def comparisons(self) -> tuple[ReportRow, ...]:
        """The rows of systems other than the baseline."""
        return tuple(r for r in self.rows if not r.is_baseline)

    def notes(self) -> list[str]:
        """A sentence per comparison that is not significant, saying what it would take."""
        out = []
        adj = "corrected " if self.correction != "none" and len(self.comparisons) > 1 else ""
        for r in self.comparisons:
            if r.significant:
                continue
            head = f"{r.system} vs {self.baseline} on {r.metric}:"
            if not r.changed:
                out.append(f"{head} no question changed, so there is nothing to test (p = 1).")
                continue
            s = (f"{head} {r.delta:+.4f} is not significant ({adj}p {p_equals(r.p_adjusted)}). With {r.n} questions the "
                 f"smallest difference detectable at alpha {self.mde_alpha:.3g} with power {self.power:g} is about "
                 f"±{r.mde:.4f}" if r.mde is not None else f"{head} {r.delta:+.4f} is not significant")
            wants = []
            if r.needed is not None:
                wants.append(f"detecting {r.delta:+.4f} would take about {r.needed} questions")
            if r.needed_target is not None:
                wants.append(f"a {self.target_effect * 100:g}-point difference about {r.needed_target}")
            if wants:
                s += "; " + ", ".join(wants)
            s += "."
            if self.test == "randomization" and 2.0 ** (1 - r.changed) >= self.mde_alpha:
                s += (f" Only {r.changed} question(s) changed: the randomization test cannot give p below "
                      f"{2.0 ** (1 - r.changed):.3g} with so few.")
            out.append(s)
        return out

    def digest(self, *, listed: int = 3) -> str:
        """A few lines that lead the report: per metric the baseline, the best system and whether it is significant,
        how many systems beat the baseline; which comparisons are significant (up to ``listed`` each way); and what
        it takes to tell: the smallest difference these questions can detect, and the questions the best system's
        difference would need. The full tables are :meth:`to_text`."""
        comps = self.comparisons
        adj = f"p {self.correction}" if self.correction != "none" else "p"
        lines = [f"{len(self.systems)} system(s) against the baseline {self.baseline}{self._basis()} on {self.n} "
                 f"questions "
                 f"({self.test} test, {self.correction} correction over {len(comps)} comparisons, "
                 f"alpha {self.alpha:g})"]
        for m in self.metrics:
            rows = [r for r in comps if r.metric == m]
            base = self.row(self.baseline, m)
            if not rows:
                lines.append(f"{m}: baseline {base.mean:.4f}; nothing else to compare")
                continue
            better = parse_metric(m)[0].higher_is_better
            sign = 1.0 if better else -1.0
            best = max(rows, key=lambda r: sign * (r.delta or 0.0))
            above = sum(1 for r in rows if sign * (r.delta or 0.0) > 0)
            below = sum(1 for r in rows if sign * (r.delta or 0.0) < 0)
            verdict = "significant" if best.significant else "not significant"
            if sign * (best.delta or 0.0) <= 0:
                head = f"no system beats the baseline ({base.mean:.4f}); closest {best.system} {best.mean:.4f}"
            else:
                head = f"best {best.system} {best.mean:.4f} vs baseline {base.mean:.4f}"
            lines.append(f"{m}: {head} ({best.delta:+.4f}, {adj} {format_p(best.p_adjusted)}: {verdict}); "
                         f"{above} of {len(rows)} above the baseline, {below} below")
            behind, ahead = (base, best) if sign * (best.delta or 0.0) > 0 else (best, base)
            if better and behind.upper is not None and behind.mean < ahead.mean <= behind.upper:
                lines.append(f"  unjudged: the difference lies inside the unjudged interval: {behind.system}'s "
                             f"unjudged hits could lift it from {behind.mean:.4f} to {behind.upper:.4f}, which reaches "
                             f"{ahead.system}'s {ahead.mean:.4f}; judge the pool (`ragtune pool`) before trusting it")
            if best.mde is not None:
                tell = (f"  to tell: with {best.n} questions the smallest difference detectable here is about "
                        f"±{best.mde:.4f} (power {self.power:g}, alpha {self.mde_alpha:.3g})")
                if not best.significant and best.needed is not None and best.delta:
                    tell += f"; detecting {best.system}'s {best.delta:+.4f} would take about {best.needed} questions"
                lines.append(tell)
        sig = [r for r in comps if r.significant]
        if not sig:
            lines.append(f"significant: none of the {len(comps)} comparisons")
        else:
            ups = sorted((r for r in sig if (r.delta or 0) * (1 if parse_metric(r.metric)[0].higher_is_better
                                                                else -1) > 0), key=lambda r: r.p_adjusted or 0)
            downs = sorted((r for r in sig if r not in ups), key=lambda r: r.p_adjusted or 0)
            lines.append(f"significant: {len(sig)} of {len(comps)} comparisons ({len(ups)} better, "
                         f"{len(downs)} worse than the baseline)")
            for label, group in (("better", ups), ("worse", downs)):
                if group:
                    shown = "; ".join(f"{r.system} on {r.metric} {r.delta:+.4f} ({adj} {format_p(r.p_adjusted)})"
                                      for r in group[:listed])
                    more = f"; and {len(group) - listed} more" if len(group) > listed else ""
                    lines.append(f"  {label}: {shown}{more}")
        return "\n".join(lines)

    def _basis(self) -> str:
        """`` (the sweep's recommended configuration)`` when that is why it is the baseline."""
        return {"recommended": " (the sweep's recommended configuration)",
                "sweep baseline": " (the sweep's baseline)"}.get(self.baseline_basis, "")

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("systems", "baseline", "baseline_basis", "metrics", "n", "test",
                                            "correction", "samples", "seed", "alpha", "power", "confidence",
                                            "mde_alpha", "target_effect")}
        d["systems"], d["metrics"] = list(self.systems), list(self.metrics)
        d["rows"] = [r.to_dict() for r in self.rows]
        d["notes"] = self.notes()
        return json_finite(d)

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)

    def _cells(self, r: ReportRow) -> list[str]:
        mean = f"{r.mean:.4f} [{r.ci_low:.4f}, {r.ci_high:.4f}]"
        if r.is_baseline:
            return [r.system + " (baseline)", mean, "", "", "", "", "", "", ""]
        return [
            r.system, mean, f"{r.delta:+.4f} [{r.delta_low:+.4f}, {r.delta_high:+.4f}]", format_p(r.p_value),
            format_p(r.p_adjusted) + (" *" if r.significant else ""), f"{r.wins}/{r.ties}/{r.losses}",
            str(len(r.fixed or ())), str(len(r.broken or ())), "-" if r.mde is None else f"{r.mde:.4f}",
        ]

    def _header(self) -> list[str]:
        c = f"{self.confidence * 100:g}% CI"
        p_adj = "p" if self.correction == "none" else f"p {self.correction}"
        return ["system", f"mean [{c}]", f"delta [{c}]", "p", p_adj, "W/T/L", "fixed", "broken", "MDE"]

    def _settings(self) -> str:
        return (f"n={self.n} questions · {self.test} test, {self.samples} samples, seed {self.seed} · "
                f"correction {self.correction} over {len(self.comparisons)} comparisons · alpha {self.alpha:g}, "
                f"power {self.power:g} · baseline {self.baseline}{self._basis()}")

    def _fixed_broken(self) -> list[str]:
        out = []
        for r in self.comparisons:
            if r.fixed or r.broken:
                out.append(f"{r.system} on {r.metric} (top {r.k}): fixed: {questions_text(r.fixed)}; "
                           f"broken: {questions_text(r.broken)}")
        return out

    def interval_note(self) -> str | None:
        """Why a delta's interval can exclude 0 beside a corrected p above alpha (None when nothing is corrected)."""
        note = interval_note(confidence=self.confidence, comparisons=len(self.comparisons),
                             correction=self.correction, alpha=self.alpha)
        return note and note + " (the interval goes with the raw p)"

    def to_text(self) -> str:
        """A plain table per metric, for terminals."""
        lines = [self._settings()]
        for m in self.metrics:
            rows = [self._header()] + [self._cells(r) for r in self.rows if r.metric == m]
            widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
            lines += ["", m]
            for row in rows:
                lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                       for i, (c, w) in enumerate(zip(row, widths))).rstrip())
        fb = self._fixed_broken()
        if fb:
            lines += ["", "fixed / broken (first relevant hit entering / leaving the top k):"] + [f"  {x}" for x in fb]
        notes = self.notes()
        if notes:
            lines += ["", "not significant:"] + [f"  {x}" for x in notes]
        lines += ["", f"* significant at alpha {self.alpha:g}" + ("" if self.correction == "none"
                                                                  else f" after {self.correction} correction"),
                  "W/T/L: questions the system wins, ties and loses against the baseline; MDE: minimum detectable "
                  f"effect (power {self.power:g})"]
        if self.interval_note():
            lines.append(f"CI: {self.interval_note()}")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """One markdown table per metric, then fixed/broken and notes."""
        out = [f"_{self._settings()}_"]
        for m in self.metrics:
            head = self._header()
            out += ["", f"**{m}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            for r in self.rows:
                if r.metric == m:
                    out.append("| " + " | ".join(c.replace("|", "\\|") for c in self._cells(r)) + " |")
        fb = self._fixed_broken()
        if fb:
            out += ["", "Fixed / broken (first relevant hit entering / leaving the top k):", ""] + [f"- {x}" for x in fb]
        notes = self.notes()
        if notes:
            out += ["", "Not significant:", ""] + [f"- {x}" for x in notes]
        if self.interval_note():
            out += ["", f"_CI: {self.interval_note()}_"]
        return "\n".join(out) + "\n"

    def to_html(self, *, title: str = "ragtune compare") -> str:
        """A self-contained HTML page (inline style, no scripts, no network)."""
        e = html.escape
        parts = [f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{e(title)}</title>",
                 "<style>body{font:14px/1.45 system-ui,sans-serif;color:#1d2330;margin:24px}"
                 "table{border-collapse:collapse;margin:6px 0 18px}th,td{padding:4px 10px;border-bottom:1px solid "
                 "#e4e7ec;text-align:right;white-space:nowrap}th{background:#f5f6f8}td:first-child,th:first-child"
                 "{text-align:left}tr.base td{background:#eef3ff}.pos{color:#11845b}.neg{color:#c0392b}"
                 ".sig{font-weight:600}.sub{color:#667085}</style></head><body>",
                 f"<h1>{e(title)}</h1><p class=\"sub\">{e(self._settings())}</p>"]
        for m in self.metrics:
            parts.append(f"<h2>{e(m)}</h2><table><thead><tr>"
                         + "".join(f"<th>{e(h)}</th>" for h in self._header()) + "</tr></thead><tbody>")
            for r in self.rows:
                if r.metric != m:
                    continue
                cells = self._cells(r)
                tds = []
                for i, c in enumerate(cells):
                    cls = ""
                    if i == 2 and r.delta is not None:
                        cls = "pos" if r.delta > 0 else "neg" if r.delta < 0 else ""
                    if i == 4 and r.significant:
                        cls = "sig"
                    tds.append(f"<td class=\"{cls}\">{e(c)}</td>" if cls else f"<td>{e(c)}</td>")
                parts.append(f"<tr class=\"{'base' if r.is_baseline else ''}\">" + "".join(tds) + "</tr>")
            parts.append("</tbody></table>")
        for heading, items in (("Fixed / broken", self._fixed_broken()), ("Not significant", self.notes())):
            if items:
                parts.append(f"<h2>{heading}</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in items) + "</ul>")
        if self.interval_note():
            parts.append(f"<p class=\"sub\">CI: {e(self.interval_note() or '')}</p>")
        parts.append("</body></html>\n")
        return "\n".join(parts)

    def write(self, path: str | os.PathLike[str]) -> str:
        """Write the report in the format of ``path``'s suffix: ``.md``, ``.html`` or ``.json``."""
        suffix = os.path.splitext(os.fspath(path))[1].lower()
        render = {".md": self.to_markdown, ".markdown": self.to_markdown, ".html": self.to_html,
                  ".htm": self.to_html, ".json": self.to_json}.get(suffix)
        if render is None:
            raise ConfigError(f"cannot tell the report format from {os.fspath(path)!r}; use a .md, .html or .json "
                              "file name")
        text = render()
        with open(path, "w", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
        return os.fspath(path)


def _to_runs(runs: Any, golden: Any, corpus: Any, ks: Sequence[int], options: Any = None) -> list[Run]:
    if isinstance(runs, (Run, str, os.PathLike)) or (isinstance(runs, Mapping) and "questions" in runs):
        raise ConfigError("compare takes a list (or a name -> run mapping) of at least two runs, got a single one")

    def one(x: Any, i: int, name: str | None) -> list[Run]:
        if isinstance(x, Run):
            return [x.renamed(name) if name else x]
        if isinstance(x, (str, os.PathLike)):
            return load_runs(x, golden=golden, corpus=corpus, name=name, ks=ks, options=options)
        if isinstance(x, Mapping) or hasattr(x, "to_dict"):
            return [Run.from_result(x, name=name or f"run{i + 1}")]
        raise ConfigError(f"cannot compare a {type(x).__name__}; give Run objects, evaluation results (or their "
                          "to_dict()), or paths to eval JSON, sweep folders or run files (TREC, ranx JSON, JSONL)")

    out: list[Run] = []
    items = runs.items() if isinstance(runs, Mapping) else ((None, x) for x in runs)
    for i, (name, x) in enumerate(items):
        out += one(x, i, name)
    return out


def _check_questions(base: Run, run: Run) -> None:
    a, b = set(base.scores), set(run.scores)
    if a == b:
        return
    parts = []
    if a - b:
        parts.append(f"lacks {len(a - b)} question(s) ({some(a - b)})")
    if b - a:
        parts.append(f"has {len(b - a)} extra ({some(b - a)})")
    raise ConfigError(f"the two results cover different questions: run {run.name!r} {' and '.join(parts)} of "
                      f"baseline {base.name!r}; compare runs of the same golden set")



def _values(run: Run, metric: str, ids: list[str]) -> np.ndarray:
    v = run.values(metric)
    missing = [i for i in ids if i not in v]
    if missing:
        raise ConfigError(f"metric {metric!r} is missing in run {run.name!r} for question(s) {some(missing)} that "
                          "the baseline has it for; compare runs of the same golden set")
    x = np.array([v[i] for i in ids], dtype=np.float64)
    bad = [i for i, y in zip(ids, x) if not math.isfinite(y)]
    if bad:
        raise ConfigError(f"metric {metric!r} is undefined in run {run.name!r} for question(s) {some(bad)}; "
                          "compare on another metric")
    return x


def _upper_mean(run: Run, metric: str, ids: list[str]) -> float | None:
    """The run's mean of ``metric``'s upper bound (``recall_upper@5`` for ``recall@5``), when its questions carry it."""
    name, _, k = metric.partition("@")
    try:
        return float(_values(run, f"{name}_upper" + (f"@{k}" if k else ""), ids).mean())
    except (ConfigError, KeyError):
        return None


def compare(runs: Sequence[Any] | Mapping[str, Any], golden: Any = None,
            baseline: Annotated[str | int | None, Opt("the baseline's name (a file stem or a sweep label; 'baseline' "
                                                      "or 'recommended' for a sweep's); default the first run, or "
                                                      "when it is a sweep, the configuration it recommends")] = None,
            metrics: Sequence[str] | str | None = None, *,
            test: Annotated[str, Opt("paired test: randomization, bootstrap or t-test")] = "randomization",
            correction: Annotated[str, Opt("multiple-comparison correction: holm, bonferroni or none")] = "holm",
            samples: Annotated[int, Opt("resamples of the randomization test and bootstraps", lo=1,
                                        hi=10_000_000)] = 10000,
            seed: Annotated[int, Opt("random seed of the resampling", lo=0)] = 0, alpha: float = 0.05,
            power: float = 0.8, confidence: float = 0.95, corpus: Any = None, options: Any = None,
            tolerance: float = 1e-9,
            target_effect: float = TARGET_EFFECT) -> Report:
    r"""Compare N systems with a baseline on every metric, question by question.

    ``runs`` is a list of :class:`Run`, evaluation results (``EvalResult`` or its
    ``to_dict()``) or paths (eval JSON, sweep folder or results.json, which adds one
    run per configuration, or any run file ``eval --run`` reads: TREC, ranx JSON,
    JSONL or JSON hit lists, scored against ``golden`` by :meth:`Run.from_file`, with
    ``corpus`` when its hits are not golden anchors and ``options``, a
    :class:`~ragtune.evaluate.match.MatchOptions`, for how hits match), or a
    ``{name: run}`` mapping.
    Names must be unique. ``baseline`` is a name or an index, default the first run;
    when the first run is a sweep's, the configuration that sweep recommends
    (results.json ``recommended``), as the report says (``baseline_basis``).
    ``"baseline"`` or ``"recommended"`` (when no run has that name) picks the baseline or
    the recommended configuration of the one sweep among the inputs.
    Every run must have each of ``metrics`` for the same answerable questions.
    Without ``metrics``, :func:`default_metrics` (the metric table's ``compare``
    rows at k 10), less any row the baseline was scored without (a row added
    after it was evaluated).

    For each system and metric: the mean with a percentile bootstrap CI
    (``confidence``, ``samples`` resamples, ``seed``). For each other system: the
    delta (system - baseline) with a bootstrap CI of the mean per-question
    difference, the p-value of the paired ``test`` ("randomization", "bootstrap" or
    "t-test"), the p-value corrected with ``correction`` ("holm", "bonferroni" or
    "none") across all (system, metric) comparisons, significance
    (corrected p < ``alpha``), wins/ties/losses (per-question values differing by
    more than ``tolerance``), and the questions fixed and broken (first relevant
    hit entering / leaving the top k, k the metric's cut-off or the baseline's
    largest k).

    Power: with :math:`s_d` the sample standard deviation of the :math:`n` paired
    differences, the minimum detectable effect is

    .. math:: MDE = (z_{1-\alpha'/2} + z_{power}) \, s_d / \sqrt{n}

    and the questions needed to detect an effect :math:`\delta` are
    :math:`\lceil ((z_{1-\alpha'/2} + z_{power}) \, s_d / \delta)^2 \rceil`, where
    :math:`\alpha' = \alpha / m` over :math:`m` comparisons when a correction is on
    (Bonferroni's bound, Holm's first step) and :math:`\alpha` otherwise. They are
    reported for the observed delta and for ``target_effect`` (0.05, five points,
    on metrics between 0 and 1; not for ``context_tokens@k``).
    """
    check_test(test)
    check_correction(correction)
    defaulted = metrics is None
    metrics = _metric_names(metrics)
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"alpha must be between 0 and 1, got {alpha!r}")
    parsed = {m: parse_metric(m) for m in metrics}  # every name from the metric table, each @k well formed
    ks = [k for row, k in parsed.values() if k is not None and not row.unit]  # a token budget is no rank cut-off
    ordered, basis = _baseline_first(_to_runs(runs, golden, corpus, ks, options), baseline)
    base = ordered[0]
    if defaulted:  # a row registered after the baseline was scored: compare the rest
        rows_scored = {m.partition("@")[0] for m in base.metrics}
        metrics = tuple(m for m in metrics if m.partition("@")[0] in rows_scored) or metrics
    ids = list(base.question_ids)
    n = len(ids)
    if n == 0:
        raise ConfigError(f"the baseline {base.name!r} has no answerable questions to compare")

    m_comparisons = (len(ordered) - 1) * len(metrics)
    mde_alpha = alpha / m_comparisons if correction != "none" else alpha
    stats = _RowStats(ids=ids, test=test, samples=samples, seed=seed, confidence=confidence, power=power,
                      mde_alpha=mde_alpha, tolerance=tolerance, target_effect=target_effect)
    rows: list[dict[str, Any]] = []
    for metric in metrics:
        k = metric_k(metric, base.ks)
        row_stats = stats if metric.partition("@")[0] not in PARTIAL else replace(
            stats, ids=[i for i in ids if i in base.values(metric)])  # evidence@k: the questions with evidence groups
        x = _values(base, metric, row_stats.ids)
        rows.append(row_stats.baseline_row(base, metric, x))
        for run in ordered[1:]:
            rows.append(row_stats.system_row(base, run, metric, x, k, parsed[metric][0].bounded))
    _correct_rows(rows, correction, alpha)
    return Report(
        systems=tuple(r.name for r in ordered), baseline=base.name, metrics=metrics, n=n, test=test,
        correction=correction, samples=samples, seed=seed, alpha=alpha, power=power, confidence=confidence,
        mde_alpha=mde_alpha, target_effect=target_effect, rows=tuple(ReportRow(**r) for r in rows),
        baseline_basis=basis,
    )


def _metric_names(metrics: Sequence[str] | str | None) -> tuple[str, ...]:
    """The metrics to compare: :func:`default_metrics` when None, a single name as a 1-tuple, duplicates dropped."""
    if metrics is None:
        metrics = default_metrics()
    if isinstance(metrics, str):
        metrics = (metrics,)
    metrics = tuple(dict.fromkeys(metrics))
    if not metrics:
        raise ConfigError("compare needs at least one metric, such as recall@10")
    return metrics


def _baseline_first(run_list: list[Run], baseline: str | int | None) -> tuple[list[Run], str]:
    """The runs with the baseline first, after checking there are two or more, uniquely named, on the same
    questions, and why it is the baseline (:func:`_baseline_index`)."""
    if len(run_list) < 2:
        raise ConfigError(f"compare needs at least two runs, got {len(run_list)}")
    names = [r.name for r in run_list]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"two or more runs are named {', '.join(map(repr, dupes))}; give each a unique name "
                          "(pass a {name: run} mapping, or Run.renamed)")
    base_i, basis = _baseline_index(run_list, names, baseline)
    base = run_list[base_i]
    ordered = [base] + [r for i, r in enumerate(run_list) if i != base_i]
    for r in ordered[1:]:
        _check_questions(base, r)
    return ordered, basis


def _baseline_index(run_list: list[Run], names: list[str], baseline: str | int | None) -> tuple[int, str]:
    """The baseline's position and why: the first run (``first``), or, when the first run comes from a sweep, the
    configuration that sweep recommends (``recommended``); an index (``index``), a name (``named``),
    ``"baseline"`` for the one sweep's baseline (``sweep baseline``) or ``"recommended"`` for the one sweep's
    recommended configuration (``recommended``)."""
    def sweep_pick(flag: str, sweep: str | None = None) -> int | None:
        hits = [i for i, r in enumerate(run_list) if r.meta.get(flag) and sweep in (None, r.meta.get("sweep"))]
        return hits[0] if len(hits) == 1 else None

    if baseline is None:
        sweep = run_list[0].meta.get("sweep")
        i = sweep_pick("sweep_recommended", sweep) if sweep else None
        return (0, "first") if i is None else (i, "recommended")
    if isinstance(baseline, int) and not isinstance(baseline, bool):
        if not -len(run_list) <= baseline < len(run_list):
            raise ConfigError(f"baseline index {baseline} is out of range for {len(run_list)} runs")
        return baseline % len(run_list), "index"
    if baseline in names:
        return names.index(baseline), "named"
    flag = {"baseline": "sweep_baseline", "recommended": "sweep_recommended"}.get(baseline)
    if flag and (i := sweep_pick(flag)) is not None:
        return i, "sweep baseline" if baseline == "baseline" else "recommended"
    raise ConfigError(f"no run named {baseline!r} to use as the baseline; runs: {', '.join(names)}"
                      + ("" if flag else "; or 'baseline' / 'recommended' for a sweep's baseline or recommended "
                                         "configuration"))


@dataclass(frozen=True)
class _RowStats:
    """The statistics of one report row, with the settings every row shares (questions, test, resampling, power)."""

    ids: list[str]
    test: str
    samples: int
    seed: int
    confidence: float
    power: float
    mde_alpha: float
    tolerance: float
    target_effect: float

    def _ci(self, v: np.ndarray) -> tuple[float, float]:
        return bootstrap_ci(v, n=self.samples, seed=self.seed, confidence=self.confidence)

    def baseline_row(self, base: Run, metric: str, x: np.ndarray) -> dict[str, Any]:
        """The baseline's mean of ``metric`` with its bootstrap CI (and the metric's upper bound, when known)."""
        lo, hi = self._ci(x)
        return dict(system=base.name, metric=metric, n=len(self.ids), mean=float(x.mean()), ci_low=lo, ci_high=hi,
                    upper=_upper_mean(base, metric, self.ids))

    def system_row(self, base: Run, run: Run, metric: str, x: np.ndarray, k: int, bounded: bool) -> dict[str, Any]:
        """One system against the baseline on ``metric``: mean, delta with CIs, paired p-value, wins/ties/losses,
        questions fixed and broken at ``k``, and the power figures (MDE, questions needed)."""
        ids, n, alpha, power = self.ids, len(self.ids), self.mde_alpha, self.power
        y = _values(run, metric, ids)
        d = y - x
        lo, hi = self._ci(y)
        dlo, dhi = self._ci(d)
        wins = int(np.count_nonzero(d > self.tolerance))
        losses = int(np.count_nonzero(d < -self.tolerance))
        sd = float(d.std(ddof=1)) if n > 1 else float("nan")
        changed = int(np.count_nonzero(d))
        delta = float(d.mean())
        ha = {i: (base.first_hit_ranks.get(i) or math.inf) <= k for i in ids}
        hb = {i: (run.first_hit_ranks.get(i) or math.inf) <= k for i in ids}
        return dict(
            system=run.name, metric=metric, n=n, mean=float(y.mean()), ci_low=lo, ci_high=hi, delta=delta,
            delta_low=dlo, delta_high=dhi, p_value=paired_test(self.test, x, y, n=self.samples, seed=self.seed),
            wins=wins, ties=n - wins - losses, losses=losses, changed=changed,
            fixed=tuple(i for i in ids if hb[i] and not ha[i]), broken=tuple(i for i in ids if ha[i] and not hb[i]),
            k=k, sd_diff=sd,
            mde=detectable_effect(sd, n, alpha=alpha, power=power) if changed else None,
            needed=questions_needed(sd, delta, alpha=alpha, power=power),
            needed_target=questions_needed(sd, self.target_effect, alpha=alpha, power=power) if bounded else None,
            upper=_upper_mean(run, metric, ids),
        )


def _correct_rows(rows: list[dict[str, Any]], correction: str, alpha: float) -> None:
    """Add the corrected p-value and significance to every row that has a p-value (all comparisons corrected together)."""
    compared = [r for r in rows if "p_value" in r]
    for r, p in zip(compared, correct([r["p_value"] for r in compared], correction)):
        r["p_adjusted"] = p
        r["significant"] = bool(p < alpha)

@dataclass(frozen=True)
class Comparison:
    """Two systems on one metric: the two-system view of a :class:`Report` row.

    ``extra`` holds the rest of the row: ``delta_ci``, ``mean_ci`` of each side,
    ``mde``, ``needed``, ``needed_target``, ``changed`` and ``sd_diff``.
    """

    metric: str
    baseline: str
    candidate: str
    n: int
    baseline_mean: float
    candidate_mean: float
    delta: float
    p_value: float
    test: str
    samples: int
    seed: int
    wins: int
    ties: int
    losses: int
    fixed: tuple[str, ...] = ()
    broken: tuple[str, ...] = ()
    k: int = 10
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["fixed"], d["broken"] = list(self.fixed), list(self.broken)
        d["extra"] = json_finite(dict(self.extra))
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self) -> str:
        lines = [
            f"{self.metric}: {self.baseline} {self.baseline_mean:.4f} -> {self.candidate} {self.candidate_mean:.4f} "
            f"({self.delta:+.4f}, p{p_equals(self.p_value, tight=True)}, {self.test} test, {self.samples} samples, seed {self.seed}, "
            f"n={self.n})",
            f"wins {self.wins}  ties {self.ties}  losses {self.losses}",
            f"fixed (first hit now in the top {self.k}): {questions_text(self.fixed)}",
            f"broken (first hit no longer in the top {self.k}): {questions_text(self.broken)}",
        ]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        return (f"| metric | {self.baseline} | {self.candidate} | delta | p | W/T/L | fixed | broken |\n"
                f"|---|---|---|---|---|---|---|---|\n"
                f"| {self.metric} | {self.baseline_mean:.4f} | {self.candidate_mean:.4f} | {self.delta:+.4f} | "
                f"{format_p(self.p_value)} | {self.wins}/{self.ties}/{self.losses} | {len(self.fixed)} | "
                f"{len(self.broken)} |")


def _comparison(report: Report, metric: str, candidate: str, names: tuple[str, str]) -> Comparison:
    b, c = report.row(report.baseline, metric), report.row(candidate, metric)
    return Comparison(
        metric=metric, baseline=names[0], candidate=names[1], n=c.n, baseline_mean=b.mean, candidate_mean=c.mean,
        delta=c.delta, p_value=c.p_value, test=report.test, samples=report.samples, seed=report.seed, wins=c.wins,
        ties=c.ties, losses=c.losses, fixed=c.fixed, broken=c.broken, k=c.k,
        extra={"delta_ci": [c.delta_low, c.delta_high], "baseline_ci": [b.ci_low, b.ci_high],
               "candidate_ci": [c.ci_low, c.ci_high], "mde": c.mde, "needed": c.needed,
               "needed_target": c.needed_target, "changed": c.changed, "sd_diff": c.sd_diff},
    )


def compare_runs(baseline: Mapping[str, Any], candidate: Mapping[str, Any], *, metric: str = "recall@10",
                 test: str = "randomization", samples: int = 10000, seed: int = 0, names: tuple[str, str] = ("A", "B"),
                 tolerance: float = 1e-9) -> Comparison:
    """Compare two eval results (``EvalResult.to_dict()`` shape) on their shared answerable questions.

    A two-system :func:`compare` with no correction, returned as a :class:`Comparison`.
    """
    a = Run.from_result(baseline, name="baseline")
    b = Run.from_result(candidate, name="candidate")
    report = compare([a, b], metrics=(metric,), test=test, correction="none", samples=samples, seed=seed,
                     tolerance=tolerance)
    return _comparison(report, metric, "candidate", names)
