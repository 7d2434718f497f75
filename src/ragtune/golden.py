"""Golden sets: questions with the anchors that answer them.

Canonical form is JSONL, one item a line::

    {"id": "q1", "q": "How do refunds work?", "relevant": ["billing.md#refunds"], "tags": ["paraphrase"]}

``relevant`` may also map anchors to graded relevance (``{"a.md#x": 2}``; 0 not relevant, 1 partly, 2 answers
it); a plain list means the top grade, :data:`TOP_GRADE` (2: the author's answers), so a section judging finds
later never outranks them;
``"relevant": []`` marks a question the corpus cannot answer. ``"status": "draft"``
marks a proposed question no person has accepted yet (``ragtune golden draft``,
with its drafting notes under ``"draft"``): drafts are never scored;
``ragtune golden review`` accepts them.

Judgments beyond the relevant anchors (all optional; a file without them loads as before)::

    {"id": "q1", "q": "...", "relevant": {"billing.md#refunds": 2},
     "judged": {"billing.md#invoices": 0},
     "judgments": [{"anchor": "billing.md#invoices", "grade": 0, "by": "ana", "at": "2025-03-02",
                    "pool": "pool.jsonl"}]}

``judged`` records anchors someone judged and found not relevant (a list of anchors, or anchor -> 0): a run
retrieving them is judged there, not in a hole (``judged@k``). ``relevant`` stays the one place a relevant
anchor is listed, so a reader that ignores ``judged`` scores the same; an anchor listed in both must carry the
same grade there, anything else is a conflict. ``judgments`` is the provenance of labels, one record per
judgment: ``anchor``, ``grade`` (0 = not relevant), ``by`` (a person's name, or ``llm:<model>`` for an LLM's
label), optional ``at`` (an ISO 8601 date or time), ``pool`` (the pool file it came from) and ``added`` (true when
the judgment made the anchor relevant on a question that already had relevant anchors: judging added it after the
question was authored; :attr:`GoldenItem.added`). A record must agree with the item's label for its anchor. See
docs/concepts/judgments.md.

Questions that need more than one search (all optional; a plain set is unchanged)::

    {"id": "m1", "q": "...", "relevant": ["a.md#x", "b.md#y", "b.md#z"], "evidence": [["a.md#x"], ["b.md#y", "b.md#z"]]}
    {"id": "c1", "turns": [{"q": "How do I declare a route?", "relevant": ["routes.md#declare"]},
                           {"q": "and how do I test it?", "relevant": ["testing.md#client"]}]}

``evidence`` lists groups of alternative anchors: the question is fully supported when an anchor of every group
reached the model. ``relevant`` stays the union of every relevant anchor (so every metric works unchanged; left
out, it is filled from ``evidence``; given, it must hold every evidence anchor). A conversation line loads as one
item per turn, ids ``c1#1``, ``c1#2``, ... (:attr:`GoldenItem.conversation`, ``turn``, ``history``: the questions
asked before it), and is written back as one line (:func:`golden_records`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections import Counter
from datetime import date, datetime
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml

from .config import Opt
from .corpus.corpus import Corpus
from .corpus.loaders import is_beir_folder, iter_jsonl, read_text_file
from .safe_yaml import safe_yaml_load
from .errors import CorpusError, CorpusNotFoundError, GoldenSetError
from .io import InputFormat, Sample, describe_formats, sniff_format, write_text
from .types import Document, Section

__all__ = ["GoldenItem", "GoldenSet", "Judgment", "GoldenProblem", "GoldenReport", "load_golden", "check_golden",
           "parse_item", "parse_record", "golden_records", "GRADE_RULE", "grade_rule", "TOP_GRADE", "items_from_grades", "JUDGMENT_FORMATS", "read_judgments"]

_FIELDS = ("id", "q", "relevant", "tags", "status", "draft", "judged", "judgments", "evidence")
_CONVERSATION_FIELDS = ("id", "turns")
_EVIDENCE_EXAMPLE = '[["a.md#x"], ["b.md#y", "b.md#z"]]'
_JUDGMENT_FIELDS = ("anchor", "grade", "by", "at", "pool", "added")
TOP_GRADE = 2.0  # the grade of an anchor in a plain list ``relevant: [a, b]``: "answers it", the workbench's top
LABELS = ("human", "all")  # which labels scoring uses: a person's only (LLM-only labels dropped), or every one
STATUSES = ("draft",)  # an accepted item has no status


@dataclass(frozen=True, slots=True)
class Judgment:
    """One judgment of one anchor for one question: its ``grade`` (0 = not relevant), who gave it (``by``: a
    person's name, or ``llm:<model>``), when (``at``, ISO 8601), from which pool file (``pool``), and whether it
    added a relevant anchor to a question that already had some (``added``: found by judging, after authoring)."""

    anchor: str
    grade: float
    by: str
    at: str | None = None
    pool: str | None = None
    added: bool = False

    @property
    def by_llm(self) -> bool:
        return self.by.startswith("llm:")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"anchor": self.anchor, "grade": _number(self.grade), "by": self.by}
        d.update({k: v for k, v in (("at", self.at), ("pool", self.pool)) if v is not None})
        if self.added:
            d["added"] = True
        return d


def _number(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


@dataclass(frozen=True, slots=True)
class GoldenItem:
    id: str
    q: str
    relevant: Mapping[str, float] = field(default_factory=dict)  # anchor -> grade (> 0)
    tags: tuple[str, ...] = ()
    status: str | None = None  # "draft": proposed, not yet accepted by a person; never scored
    draft: Mapping[str, Any] = field(default_factory=dict)  # drafting notes (section, overlap, flags)
    judged: Mapping[str, float] = field(default_factory=dict)  # anchor -> grade as judged (0: not relevant)
    judgments: tuple[Judgment, ...] = ()  # provenance: who judged which anchor, when, from which pool
    # groups of alternative anchors: fully supported when every group has an anchor covered (all in ``relevant``)
    evidence: tuple[tuple[str, ...], ...] = ()
    conversation: str | None = None  # the conversation this question is a turn of (its id is f"{conversation}#{turn+1}")
    turn: int | None = None  # 0-based index of the turn in its conversation
    history: tuple[str, ...] = ()  # the questions of the conversation's earlier turns, in order

    @property
    def answerable(self) -> bool:
        return bool(self.relevant)

    @property
    def not_relevant(self) -> tuple[str, ...]:
        """Anchors judged and found not relevant (grade 0 in ``judged``, not in ``relevant``)."""
        return tuple(a for a, g in self.judged.items() if g == 0 and a not in self.relevant)

    @property
    def llm_only(self) -> tuple[str, ...]:
        """Labelled anchors whose every judgment is an LLM's (``by: llm:<model>``); an anchor without judgment
        records is a person's label."""
        by: dict[str, list[bool]] = {}
        for j in self.judgments:
            by.setdefault(j.anchor, []).append(j.by_llm)
        return tuple(a for a in {**self.judged, **self.relevant} if by.get(a) and all(by[a]))

    def human_labels(self) -> "GoldenItem":
        """This item without its LLM-only labels (:attr:`llm_only`) and their judgment records."""
        drop = set(self.llm_only)
        if not drop:
            return self
        groups = tuple(g for g in (tuple(a for a in grp if a not in drop) for grp in self.evidence) if g)
        return replace(self, relevant={a: g for a, g in self.relevant.items() if a not in drop}, evidence=groups,
                       judged={a: g for a, g in self.judged.items() if a not in drop},
                       judgments=tuple(j for j in self.judgments if j.anchor not in drop))

    @property
    def added(self) -> tuple[str, ...]:
        """Relevant anchors that judging added after the question was authored: a judgment record with ``added``
        (the workbench writes it), or a label only an LLM gave (``golden judge`` grades a pool's holes; scored with
        ``labels="all"``). Files written before the workbench recorded ``added`` have no other."""
        marked = {j.anchor for j in self.judgments if j.added} | set(self.llm_only)
        return tuple(a for a in self.relevant if a in marked)

    @property
    def authored(self) -> tuple[str, ...]:
        """The relevant anchors the question was authored with: every relevant anchor not in :attr:`added`."""
        added = set(self.added)
        return tuple(a for a in self.relevant if a not in added)

    @property
    def judged_anchors(self) -> dict[str, float]:
        """Every anchor with a judgment, with its grade: the relevant ones and the judged-not-relevant ones."""
        return {**{a: 0.0 for a in self.not_relevant}, **self.relevant}

    def conflicts(self) -> list[str]:
        """One line per label that contradicts another: a ``judged`` grade differing from ``relevant``, a
        positive ``judged`` grade missing from ``relevant``, a ``judgments`` record disagreeing with the label."""
        out = []
        for a, g in self.judged.items():
            if a in self.relevant and self.relevant[a] != g:
                out.append(f"{a!r} is relevant with grade {_number(self.relevant[a])} but judged {_number(g)}; "
                           "keep one grade")
            elif a not in self.relevant and g > 0:
                out.append(f"{a!r} is judged relevant (grade {_number(g)}) but not listed in 'relevant'; add it "
                           "there or judge it 0")
        for a in dict.fromkeys(a for g in self.evidence for a in g):
            if a not in self.relevant:
                out.append(f"evidence anchor {a!r} is not relevant; grade it relevant or take it out of its evidence "
                           "group")
        labels = self.judged_anchors
        for j in self.judgments:
            if j.anchor not in labels:
                out.append(f"the judgment of {j.anchor!r} by {j.by} (grade {_number(j.grade)}) has no label; add "
                           "the anchor to 'relevant' or 'judged'")
            elif labels[j.anchor] != j.grade:
                out.append(f"the judgment of {j.anchor!r} by {j.by} gives grade {_number(j.grade)} but the label "
                           f"is {_number(labels[j.anchor])}; make them agree")
        return out

    def to_dict(self) -> dict[str, Any]:
        top = bool(self.relevant) and all(g == TOP_GRADE for g in self.relevant.values())
        relevant: Any = list(self.relevant) if top or not self.relevant else dict(self.relevant)
        d: dict[str, Any] = {"id": self.id, "q": self.q, "relevant": relevant}
        if self.evidence:
            d["evidence"] = [list(g) for g in self.evidence]
        if self.tags:
            d["tags"] = list(self.tags)
        if self.status:
            d["status"] = self.status
        if self.draft:
            d["draft"] = dict(self.draft)
        if self.judged:
            d["judged"] = list(self.judged) if set(self.judged.values()) <= {0} else \
                {a: _number(g) for a, g in self.judged.items()}
        if self.judgments:
            d["judgments"] = [j.to_dict() for j in self.judgments]
        return d


class GoldenSet:
    """An ordered collection of golden items.

    Ids need not be unique here: :func:`load_golden` refuses duplicates (and
    blank questions) unless asked not to, and :func:`check_golden` lists them.
    ``locations`` holds, per item, where it was read (``file:line``). ``labels`` names the labels it holds:
    ``human`` (LLM-only labels dropped, :meth:`human`) or ``all``; unset, ``all`` when an item has an LLM-only
    label and ``human`` otherwise. Scoring writes it into every result (``config.labels``).
    """

    def __init__(self, items: Iterable[GoldenItem], *, source: str | None = None,
                 locations: Iterable[str] | None = None, labels: str | None = None):
        self.items = tuple(items)
        self.source = source
        if labels not in (None, *LABELS):
            raise GoldenSetError(f"labels must be one of {', '.join(LABELS)}, got {labels!r}")
        self.labels = labels or ("all" if any(i.llm_only for i in self.items) else "human")
        self.locations = tuple(locations) if locations is not None else tuple(
            f"{source or 'golden set'} item {i}" for i in range(1, len(self.items) + 1))
        if len(self.locations) != len(self.items):
            raise GoldenSetError(f"GoldenSet: {len(self.items)} items but {len(self.locations)} locations; "
                                 "give one location per item or none")

    def problems(self) -> list[tuple[int, str, str]]:
        """(item index, kind, one-line message) for each duplicate id and each blank question, in file order."""
        out: list[tuple[int, str, str]] = []
        first: dict[str, str] = {}
        for i, (item, where) in enumerate(zip(self.items, self.locations)):
            if item.id in first:
                out.append((i, "duplicate_id", f"{where}: duplicate question id {item.id!r} (first used at "
                                               f"{first[item.id]}); give every question its own id"))
            else:
                first[item.id] = where
            if not item.q.strip():
                out.append((i, "empty_question",
                            f"{where}: question {item.id!r} has an empty 'q'; write the question or remove the item"))
            out.extend((i, "judgment_conflict", f"{where}: question {item.id!r}: {c}") for c in item.conflicts())
        return out

    def __len__(self) -> int:
        return len(self.items)

    def human(self) -> "GoldenSet":
        """The set without labels whose only provenance is an LLM's judgment (``labels="human"``)."""
        return GoldenSet([i.human_labels() for i in self.items], source=self.source, locations=self.locations,
                         labels="human")

    def __iter__(self) -> Iterator[GoldenItem]:
        return iter(self.items)

    @property
    def answerable(self) -> list[GoldenItem]:
        return [i for i in self.items if i.answerable]

    @property
    def unanswerable(self) -> list[GoldenItem]:
        return [i for i in self.items if not i.answerable]

    @property
    def drafts(self) -> list[GoldenItem]:
        return [i for i in self.items if i.status == "draft"]

    def tag_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(t for i in self.items for t in i.tags).items()))

    def to_jsonl(self, path: str | os.PathLike[str]) -> None:
        """Write the set as golden JSONL, atomically."""
        write_golden_jsonl(self, Path(path))


