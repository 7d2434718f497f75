"""``regression_gate``: fail a CI job when retrieval got worse than a committed baseline.

A metric fails the gate when it dropped by more than ``max_drop`` (absolute, in
the metric's units: 0.02 is two points of recall@10; for a metric where lower
is better, such as ``context_tokens@k``, it rose by more).

Only when significance is asked for (``require_significance=True``, or a
``significance`` level below 1) must the paired test of :func:`ragtune.compare`
over the same questions also say the drop is real: corrected p-value below
``significance``. A drop beyond the tolerance that is not significant then
passes with a note saying how many questions it would take to tell, and the
report says up front which drop the test can detect with this many questions
(a golden set of 8 questions cannot show a 5-point drop), so a blind gate is
not read as a guard. The report renders as text, markdown (a CI job page) and
JUnit XML (one testcase per metric), and lists the questions broken: those whose
first relevant hit left the top k, sorted.
"""

from __future__ import annotations

import json
import math
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

from ..errors import ConfigError, CorpusNotFoundError
from ..config import Opt
from .run import Run, _eval_result_or_none
from .significance import format_p
from .table import parse_metric

__all__ = ["GateCheck", "GateReport", "regression_gate", "write_baseline", "DEFAULT_GATE_METRICS", "check_gate",
           "ci_gate"]

DEFAULT_GATE_METRICS = ("recall@10", "mrr", "ndcg@10")
_EPS = 1e-12  # a drop equal to the tolerance passes


