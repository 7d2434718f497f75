"""Sweep results: ranking, significance against the baseline, the printed table and results.json.

Ranking: by the sweep metric, ties by a second metric (mrr, or ndcg@10 when the
sweep metric is mrr), then by lower p50 end-to-end latency, then by label.
Every mean shown carries a percentile bootstrap confidence interval (the sweep's
``samples`` and ``seed``); every delta its interval from :func:`ragtune.compare`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..evaluate.compare import compare
from ..evaluate.run import Run
from ..evaluate.significance import bootstrap_ci, interval_note, p_equals
from ..pipeline.config import token_unit
from ..evaluate.table import find_metric, shown_keys
from .grid import Grid, GridError

__all__ = ["SweepResult", "judged_sample", "summarize", "columns"]

ALPHA = 0.05  # significance level of the comparisons (compare's default)
CONFIDENCE = 0.95  # of every interval shown


def _lower_better(metric: str) -> bool:
    """Whether smaller values of ``metric`` are better, as the metric table says (higher for a name it lacks)."""
    row = find_metric(metric)
    return row is not None and not row.higher_is_better


def _num(v: Any, metric: str) -> str:
    row = find_metric(metric)
    return f"{v:.2f}" if row is None or row.bounded else f"{v:.0f}"


def columns(view: str, ks: Sequence[int], metric: str) -> list[str]:
    """The metric columns of a sweep table: what the metric table shows in ``view`` (``sweep``, at the two smallest
    k at most; ``report``, at every k), those where higher is better first, then the sweep ``metric`` when it is
    not among them, then those where lower is (``context_tokens@k``, a cost); each group in table order."""
    cols = sorted(shown_keys(view, list(ks)[:2] if view == "sweep" else ks), key=_lower_better)
    if metric not in cols:
        at = next((i for i, c in enumerate(cols) if _lower_better(c)), len(cols))
        cols.insert(at, metric)
    return cols


def ci_text(ci: Sequence[float] | None, metric: str) -> str:
    """``0.40-0.90`` (a mean's interval); empty when unknown."""
    if not ci or ci[0] is None or any(isinstance(x, float) and math.isnan(x) for x in ci):
        return ""
    return f"{_num(ci[0], metric)}-{_num(ci[1], metric)}"


@dataclass
class SweepResult:
    grid: Grid
    records: list[dict]
    baseline_key: str
    search: dict[str, Any] | None = None  # a search's trials and settings (ragtune.sweep.search); None for a grid
    judged_sample: tuple[Any, Any] | None = None  # (PoolSample, the GoldenSet holding its judgments): ~ from it

    @property
    def metric(self) -> str:
        return self.grid.metric

    def value(self, record: dict, metric: str | None = None) -> float:
        v = record["result"]["metrics"].get(metric or self.metric)
        return float("nan") if v is None else float(v)

    @property
    def tie_metric(self) -> str:
        """The metric that breaks ties on the sweep metric: mrr, or ndcg@10 when ranking by mrr."""
        return "ndcg@10" if self.metric == "mrr" else "mrr"

    @property
    def ranking_rule(self) -> str:
        """How :meth:`ranked` orders configurations, in words (printed with every ranked table)."""
        better = "lower" if _lower_better(self.metric) else "higher"
        return (f"ranked by {self.metric} ({better} is better); ties broken by {self.tie_metric}, "
                "then by lower p50 latency")

    @staticmethod
    def latency(record: dict, which: str = "p50") -> float:
        v = ((record.get("stats") or {}).get("latency_ms") or {}).get(which)
        return float("nan") if v is None else float(v)

    def ranked(self) -> list[dict]:
        """Best first by the sweep metric (in its direction in the metric table), ties by
        :attr:`tie_metric`, then by lower p50 latency, then by label."""
        sign = 1 if _lower_better(self.metric) else -1

        def key(r: dict) -> tuple:
            v, t, lat = self.value(r), self.value(r, self.tie_metric), self.latency(r)
            return (math.isnan(v), 0.0 if math.isnan(v) else sign * v, math.isnan(t), 0.0 if math.isnan(t) else -t,
                    math.isnan(lat), 0.0 if math.isnan(lat) else lat, r["label"], r["key"])

        return sorted(self.records, key=key)

    def ci(self, record: dict, metric: str | None = None) -> list[float] | None:
        """The bootstrap confidence interval of a configuration's mean, ``[low, high]`` (None if not computed)."""
        return (record.get("ci") or {}).get(metric or self.metric)

    @property
    def significant(self) -> list[dict]:
        """Configurations whose difference from the baseline is significant after the Holm correction."""
        return [r for r in self.records if r.get("vs_baseline") and r["vs_baseline"]["p_holm"] is not None
                and r["vs_baseline"]["p_holm"] < ALPHA]

    def power_note(self) -> str | None:
        """One line when no configuration differs significantly from the baseline: how many questions it
        would take to detect the largest improvement observed (``needed`` of :func:`ragtune.compare`)."""
        others = [r for r in self.records if r.get("vs_baseline")]
        if not others or self.significant:
            return None
        n = others[0]["vs_baseline"]["n"]
        ps = [r["vs_baseline"]["p_holm"] for r in others]
        why = ("every p-value is 1" if all(p is not None and p >= 1.0 for p in ps)
               else f"every Holm-corrected p >= {ALPHA:g}")
        head = f"No configuration differs significantly from the baseline on {self.metric} ({why}, {n} questions)."
        sign = -1 if _lower_better(self.metric) else 1
        others = [r for r in self.ranked() if r.get("vs_baseline")]  # ranked: the first of equals is reported
        gains = [r for r in others if r["vs_baseline"]["delta"] and sign * r["vs_baseline"]["delta"] > 0
                 and r["vs_baseline"].get("needed")]
        if gains:
            r = max(gains, key=lambda x: (sign * x["vs_baseline"]["delta"], -x["vs_baseline"]["needed"]))
            vs = r["vs_baseline"]
            return (f"{head} Detecting the largest gain, {vs['delta']:+.3f} ({r['label']}), would take about "
                    f"{vs['needed']} questions.")
        moved = [r for r in others if r["vs_baseline"].get("needed")]
        if moved:
            r = min(moved, key=lambda x: x["vs_baseline"]["needed"])
            vs = r["vs_baseline"]
            return (f"{head} No configuration improves on the baseline's mean; detecting the smallest-to-detect "
                    f"difference, {vs['delta']:+.3f} ({r['label']}), would take about {vs['needed']} questions.")
        return f"{head} Every configuration scores like the baseline on every question: more questions cannot separate them."

    def upper_metric(self) -> str | None:
        """The sweep metric's upper bound, if every unjudged section retrieved were relevant (``recall_upper@5`` for
        ``recall@5``), when the metric table has one; the metric itself is the lower bound."""
        name, _, k = self.metric.partition("@")
        upper = f"{name}_upper" + (f"@{k}" if k else "")
        return upper if self.records and not math.isnan(self.value(self.records[0], upper)) else None

    def unsettled(self) -> set[str]:
        """Keys of configurations against which the decision could change at 95% confidence once the unjudged
        sections are judged (marked ``~``): each unjudged hit is drawn relevant with its estimated probability
        (1,000 seeded draws; :func:`ragtune.judgments.decide.depth_rates`, or with :attr:`judged_sample` the
        estimate from the judged pool sample, :func:`ragtune.judgments.decide.sample_probability`: judged holes
        certain, the pool's others by the relevance model fitted on the judged draws), and the configuration is
        significantly better than the recommended one (:meth:`recommended`; the bootstrap over questions,
        Holm-corrected over every configuration compared with it) in more than 5% and fewer than 95% of the draws
        (:meth:`ragtune.judgments.decide.DecisionModel.could_change`). For a metric the model does
        not cover (nDCG, MAP, R-precision): those whose rank could change, one ranked below another whose figure its
        upper bound passes, or above another whose upper bound passes its own (:meth:`upper_metric`). Empty when
        the metric has no bound or every hit was judged."""
        from ..judgments.decide import decision_model

        cached = self.__dict__.get("_unsettled")
        state = (len(self.records), id(self.judged_sample))
        if cached is not None and cached[0] == state:
            return set(cached[2])
        upper = self.upper_metric()
        model = None
        if upper is not None and not _lower_better(self.metric) and len(self.records) > 1:
            sample, golden = self.judged_sample or (None, None)
            model = decision_model(self.records, self.metric, seed=self.grid.seed, confidence=CONFIDENCE,
                                   resamples=min(self.grid.samples, 1000), sample=sample, golden=golden)
        out: set[str] = set()
        if model is not None:
            out = set(model.could_change(self.recommended()["key"]))
        elif upper is not None and not _lower_better(self.metric):
            rows = [(r["key"], self.value(r), self.value(r, upper)) for r in self.records]
            for key, v, u in rows:
                for other, v2, u2 in rows:
                    if other != key and ((v2 >= v and u > v2) or (v2 <= v and u2 > v)):
                        out.add(key)
                        break
        self.__dict__["_unsettled"] = (state, model is not None, frozenset(out))
        return out

    def interval_note(self) -> str | None:
        """Why a delta's interval (under each row) can exclude 0 beside a Holm-corrected p above alpha: the
        interval is per comparison, the p corrected over all of them. None with fewer than two comparisons."""
        return interval_note(confidence=CONFIDENCE, comparisons=sum(1 for r in self.records if r.get("vs_baseline")),
                             correction="holm", alpha=ALPHA, p_label="the Holm-corrected p")

    def judged_note(self) -> str | None:
        """One line on how much of the top 10 was judged, and what the ``~`` marks say (:meth:`unsettled`)."""
        judged = [self.value(r, "judged@10") for r in self.records]
        if not judged or any(math.isnan(j) for j in judged):
            return None
        moved = self.unsettled()
        decided = self.__dict__["_unsettled"][1]  # the decision model ran (else the bounds rule)
        head = f"judged@10 {min(judged):.2f} to {max(judged):.2f} across configurations"
        if min(judged) >= 1.0:
            return head + ": every top-10 hit has a judgment"
        if decided:
            chance = "its estimated chance"
            if self.judged_sample is not None:
                from ..judgments.estimate import judged_draws

                chance = ("its chance estimated from the judged pool sample" if judged_draws(*self.judged_sample)
                          else "its chance estimated by depth: no draw of the pool sample is judged yet")
            if not moved:
                return (f"{head}; the unjudged hits cannot change the recommendation at {CONFIDENCE:.0%} confidence "
                        f"(each drawn relevant with {chance})")
            return (f"{head}; ~ marks the {len(moved)} configuration(s) that the unjudged hits, each drawn relevant "
                    f"with {chance}, make significantly better than the recommended one (Holm-corrected over the "
                    f"{len(self.records) - 1} comparisons) in 5-95% of "
                    f"draws: the decision could change at {CONFIDENCE:.0%} confidence (`ragtune pool --order "
                    "decides` lists what to judge first)")
        if not moved:
            return head + f"; the unjudged hits cannot reorder the ranking by {self.metric}"
        return (f"{head}; ~ marks the {len(moved)} configuration(s) whose rank by {self.metric} could change once "
                f"the unjudged sections they retrieved are judged (`ragtune pool` lists them)")

    def selection(self) -> dict[str, Any] | None:
        """With a holdout share in the grid: the configuration chosen on the selection questions, scored on the
        held-out ones (:func:`ragtune.sweep.holdout.holdout_selection`); with folds, the K-fold cross-validated
        choice (:func:`ragtune.sweep.holdout.folds_selection`, each fold among the configurations its search
        evaluated when a search made the records); None without either."""
        if self.grid.folds:
            from .holdout import folds_selection

            studies = (self.search or {}).get("studies")
            return folds_selection(self.records, metric=self.metric, folds=self.grid.folds, seed=self.grid.seed,
                                   baseline_key=self.baseline_key, lower_better=_lower_better(self.metric),
                                   samples=self.grid.samples, rule=self.grid.select, test=self.grid.test,
                                   candidates=[s["candidates"] for s in studies] if studies else None)
        if not self.grid.holdout:
            return None
        from .holdout import holdout_selection

        return holdout_selection(self.records, metric=self.metric, share=self.grid.holdout, seed=self.grid.seed,
                                 baseline_key=self.baseline_key, lower_better=_lower_better(self.metric),
                                 samples=self.grid.samples, rule=self.grid.select, test=self.grid.test)

    @property
    def baseline(self) -> dict:
        return next(r for r in self.records if r["key"] == self.baseline_key)

    def to_dict(self) -> dict[str, Any]:
        selection = self.selection()
        held = selection if selection is not None and "problem" not in selection else None
        return {
            "recommended": self.recommendation(held) if self.records else None,
            "metric": self.metric,
            "test": self.grid.test,
            "samples": self.grid.samples,
            "seed": self.grid.seed,
            "correction": "holm",
            "ks": list(self.grid.ks),
            "baseline": self.baseline_key,
            "ranking": self.ranking_rule,
            "confidence": CONFIDENCE,
            "power_note": self.power_note(),
            "judged_note": self.judged_note(),
            "selection": selection,
            "in_sample": None if held is None else IN_SAMPLE,
            "rank_could_change": sorted(self.unsettled()),
            "grid": dict(self.grid.raw),
            "configs": [_public(r) for r in self.ranked()],
            **({"search": self.search} if self.search is not None else {}),
        }

    def held_out(self) -> dict[str, Any] | None:
        """The selection (:meth:`selection`) when it gave a held-out figure, else None: where it is not None, every
        other figure of the sweep is in-sample (scored on all the questions, those the choice was made on
        included) and is labelled so."""
        s = self.selection()
        return s if s is not None and "problem" not in s else None

    def recommendation(self, selection: dict[str, Any] | None = None) -> dict[str, Any]:
        """The one configuration the sweep recommends, and why (``results.json`` ``recommended``; the table's first
        line, the report's headline card, the MLflow tag ``ragtune.recommended`` and ``recommended.toml``):

        - with ``holdout``: the configuration the selection rule (``select``) chose on the selection questions;
        - with ``folds``: the configuration the same rule chooses on all the questions (the folds measured how well
          choosing that way does on questions it did not see);
        - otherwise: the best-ranked configuration whose difference from the baseline is significant after the Holm
          correction, in the better direction; the baseline when none is.

        ``selection`` is :meth:`held_out`'s value when the caller has it already (it is computed otherwise)."""
        sel = selection if selection is not None else self.held_out()
        by_key = {r["key"]: r for r in self.records}
        if sel is not None and self.grid.folds:
            key, basis, reason = self._folds_choice(sel), "folds", ""
        elif sel is not None:
            key, basis, reason = sel["chosen"], "holdout", ""
        else:
            key, basis, reason = self._significant_choice()
        record = by_key[key]
        out: dict[str, Any] = {"key": key, "label": record["label"], "basis": basis, "metric": self.metric,
                               "in_sample": _finite(self.value(record)), "in_sample_ci": self.ci(record)}
        if sel is not None:
            reason = (_folds_reason if self.grid.folds else _holdout_reason)(sel, key, self.baseline_key, self.metric)
            n = sum(1 for q in record["result"]["questions"] if q.get("answerable", True))
            reason += f"; in-sample {self.metric} {self.value(record):.3f} on all {n} questions"
            out.update({"held_out": sel["held_out_score"], "held_out_ci": sel["held_out_ci"],
                        "baseline_held_out": sel["baseline_held_out"]})
        out["reason"] = reason
        return out

    def _folds_choice(self, sel: dict[str, Any]) -> str:
        """The key the selection rule chooses on every answerable question, among every configuration evaluated;
        equal means are told apart by the table's order (so with ``best`` it is the table's top row)."""
        from .holdout import choose, question_scores

        per = {r["key"]: question_scores(r["result"], self.metric) for r in self.records}
        ids = sorted(per[self.baseline_key])
        order = {r["key"]: f"{n:08d}" for n, r in enumerate(self.ranked())}  # ties broken as the ranking breaks them
        return choose(per, list(per), ids, baseline_key=self.baseline_key, rule=sel.get("rule", "best"),
                      labels=order, lower_better=_lower_better(self.metric), test=self.grid.test,
                      samples=self.grid.samples, seed=self.grid.seed)

    def _significant_choice(self) -> tuple[str, str, str]:
        """(key, basis, reason) without a held-out figure: the best-ranked configuration significantly better than
        the baseline (Holm-corrected), else the baseline."""
        sign = -1 if _lower_better(self.metric) else 1
        ranked = self.ranked()
        better = [r for r in ranked if r.get("vs_baseline") and r["vs_baseline"]["p_holm"] is not None
                  and r["vs_baseline"]["p_holm"] < ALPHA and sign * r["vs_baseline"]["delta"] > 0]
        m = self.metric
        if better:
            r, vs = better[0], better[0]["vs_baseline"]
            where = ("it ranks first" if r is ranked[0] else
                     f"the best-ranked (#{ranked.index(r) + 1}) of the {len(better)} configuration(s) significantly "
                     "better than the baseline")
            return (r["key"], "significant",
                    f"{m} {self.value(r):.3f}, {vs['delta']:+.3f} over the baseline (Holm-corrected "
                    f"p{p_equals(vs['p_holm'], tight=True)}, {vs['n']} questions): {where}")
        if len(self.records) == 1:
            return self.baseline_key, "baseline", "the baseline is the only configuration evaluated"
        if ranked[0]["key"] == self.baseline_key:
            return self.baseline_key, "baseline", f"the baseline ranks first on {m}"
        top, vs = ranked[0], ranked[0].get("vs_baseline") or {}
        p = "" if vs.get("p_holm") is None else f", Holm-corrected p{p_equals(vs['p_holm'], tight=True)}"
        return (self.baseline_key, "baseline",
                f"no configuration is significantly better than the baseline on {m} (the top-ranked, "
                f"{top['label']}, {vs.get('delta', math.nan):+.3f}{p}): keep the baseline")

    def recommended_line(self, selection: dict[str, Any] | None = None) -> str:
        """The table's first line: ``recommended: <label> — <why>``."""
        rec = self.recommendation(selection)
        return f"recommended: {rec['label']} — {rec['reason']}"

    def recommended(self) -> dict:
        """The record of the configuration the sweep recommends (:meth:`recommendation`)."""
        key = self.recommendation()["key"]
        return next(r for r in self.records if r["key"] == key)

    def write(self, out_dir: str | os.PathLike[str]) -> Path:
        """``results.json``, and ``recommended.toml``: the recommended configuration (:meth:`recommendation`) as a
        pipeline file that ``ragtune eval``, ``index build`` and ``serve`` take unchanged (``--config
        recommended.toml``). The ``best.toml`` an earlier release wrote into the folder is removed, so that no file
        there names another configuration."""
        from ..io import write_atomic
        from ..pipeline import PipelineConfig

        out = Path(out_dir)
        data = self.to_dict()
        path = out / "results.json"
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
        if self.records:
            spec = next(r for r in self.records if r["key"] == data["recommended"]["key"])["spec"]
            write_atomic(out / "recommended.toml", PipelineConfig.from_dict(spec).to_toml())
            (out / "best.toml").unlink(missing_ok=True)
        return path

    def table(self, *, limit: int | None = None) -> str:
        """The ranked configurations as plain text: a line of values, then a line of 95% intervals under them."""
        cols = columns("sweep", self.grid.ks, self.metric)
        w = max(11, *(len(c) + 2 for c in cols))
        left = f"{'#':>3} {'strategy':<13}{'size':>6}{'overlap':>8} {'prefix':<7}{'retriever':<18}"
        head = left + "".join(f"{c:>{w}}" for c in cols) + f"{'p50 ms':>8}{'p95 ms':>8}  vs baseline ({self.metric})"
        chosen = self.selection()
        held = chosen if chosen is not None and "problem" not in chosen else None
        lines = [self.recommended_line(held) if self.records else "recommended: none (no configuration evaluated)",
                 f"{self.ranking_rule}; under each row, its {CONFIDENCE * 100:g}% bootstrap interval"
                 + ("" if held is None else f"; {IN_SAMPLE}"), head]
        units: set[str] = set()
        moved = self.unsettled()
        shown = [(r["spec"]["chunker"], r.get("chunker_config", r["spec"]).get("size"),
                  r.get("chunker_config", r["spec"]).get("overlap"), bool(r["spec"].get("prefix")), r["spec"]["retriever"],
                  r["spec"].get("rerank"), r["spec"].get("candidates")) for r in self.records]
        labelled = len(set(shown)) < len(shown)  # the columns do not tell every row apart: each row ends with its label
        for n, r in enumerate(self.ranked()[:limit], start=1):
            spec = r["spec"]
            retr = spec["retriever"] + (f"+{spec['rerank']}@{spec['candidates']}" if spec.get("rerank") else "")
            vs = r.get("vs_baseline")
            cmp, cmp_ci = "", ""
            if r["key"] == self.baseline_key:
                cmp = "(baseline)"
            elif vs:
                cmp = f"{vs['delta']:+.3f} (p{p_equals(vs['p_holm'], tight=True)}) {vs['wins']}/{vs['ties']}/{vs['losses']}"
                lo, hi = vs.get("delta_ci") or (None, None)
                if lo is not None and hi is not None:
                    cmp_ci = f"[{lo:+.3f}, {hi:+.3f}]"
            full = r.get("chunker_config", spec)
            unit = token_unit(full.get("tokenizer"))  # sizes counted in an embedder's tokens are marked
            size = f"{full['size']}*" if unit and "size" in full else full.get("size", "-")
            units.update([unit] if unit and "size" in full else [])
            overlap = full.get("overlap", "-")
            values = "".join(f"{self.value(r, c):>{w}.3f}" for c in cols)
            lines.append(f"{n:>2}{'~' if r['key'] in moved else ' '} {spec['chunker']:<13}{size!s:>6}{overlap!s:>8} {'yes' if spec.get('prefix') else 'no':<7}"
                         f"{retr:<18}{values}{_ms(self.latency(r)):>8}{_ms(self.latency(r, 'p95')):>8}  {cmp}"
                         + (f"  {r['label']}" if labelled else ""))
            cis = "".join(f"{ci_text(self.ci(r, c), c):>{w}}" for c in cols)
            if cis.strip() or cmp_ci:
                lines.append(f"{'':>{len(left)}}{cis}{'':>16}  {cmp_ci}".rstrip())
        if units:
            lines.append(f"size*: size and overlap count {' / '.join(sorted(units))} tokens (the embedder's, under a "
                         "dense or hybrid retriever); unmarked sizes count regex tokens")
        lat = next((r["stats"]["latency_ms"] for r in self.records if (r["stats"].get("latency_ms") or {}).get("questions")),
                   None)
        if lat:
            lines.append(f"latency: end to end per question, query embedding included; median of {lat['repeats']} "
                         f"timings of {lat['questions']} questions, then p50/p95 across them (stages in results.json)")
        if self.interval_note():
            lines.append(f"vs baseline: delta (Holm-corrected p) wins/ties/losses; {self.interval_note()}")
        if self.search is not None:
            from .space import search_text

            lines.append(search_text(self.search, self.metric))
        if chosen is not None:
            from .holdout import folds_text, selection_text

            lines.append((folds_text if self.grid.folds else selection_text)(chosen, self.metric))
        for note in (self.judged_note(), self.power_note()):
            if note:
                lines.append(note)
        return "\n".join(lines)


IN_SAMPLE = ("in-sample: every configuration's figures are scored on all the questions, those the choice was "
             "made on included; the held-out figure is the selection's")


def _finite(v: float) -> float | None:
    return None if math.isnan(v) else v


def _verdict(s: dict[str, Any], key: str, baseline_key: str, metric: str) -> str:
    """Whether the choice beat the baseline on the questions it was not chosen on, in words."""
    if s["beats_baseline"]:
        return "significantly better than the baseline there"
    if key == baseline_key and s["p_vs_baseline"] is None:
        return "the baseline itself"
    delta = s["delta_vs_baseline"]
    worse = delta > 0 if _lower_better(metric) else delta < 0
    if worse and s["p_vs_baseline"] is not None and s["p_vs_baseline"] < ALPHA:
        return ("significantly worse than the baseline there (select = significant keeps the baseline unless a "
                "configuration is significantly better)")
    return "worse than the baseline there, not significantly" if worse else \
        "not significantly better than the baseline there"


def _holdout_reason(s: dict[str, Any], key: str, baseline_key: str, metric: str) -> str:
    """Why a holdout's choice is recommended: the rule, and its figure on the held-out questions."""
    rule = s.get("rule", "best")
    if key == baseline_key:
        how = ("no configuration was significantly better than the baseline on the "
               f"{s['selection_questions']} selection questions (select = significant)" if rule == "significant" else
               f"the baseline scored best on the {s['selection_questions']} selection questions (select = best)")
    else:
        how = f"chosen on the {s['selection_questions']} selection questions (select = {rule})"
    lo, hi = s["held_out_ci"]
    p = "" if s["p_vs_baseline"] is None else f", p={s['p_vs_baseline']:.3f}"
    figure = (f"{metric} {s['held_out_score']:.3f} [{lo:.3f}, {hi:.3f}] held out on the other "
              f"{s['held_out_questions']} questions")
    if key == baseline_key:
        return f"{how}; {figure}"
    return (f"{how}; {figure}, baseline {s['baseline_held_out']:.3f} there ({s['delta_vs_baseline']:+.3f}{p}): "
            f"{_verdict(s, key, baseline_key, metric)}")


def _folds_reason(s: dict[str, Any], key: str, baseline_key: str, metric: str) -> str:
    """Why the choice after a K-fold selection is recommended: the rule applied to every question, and how choosing
    that way scored on the questions each fold's choice had not seen."""
    rule = s.get("rule", "best")
    how = (f"the baseline: select = {rule} chose it on all {s['questions']} questions" if key == baseline_key else
           f"chosen on all {s['questions']} questions (select = {rule})")
    lo, hi = s["held_out_ci"]
    p = "" if s["p_vs_baseline"] is None else f", p={s['p_vs_baseline']:.3f}"
    return (f"{how}; choosing this way scored {metric} {s['held_out_score']:.3f} [{lo:.3f}, {hi:.3f}] held out over "
            f"{s['folds']} folds, baseline {s['baseline_held_out']:.3f} ({s['delta_vs_baseline']:+.3f}{p}): "
            f"{_verdict(s, baseline_key if s['p_vs_baseline'] is None else '', baseline_key, metric)}")


def _ms(v: float) -> str:
    """Milliseconds with the digits that matter: 0.04, 8.9, 230."""
    if math.isnan(v):
        return "-"
    return f"{v:.2f}" if v < 1 else f"{v:.1f}" if v < 100 else f"{v:.0f}"


def _public(r: dict) -> dict:
    """A record for results.json: config, metrics, stats, comparison and per-question scores."""
    res = r["result"]
    return {
        "key": r["key"], "label": r["label"], "config": r["spec"], "chunker_config": r.get("chunker_config"),
        "metrics": res["metrics"], "metrics_ci": r.get("ci") or {},
        "by_tag": res.get("by_tag", {}), "stats": r["stats"], "latency_ms": res.get("latency_ms", {}),
        "vs_baseline": r.get("vs_baseline"),
        "questions": [{"id": q["id"], "answerable": q["answerable"], "first_hit_rank": q["first_hit_rank"],
                       "scores": q["scores"]} for q in res["questions"]],
    }


def judged_sample(pool_sample: Any, golden: Any) -> tuple[Any, Any] | None:
    """(the pool sample, ``golden``) for :attr:`SweepResult.judged_sample`: ``pool_sample`` a
    :class:`~ragtune.judgments.sample.PoolSample` or a pool file with a sample (``ragtune pool --sample N --out
    FILE``), read now; None without one."""
    if pool_sample is None:
        return None
    from ..judgments.sample import PoolSample, read_pool_sample

    return (pool_sample if isinstance(pool_sample, PoolSample) else read_pool_sample(pool_sample), golden)


def summarize(grid: Grid, records: Sequence[dict], *, judged: tuple[Any, Any] | None = None) -> SweepResult:
    """Compare every configuration with the baseline (paired test, Holm-corrected). ``judged``: a judged pool
    sample and the golden set holding its judgments (:func:`judged_sample`), which the ``~`` marks then use."""
    records = list(records)
    base = next((r for r in records if r["key"] == grid.baseline.key), None)
    if base is None:
        raise GridError("the baseline configuration is not among the results; resolve the grid for the corpus "
                        "(grid.resolved(corpus.kind)) before running and summarising")
    others = [r for r in records if r is not base]
    if others:
        # runs are named by key: keys are unique, labels need not be
        runs = [Run.from_result(r["result"], name=r["key"]) for r in [base, *others]]
        report = compare(runs, metrics=(grid.metric,), test=grid.test, correction="holm", samples=grid.samples,
                         seed=grid.seed)
        for r in others:
            c = report.row(r["key"], grid.metric)
            r["vs_baseline"] = {"delta": c.delta, "p": c.p_value, "p_holm": c.p_adjusted, "wins": c.wins,
                                "ties": c.ties, "losses": c.losses, "fixed": list(c.fixed), "broken": list(c.broken),
                                "k": c.k, "n": c.n, "delta_ci": [c.delta_low, c.delta_high], "mde": c.mde,
                                "needed": c.needed}
    base["vs_baseline"] = None
    for r in records:
        r["ci"] = _mean_cis(r["result"], grid, report.row(r["key"], grid.metric) if others else None)
    return SweepResult(grid, records, base["key"], judged_sample=judged)


def _ci_metrics(grid: Grid) -> list[str]:
    """The means the table, the report and the terminal show, each given an interval."""
    return list(dict.fromkeys([grid.metric, *columns("report", grid.ks, grid.metric),
                               *columns("sweep", grid.ks, grid.metric)]))


def _mean_cis(result: dict, grid: Grid, row: Any) -> dict[str, list[float]]:
    """Percentile bootstrap intervals of the means (answerable questions), plus reranker headroom
    (per question: recall at the largest k minus recall at the smallest). The sweep metric's interval is
    the one :func:`compare` computed."""
    qs = [q for q in result["questions"] if q.get("answerable", True)]
    out: dict[str, list[float]] = {}

    def interval(values: list[Any]) -> list[float] | None:
        x = [float(v) for v in values if v is not None and math.isfinite(float(v))]
        if not x:
            return None
        lo, hi = bootstrap_ci(x, n=grid.samples, seed=grid.seed, confidence=CONFIDENCE)
        return [lo, hi]

    for m in _ci_metrics(grid):
        if row is not None and m == grid.metric:
            out[m] = [row.ci_low, row.ci_high]
        elif qs and m in qs[0]["scores"]:
            ci = interval([q["scores"].get(m) for q in qs])
            if ci:
                out[m] = ci
    lo_k, hi_k = f"recall@{min(grid.ks)}", f"recall@{max(grid.ks)}"
    if qs and lo_k in qs[0]["scores"] and hi_k in qs[0]["scores"]:
        ci = interval([q["scores"][hi_k] - q["scores"][lo_k] for q in qs
                       if q["scores"].get(hi_k) is not None and q["scores"].get(lo_k) is not None])
        if ci:
            out["reranker_headroom"] = ci
    return out
