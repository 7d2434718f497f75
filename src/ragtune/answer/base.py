"""Answers, citations, the generator protocol, and the prompt every LLM generator uses.

An answer is produced only from numbered contexts. Every claim must cite
its context as ``[n]``; when the contexts do not hold the answer the model
must reply with the marker :data:`NOT_FOUND`, which becomes
``outcome == "not_found"``. A citation to a context number that was not
given is kept but flagged ``valid=False``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..stages import Generator
from ..types import Chunk

__all__ = ["NOT_FOUND", "Citation", "Answer", "Generator", "build_prompt", "parse_answer", "SYSTEM_PROMPT"]

NOT_FOUND = "NOT_IN_CONTEXT"
Outcome = Literal["answered", "not_found"]

SYSTEM_PROMPT = (
    "You answer questions using only the numbered context passages you are given. "
    "Every sentence of your answer must end with the number of the passage that supports it, in square brackets, "
    "like [1] or [2][3]. Do not use any knowledge that is not in the passages. "
    f"If the passages do not contain the answer, reply with exactly {NOT_FOUND} and nothing else."
)

_CITE_RE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


@dataclass(frozen=True, slots=True)
class Citation:
    """``[n]`` in an answer, resolved to its context chunk (``valid=False`` when no such context was given)."""

    n: int
    valid: bool
    chunk_id: str | None = None
    doc_id: str | None = None
    anchor: str | None = None
    start: int | None = None
    end: int | None = None
    location: Mapping[str, Any] | None = None  # where in the source file: a PDF page, a source line, an element

    def to_dict(self) -> dict[str, Any]:
        out = {"n": self.n, "valid": self.valid, "chunk_id": self.chunk_id, "doc_id": self.doc_id,
               "anchor": self.anchor, "start": self.start, "end": self.end}
        if self.location:
            out["location"] = dict(self.location)
        return out


@dataclass(frozen=True)
class Answer:
    question: str
    text: str
    outcome: Outcome
    citations: tuple[Citation, ...] = ()
    contexts: tuple[Chunk, ...] = ()
    generator: str = ""
    reason: str | None = None  # why not_found: "model", "gate", "refusal", "no_context", "no_match"
    usage: Mapping[str, int] = field(default_factory=dict)
    latency_s: float = 0.0

    @property
    def sources(self) -> list[str]:
        """Distinct anchors cited (valid citations only), in order of first citation."""
        return list(dict.fromkeys(c.anchor for c in self.citations if c.valid and c.anchor))

    @property
    def invalid_citations(self) -> list[int]:
        return [c.n for c in self.citations if not c.valid]

    def located(self, documents: Any) -> "Answer":
        """The answer with every valid citation's ``location`` filled in from its source document, for the
        citations whose chunk carries none: a markdown or text file gives the 1-based ``line`` (and
        ``line_end``) of the cited span, counted in the file (:meth:`~ragtune.types.Document.location`).
        ``documents`` is anything indexed by document id (a :class:`~ragtune.corpus.Corpus`); a citation whose
        document it lacks is left as it was."""
        out = []
        for c in self.citations:
            if c.valid and not c.location and c.doc_id is not None and c.start is not None:
                try:
                    doc = documents[c.doc_id]
                except (KeyError, LookupError):
                    doc = None
                where = doc.location(c.start, c.end) if doc is not None else None
                if where:
                    c = replace(c, location=where)
            out.append(c)
        return replace(self, citations=tuple(out))

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question, "answer": self.text, "outcome": self.outcome, "reason": self.reason,
            "generator": self.generator, "citations": [c.to_dict() for c in self.citations],
            "sources": self.sources, "invalid_citations": self.invalid_citations,
            "contexts": [{"n": i, "chunk_id": c.id, "anchor": c.anchor, "doc_id": c.doc_id, "start": c.start,
                          "end": c.end} for i, c in enumerate(self.contexts, start=1)],
            "usage": dict(self.usage), "latency_ms": self.latency_s * 1000.0,
        }


def build_prompt(question: str, contexts: Sequence[Chunk]) -> tuple[str, str]:
    """(system, user) messages: numbered contexts, then the question."""
    parts = []
    for i, c in enumerate(contexts, start=1):
        parts.append(f"[{i}] (source: {c.anchor})\n{c.text.strip()}")
    user = "Context passages:\n\n" + "\n\n".join(parts) + f"\n\nQuestion: {question.strip()}\n\nAnswer:"
    return SYSTEM_PROMPT, user


def citations_in(text: str, contexts: Sequence[Chunk]) -> tuple[Citation, ...]:
    out = []
    for m in _CITE_RE.finditer(text):
        for num in m.group(1).split(","):
            n = int(num)
            if 1 <= n <= len(contexts):
                c = contexts[n - 1]
                out.append(Citation(n, True, c.id, c.doc_id, c.anchor, c.start, c.end, c.metadata.get("location")))
            else:
                out.append(Citation(n, False))
    return tuple(out)


def parse_answer(text: str, question: str, contexts: Sequence[Chunk], *, generator: str,
                 usage: Mapping[str, int] | None = None, latency_s: float = 0.0) -> Answer:
    """Turn a model's reply into an :class:`Answer` (the marker anywhere means not found)."""
    body = text.strip()
    if NOT_FOUND in body or not body:
        return Answer(question, NOT_FOUND, "not_found", (), tuple(contexts), generator, "model", dict(usage or {}),
                      latency_s)
    return Answer(question, body, "answered", citations_in(body, contexts), tuple(contexts), generator, None,
                  dict(usage or {}), latency_s)
