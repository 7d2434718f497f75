"""How much the workbench takes in one request, and in one question.

The golden file is read whole for every request and rewritten whole for every change, so one oversized question
would cost every later request. Every limit below is checked before anything is written:

====================  ==========================================================================================
request body          :data:`MAX_BODY_BYTES` (4 MiB: an import of thousands of drafts fits); over it the server
                      answers 413 from the ``Content-Length`` header, or as soon as the bytes read pass it
question text         :data:`MAX_QUESTION_CHARS` characters
tags                  :data:`MAX_TAGS` per question, :data:`MAX_TAG_CHARS` characters each
question id           :data:`MAX_ID_CHARS` characters
anchors               :data:`MAX_ANCHOR_CHARS` characters each; :data:`MAX_ANCHORS` per list (``relevant``,
                      ``judged``, ``judgments``, the drafter's ``proposed``) and graded per question
drafting notes        :data:`MAX_NOTES_BYTES` bytes as JSON
one question          :data:`MAX_ITEM_BYTES` bytes as JSON, everything included
one import            :data:`MAX_IMPORT` questions
====================  ==========================================================================================

A field over its limit is refused with :class:`~ragtune.errors.InputTooLargeError` (the server answers 422), in
one line that names the field, its size, the limit and what to do.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InputTooLargeError

__all__ = ["MAX_BODY_BYTES", "MAX_QUESTION_CHARS", "MAX_TAGS", "MAX_TAG_CHARS", "MAX_ID_CHARS", "MAX_ANCHOR_CHARS",
           "MAX_ANCHORS", "MAX_NOTES_BYTES", "MAX_ITEM_BYTES", "MAX_IMPORT", "body_too_large", "check_question",
           "check_text", "check_tags", "check_anchor", "check_graded"]

MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_QUESTION_CHARS = 2_000
MAX_TAGS = 50
MAX_TAG_CHARS = 100
MAX_ID_CHARS = 200
MAX_ANCHOR_CHARS = 1_000
MAX_ANCHORS = 1_000
MAX_NOTES_BYTES = 64 * 1024
MAX_ITEM_BYTES = 256 * 1024
MAX_IMPORT = 10_000


def body_too_large(limit: int) -> str:
    """The one message for a request body over ``limit`` bytes."""
    return (f"request body over {limit:,} bytes, the workbench's limit; import fewer questions at a time (a question "
            f"is at most {MAX_QUESTION_CHARS:,} characters)")


def _size(n: int, unit: str) -> str:
    return f"{n:,} {unit}"


def check_text(q: Any, what: str = "the question") -> None:
    """A question's text: at most :data:`MAX_QUESTION_CHARS` characters."""
    if isinstance(q, str) and len(q) > MAX_QUESTION_CHARS:
        raise InputTooLargeError(f"{what} is {_size(len(q), 'characters')} long; the workbench takes at most "
                                 f"{MAX_QUESTION_CHARS:,}: shorten it (a question is a sentence or two)")


def check_tags(tags: Any, what: str = "the question") -> None:
    """At most :data:`MAX_TAGS` tags of at most :data:`MAX_TAG_CHARS` characters each."""
    if not isinstance(tags, (list, tuple)):
        return
    if len(tags) > MAX_TAGS:
        raise InputTooLargeError(f"{what} has {len(tags):,} tags; the workbench takes at most {MAX_TAGS}: keep the "
                                 "tags you filter by")
    long = next((t for t in tags if isinstance(t, str) and len(t) > MAX_TAG_CHARS), None)
    if long is not None:
        raise InputTooLargeError(f"a tag of {what} is {_size(len(long), 'characters')} long; the workbench takes at "
                                 f"most {MAX_TAG_CHARS} per tag: shorten it")


def check_anchor(anchor: Any, what: str = "anchor") -> None:
    """An anchor: at most :data:`MAX_ANCHOR_CHARS` characters (``file#section``)."""
    if isinstance(anchor, str) and len(anchor) > MAX_ANCHOR_CHARS:
        raise InputTooLargeError(f"{what} is {_size(len(anchor), 'characters')} long; the workbench takes at most "
                                 f"{MAX_ANCHOR_CHARS:,}: give the anchor `ragtune anchors` lists (file#section)")


def _anchors(values: Any, field: str, what: str) -> None:
    if isinstance(values, Mapping):
        values = list(values)
    if not isinstance(values, (list, tuple)):
        return
    if len(values) > MAX_ANCHORS:
        raise InputTooLargeError(f"{what}: {field!r} lists {len(values):,} anchors; the workbench takes at most "
                                 f"{MAX_ANCHORS:,} per question: split the judgments over questions or load them "
                                 "with `ragtune golden` instead")
    for v in values:
        check_anchor(v.get("anchor") if isinstance(v, Mapping) else v, f"an anchor in {field!r} of {what}")


def check_graded(graded: Iterable[str], anchor: str, what: str = "the question") -> None:
    """Grading ``anchor`` keeps a question at most :data:`MAX_ANCHORS` graded anchors (``graded``: those it has)."""
    check_anchor(anchor)
    graded = set(graded)
    if anchor not in graded and len(graded) >= MAX_ANCHORS:
        raise InputTooLargeError(f"{what} has {len(graded):,} graded sections, the workbench's limit: withdraw grades "
                                 "you do not need before adding more")


def check_question(obj: Mapping[str, Any], what: str = "the question") -> None:
    """One question to add (a golden item's fields): every limit of this module, before it is parsed."""
    check_text(obj.get("q"), what)
    check_tags(obj.get("tags"), what)
    qid = obj.get("id")
    if isinstance(qid, str) and len(qid) > MAX_ID_CHARS:
        raise InputTooLargeError(f"{what}: its id is {_size(len(qid), 'characters')} long; the workbench takes at "
                                 f"most {MAX_ID_CHARS}: use a short id (q12, faq-fees)")
    for field in ("relevant", "judged", "judgments"):
        _anchors(obj.get(field), field, what)
    notes = obj.get("draft")
    if isinstance(notes, Mapping):
        _anchors(notes.get("proposed"), "draft.proposed", what)
    try:
        notes_size = len(json.dumps(notes, ensure_ascii=False).encode()) if notes is not None else 0
        size = len(json.dumps(obj, ensure_ascii=False, default=str).encode())
    except (TypeError, ValueError, RecursionError):
        return  # not JSON: parsing it says what is wrong
    if notes_size > MAX_NOTES_BYTES:
        raise InputTooLargeError(f"{what}: its drafting notes ('draft') are {_size(notes_size, 'bytes')} as JSON; the "
                                 f"workbench takes at most {MAX_NOTES_BYTES:,}: keep the notes short")
    if size > MAX_ITEM_BYTES:
        raise InputTooLargeError(f"{what} is {_size(size, 'bytes')} as JSON; the workbench takes at most "
                                 f"{MAX_ITEM_BYTES:,} per question: shorten its fields")