def _parse_item(obj: Any, where: str) -> GoldenItem:
    if not isinstance(obj, Mapping):
        raise GoldenSetError(f"{where}: expected an object with fields {', '.join(_FIELDS)}, got {type(obj).__name__}")
    if "turns" in obj:
        raise GoldenSetError(f"{where}: a conversation ({{\"id\", \"turns\": [...]}}) is a whole line of a golden "
                             "set, not one question; read it with parse_record")
    unknown = sorted(set(obj) - set(_FIELDS))
    if unknown:
        raise GoldenSetError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; valid fields: "
                             f"{', '.join(_FIELDS)} (a conversation: id and turns)")
    for name in ("id", "q", "relevant"):
        if name not in obj and not (name == "relevant" and "evidence" in obj):
            raise GoldenSetError(f"{where}: missing field {name!r} (every item needs id, q and relevant; use \"relevant\": [] for an unanswerable question)")
    qid = obj["id"]
    if isinstance(qid, bool) or not isinstance(qid, (str, int)) or not str(qid).strip():
        raise GoldenSetError(f"{where}: 'id' must be a non-empty string, got {qid!r}")
    where = f"{where}: question {str(qid)!r}"
    q = obj["q"]
    if not isinstance(q, str):
        raise GoldenSetError(f"{where}: 'q' must be a string, got {type(q).__name__}")
    evidence = _parse_evidence(obj.get("evidence"), where)
    rel = obj["relevant"] if "relevant" in obj else [a for g in evidence for a in g]
    relevant: dict[str, float] = {}
    if isinstance(rel, Mapping):
        for anchor, grade in rel.items():
            if isinstance(grade, bool) or not isinstance(grade, (int, float)) or not math.isfinite(grade) or grade <= 0:
                raise GoldenSetError(f"{where}: grade of {anchor!r} must be a finite number > 0, got {grade!r}; "
                                     "use 1 for relevant and higher numbers for more relevant")
            relevant[str(anchor)] = float(grade)
    elif isinstance(rel, list):
        for anchor in rel:
            if not isinstance(anchor, str) or not anchor.strip():
                raise GoldenSetError(f"{where}: 'relevant' must list anchor strings like \"guide.md#refunds\", got {anchor!r}")
            relevant[anchor.strip()] = TOP_GRADE
    else:
        raise GoldenSetError(f"{where}: 'relevant' must be a list of anchors or an object of anchor -> grade, got {type(rel).__name__}")
    tags = obj.get("tags") or []
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise GoldenSetError(f"{where}: 'tags' must be a list of strings, got {tags!r}")
    status = obj.get("status")
    if status is not None and status not in STATUSES:
        raise GoldenSetError(f"{where}: 'status' must be \"draft\" or absent (an accepted question), got {status!r}")
    draft = obj.get("draft") or {}
    if not isinstance(draft, Mapping):
        raise GoldenSetError(f"{where}: 'draft' must be an object of drafting notes, got {type(draft).__name__}")
    judgments = _parse_judgments(obj.get("judgments"), where)
    if isinstance(rel, list):  # a listed anchor a person graded keeps the grade recorded (files written before a
        recorded = {j.anchor: j.grade for j in judgments if j.grade > 0}  # list meant the top grade wrote grade 1)
        relevant = {a: recorded.get(a, g) for a, g in relevant.items()}
    missing = [a for g in evidence for a in g if a not in relevant]
    if missing:
        raise GoldenSetError(f"{where}: evidence anchor {missing[0]!r} is not in 'relevant'; 'relevant' lists every "
                             "relevant anchor: add it there, or leave 'relevant' out to fill it from 'evidence'")
    return GoldenItem(id=str(qid), q=q, relevant=relevant, tags=tuple(tags), status=status, draft=dict(draft),
                      judged=_parse_judged(obj.get("judged"), where), judgments=judgments, evidence=evidence)


