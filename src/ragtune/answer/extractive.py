"""An offline generator that needs no LLM: it quotes the context sentences that best match the question.

Each selected sentence is quoted whole and cited (sentences as :func:`~ragtune.answer.sentences.split_sentences`
finds them: never cut inside inline code, a URL, an identifier or a version number). When no sentence shares enough of the
question's content words, the answer is ``not_found``. This is a baseline
that makes the whole flow work offline, not a language model: it cannot
paraphrase, combine facts or notice that a matching sentence does not
actually answer.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..types import Chunk
from .base import NOT_FOUND, Answer, citations_in
from .sentences import split_sentences
from .text import content_terms

__all__ = ["DEFAULT_MIN_OVERLAP", "ExtractiveGenerator", "split_sentences"]

# Share of the question's content words a quoted sentence must contain. 0.3 is the value of the grid
# 0.2-0.6 that improves abstention (unanswerable questions refused minus answerable ones refused) on every
# set measured; 0.5, the earlier default, refused more answerable than unanswerable questions. The table and
# the command that produced it: docs/concepts/abstention.md#extractive-threshold
DEFAULT_MIN_OVERLAP = 0.3

class ExtractiveGenerator:
    name = "extractive"

    def __init__(self, *, max_sentences: int = 2, min_overlap: float = DEFAULT_MIN_OVERLAP):
        self.max_sentences = max_sentences
        self.min_overlap = min_overlap

    def generate(self, question: str, contexts: Sequence[Chunk]) -> Answer:
        t0 = time.perf_counter()
        q = content_terms(question)
        if not contexts or not q:
            reason = "no_context" if not contexts else "no_match"
            return Answer(question, NOT_FOUND, "not_found", (), tuple(contexts), self.name, reason,
                          latency_s=time.perf_counter() - t0)
        scored = []
        for ci, chunk in enumerate(contexts, start=1):
            for si, sent in enumerate(split_sentences(chunk.text)):
                terms = content_terms(sent)
                if not terms:
                    continue
                overlap = len(q & terms) / len(q)
                # prefer the better-ranked context on ties, then earlier sentences
                scored.append((overlap, -ci, -si, ci, sent))
        scored.sort(reverse=True)
        chosen = [s for s in scored if s[0] >= self.min_overlap][: self.max_sentences]
        if not chosen:
            return Answer(question, NOT_FOUND, "not_found", (), tuple(contexts), self.name, "no_match",
                          latency_s=time.perf_counter() - t0)
        chosen.sort(key=lambda s: (s[3], -s[2]))  # reading order
        text = " ".join(f"{sent} [{ci}]" for _, _, _, ci, sent in chosen)
        return Answer(question, text, "answered", citations_in(text, contexts), tuple(contexts), self.name,
                      latency_s=time.perf_counter() - t0)