@dataclass(frozen=True)
class GateCheck:
    """One metric's verdict. ``status`` is ``pass``, ``fail`` or ``not-significant`` (dropped beyond the
    tolerance, but the test cannot tell it from noise: passes with ``note``)."""

    metric: str
    status: str
    n: int
    baseline: float
    current: float
    delta: float
    delta_low: float
    delta_high: float
    p_value: float
    p_adjusted: float
    k: int
    broken: tuple[str, ...]
    fixed: tuple[str, ...]
    note: str | None = None
    detectable_drop: float | None = None  # the drop the paired test can detect with these questions (MDE)

    @property
    def passed(self) -> bool:
        return self.status != "fail"

    def line(self) -> str:
        """``recall@10  0.8500 -> 0.7000  -0.1500 [-0.2500, -0.0500]  p 0.004  FAIL``"""
        return (f"{self.metric}: {self.baseline:.4f} -> {self.current:.4f}  {self.delta:+.4f} "
                f"[{self.delta_low:+.4f}, {self.delta_high:+.4f}]  p {format_p(self.p_adjusted)}  "
                f"{self.status.upper()}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["broken"], d["fixed"] = list(self.broken), list(self.fixed)
        d["passed"] = self.passed
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


@dataclass(frozen=True)
class GateReport:
    """The verdict of :func:`regression_gate`: settings, one :class:`GateCheck` per metric, and the question
    texts of the broken ones (for printing)."""

    baseline: str
    max_drop: float
    significance: float
    test: str
    correction: str
    n: int
    checks: tuple[GateCheck, ...]
    questions: Mapping[str, str]
    power: float = 0.8
    mde_alpha: float = 0.05  # the per-metric alpha the detectable drops are computed at
    judged: tuple[float | None, float | None] = (None, None)  # judged@10 of the baseline and of this run

    def judged_line(self) -> str | None:
        """How much of each top 10 was judged: the figures are lower bounds where it is below 1."""
        b, c = self.judged
        if b is None or c is None:
            return None
        return f"judged@10: baseline {b:.2f}, this run {c:.2f}" + (
            "" if min(b, c) >= 1 else " (unjudged hits count as misses: the figures are lower bounds)")

    @property
    def require_significance(self) -> bool:
        """Whether a drop must also be significant to fail (``significance`` below 1)."""
        return self.significance < 1

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def exit_code(self) -> int:
        """0 when every metric passes, 1 when one fails (what a CI step needs)."""
        return 0 if self.passed else 1

    @property
    def failures(self) -> tuple[GateCheck, ...]:
        return tuple(c for c in self.checks if not c.passed)

    @property
    def broken(self) -> tuple[str, ...]:
        """Questions broken on any metric, sorted (question ids in natural order: q2 before q10)."""
        return tuple(sorted({q for c in self.checks for q in c.broken}, key=_natural))

    def _rule(self) -> str:
        sig = ("(the tolerance alone decides: no significance test was asked for)"
               if self.significance >= 1 else
               f"and the drop is significant ({self.test} test, {self.correction} correction, p < "
               f"{self.significance:g})")
        return f"fails when a metric drops by more than {self.max_drop:g} {sig}"

    def detectable(self) -> str | None:
        """With significance asked for: which drop the test can detect with this many questions, and whether the
        gate is blind between the tolerance and that (None when the tolerance alone decides)."""
        if not self.require_significance:
            return None
        known = [(c.metric, c.detectable_drop) for c in self.checks]
        parts = [f"{m} {d:.4f}" if d is not None else f"{m} unknown (no question changed)" for m, d in known]
        text = (f"with {self.n} questions the test detects drops of about {', '.join(parts)} (power {self.power:g}, "
                f"alpha {self.mde_alpha:.3g} per metric)")
        blind = [m for m, d in known if d is not None and d > self.max_drop + _EPS]
        if blind:
            text += (f"; a drop between {self.max_drop:g} and that passes as NOT-SIGNIFICANT on {', '.join(blind)}: "
                     "add questions, or let the tolerance alone decide (no significance test)")
        return text

    def _verdict(self) -> str:
        if self.passed:
            return f"regression gate PASSED: {len(self.checks)} metric(s) against {self.baseline}, n={self.n}"
        return (f"regression gate FAILED: {', '.join(c.metric for c in self.failures)} dropped against "
                f"{self.baseline}, n={self.n}")

    def _broken_lines(self, limit: int) -> list[str]:
        out = []
        for q in self.broken[:limit]:
            text = self.questions.get(q)
            out.append(f"{q}: {text}" if text else q)
        if len(self.broken) > limit:
            out.append(f"... and {len(self.broken) - limit} more")
        return out

    def to_text(self, *, limit: int = 20) -> str:
        lines = [self._verdict(), f"  ({self._rule()})"]
        if self.detectable():
            lines.append(f"  ({self.detectable()})")
        if self.judged_line():
            lines.append(f"  ({self.judged_line()})")
        lines += [f"  {c.line()}" for c in self.checks]
        notes = [c.note for c in self.checks if c.note]
        if notes:
            lines += ["notes:"] + [f"  {n}" for n in notes]
        if self.broken:
            lines += [f"questions broken ({len(self.broken)}: first relevant hit left the top k):"]
            lines += [f"  {x}" for x in self._broken_lines(limit)]
        return "\n".join(lines)

    def to_markdown(self, *, limit: int = 50) -> str:
        """A summary for a CI job page (GitHub's $GITHUB_STEP_SUMMARY, a GitLab artifact, a PR comment)."""
        icon = {"pass": "✅ pass", "fail": "❌ fail", "not-significant": "⚠️ not significant"}
        out = [f"### {'✅' if self.passed else '❌'} {self._verdict()}", "", f"_{self._rule()}_", "",
               *([f"_{self.detectable()}_", ""] if self.detectable() else []),
               *([f"_{self.judged_line()}_", ""] if self.judged_line() else []),
               f"| metric | baseline | this run | delta [95% CI] | p ({self.correction}) | broken | fixed | verdict |",
               "|---|---|---|---|---|---|---|---|"]
        for c in self.checks:
            out.append(f"| {c.metric} | {c.baseline:.4f} | {c.current:.4f} | {c.delta:+.4f} "
                       f"[{c.delta_low:+.4f}, {c.delta_high:+.4f}] | {format_p(c.p_adjusted)} | {len(c.broken)} | "
                       f"{len(c.fixed)} | {icon[c.status]} |")
        notes = [c.note for c in self.checks if c.note]
        if notes:
            out += ["", "Notes:", ""] + [f"- {n}" for n in notes]
        if self.broken:
            out += ["", f"Questions broken ({len(self.broken)}):", ""]
            out += [f"- {x.replace('|', chr(92) + '|')}" for x in self._broken_lines(limit)]
        return "\n".join(out) + "\n"

    def to_junit(self) -> str:
        """JUnit XML: one testsuite, one testcase per metric; a failed metric's failure message gives the
        delta, its CI and p, and its body the broken questions."""
        suite = ET.Element("testsuite", name="ragtune regression gate", tests=str(len(self.checks)),
                           failures=str(len(self.failures)), errors="0", skipped="0")
        props = ET.SubElement(suite, "properties")
        for k, v in (("baseline", self.baseline), ("max_drop", f"{self.max_drop:g}"),
                     ("significance", f"{self.significance:g}"), ("test", self.test), ("questions", str(self.n)),
                     ("require_significance", str(self.require_significance).lower())):
            ET.SubElement(props, "property", name=k, value=v)
        if self.detectable():
            for c in self.checks:
                ET.SubElement(props, "property", name=f"detectable_drop.{c.metric}",
                              value="unknown" if c.detectable_drop is None else f"{c.detectable_drop:.4f}")
            ET.SubElement(suite, "system-out").text = self.detectable()
        for c in self.checks:
            case = ET.SubElement(suite, "testcase", classname="ragtune.gate", name=c.metric, time="0")
            summary = (f"{c.metric} {c.baseline:.4f} -> {c.current:.4f}: delta {c.delta:+.4f}, 95% CI "
                       f"[{c.delta_low:+.4f}, {c.delta_high:+.4f}], p {format_p(c.p_adjusted)}, n={c.n}")
            if c.status == "fail":
                fail = ET.SubElement(case, "failure", message=f"dropped beyond {self.max_drop:g}: {summary}",
                                     type="RegressionGate")
                qs = [f"{q}: {self.questions.get(q, '')}".rstrip(": ") for q in sorted(c.broken, key=_natural)]
                fail.text = summary + ("\nbroken questions:\n" + "\n".join(qs) if qs else "")
            else:
                ET.SubElement(case, "system-out").text = summary + (f"\n{c.note}" if c.note else "")
        ET.indent(suite)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "baseline": self.baseline, "max_drop": self.max_drop,
                "significance": self.significance, "test": self.test, "correction": self.correction, "n": self.n,
                "checks": [c.to_dict() for c in self.checks], "broken": list(self.broken),
                "require_significance": self.require_significance, "detectable": self.detectable(),
                "power": self.power, "mde_alpha": self.mde_alpha, "judged_at_10": list(self.judged)}

    def write_junit(self, path: str | os.PathLike[str]) -> str:
        from ..io import write_text

        write_text(path, self.to_junit())
        return os.fspath(path)

    def write_summary(self, path: str | os.PathLike[str]) -> str:
        from ..io import write_text

        write_text(path, self.to_markdown())
        return os.fspath(path)