def _parse_evidence(raw: Any, where: str) -> tuple[tuple[str, ...], ...]:
    """``evidence``: a non-empty list of groups, each a non-empty list of anchor strings (alternatives)."""
    if raw is None:
        return ()
    rule = (f"'evidence' must be a list of groups of alternative anchors, like {_EVIDENCE_EXAMPLE} (every group must "
            "be covered; one anchor of a group is enough)")
    if not isinstance(raw, list) or not raw:
        raise GoldenSetError(f"{where}: {rule}, got {raw!r}")
    groups = []
    for n, group in enumerate(raw, start=1):
        if isinstance(group, str):
            raise GoldenSetError(f"{where}: evidence group {n} is the string {group!r}, not a list; {rule}: write "
                                 f"[{json.dumps(group)}] for a group of one anchor")
        if not isinstance(group, list) or not group:
            raise GoldenSetError(f"{where}: evidence group {n} must be a non-empty list of anchors; {rule}, got "
                                 f"{group!r}")
        for anchor in group:
            if not isinstance(anchor, str) or not anchor.strip():
                raise GoldenSetError(f"{where}: evidence group {n} must list anchor strings like \"guide.md#refunds\","
                                     f" got {anchor!r}")
        groups.append(tuple(dict.fromkeys(a.strip() for a in group)))
    return tuple(groups)


