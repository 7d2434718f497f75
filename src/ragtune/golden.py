"""Golden sets: questions with the anchors that answer them.

Canonical form is JSONL, one item a line::

    {"id": "q1", "q": "How do refunds work?", "relevant": ["billing.md#refunds"], "tags": ["paraphrase"]}

``relevant`` may also map anchors to graded relevance (``{"a.md#x": 2}``);
``"relevant": []`` marks a question the corpus cannot answer.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .corpus.corpus import Corpus
from .corpus.loaders import is_beir_folder, iter_jsonl, read_text_file
from .errors import CorpusError, CorpusNotFoundError, GoldenSetError

__all__ = ["GoldenItem", "GoldenSet", "GoldenProblem", "GoldenReport", "load_golden", "check_golden"]

_FIELDS = ("id", "q", "relevant", "tags")


@dataclass(frozen=True, slots=True)
class GoldenItem:
    id: str
    q: str
    relevant: Mapping[str, float] = field(default_factory=dict)  # anchor -> grade (> 0)
    tags: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        return bool(self.relevant)

    def to_dict(self) -> dict[str, Any]:
        grades = set(self.relevant.values())
        relevant: Any = list(self.relevant) if grades <= {1, 1.0} else dict(self.relevant)
        d: dict[str, Any] = {"id": self.id, "q": self.q, "relevant": relevant}
        if self.tags:
            d["tags"] = list(self.tags)
        return d


class GoldenSet:
    """An ordered collection of golden items (ids need not be unique until checked)."""

    def __init__(self, items: Iterable[GoldenItem], *, source: str | None = None):
        self.items = tuple(items)
        self.source = source

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[GoldenItem]:
        return iter(self.items)

    @property
    def answerable(self) -> list[GoldenItem]:
        return [i for i in self.items if i.answerable]

    @property
    def unanswerable(self) -> list[GoldenItem]:
        return [i for i in self.items if not i.answerable]

    def tag_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(t for i in self.items for t in i.tags).items()))

    def to_jsonl(self, path: str | os.PathLike[str]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            for item in self.items:
                f.write(json.dumps(item.to_dict(), ensure_ascii=False) + "\n")


def _parse_item(obj: Any, where: str) -> GoldenItem:
    if not isinstance(obj, Mapping):
        raise GoldenSetError(f"{where}: expected an object with fields {', '.join(_FIELDS)}, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(_FIELDS))
    if unknown:
        raise GoldenSetError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; valid fields: {', '.join(_FIELDS)}")
    for name in ("id", "q", "relevant"):
        if name not in obj:
            raise GoldenSetError(f"{where}: missing field {name!r} (every item needs id, q and relevant; use \"relevant\": [] for an unanswerable question)")
    qid = obj["id"]
    if isinstance(qid, bool) or not isinstance(qid, (str, int)):
        raise GoldenSetError(f"{where}: 'id' must be a string, got {type(qid).__name__}")
    q = obj["q"]
    if not isinstance(q, str):
        raise GoldenSetError(f"{where}: 'q' must be a string, got {type(q).__name__}")
    rel = obj["relevant"]
    relevant: dict[str, float] = {}
    if isinstance(rel, Mapping):
        for anchor, grade in rel.items():
            if isinstance(grade, bool) or not isinstance(grade, (int, float)) or grade <= 0:
                raise GoldenSetError(f"{where}: grade of {anchor!r} must be a number > 0, got {grade!r}")
            relevant[str(anchor)] = float(grade)
    elif isinstance(rel, list):
        for anchor in rel:
            if not isinstance(anchor, str) or not anchor.strip():
                raise GoldenSetError(f"{where}: 'relevant' must list anchor strings like \"guide.md#refunds\", got {anchor!r}")
            relevant[anchor.strip()] = 1.0
    else:
        raise GoldenSetError(f"{where}: 'relevant' must be a list of anchors or an object of anchor -> grade, got {type(rel).__name__}")
    tags = obj.get("tags") or []
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise GoldenSetError(f"{where}: 'tags' must be a list of strings, got {tags!r}")
    return GoldenItem(id=str(qid), q=q, relevant=relevant, tags=tuple(tags))


def _load_jsonl(path: Path) -> GoldenSet:
    try:
        items = [_parse_item(obj, f"{path}:{lineno}") for lineno, obj in iter_jsonl(path)]
    except CorpusError as e:  # malformed JSON from the shared reader
        raise GoldenSetError(str(e)) from None
    return GoldenSet(items, source=str(path))


def _load_yaml(path: Path) -> GoldenSet:
    text = read_text_file(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise GoldenSetError(f"{path}{where}: invalid YAML: {getattr(e, 'problem', e)}") from None
    if isinstance(data, Mapping) and "questions" in data:
        data = data["questions"]
    if not isinstance(data, list):
        raise GoldenSetError(f"{path}: expected a YAML list of items (or a mapping with a 'questions' list)")
    return GoldenSet([_parse_item(obj, f"{path} item {i}") for i, obj in enumerate(data, start=1)], source=str(path))


def load_beir_golden(root: str | os.PathLike[str], split: str) -> GoldenSet:
    """Queries with at least one positive judgement in ``qrels/<split>.tsv``; when the folder holds a
    ``labels.jsonl`` whose entries say ``"answerable": false``, those queries join as unanswerable."""
    base = Path(root)
    qrels_path = base / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        have = sorted(p.stem for p in (base / "qrels").glob("*.tsv")) if (base / "qrels").is_dir() else []
        raise CorpusNotFoundError(f"{qrels_path}: not found; available splits: {', '.join(have) or 'none'}")
    queries: dict[str, str] = {}
    qpath = base / "queries.jsonl"
    if not qpath.is_file():
        raise CorpusNotFoundError(f"{qpath}: not found; a BEIR folder holds queries.jsonl")
    for lineno, obj in iter_jsonl(qpath):
        if "_id" not in obj or not isinstance(obj.get("text"), str):
            raise GoldenSetError(f"{qpath}:{lineno}: each query needs '_id' and 'text'")
        queries[str(obj["_id"])] = obj["text"]
    rel: dict[str, dict[str, float]] = {}
    reader = csv.reader(io.StringIO(read_text_file(qrels_path)), delimiter="\t")
    for lineno, row in enumerate(reader, start=1):
        if not row or (lineno == 1 and row[0] == "query-id"):
            continue
        if len(row) != 3:
            raise GoldenSetError(f"{qrels_path}:{lineno}: expected 3 tab-separated columns (query-id, corpus-id, score), got {len(row)}")
        qid, did, score = row
        try:
            grade = float(score)
        except ValueError:
            raise GoldenSetError(f"{qrels_path}:{lineno}: score {score!r} is not a number") from None
        if grade > 0:
            rel.setdefault(qid, {})[did] = grade
    missing = [q for q in rel if q not in queries]
    if missing:
        raise GoldenSetError(f"{qrels_path}: {len(missing)} query id(s) not in queries.jsonl, e.g. {missing[0]!r}")
    items = [GoldenItem(id=qid, q=queries[qid], relevant=grades) for qid, grades in rel.items()]
    labels = base / "labels.jsonl"
    if labels.is_file():  # e.g. SQuAD 2.0: questions marked "answerable": false become unanswerable items
        for lineno, obj in iter_jsonl(labels):
            qid = str(obj.get("_id"))
            if obj.get("answerable") is False and qid in queries and qid not in rel:
                items.append(GoldenItem(id=qid, q=queries[qid], relevant={}, tags=("unanswerable",)))
    return GoldenSet(items, source=f"{base} ({split})")


def load_golden(path: str | os.PathLike[str], *, split: str | None = None) -> GoldenSet:
    """Load a golden set from JSONL, YAML, or a BEIR folder with ``split``."""
    p = Path(path)
    if not p.exists():
        raise CorpusNotFoundError(f"golden set {str(p)!r} does not exist")
    if p.is_dir():
        if not is_beir_folder(p) and not (p / "queries.jsonl").is_file():
            raise GoldenSetError(f"{p}: a folder golden set must be a BEIR folder (queries.jsonl + qrels/<split>.tsv)")
        if not split:
            have = sorted(x.stem for x in (p / "qrels").glob("*.tsv")) if (p / "qrels").is_dir() else []
            raise GoldenSetError(f"{p}: a BEIR golden set needs a split; pass --split ({', '.join(have) or 'e.g. test'})")
        return load_beir_golden(p, split)
    suffix = p.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return _load_yaml(p)
    if suffix in (".jsonl", ".json"):
        return _load_jsonl(p)
    raise GoldenSetError(f"{p}: unsupported golden set format {suffix!r}; use .jsonl, .yaml/.yml or a BEIR folder")


@dataclass(frozen=True, slots=True)
class GoldenProblem:
    kind: str  # "unknown_anchor" | "duplicate_id" | "empty_question"
    item_id: str
    message: str
    suggestions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.item_id, "message": self.message, "suggestions": list(self.suggestions)}


@dataclass(frozen=True, slots=True)
class GoldenReport:
    problems: tuple[GoldenProblem, ...]
    summary: Mapping[str, Any]

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "problems": [p.to_dict() for p in self.problems], "summary": dict(self.summary)}


def check_golden(golden: GoldenSet, corpus: Corpus) -> GoldenReport:
    """Every problem at once: unknown anchors (with suggestions), duplicate ids, empty questions."""
    problems: list[GoldenProblem] = []
    seen: Counter[str] = Counter()
    for item in golden:
        seen[item.id] += 1
        if seen[item.id] == 2:
            problems.append(GoldenProblem("duplicate_id", item.id, f"duplicate id {item.id!r}; ids must be unique"))
        if not item.q.strip():
            problems.append(GoldenProblem("empty_question", item.id, f"{item.id}: empty question"))
        for anchor in item.relevant:
            if not corpus.has_anchor(anchor):
                hint = tuple(corpus.suggest(anchor))
                more = f"; did you mean: {', '.join(hint)}?" if hint else "; no similar anchor (run `ragtune anchors --corpus ...` to list them)"
                problems.append(GoldenProblem("unknown_anchor", item.id, f"unknown anchor {anchor!r} ({item.id}){more}", hint))
    summary = {
        "questions": len(golden),
        "answerable": len(golden.answerable),
        "unanswerable": len(golden.unanswerable),
        "tags": golden.tag_counts(),
        "relevant_anchors": sum(len(i.relevant) for i in golden),
    }
    return GoldenReport(tuple(problems), summary)
