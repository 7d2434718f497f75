"""Relevant anchors judging added after a golden set was authored, and what they did to recall.

Judging a question's pool (the workbench, ``golden judge``) can find more sections that answer it. Each such
judgment is recorded with ``"added": true`` (:attr:`ragtune.golden.GoldenItem.added`), and recall is then
measured against more anchors: a question whose two authored anchors were both in the top 5 (recall@5 1.00) can
score 0.50 once judging added two more, with nothing about retrieval changed. :func:`added_by_judging` puts the
figure against the authored anchors beside today's, so a drop that judging caused is said as such::

    recall@5 0.75 (was 1.00 against the 2 authored anchors; 2 relevant anchors added by judging)

Files written before the workbench recorded ``added`` have none: their anchors all count as authored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..golden import GoldenSet

__all__ = ["AddedByJudging", "AddedQuestion", "added_by_judging", "added_note"]


@dataclass(frozen=True, slots=True)
class AddedQuestion:
    """One question with anchors added by judging: how many of each, its recall@k now and against the
    authored anchors only (None when judging added all of them)."""

    id: str
    authored: int
    added: int
    recall: float
    recall_authored: float | None

    def to_text(self, k: int) -> str:
        was = "no authored anchor" if self.recall_authored is None else \
            f"was {self.recall_authored:.2f} against the {self.authored} authored anchor{_s(self.authored)}"
        return f"[{self.id}] recall@{k} {self.recall:.2f} ({was}; {self.added} relevant anchor{_s(self.added)} " \
               "added by judging)"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "authored": self.authored, "added": self.added, "recall": self.recall,
                "recall_authored": self.recall_authored}


@dataclass(frozen=True, slots=True)
class AddedByJudging:
    """The questions of an evaluation with relevant anchors added by judging, at cutoff ``k``: the mean recall@k
    over the answerable questions now (``recall``) and with every question scored against its authored anchors
    (``recall_authored``; a question whose anchors were all added keeps today's figure)."""

    k: int
    recall: float
    recall_authored: float
    questions: tuple[AddedQuestion, ...]

    @property
    def anchors(self) -> int:
        return sum(q.added for q in self.questions)

    def to_text(self, limit: int = 5) -> str:
        n = len(self.questions)
        lines = [f"judging added {self.anchors} relevant anchor{_s(self.anchors)} to {n} question{_s(n)} after the "
                 f"golden set was authored: recall is now measured against more anchors. recall@{self.k} "
                 f"{self.recall:.3f} (was {self.recall_authored:.3f} against the authored anchors)"]
        lines += [f"  {q.to_text(self.k)}" for q in self.questions[:limit]]
        if n > limit:
            lines.append(f"  ... and {n - limit} more (--json lists them under added_by_judging)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "anchors": self.anchors, "recall": self.recall, "recall_authored": self.recall_authored,
                "questions": [q.to_dict() for q in self.questions]}


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _recall(ranks: Mapping[str, int | None], anchors: Sequence[str], k: int) -> float:
    return sum(1 for a in anchors if (ranks.get(a) or k + 1) <= k) / len(anchors)


def added_by_judging(result: Any, golden: GoldenSet, k: int | None = None) -> AddedByJudging | None:
    """What judging added to the questions of ``result`` (an :class:`~ragtune.evaluate.evaluate.EvalResult` scored
    on ``golden``), at ``k`` (default: its first cutoff); None when no question has an added anchor."""
    k = int(k if k is not None else result.ks[0])
    items = {i.id: i for i in golden}
    now, was, rows = [], [], []
    for q in result.questions:
        if not q.answerable:
            continue
        item = items.get(q.id)
        recall = _recall(q.anchor_ranks, list(q.relevant), k)
        added = [a for a in (item.added if item else ()) if a in q.relevant]
        authored = [a for a in q.relevant if a not in added]
        before = _recall(q.anchor_ranks, authored, k) if added and authored else None
        now.append(recall)
        was.append(recall if before is None else before)
        if added:
            rows.append(AddedQuestion(q.id, len(authored), len(added), recall, before))
    if not rows:
        return None
    return AddedByJudging(k, float(np.mean(now)), float(np.mean(was)), tuple(rows))


def added_note(result: Any, golden: GoldenSet) -> tuple[dict[str, Any], str]:
    """What eval adds to its output about anchors judging added (:func:`added_by_judging`): the JSON key
    ``added_by_judging`` and a note under the table; empty when judging added none."""
    added = added_by_judging(result, golden)
    return ({"added_by_judging": added.to_dict()}, "\n" + added.to_text()) if added else ({}, "")