def parse_item(obj: Any, where: str = "item") -> GoldenItem:
    """One golden item from its JSON object, validated as :func:`load_golden` does (:class:`GoldenSetError`
    naming ``where`` and the field otherwise)."""
    return _parse_item(obj, where)


def parse_record(obj: Any, where: str = "item") -> list[GoldenItem]:
    """The golden items of one line of a golden set: one item, or a conversation
    ``{"id": "c1", "turns": [{"q": ..., "relevant": [...]}, ...]}``, one item per turn, with id ``c1#1``,
    ``c1#2``, ... (a turn may give its own ``id``), :attr:`GoldenItem.conversation`, ``turn`` (0-based) and
    ``history`` (the questions of the turns before it). Validated as :func:`load_golden` does."""
    if not isinstance(obj, Mapping) or "turns" not in obj:
        return [_parse_item(obj, where)]
    unknown = sorted(set(obj) - set(_CONVERSATION_FIELDS))
    if unknown:
        raise GoldenSetError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))} in a conversation; a "
                             "conversation line holds only id and turns (each turn: q, relevant, evidence, tags, ...)")
    cid = obj.get("id")
    if isinstance(cid, bool) or not isinstance(cid, (str, int)) or not str(cid).strip():
        raise GoldenSetError(f"{where}: a conversation needs a non-empty 'id' (its turns are <id>#1, <id>#2, ...), "
                             f"got {cid!r}")
    cid = str(cid)
    turns = obj["turns"]
    if not isinstance(turns, list) or not turns:
        raise GoldenSetError(f"{where}: conversation {cid!r}: 'turns' must be a non-empty list of questions "
                             "{\"q\": ..., \"relevant\": [...]}, in the order asked")
    items: list[GoldenItem] = []
    for n, turn in enumerate(turns):
        what = f"{where}: conversation {cid!r} turn {n + 1}"
        if not isinstance(turn, Mapping):
            raise GoldenSetError(f"{what}: expected an object {{\"q\": ..., \"relevant\": [...]}}, got {turn!r}")
        if "turns" in turn:
            raise GoldenSetError(f"{what}: a turn cannot hold turns; list every turn in the conversation's 'turns'")
        item = _parse_item({"id": f"{cid}#{n + 1}", **turn}, what)
        items.append(replace(item, conversation=cid, turn=n, history=tuple(i.q for i in items)))
    return items


def golden_records(items: Iterable[GoldenItem]) -> list[dict[str, Any]]:
    """The lines of a golden set file for ``items``: an item's :meth:`GoldenItem.to_dict`, the turns of a
    conversation regrouped into one ``{"id", "turns"}`` line where its first turn stands (a turn keeps its ``id``
    only when it is not ``<conversation>#<position>``). Inverse of :func:`parse_record`."""
    out: list[dict[str, Any]] = []
    conversations: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        if item.conversation is None:
            out.append(item.to_dict())
            continue
        if item.conversation not in conversations:
            conversations[item.conversation] = []
            out.append({"id": item.conversation, "turns": conversations[item.conversation]})
        turns = conversations[item.conversation]
        d = item.to_dict()
        if d["id"] == f"{item.conversation}#{len(turns) + 1}":
            del d["id"]
        turns.append(d)
    return out


