"""A golden set file changed one question at a time, safely.

Every change is a read-modify-write of the whole file under an exclusive lock (``flock`` on ``FILE.lock``, so
two workbench servers on one file take turns), written to a temporary file in the same folder, flushed to disk
and renamed over the original: a crash or a ``kill -9`` at any moment leaves either the old file or the new one,
never half of one. The file is read again for every change, so an edit made in an editor or by another server
is never overwritten.

Each question has a revision (a hash of its JSON). A change names the revision it was made on; when the question
changed since (another tab, another person), the change is refused with :class:`Conflict`, which carries the
question as it now is: nobody's judgment is overwritten silently.

A question the workbench adds is a draft (``"status": "draft"``, never scored) until it is judged: it is accepted
when a section is graded relevant (1 or more) or when it is marked unanswerable. A draft drafted by ``golden
draft`` keeps the sections it was drafted from as a proposal (``draft.proposed``) until a person grades them.

Grades are 0 (not relevant), 1 (partly) and 2 (answers it, :data:`ragtune.golden.TOP_GRADE`, what an anchor of a
hand-written list ``relevant: [a, b]`` means). A grade that makes a section relevant on a question that already
had relevant sections from its authoring elsewhere is recorded with ``"added": true``: judging added it after the
question was authored, and eval and the page say that recall is now measured against more anchors
(:attr:`GoldenItem.added`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ConfigError, GoldenConflictError, GoldenSetError
from ..golden import TOP_GRADE, GoldenItem, Judgment, golden_records, parse_item, parse_record
from ..io import check_writable, write_atomic

__all__ = ["GoldenFile", "Conflict", "conflict", "revision", "GRADES"]

GRADES = (0, 1, int(TOP_GRADE))  # not relevant, partly relevant, answers it (what a listed anchor means)
ORIGINS = ("workbench", "import", "telemetry", "draft")
AUTHORED_HERE = ("workbench", "import", "telemetry")  # questions whose relevant sections all come from judging here


Conflict = GoldenConflictError


def conflict(qid: str, current: GoldenItem | None) -> GoldenConflictError:
    """The error for a change made on a stale revision of question ``qid`` (``current``: it as it is now, or None
    when it was deleted)."""
    what = "was deleted" if current is None else "was changed"
    return GoldenConflictError(f"question {qid!r} {what} elsewhere (another tab or another person) since this page "
                               "loaded it; your change was not saved: look at it as it is now and redo the change "
                               "if it still holds", qid=qid, current=current)


def revision(item: GoldenItem) -> str:
    """The revision of one question: changes whenever anything about it changes."""
    return hashlib.sha256(json.dumps(item.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


def now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def normalise_question(q: str) -> str:
    """A question's text for spotting duplicates: case, spacing and closing punctuation ignored."""
    return re.sub(r"\s+", " ", q).strip().rstrip("?!. ").casefold()