def _natural(q: str) -> tuple:
    """Sort key of a question id: digit runs compare as numbers (q2 before q10)."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.findall(r"\d+|\D+", q))


def _as_run(x: Any, name: str, golden: Any = None, corpus: Any = None, options: Any = None,
            ks: Sequence[int] = ()) -> tuple[Run, Mapping[str, str]]:
    """A run and its question texts from an EvalResult, its dict, a Run or a path: an eval JSON (its scores), or
    any run file ``eval --run`` reads (TREC, ranx JSON, JSONL hits), scored against ``golden`` by the one run
    reader (:meth:`Run.from_file`), with ``corpus`` and ``options`` for matching its hits."""
    if isinstance(x, Run):
        return x.renamed(name), {}
    source = None
    if isinstance(x, (str, os.PathLike)):
        p = Path(x)
        if not p.exists():
            raise CorpusNotFoundError(f"{p}: no baseline there; create it from a run you trust with "
                                      "`ragtune eval ... --baseline FILE --update-baseline`")
        data = _eval_result_or_none(p)
        if data is None and p.suffix.lower() == ".json":
            try:
                json.loads(p.read_text(encoding="utf-8-sig"))
            except (OSError, UnicodeDecodeError, ValueError) as e:
                if "Extra data" not in str(e):  # (JSON Lines named .json is a run file)
                    raise ConfigError(f"{p}: cannot read the baseline as JSON ({e}); rewrite it with "
                                      "--update-baseline") from None
        if data is None:  # a run file: scored as eval --run scores it
            gold = _load(golden, "golden")
            if gold is None:
                raise ConfigError(f"{p}: a baseline run file (TREC, ranx JSON, JSONL hits) is scored against the "
                                  "golden set; pass golden= (CLI: --golden), or keep an eval JSON as baseline")
            run = Run.from_file(p, gold, corpus=_load(corpus, "corpus"), options=options, name=name, ks=ks)
            return run, {i.id: i.q for i in gold}
        x, source = data, str(p)
    if hasattr(x, "to_dict") and not isinstance(x, Mapping):
        x = x.to_dict()
    run = Run.from_result(x, name=name, source=source)
    texts = {str(q["id"]): str(q.get("q") or "") for q in x.get("questions", []) if isinstance(q, Mapping)}
    return run, texts


def _load(x: Any, what: str) -> Any:
    """A golden set or corpus given as a path is loaded (only a run-file baseline needs them)."""
    if not isinstance(x, (str, os.PathLike)):
        return x
    if what == "golden":
        from ..golden import load_golden

        return load_golden(x)
    from ..corpus import load_corpus

    return load_corpus(x)


def _pick_metrics(metrics: Sequence[str] | str | None, base: Run, cur: Run) -> tuple[str, ...]:
    if isinstance(metrics, str):
        metrics = (metrics,)
    if metrics:
        return tuple(dict.fromkeys(metrics))
    have = set(base.metrics) & set(cur.metrics)
    picked = tuple(m for m in DEFAULT_GATE_METRICS if m in have)
    if not picked:
        raise ConfigError(f"none of the default gate metrics ({', '.join(DEFAULT_GATE_METRICS)}) is in both the "
                          "baseline and this run; name them with metrics= (CLI: --metric)")
    return picked


def regression_gate(result: Any, baseline: Any, *, max_drop: float = 0.02, significance: float | None = None,
                    require_significance: bool = False, metrics: Sequence[str] | str | None = None,
                    test: str = "randomization", correction: str = "holm", samples: int = 10000, seed: int = 0,
                    golden: Any = None, corpus: Any = None, options: Any = None) -> GateReport:
    """Judge ``result`` (this run) against ``baseline`` (the committed one), metric by metric.

    Both are eval results (:class:`EvalResult`, its ``to_dict()``, a :class:`Run`) or, for the
    baseline, the path of an ``eval --json`` file or of any run file ``eval --run`` reads (TREC, ranx JSON,
    JSONL hits), scored against ``golden`` (a golden set or its path), with ``corpus`` and ``options``
    (:class:`~ragtune.evaluate.match.MatchOptions`) for matching its hits, exactly as ``eval --run`` scores it.
    They must cover the same answerable questions.
    ``metrics`` default to recall@10, mrr and ndcg@10 (those both have). A metric fails when
    ``baseline - current > max_drop`` (``current - baseline`` for a metric the table marks lower-is-better,
    such as ``context_tokens@k``): by default the tolerance alone decides. Significance is asked for by
    ``require_significance`` (at ``significance``, default 0.05) or by a ``significance`` below 1: a drop then
    fails only when the paired ``test``'s p-value, corrected with ``correction`` across the metrics, is below it,
    and each check carries the drop the test can detect with these questions (``detectable_drop``).
    Deltas, CIs and p-values come from :func:`ragtune.compare`.
    """
    from .compare import compare

    if not (isinstance(max_drop, (int, float)) and math.isfinite(max_drop) and max_drop >= 0):
        raise ConfigError(f"max_drop must be a number >= 0 (in the metric's units: 0.02 is two points), "
                          f"got {max_drop!r}")
    if significance is not None and not (isinstance(significance, (int, float)) and 0 < significance <= 1):
        raise ConfigError(f"significance must be in (0, 1] (0.05 is usual; 1 lets the tolerance alone decide), "
                          f"got {significance!r}")
    if significance is None:
        significance = 0.05 if require_significance else 1.0
    elif require_significance and significance >= 1:
        raise ConfigError("require_significance with significance=1 asks for a test that cannot fail a drop; give a "
                          "level below 1 (0.05 is usual), or drop require_significance to let the tolerance decide")
    cur, cur_texts = _as_run(result, "current")
    base, base_texts = _as_run(baseline, "baseline", golden, corpus, options, ks=cur.ks)
    picked = _pick_metrics(metrics, base, cur)
    try:
        report = compare([base, cur], baseline="baseline", metrics=picked, test=test, correction=correction,
                         samples=samples, seed=seed, alpha=min(significance, 0.5))
    except ConfigError as e:
        msg = str(e)
        if "different questions" in msg:
            msg += "; if the golden set changed on purpose, rewrite the baseline with --update-baseline"
        raise ConfigError(msg) from None
    notes = dict(zip([r.metric for r in report.comparisons if not r.significant], report.notes()))
    checks = []
    for r in report.comparisons:
        higher = parse_metric(r.metric)[0].higher_is_better  # the table's direction: fewer context tokens is better
        loss = -r.delta if higher else r.delta
        dropped = loss > max_drop + _EPS
        real = significance >= 1 or r.p_adjusted < significance
        status = "pass" if not dropped else "fail" if real else "not-significant"
        note = None
        if status == "not-significant":
            moved, change = ("dropped", "drop") if higher else ("rose (lower is better)", "rise")
            note = (f"{r.metric} {moved} {loss:.4f} (more than {max_drop:g}) but the {change} is not significant "
                    f"(p {format_p(r.p_adjusted)} >= {significance:g}), so the gate passes. "
                    + _power_tail(notes.get(r.metric, "")))
        unjudged = _unjudged_note(r, report.row("baseline", r.metric), higher, loss > _EPS)
        note = f"{note} {unjudged}" if note and unjudged else note or unjudged
        checks.append(GateCheck(
            metric=r.metric, status=status, n=r.n, baseline=report.row("baseline", r.metric).mean, current=r.mean,
            delta=r.delta, delta_low=r.delta_low, delta_high=r.delta_high, p_value=r.p_value,
            p_adjusted=r.p_adjusted, k=r.k, broken=tuple(sorted(r.broken or (), key=_natural)),
            fixed=tuple(sorted(r.fixed or (), key=_natural)), note=note,
            detectable_drop=r.mde if significance < 1 else None))
    return GateReport(baseline=base.source or "baseline", max_drop=float(max_drop), significance=float(significance),
                      test=test, correction=correction, n=report.n, checks=tuple(checks),
                      questions={**base_texts, **cur_texts}, power=float(report.power),
                      mde_alpha=float(report.mde_alpha), judged=(_judged(base), _judged(cur)))


def _judged(run: Any) -> float | None:
    """The run's mean judged@10 over its questions, when it carries it (older baselines do not)."""
    try:
        values = [v for v in run.values("judged@10").values() if v is not None and v == v]
    except (ConfigError, KeyError):
        return None
    return sum(values) / len(values) if values else None