def _grade(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise GoldenSetError(f"{what} must be a finite number >= 0 (0 = judged not relevant), got {v!r}")
    return float(v)


def _iso_time(v: Any) -> bool:
    if not isinstance(v, str):
        return False
    try:
        datetime.fromisoformat(v[:-1] + "+00:00" if v.endswith("Z") else v)
    except ValueError:
        return False
    return True


def _parse_judged(raw: Any, where: str) -> dict[str, float]:
    if raw is None:
        return {}
    if isinstance(raw, list):
        raw = {a: 0 for a in raw} if all(isinstance(a, str) and a.strip() for a in raw) else raw
    if not isinstance(raw, Mapping):
        raise GoldenSetError(f"{where}: 'judged' must list the anchors judged not relevant "
                             f"([\"guide.md#fees\"]) or map anchor -> grade ({{\"guide.md#fees\": 0}}), got {raw!r}")
    if any(not str(a).strip() for a in raw):
        raise GoldenSetError(f"{where}: 'judged' has an empty anchor; write anchors like \"guide.md#fees\"")
    return {str(a).strip(): _grade(g, f"{where}: 'judged' grade of {a!r}") for a, g in raw.items()}


def _parse_judgments(raw: Any, where: str) -> tuple[Judgment, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise GoldenSetError(f"{where}: 'judgments' must be a list of records {{\"anchor\", \"grade\", \"by\", "
                             f"\"at\", \"pool\"}}, got {type(raw).__name__}")
    out = []
    for n, rec in enumerate(raw, start=1):
        what = f"{where}: judgment {n}"
        if not isinstance(rec, Mapping):
            raise GoldenSetError(f"{what}: expected an object with {', '.join(_JUDGMENT_FIELDS)}, got {rec!r}")
        unknown = sorted(set(rec) - set(_JUDGMENT_FIELDS))
        if unknown:
            raise GoldenSetError(f"{what}: unknown field(s) {', '.join(map(repr, unknown))}; valid fields: "
                                 f"{', '.join(_JUDGMENT_FIELDS)}")
        for name in ("anchor", "by"):
            if not isinstance(rec.get(name), str) or not rec[name].strip():
                raise GoldenSetError(f"{what}: {name!r} must be a non-empty string (anchor: \"guide.md#fees\"; by: a "
                                     f"person's name or \"llm:<model>\"), got {rec.get(name)!r}")
        if "grade" not in rec:
            raise GoldenSetError(f"{what}: missing 'grade' (0 = not relevant, 1 or more = relevant)")
        at, pool = rec.get("at"), rec.get("pool")
        if isinstance(at, (date, datetime)):  # YAML reads an unquoted 2025-03-02 as a date
            at = at.isoformat()
        if at is not None and not _iso_time(at):
            raise GoldenSetError(f"{what}: 'at' must be an ISO 8601 date or time such as \"2025-03-02\" or "
                                 f"\"2025-03-02T14:05:00Z\", got {at!r}")
        if pool is not None and not isinstance(pool, str):
            raise GoldenSetError(f"{what}: 'pool' must be the pool file's name, got {pool!r}")
        added = rec.get("added", False)
        if not isinstance(added, bool):
            raise GoldenSetError(f"{what}: 'added' must be true or false (true: judging added this relevant anchor "
                                 f"after the question was authored), got {added!r}")
        out.append(Judgment(rec["anchor"].strip(), _grade(rec["grade"], f"{what}: 'grade'"), rec["by"].strip(),
                            at, pool, added))
    return tuple(out)


def _load_jsonl(path: Path) -> GoldenSet:
    items, where = [], []
    try:
        for lineno, obj in iter_jsonl(path):
            parsed = parse_record(obj, f"{path}:{lineno}")
            items.extend(parsed)
            where.extend(_locations(f"{path}:{lineno}", parsed))
    except CorpusError as e:  # malformed JSON from the shared reader
        raise GoldenSetError(str(e)) from None
    return GoldenSet(items, source=str(path), locations=where)


def _item_lines(text: str) -> list[int]:
    """The line (1-based) where each item of a YAML golden set starts."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    if isinstance(node, yaml.MappingNode):
        node = next((v for k, v in node.value if getattr(k, "value", None) == "questions"), None)
    if not isinstance(node, yaml.SequenceNode):
        return []
    return [n.start_mark.line + 1 for n in node.value]


def _load_yaml(path: Path) -> GoldenSet:
    text = read_text_file(path)
    try:
        data = safe_yaml_load(text, str(path), what="golden set", error=GoldenSetError)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise GoldenSetError(f"{path}{where}: invalid YAML: {getattr(e, 'problem', e)}") from None
    if isinstance(data, Mapping) and "questions" in data:
        data = data["questions"]
    if not isinstance(data, list):
        raise GoldenSetError(f"{path}: expected a YAML list of items (or a mapping with a 'questions' list)")
    lines = _item_lines(text)
    items: list[GoldenItem] = []
    where: list[str] = []
    for i, obj in enumerate(data):
        at = f"{path}:{lines[i]}" if len(lines) == len(data) else f"{path} item {i + 1}"
        parsed = parse_record(obj, at)
        where.extend(_locations(at, parsed))
        items.extend(parsed)
    return GoldenSet(items, source=str(path), locations=where)


def _locations(where: str, items: list[GoldenItem]) -> list[str]:
    """Where each item of one line stands: the line, and for a conversation's turns the turn too."""
    return [where if i.conversation is None else f"{where} turn {i.turn + 1}" for i in items]


def load_beir_golden(root: str | os.PathLike[str], split: str) -> GoldenSet:
    """Queries with at least one positive judgement in ``qrels/<split>.tsv``, graded by :func:`GRADE_RULE` (grades of
    0 or less are kept as judged not relevant, ``GoldenItem.judged``, as trec_eval counts them judged); when the
    folder holds a ``labels.jsonl`` whose entries say ``"answerable": false``, those queries join as unanswerable."""
    base = Path(root)
    qrels_path = base / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        have = sorted(p.stem for p in (base / "qrels").glob("*.tsv")) if (base / "qrels").is_dir() else []
        raise CorpusNotFoundError(f"{qrels_path}: not found; available splits: {', '.join(have) or 'none'}")
    queries: dict[str, str] = {}
    qpath = base / "queries.jsonl"
    if not qpath.is_file():
        raise CorpusNotFoundError(f"{qpath}: not found; a BEIR folder holds queries.jsonl")
    lines: dict[str, int] = {}
    metadata: dict[str, Any] = {}
    for lineno, obj in iter_jsonl(qpath):
        if "_id" not in obj or not isinstance(obj.get("text"), str):
            raise GoldenSetError(f"{qpath}:{lineno}: each query needs '_id' and 'text'")
        qid = str(obj["_id"])
        if qid in lines:
            raise GoldenSetError(f"{qpath}:{lineno}: duplicate query _id {qid!r} (first on line {lines[qid]}); "
                                 "give every query its own _id")
        queries[qid] = obj["text"]
        lines[qid] = lineno
        metadata[qid] = obj.get("metadata")
    grades: dict[str, dict[str, float]] = {}
    reader = csv.reader(io.StringIO(read_text_file(qrels_path)), delimiter="\t")
    for lineno, row in enumerate(reader, start=1):
        if not row or (lineno == 1 and row[0] == "query-id"):
            continue
        if len(row) != 3:
            raise GoldenSetError(f"{qrels_path}:{lineno}: expected 3 tab-separated columns (query-id, corpus-id, score), got {len(row)}")
        qid, did, score = row
        grades.setdefault(qid, {})[did] = _qrels_grade(score, f"{qrels_path}:{lineno}: query {qid!r}: score")
    items = [_from_beir_metadata(i, metadata.get(i.id), f"{qpath}:{lines.get(i.id)}: query {i.id!r}")
             for i in items_from_grades(grades, queries)]
    rel = {i.id for i in items}
    missing = [i.id for i in items if i.id not in queries]
    if missing:
        raise GoldenSetError(f"{qrels_path}: {len(missing)} query id(s) not in queries.jsonl, e.g. {missing[0]!r}")
    labels = base / "labels.jsonl"
    if labels.is_file():  # e.g. SQuAD 2.0: questions marked "answerable": false become unanswerable items
        for lineno, obj in iter_jsonl(labels):
            qid = str(obj.get("_id"))
            if obj.get("answerable") is False and qid in queries and qid not in rel:
                items.append(GoldenItem(id=qid, q=queries[qid], relevant={}, tags=("unanswerable",)))
    return GoldenSet(items, source=f"{base} ({split})", locations=[f"{qpath}:{lines[i.id]}" for i in items])


# -- judgments in every format: one grade rule, one row per format ---------------------------------------------------

def grade_rule(grade: float) -> tuple[bool, float]:
    """The one rule every reader of judgments applies to a grade: ``(True, grade)`` for a grade above 0 (relevant,
    with that grade); ``(False, 0.0)`` for 0 or less (judged not relevant: kept in ``GoldenItem.judged``, as trec_eval
    counts it judged, so ``judged@k`` is the same whichever file the judgments came from).

    A plain list of anchors (``"relevant": ["a.md#x", "b.md#y"]``) carries no grades: each is :data:`TOP_GRADE`
    (2, "answers it"), the author's answers, so a section judging grades 1 ("partly") or 2 later never outranks
    them in nDCG; a listed anchor that has a judgment record keeps the grade recorded. Grades above 2 (a qrels
    file's own scale) are read as given."""
    return (True, float(grade)) if grade > 0 else (False, 0.0)


GRADE_RULE = grade_rule


def items_from_grades(grades: Mapping[str, Mapping[str, float]],
                      questions: Mapping[str, str] | None = None) -> list[GoldenItem]:
    """Golden items from ``{question id: {anchor: grade}}`` by :func:`GRADE_RULE`, in the order given; the question
    text from ``questions`` (empty without). A question with no relevant anchor is left out, as trec_eval leaves out
    a query without a relevant document: qrels cannot tell an unanswerable question from an unfinished one."""
    texts = questions or {}
    items = []
    for qid, docs in grades.items():
        relevant: dict[str, float] = {}
        judged: dict[str, float] = {}
        for doc, g in docs.items():
            is_relevant, value = GRADE_RULE(g)
            (relevant if is_relevant else judged)[str(doc)] = value
        if relevant:
            items.append(GoldenItem(str(qid), texts.get(str(qid), ""), relevant, judged=judged))
    return items


def _qrels_grade(text: Any, where: str) -> float:
    try:
        g = float(text)
    except (TypeError, ValueError):
        g = math.nan
    if isinstance(text, bool) or not math.isfinite(g):
        raise GoldenSetError(f"{where} {text!r} is not a finite number; use an integer grade (0 for not relevant, "
                             "1 or more for relevant)")
    return g


def read_trec_qrels(path: str | os.PathLike[str]) -> GoldenSet:
    """TREC qrels (``qid iteration docid grade``), graded by :func:`GRADE_RULE`; a document judged twice for one
    question is an error. Qrels carry no question text: such a golden set scores run files, not retrievers."""
    p = Path(path)
    if not p.is_file():
        raise CorpusNotFoundError(f"{p}: no such qrels file")
    grades: dict[str, dict[str, float]] = {}
    for n, line in enumerate(read_text_file(p).splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise GoldenSetError(f"{p}:{n}: expected 4 columns `qid iteration docid grade`, got {len(parts)}; "
                                 "is this a TREC qrels file?")
        qid, _, doc, grade = parts
        g = _qrels_grade(grade, f"{p}:{n}: grade")
        if doc in grades.setdefault(qid, {}):
            raise GoldenSetError(f"{p}:{n}: question {qid!r} judges {doc!r} twice")
        grades[qid][doc] = g
    if not grades:
        raise GoldenSetError(f"{p}: the qrels file is empty")
    return GoldenSet(items_from_grades(grades), source=str(p))


def judgments_from_ranx(data: Any, source: str, questions: Mapping[str, str] | None = None) -> GoldenSet:
    """ranx qrels ``{question id: {doc id: grade}}`` (a ``ranx.Qrels.to_dict()`` or its JSON file) graded by
    :func:`GRADE_RULE`."""
    if not isinstance(data, Mapping) or not all(isinstance(v, Mapping) for v in data.values()):
        raise GoldenSetError(f"{source}: ranx qrels are an object {{question id: {{doc id: grade}}}}")
    grades = {str(q): {str(d): _qrels_grade(g, f"{source}: question {q!r}, doc {d!r}: grade") for d, g in docs.items()}
              for q, docs in data.items()}
    return GoldenSet(items_from_grades(grades, questions), source=source)


def _judged_rows(golden: GoldenSet) -> list[tuple[str, str, float]]:
    """(question id, anchor, grade) for every judgment of the answerable questions: the relevant anchors, then
    those judged not relevant (grade 0), which a qrels file keeps so ``judged@k`` survives the round trip."""
    return [(i.id, a, g) for i in golden if i.answerable for a, g in (*i.relevant.items(),
                                                                      *((z, 0.0) for z in i.not_relevant))]


def write_trec_qrels(golden: GoldenSet, path: Path) -> int:
    """TREC qrels for the answerable questions, judged-not-relevant anchors as grade 0; returns the lines."""
    rows = _judged_rows(golden)
    write_text(path, "".join(f"{q} 0 {a} {_grade_text(g)}\n" for q, a, g in rows))
    return len(rows)


def ranx_qrels(golden: GoldenSet) -> dict[str, dict[str, int]]:
    """``{qid: {anchor: grade}}`` for the answerable questions, judged-not-relevant anchors as 0, grades rounded
    to integers (what ``ranx.Qrels.from_dict`` takes)."""
    out: dict[str, dict[str, int]] = {}
    for q, a, g in _judged_rows(golden):
        out.setdefault(q, {})[a] = int(round(g))
    return out


def write_ranx_qrels(golden: GoldenSet, path: Path) -> int:
    qrels = ranx_qrels(golden)
    write_text(path, json.dumps(qrels, ensure_ascii=False, indent=1) + "\n")
    return sum(map(len, qrels.values()))


def write_beir_golden(golden: GoldenSet, folder: Path, *, split: str = "test") -> Path:
    """A BEIR golden set: ``queries.jsonl`` and ``qrels/<split>.tsv`` (anchors as corpus ids, judged-not-relevant
    anchors as score 0)."""
    root = Path(folder)
    write_text(root / "queries.jsonl", "".join(json.dumps({"_id": i.id, "text": i.q, **_beir_metadata(i)},
                                                          ensure_ascii=False) + "\n" for i in golden))
    write_text(root / "qrels" / f"{split}.tsv", "query-id\tcorpus-id\tscore\n" +
               "".join(f"{q}\t{a}\t{_grade_text(g)}\n" for q, a, g in _judged_rows(golden)))
    return root


def _beir_metadata(item: GoldenItem) -> dict[str, Any]:
    """A query's ``metadata`` in BEIR's queries.jsonl: a conversation turn's place and history, evidence groups
    (a plain question has none; readers of BEIR ignore it, :func:`load_beir_golden` reads it back)."""
    meta: dict[str, Any] = {}
    if item.conversation is not None:
        meta.update(conversation=item.conversation, turn=item.turn, history=list(item.history))
    if item.evidence:
        meta["evidence"] = [list(g) for g in item.evidence]
    return {"metadata": meta} if meta else {}


def _from_beir_metadata(item: GoldenItem, meta: Any, where: str) -> GoldenItem:
    """``item`` with the conversation turn and evidence groups its query's ``metadata`` holds (others ignored)."""
    if not isinstance(meta, Mapping):
        return item
    evidence = _parse_evidence(meta.get("evidence"), where)
    missing = [a for g in evidence for a in g if a not in item.relevant]
    if missing:
        raise GoldenSetError(f"{where}: evidence anchor {missing[0]!r} has no positive score in the qrels; score "
                             "every evidence anchor 1 or more")
    conv, turn, history = meta.get("conversation"), meta.get("turn"), meta.get("history", [])
    if conv is None:
        return replace(item, evidence=evidence)
    if not isinstance(conv, str) or isinstance(turn, bool) or not isinstance(turn, int) or turn < 0 or \
            not isinstance(history, list) or not all(isinstance(h, str) for h in history):
        raise GoldenSetError(f"{where}: metadata of a conversation turn must hold 'conversation' (a string), "
                             "'turn' (0-based integer) and 'history' (the earlier questions), got "
                             f"{json.dumps(meta)[:200]}")
    return replace(item, evidence=evidence, conversation=conv, turn=turn, history=tuple(history))


def write_golden_jsonl(golden: GoldenSet, path: Path) -> int:
    """Golden JSONL: one item a line, a conversation's turns regrouped in one line (:func:`golden_records`)."""
    write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in golden_records(golden)))
    return len(golden)


def write_golden_yaml(golden: GoldenSet, path: Path) -> int:
    write_text(path, yaml.safe_dump(golden_records(golden), sort_keys=False, allow_unicode=True))
    return len(golden)


def _grade_text(g: float) -> str:
    return str(int(g)) if float(g).is_integer() else repr(float(g))


def _read_beir(p: Path, split: str | None) -> GoldenSet:
    if not split:
        have = sorted(x.stem for x in (p / "qrels").glob("*.tsv")) if (p / "qrels").is_dir() else []
        raise GoldenSetError(f"{p}: a BEIR golden set needs a split; pass --split ({', '.join(have) or 'e.g. test'})")
    return load_beir_golden(p, split)


def _is_ranx_qrels(s: Sample) -> bool:
    data = s.json if s.head[:1] == b"{" and s.suffix != ".jsonl" else None
    return isinstance(data, dict) and bool(data) and all(
        isinstance(v, dict) and all(isinstance(g, (int, float)) and not isinstance(g, bool) for g in v.values())
        for v in data.values())


def _is_trec_qrels(s: Sample) -> bool:
    if s.is_dir or s.suffix in (".jsonl", ".json", ".yaml", ".yml"):
        return False
    return s.suffix in (".qrels", ".txt", ".tsv") or (not s.starts_json and len(s.first_line()) == 4)


# The table of judgments formats: the first row whose ``sniff`` recognises a path reads it. Run formats are rows of
# ``ragtune.evaluate.formats.RUN_FORMATS``; ``ragtune.evaluate.formats.FORMATS`` is both. A new format is one row.
JUDGMENT_FORMATS: tuple[InputFormat, ...] = (
    InputFormat("beir", "judgments", "a folder of queries.jsonl and qrels/<split>.tsv, with a split",
                lambda s: s.is_dir, lambda s, split=None: _read_beir(s.path, split), write_beir_golden),
    InputFormat("golden-yaml", "judgments", ".yaml/.yml: a list of {id, q, relevant} items",
                lambda s: s.suffix in (".yaml", ".yml"), lambda s, split=None: _load_yaml(s.path), write_golden_yaml),
    InputFormat("ranx-qrels", "judgments", "JSON {question id: {doc id: grade}}",
                _is_ranx_qrels, lambda s, split=None: judgments_from_ranx(s.json, str(s.path)),
                write_ranx_qrels, questions=False),
    InputFormat("golden-jsonl", "judgments", ".jsonl/.json: one {id, q, relevant} item a line",
                lambda s: s.suffix in (".jsonl", ".json"), lambda s, split=None: _load_jsonl(s.path), write_golden_jsonl),
    InputFormat("trec-qrels", "judgments", ".qrels/.txt/.tsv or lines `qid iteration docid grade`",
                _is_trec_qrels, lambda s, split=None: read_trec_qrels(s.path), write_trec_qrels, questions=False),
)


def read_judgments(path: str | os.PathLike[str], split: str | None = None) -> tuple[GoldenSet, InputFormat]:
    """The judgments at ``path`` in any format of :data:`JUDGMENT_FORMATS`, graded by :func:`GRADE_RULE`, with the
    row that read them; a path no row recognises is a :class:`GoldenSetError` listing the formats."""
    p = Path(path)
    if not p.exists():
        raise CorpusNotFoundError(f"golden set {str(p)!r} does not exist")
    if p.is_dir() and not is_beir_folder(p) and not (p / "queries.jsonl").is_file():
        raise GoldenSetError(f"{p}: a folder golden set must be a BEIR folder (queries.jsonl + qrels/<split>.tsv)")
    sample = Sample(p, "golden set")
    row = sniff_format(sample, JUDGMENT_FORMATS)
    if row is None:
        why = f" (not JSON: {sample.json_error})" if sample.json_error else ""
        raise GoldenSetError(f"{p}: not a golden set ragtune reads{why}; give one of: "
                             f"{describe_formats(JUDGMENT_FORMATS)}")
    return row.read(sample, split), row


def load_golden(path: str | os.PathLike[str], *, split: str | None = None, strict: bool = True,
                labels: Annotated[Literal["human", "all"], Opt(
                    "labels scored: human drops every label only an LLM gave (`golden judge`), all keeps them")]
                = "human") -> GoldenSet:
    """Load a golden set from any judgments format of :data:`JUDGMENT_FORMATS`: golden JSONL or YAML, a BEIR folder
    with ``split``, TREC qrels or ranx qrels JSON, every grade read by the one rule (:func:`GRADE_RULE`).

    With ``strict`` (the default, for scoring) a duplicate question id or a
    blank question raises :class:`GoldenSetError` naming the file, line and
    id: scores are kept per question id, so two questions sharing one would be
    silently merged. ``strict=False`` loads them anyway, for
    :func:`check_golden` to list every problem at once.

    Drafts (``"status": "draft"``) are never scored: with ``strict`` a golden
    set holding any raises :class:`GoldenSetError` saying how to accept them.

    ``labels="human"`` (the default) drops every label whose judgments are all an LLM's (``by: llm:<model>``,
    :attr:`GoldenItem.llm_only`), so LLM labels change no score unless asked; ``"all"`` keeps them. An anchor
    with no judgment records is a person's label: a file without LLM labels loads the same either way.
    """
    if labels not in LABELS:
        raise GoldenSetError(f"labels must be one of {', '.join(LABELS)} (human: a person's labels only), got {labels!r}")
    golden, row = read_judgments(path, split)
    if strict and golden.drafts:
        n, first = len(golden.drafts), golden.locations[golden.items.index(golden.drafts[0])]
        raise GoldenSetError(f"{path}: {n} of {len(golden)} question(s) are drafts no person has accepted (first at "
                             f"{first}); drafts are never scored: run `ragtune golden review {path} --out "
                             "accepted.jsonl` and score the accepted file")
    if strict:  # qrels carry no question text: an empty question is no problem there
        problems = [x for x in golden.problems() if row.questions or x[1] != "empty_question"]
        if problems:
            more = f" (and {len(problems) - 1} more problem(s); `ragtune golden check` lists them all)" \
                if len(problems) > 1 else ""
            raise GoldenSetError(problems[0][2] + more)
    return golden.human() if labels == "human" else GoldenSet(golden.items, source=golden.source,
                                                               locations=golden.locations, labels="all")


@dataclass(frozen=True, slots=True)
class GoldenProblem:
    kind: str  # "unknown_anchor" | "duplicate_id" | "empty_question" | "duplicate_heading_id" | "auto_id_anchor"
    item_id: str  # the question's id; empty for a problem of the corpus
    message: str
    suggestions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.item_id, "message": self.message, "suggestions": list(self.suggestions)}