class GoldenFile:
    """The golden set at ``path`` (JSONL; created at the first change when it does not exist yet)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        if self.path.suffix.lower() != ".jsonl":
            raise ConfigError(f"{self.path}: the workbench writes JSON Lines; give a .jsonl file (a YAML golden set "
                              "is read by every command, but convert it to JSON Lines, one item per line with the same fields, to "
                              "judge it here)"
                              if self.path.suffix.lower() in (".yaml", ".yml") else
                              f"{self.path}: the workbench writes JSON Lines; give a path ending in .jsonl")
        if self.path.is_dir():
            raise ConfigError(f"{self.path} is a folder; give the golden set's .jsonl file")
        if self.path.exists() and not self.path.is_file():
            raise ConfigError(f"{self.path} is not a regular file; give the golden set's .jsonl file")
        try:
            check_writable(self.path)  # refused now, in one line, not after a person's first judgment
        except PermissionError as e:
            raise ConfigError(f"{self.path}: {e.strerror}; the workbench saves every judgment to it") from None
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        with self._locked():
            self._clean_temporaries()
            self.read()  # refuse a file that does not parse now, not at the first judgment

    # -- reading

    def read(self) -> list[GoldenItem]:
        """Every question, in file order (an absent file is an empty set). A malformed file raises
        :class:`GoldenSetError` with the line; duplicate ids too (each question is changed by its id)."""
        if not self.path.exists():
            return []
        items: list[GoldenItem] = []
        try:
            text = self.path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise GoldenSetError(f"{self.path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
        seen: dict[str, int] = {}
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{self.path}:{lineno}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise GoldenSetError(f"{where}: not valid JSON ({e.msg}, column {e.colno}); fix or remove the line "
                                     "before opening the workbench") from None
            for item in parse_record(obj, where):  # one question, or each turn of a conversation
                if item.id in seen:
                    raise GoldenSetError(f"{where}: duplicate question id {item.id!r} (first at line {seen[item.id]}); "
                                         "the workbench changes questions by id: give each its own (`ragtune golden "
                                         "check` lists every problem)")
                seen[item.id] = lineno
                items.append(item)
        return items

    def item(self, qid: str) -> GoldenItem | None:
        return next((i for i in self.read() if i.id == qid), None)

    # -- changing

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _clean_temporaries(self) -> None:
        """Remove what a writer killed mid-write left behind (under the lock: no writer is active): the temporary
        files :func:`ragtune.io.write_atomic` makes beside the file it replaces (a symlink's target)."""
        target = self.path.resolve()
        for p in target.parent.glob(f".{target.name}.tmp-*"):
            with contextlib.suppress(OSError):
                p.unlink()

    def _write(self, items: Iterable[GoldenItem]) -> None:
        """Replace the file (through a symlink to its target, keeping its mode): :func:`ragtune.io.write_atomic`."""
        def rows(f: Any) -> None:
            for record in golden_records(items):  # a conversation's turns back in one line
                f.write(json.dumps(record, ensure_ascii=False) + "\n")

        write_atomic(self.path, rows)

    def change(self, qid: str, rev: str | None, fn: Callable[[GoldenItem], GoldenItem | None]) -> GoldenItem | None:
        """Apply ``fn`` to question ``qid`` if it is still at revision ``rev`` (None: whatever it is now) and
        write the file; ``fn`` returns the new question, or None to delete it. Returns the new question."""
        with self._locked():
            items = self.read()
            i = next((n for n, it in enumerate(items) if it.id == qid), None)
            if i is None:
                raise conflict(qid, None) if rev is not None else GoldenSetError(f"no question {qid!r} in {self.path}")
            if rev is not None and revision(items[i]) != rev:
                raise conflict(qid, items[i])
            new = fn(items[i])
            if new is None:
                del items[i]
            else:
                problems = new.conflicts()
                if problems:
                    raise GoldenSetError(f"question {qid!r}: {problems[0]}")
                items[i] = new
            self._write(items)
            return new

    def add(self, questions: Iterable[Mapping[str, Any]], *, skip_known: bool = True) -> tuple[list[GoldenItem], int]:
        """Append questions (``q``, optional ``tags``, ``id``, ``relevant``, ``status``, ``draft``: a golden item's
        fields; without ``status`` and ``relevant`` a new question is a draft to judge). Returns the questions
        added and how many were left out as already in the set (same id, or same text when ``skip_known``)."""
        with self._locked():
            items = self.read()
            ids = {i.id for i in items}
            texts = {normalise_question(i.q) for i in items}
            added, skipped = [], 0
            for n, obj in enumerate(questions, start=1):
                obj = dict(obj)
                if "turns" in obj:  # a conversation (golden draft --kinds conversation): its turns, each a question
                    new = _add_conversation(obj, n, ids, texts, skip_known)
                    skipped += not new
                    items.extend(new)
                    added.extend(new)
                    continue
                q = str(obj.get("q") or "").strip()
                if not q:
                    raise GoldenSetError(f"question {n} to add has no text; write the question")
                if (obj.get("id") is not None and str(obj["id"]) in ids) or (skip_known and normalise_question(q) in texts):
                    skipped += 1
                    continue
                obj["q"] = q
                _as_draft(obj)
                if obj.get("id") is None:
                    obj["id"] = _new_id(ids)
                item = parse_item(obj, f"question {n} to add")
                ids.add(item.id)
                texts.add(normalise_question(item.q))
                items.append(item)
                added.append(item)
            if added:
                self._write(items)
            return added, skipped


def _as_draft(obj: dict[str, Any]) -> None:
    """A question to add made a draft in place when it has no status: its relevant sections (and evidence groups)
    become the drafter's proposal until a person grades them."""
    obj.setdefault("relevant", [])
    if "status" not in obj and not obj["relevant"] and not obj.get("evidence"):
        obj["status"] = "draft"
    if obj.get("status") == "draft":
        notes = dict(obj.get("draft") or {})
        notes.setdefault("origin", "workbench")
        if obj["relevant"] or obj.get("evidence"):  # sections a drafter proposed: a proposal until a person grades
            notes.setdefault("proposed", list(dict.fromkeys([*obj["relevant"], *(a for g in obj.get("evidence") or []
                                                                                    for a in g)])))
            obj["relevant"] = []
            obj.pop("evidence", None)
        obj["draft"] = notes


def _add_conversation(obj: dict[str, Any], n: int, ids: set[str], texts: set[str],
                      skip_known: bool) -> list[GoldenItem]:
    """The turns of a conversation to add (each made a draft as a question is), or none when its id is taken or,
    with ``skip_known``, its first turn is already a question of the set."""
    turns = obj.get("turns")
    if not isinstance(turns, list) or not turns or not all(isinstance(t, Mapping) for t in turns):
        raise GoldenSetError(f"conversation {n} to add: 'turns' must be a non-empty list of questions")
    cid = str(obj.get("id") or _new_id(ids))
    first = normalise_question(str(turns[0].get("q") or ""))
    if any(i == cid or i.startswith(f"{cid}#") for i in ids) or (skip_known and first in texts):
        return []
    rows = []
    for t in turns:
        row = dict(t)
        row["q"] = str(row.get("q") or "").strip()
        _as_draft(row)
        rows.append(row)
    items = parse_record({"id": cid, "turns": rows}, f"conversation {n} to add")
    for item in items:
        ids.add(item.id)
        texts.add(normalise_question(item.q))
    ids.add(cid)
    return items


def _new_id(ids: set[str]) -> str:
    n = len(ids) + 1
    while f"q{n}" in ids:
        n += 1
    return f"q{n}"


# -- the changes a judge makes (pure functions of one question)

def grade(item: GoldenItem, anchor: str, value: float | None, *, by: str, pool: str | None = None,
          at: str | None = None) -> GoldenItem:
    """``item`` with ``anchor`` graded ``value`` by ``by`` (0 not relevant, 1 partly, 2 answers it; None
    withdraws the grade). The judgment record of that anchor replaces earlier ones (the label and its records
    must agree). A question becomes accepted when it has a relevant section; one that loses its last relevant
    section goes back to judging (a draft), unless it was marked unanswerable. A relevant grade given to a section
    that was not relevant, on a question that already had relevant sections from elsewhere (a hand-written golden
    set, ``golden draft``), is recorded as ``added`` (and stays so when regraded): judging added it after the
    question was authored. A question the workbench authored (added, imported, from traffic) has no such
    record: its relevant sections all came from judging."""
    if value is not None and value not in GRADES:
        raise GoldenSetError(f"grade {value!r}: give 0 (not relevant), 1 (partly) or 2 (answers it)")
    relevant, judged = dict(item.relevant), dict(item.judged)
    was_answerable = bool(relevant)
    was_added = any(j.added for j in item.judgments if j.anchor == anchor)
    authored_here = item.draft.get("origin") in AUTHORED_HERE  # every relevant section of it came from judging
    added = was_added or (was_answerable and anchor not in relevant and not authored_here)
    relevant.pop(anchor, None)
    judged.pop(anchor, None)
    records = [j for j in item.judgments if j.anchor != anchor]
    evidence = item.evidence if value is not None and value > 0 else _without(item.evidence, anchor)
    if value is not None:
        (relevant if value > 0 else judged)[anchor] = float(value)
        records.append(Judgment(anchor, float(value), by, at or now(), pool, added=added and value > 0))
    status, notes = item.status, dict(item.draft)
    if relevant:
        status = None
    elif was_answerable:
        status = "draft"
    if status is None and "proposed" in notes and value is not None:
        notes.pop("proposed")  # a person has graded: the drafter's proposal is no label
    return replace(item, relevant=relevant, judged=judged, judgments=tuple(records), status=status, draft=notes,
                   evidence=evidence)


def _without(groups: tuple[tuple[str, ...], ...], anchor: str) -> tuple[tuple[str, ...], ...]:
    """Evidence groups without ``anchor`` (a section no longer relevant), empty groups dropped."""
    return tuple(g for g in (tuple(a for a in grp if a != anchor) for grp in groups) if g)


def set_evidence(item: GoldenItem, anchor: str, group: int | None) -> GoldenItem:
    """``item`` with its relevant section ``anchor`` in evidence group ``group`` (0-based; the number of groups
    opens a new one) or in none (None), out of any other; groups left empty are dropped. The question is fully
    supported when a section of every group is retrieved; sections of one group are alternatives."""
    groups = item.evidence
    if group is not None and (isinstance(group, bool) or not isinstance(group, int) or not 0 <= group <= len(groups)):
        raise GoldenSetError(f"evidence group {group!r}: question {item.id!r} has {len(groups)} group(s); give 0 to "
                             f"{len(groups) - 1} for one of them, {len(groups)} for a new one, or none")
    if group is not None and anchor not in item.relevant:
        raise GoldenSetError(f"{anchor!r} is not relevant to question {item.id!r}: grade it 1 or 2 before putting it "
                             "in an evidence group")
    moved = [tuple(a for a in g if a != anchor) + ((anchor,) if n == group else ()) for n, g in enumerate(groups)]
    if group == len(groups):
        moved.append((anchor,))
    return replace(item, evidence=tuple(g for g in moved if g))


def mark_unanswerable(item: GoldenItem, value: bool) -> GoldenItem:
    """``item`` accepted as a question the corpus cannot answer (``value``), or back to judging. A question with
    relevant sections cannot be unanswerable: grade them 0 first."""
    if value and item.relevant:
        raise GoldenSetError(f"question {item.id!r} has {len(item.relevant)} section(s) graded relevant; grade "
                             "them 0 before marking it unanswerable")
    notes = dict(item.draft)
    notes.pop("proposed", None) if value else None
    if value:
        return replace(item, status=None, draft=notes)
    return replace(item, status=None if item.relevant else "draft", draft=notes)


def edit(item: GoldenItem, *, q: str | None = None, tags: Iterable[str] | None = None) -> GoldenItem:
    if q is not None and not q.strip():
        raise GoldenSetError("a question needs its text; delete it instead of clearing it")
    new_tags = item.tags if tags is None else tuple(dict.fromkeys(t.strip() for t in tags if t.strip()))
    return replace(item, q=item.q if q is None else q.strip(), tags=new_tags)


def status(item: GoldenItem) -> str:
    """``accepted`` (a relevant section), ``unanswerable`` (accepted without one), ``draft`` (proposed by a
    drafter, not yet judged) or ``to judge``. Whether its whole pool is graded (``judged`` on the page) is the
    app's to say: it knows the pool."""
    if item.status != "draft":
        return "accepted" if item.relevant else "unanswerable"
    return "draft" if item.draft.get("proposed") else "to judge"