def _unjudged_note(row: Any, base: Any, higher: bool, dropped: bool) -> str | None:
    """When this run's figure dropped but its unjudged hits could lift it back past the baseline's: say so."""
    if not (higher and dropped and row.upper is not None and row.mean < base.mean <= row.upper):
        return None
    return (f"{row.metric}: the drop lies inside the unjudged interval: this run's unjudged hits could lift it from "
            f"{row.mean:.4f} to {row.upper:.4f}, which reaches the baseline's {base.mean:.4f}; judge them "
            "(`ragtune pool`) before reading it as a regression.")


def _power_tail(note: str) -> str:
    """The part of a compare note that says what it would take ("With 8 questions the smallest ...")."""
    i = note.find(" With ")
    return note[i + 1:] if i >= 0 else ""


def write_baseline(result: Any, path: str | os.PathLike[str]) -> str:
    """Write ``result`` (an EvalResult or its dict) as the baseline file ``path`` (an ``eval --json`` file)."""
    from ..io import write_text
    from ..io import json_finite

    data = result.to_dict() if hasattr(result, "to_dict") and not isinstance(result, Mapping) else result
    if not isinstance(data, Mapping) or not isinstance(data.get("questions"), list):
        raise ConfigError("a baseline is an evaluation result (with a 'questions' list); pass an EvalResult")
    write_text(path, json.dumps(json_finite(dict(data)), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    return os.fspath(path)


def check_gate(baseline: str | None = None, update_baseline: bool = False, metric: Sequence[str] | None = ()) -> None:
    """Before any work: ``update_baseline`` needs a ``baseline`` path, a baseline to compare with must exist, and
    each ``metric`` to gate must be a metric of the table (:mod:`ragtune.evaluate.table`)."""
    for m in metric or ():
        parse_metric(m)
    if update_baseline and baseline is None:
        raise ConfigError("--update-baseline rewrites the file named by --baseline FILE; pass both")
    if baseline and not update_baseline and not Path(baseline).is_file():
        raise ConfigError(f"{baseline}: no baseline there; create it once from a run you trust with "
                          "--update-baseline, and commit it")


def ci_gate(result: Any, *,
            baseline: Annotated[str | None, Opt("eval JSON (or run file eval --run reads) to compare with: exit 1 "
                                                "when a metric really dropped", metavar="FILE")] = None,
            max_drop: Annotated[float, Opt("tolerated drop in a metric's units", lo=0.0, hi=1e9)] = 0.02,
            significance: Annotated[float | None, Opt("ask for a significance test: a drop beyond --max-drop fails "
                                                      "only when its corrected p is below this (default: the "
                                                      "tolerance alone decides; 0.05 with --require-significance)",
                                                      lo=1e-9, hi=1.0, metavar="P")] = None,
            require_significance: Annotated[bool, Opt("fail only on significant drops (at --significance, default "
                                                      "0.05); the gate says which drop it can detect")] = False,
            metric: Annotated[tuple[str, ...], Opt("metric to gate (repeatable; default recall@10, mrr, ndcg@10)",
                                                   metavar="NAME")] = (),
            junit: Annotated[str | None, Opt("write the verdict as JUnit XML (one testcase per metric)",
                                             metavar="FILE")] = None,
            summary: Annotated[str | None, Opt("write the verdict as markdown (for a CI job page)",
                                               metavar="FILE")] = None,
            update_baseline: Annotated[bool, Opt("write this run to --baseline FILE and exit 0")] = False,
            golden: Any = None, corpus: Any = None, options: Any = None,
            ) -> GateReport | None:
    """The regression gate of a CI job: with ``update_baseline``, write ``result`` as the baseline (None);
    without a ``baseline``, None; otherwise :func:`regression_gate`'s report (``golden``, ``corpus`` and
    ``options`` score a baseline that is a run file rather than an eval JSON), also written to ``junit`` and
    ``summary`` when given."""
    check_gate(baseline, update_baseline, metric)
    if update_baseline:
        write_baseline(result, baseline)  # type: ignore[arg-type]
        return None
    if baseline is None:
        return None
    gate = regression_gate(result, baseline, max_drop=max_drop, significance=significance,
                           require_significance=require_significance, metrics=metric or None,
                           golden=golden, corpus=corpus, options=options)
    for path, write in ((junit, gate.write_junit), (summary, gate.write_summary)):
        if path:
            write(path)
    return gate