@dataclass(frozen=True, slots=True)
class GoldenReport:
    """What ``check_golden`` found: ``problems`` fail the check; ``advice`` (an anchor that resolves but has a
    better name) does not."""

    problems: tuple[GoldenProblem, ...]
    summary: Mapping[str, Any]
    advice: tuple[GoldenProblem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "problems": [p.to_dict() for p in self.problems],
                "advice": [p.to_dict() for p in self.advice], "summary": dict(self.summary)}


def _line_of(doc: Document, pos: int) -> int:
    return doc.text.count("\n", 0, pos) + 1


def duplicate_heading_ids(corpus: Corpus) -> list[GoldenProblem]:
    """One problem per heading whose explicit ``{#id}`` an earlier heading of the same document already has.

    Such a heading is anchored as ``id-1`` (``id-2``, ...), like a duplicate
    slug, so a golden set that means it by ``#id`` silently points at the
    first one.
    """
    out: list[GoldenProblem] = []
    for doc in corpus:
        first: dict[str, Section] = {}
        for sec in doc.sections:
            if not sec.explicit_id:
                continue
            if sec.explicit_id not in first:
                first[sec.explicit_id] = sec
                continue
            one = first[sec.explicit_id]
            where = doc.source or doc.id
            out.append(GoldenProblem(
                "duplicate_heading_id", "",
                f"{where}:{_line_of(doc, one.start)} and line {_line_of(doc, sec.start)}: headings {one.title!r} and "
                f"{sec.title!r} both have the id {{#{sec.explicit_id}}}; the first is {one.anchor}, the second "
                f"{sec.anchor}; give each heading its own id",
                (one.anchor, sec.anchor)))
    return out


def check_golden(golden: GoldenSet, corpus: Corpus) -> GoldenReport:
    """Every problem at once: duplicate ids and empty questions (with file and line), unknown anchors
    (with suggestions), and headings of the corpus that share an explicit id. An anchor that names a section by
    an id a tool made up (``quickstart.rst#id5``) resolves, and is advice, not a problem: the readable anchor of
    the same section (``quickstart.rst#sessions``) is suggested."""
    own: dict[int, list[GoldenProblem]] = {}
    for i, kind, msg in golden.problems():
        own.setdefault(i, []).append(GoldenProblem(kind, golden.items[i].id, msg))
    problems: list[GoldenProblem] = []
    advice: list[GoldenProblem] = []
    for i, (item, where) in enumerate(zip(golden, golden.locations)):
        problems.extend(own.get(i, ()))
        for anchor in dict.fromkeys([*item.relevant, *item.judged, *(j.anchor for j in item.judgments)]):
            readable = corpus.readable_anchor(anchor)
            if readable is not None:
                advice.append(GoldenProblem("auto_id_anchor", item.id, f"{where}: anchor {anchor!r} ({item.id}) "
                                            f"names its section by an id docutils or Sphinx made up, which moves "
                                            f"when a section is added above it; write {readable}", (readable,)))
            elif not corpus.has_anchor(anchor):
                hint = tuple(corpus.suggest(anchor))
                more = f"; did you mean: {', '.join(hint)}?" if hint else "; no similar anchor (run `ragtune anchors --corpus ...` to list them)"
                groups = [str(n) for n, g in enumerate(item.evidence, start=1) if anchor in g]
                what = f"{item.id}, evidence group {', '.join(groups)}" if groups else item.id
                problems.append(GoldenProblem("unknown_anchor", item.id, f"{where}: unknown anchor {anchor!r} ({what}){more}", hint))
    problems.extend(duplicate_heading_ids(corpus))
    summary = {
        "questions": len(golden),
        # drafts are never scored: a draft without a relevant anchor is a question to judge, not an unanswerable one
        "answerable": sum(1 for i in golden.answerable if i.status != "draft"),
        "unanswerable": sum(1 for i in golden.unanswerable if i.status != "draft"),
        "tags": golden.tag_counts(),
        "relevant_anchors": sum(len(i.relevant) for i in golden),
        # the documents the relevant anchors point into (those found), and the corpus they were looked up in
        "documents": len({corpus.resolve(a).doc_id for i in golden for a in i.relevant if corpus.has_anchor(a)}),
        "corpus_documents": len(corpus),
        "drafts": len(golden.drafts),
        "judged_not_relevant": sum(len(i.not_relevant) for i in golden),
        "judgments": sum(len(i.judgments) for i in golden),
        # questions that need more than one search: with evidence groups, and conversations with their turns
        "evidence_questions": sum(1 for i in golden if i.evidence),
        "conversations": len({i.conversation for i in golden if i.conversation is not None}),
        "turns": sum(1 for i in golden if i.conversation is not None),
    }
    return GoldenReport(tuple(problems), summary, tuple(advice))
