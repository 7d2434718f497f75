"""Matching outside hits to spans of the corpus: :class:`HitMatcher`.

Each :class:`~ragtune.external.hits.ExternalHit` becomes a :class:`~ragtune.types.Chunk`
whose span decides what it covers, with the same rule as a ragtune chunk
(:func:`ragtune.evaluate.covers`: same document, overlapping spans):

- a document id or path covers the whole document, so every anchor in it;
- an anchor ``doc#section`` covers the section *with its subsections*
  (and, like any chunk inside it, the sections that enclose it);
- a URL is turned into a path and fragment (``base_url`` and ``path_prefix``
  are cut off first), then matched as above;
- ``start``/``end`` offsets with a document cover exactly that span, and so
  does an identifier ``doc@start-end`` (a span id, as ``ragtune export`` writes);
- text is located in the corpus (in the named document when there is one):
  exactly first, then on normalised text (words only: whitespace, case and
  markdown markup ignored), then fuzzily (shared word trigrams, at least
  ``min_similarity`` of the hit's); the span found is what it covers.

A hit that matches nothing keeps its rank and covers nothing; it is listed in
the :class:`MatchReport`, never dropped. The full rules, with examples, are in
docs/guide/external-retrievers.md.
"""

from __future__ import annotations

import bisect
import re
import urllib.parse
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..corpus.corpus import AnchorSpan, Corpus
from ..errors import ConfigError
from ..types import Chunk, Document
from .hits import ExternalHit

__all__ = ["HitMatcher", "MatchReport", "Unmatched", "AnchorsOnly", "METHODS"]

#: how a hit was matched, in the order they are tried
METHODS = ("span", "anchor", "doc", "text_exact", "text_normalised", "text_fuzzy", "unmatched")

_WORD = re.compile(r"\w+", re.UNICODE)
_SPAN_ID = re.compile(r"^(.+)@(\d+)-(\d+)$")
_SHINGLE = 3
_UNMATCHED_KEPT = 200  # unmatched hits listed in a report (all are counted)


@dataclass(frozen=True, slots=True)
class Unmatched:
    question: str
    rank: int
    hit: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "rank": self.rank, "hit": self.hit, "reason": self.reason}


@dataclass
class MatchReport:
    """How the hits of an evaluation were matched: counts per method and the hits that matched nothing."""

    counts: Counter = field(default_factory=Counter)
    unmatched: list[Unmatched] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def matched(self) -> int:
        return self.total - self.counts["unmatched"]

    @property
    def match_rate(self) -> float:
        return self.matched / self.total if self.total else float("nan")

    def add(self, method: str, miss: Unmatched | None = None) -> None:
        self.counts[method] += 1
        if miss is not None and len(self.unmatched) < _UNMATCHED_KEPT:
            self.unmatched.append(miss)

    def to_dict(self) -> dict[str, Any]:
        return {"hits": self.total, "matched": self.matched, "match_rate": self.match_rate,
                "by_method": {m: self.counts[m] for m in METHODS if self.counts[m]},
                "unmatched": [u.to_dict() for u in self.unmatched],
                "unmatched_listed": len(self.unmatched)}

    def summary(self) -> str:
        if not self.total:
            return "hits matched: none returned"
        methods = ", ".join(f"{m} {self.counts[m]}" for m in METHODS if self.counts[m])
        line = f"hits matched: {self.matched}/{self.total} ({self.match_rate:.1%}; {methods})"
        for u in self.unmatched[:5]:
            line += f"\n  unmatched: question {u.question!r} rank {u.rank}: {u.hit} ({u.reason})"
        more = self.counts["unmatched"] - min(5, len(self.unmatched))
        if more > 0:
            line += f"\n  ... and {more} more unmatched (all listed in the JSON output)"
        return line


class AnchorsOnly:
    """A stand-in corpus when there is none: an identifier covers a golden anchor only if it is that anchor.

    Every anchor "resolves" to itself, so scoring compares identifiers exactly,
    as ``Run.from_trec`` does without a corpus.
    """

    kind = "anchors-only"

    def resolve(self, anchor: str) -> AnchorSpan:
        return AnchorSpan(anchor, anchor, 0, 1)

    def has_anchor(self, anchor: str) -> bool:
        return True


@dataclass
class _Tokens:
    starts: list[int]
    ends: list[int]
    words: list[str]
    norm: str  # words joined by one space
    norm_pos: list[int]  # where each word starts in norm


def _tokens(text: str) -> _Tokens:
    starts, ends, words = [], [], []
    for m in _WORD.finditer(text):
        starts.append(m.start())
        ends.append(m.end())
        words.append(m.group().lower())
    pos, at = [], 0
    for w in words:
        pos.append(at)
        at += len(w) + 1
    return _Tokens(starts, ends, words, " ".join(words), pos)


class HitMatcher:
    """Turns :class:`ExternalHit` s into chunks of ``corpus`` (see the module docstring for the rules).

    ``corpus=None`` matches identifiers to golden anchors exactly (:class:`AnchorsOnly`);
    text hits then match nothing. ``base_url``/``path_prefix`` are cut off the front of
    URLs and paths; ``fuzzy=False`` stops after the normalised-text stage.
    """

    def __init__(self, corpus: Corpus | None, *, base_url: str | None = None, path_prefix: str | None = None,
                 fuzzy: bool = True, min_similarity: float = 0.6):
        if not 0.0 < min_similarity <= 1.0:
            raise ConfigError(f"min_similarity must be in (0, 1], got {min_similarity!r}")
        self.corpus = corpus
        self.base_url = base_url
        self.path_prefix = path_prefix.strip("/") + "/" if path_prefix and path_prefix.strip("/") else None
        self.fuzzy = fuzzy
        self.min_similarity = min_similarity
        self.report = MatchReport()
        self._tok: dict[str, _Tokens] = {}
        self._shingles: dict[tuple[str, ...], list[tuple[int, int]]] | None = None
        self._ids: dict[str, tuple[str | None, str]] = {}

    @property
    def scoring_corpus(self) -> Any:
        return self.corpus if self.corpus is not None else AnchorsOnly()

    # -- one hit -------------------------------------------------------------------------------------------------

    def match(self, hit: ExternalHit, *, question: str = "", rank: int = 0) -> tuple[Chunk, str]:
        """The chunk ``hit`` stands for and how it was matched; an unmatched hit gives a chunk covering nothing."""
        chunk, method, reason = self._match(hit)
        self.report.add(method, Unmatched(question, rank, hit.describe(), reason) if chunk is None else None)
        if chunk is None:
            chunk = Chunk(id=f"unmatched:{hit.describe()}", doc_id="", text=hit.text or "", start=0, end=0,
                          embed_text="", anchors=(f"?{hit.describe()}",))
        return chunk, method

    def _match(self, hit: ExternalHit) -> tuple[Chunk | None, str, str]:
        if self.corpus is None:
            if hit.ident is None:
                return None, "unmatched", "a text hit needs a corpus to be located in (pass corpus=, CLI --corpus)"
            ident = self._strip(hit.ident, hit.kind)
            return Chunk(id=ident, doc_id=ident, text=hit.text or "", start=0, end=1, embed_text=""), "anchor", ""
        if hit.ident is None:
            return self._locate(hit.text or "", None)
        m = _SPAN_ID.match(hit.ident)
        if m and m.group(1) in self.corpus and hit.start is None:  # "doc@start-end", as write_trec_run(ids="span") writes
            hit = ExternalHit(m.group(1), hit.text, hit.score, int(m.group(2)), int(m.group(3)), hit.kind)
        doc_id, frag = self._resolve_ident(hit.ident, hit.kind)
        if doc_id is None:
            if hit.text:
                chunk, method, _ = self._locate(hit.text, None)
                if chunk is not None:
                    return chunk, method, ""
            return None, "unmatched", frag
        doc = self.corpus[doc_id]
        if hit.start is not None and hit.end is not None:
            if hit.end > len(doc.text):
                return None, "unmatched", f"span [{hit.start}, {hit.end}) is past the end of {doc_id} ({len(doc.text)} characters)"
            return self._chunk(doc, hit.start, hit.end, hit.ident), "span", ""
        if frag:
            sec = next((s for s in doc.sections if s.id == frag), None) or next(
                (s for s in doc.sections if s.explicit_id == frag or s.id.lower() == frag.lower()), None)
            if sec is None:
                return None, "unmatched", f"no section #{frag} in {doc_id}"
            return self._chunk(doc, sec.start, sec.end, sec.anchor, (sec.anchor,)), "anchor", ""
        if hit.text and hit.text.strip():
            chunk, method, _ = self._locate(hit.text, doc)
            if chunk is not None:
                return chunk, method, ""
        return self._chunk(doc, 0, len(doc.text), doc.id, ()), "doc", ""

    def _chunk(self, doc: Document, start: int, end: int, ident: str, anchors: tuple[str, ...] | None = None) -> Chunk:
        if anchors is None:
            secs = sorted((s for s in doc.sections if s.start < max(end, start + 1) and s.end > start),
                          key=lambda s: -s.level)
            anchors = tuple(s.anchor for s in secs)
        return Chunk(id=ident, doc_id=doc.id, text=doc.text[start:end], start=start, end=end, embed_text="",
                     anchors=anchors)

    # -- identifiers ---------------------------------------------------------------------------------------------

    def _strip(self, ident: str, kind: str | None) -> str:
        if self.base_url and ident.startswith(self.base_url):
            ident = ident[len(self.base_url):].lstrip("/")
        elif kind == "url" or "://" in ident:
            parts = urllib.parse.urlsplit(ident)
            ident = parts.path.lstrip("/") + (f"#{parts.fragment}" if parts.fragment else "")
        ident = urllib.parse.unquote(ident) if "%" in ident else ident
        if self.path_prefix and ident.lstrip("/").startswith(self.path_prefix):
            ident = ident.lstrip("/")[len(self.path_prefix):]
        return ident

    def _resolve_ident(self, ident: str, kind: str | None) -> tuple[str | None, str]:
        """(document id, fragment) or (None, why not)."""
        key = f"{kind}\x00{ident}"
        if key not in self._ids:
            self._ids[key] = self._resolve_uncached(ident, kind)
        return self._ids[key]

    def _resolve_uncached(self, ident: str, kind: str | None) -> tuple[str | None, str]:
        corpus = self.corpus
        assert corpus is not None
        if ident in corpus:
            return ident, ""
        if corpus.has_anchor(ident):
            span = corpus.resolve(ident)
            return span.doc_id, span.section.id if span.section else ""
        path = self._strip(ident, kind)
        doc_part, sep, frag = path.partition("#")
        for cand in self._doc_candidates(doc_part):
            if cand in corpus:
                return cand, frag
        hint = corpus.suggest(path)
        more = f"; closest: {', '.join(hint)}" if hint else ""
        return None, f"names no document of the corpus{more}; set base_url/path_prefix if URLs or paths carry a prefix"

    def _doc_candidates(self, path: str) -> Iterable[str]:
        p = path.strip()
        root = getattr(self.corpus, "root", None)
        if root and Path(p).is_absolute():
            try:
                p = Path(p).resolve().relative_to(Path(root).resolve()).as_posix()
            except (ValueError, OSError):
                pass
        p = p.removeprefix("./").lstrip("/")
        yield p
        stem = p.rstrip("/")
        yield stem
        for ext in (".html", ".htm", ".mdx", ".txt"):
            if stem.endswith(ext):
                yield stem[: -len(ext)] + ".md"
        yield stem + ".md"
        yield stem + "/index.md"
        yield stem + "/README.md"

    # -- text ----------------------------------------------------------------------------------------------------

    def _tokens_of(self, doc: Document) -> _Tokens:
        t = self._tok.get(doc.id)
        if t is None:
            t = self._tok[doc.id] = _tokens(doc.text)
        return t

    def _locate(self, text: str, doc: Document | None) -> tuple[Chunk | None, str, str]:
        corpus = self.corpus
        assert corpus is not None
        docs = [doc] if doc is not None else list(corpus)
        needle = text.strip()
        if not needle:
            return None, "unmatched", "empty text"
        for d in docs:
            i = d.text.find(needle)
            if i >= 0:
                return self._chunk(d, i, i + len(needle), f"{d.id}@{i}"), "text_exact", ""
        hit = _tokens(needle)
        if not hit.words:
            return None, "unmatched", "the text has no words to locate"
        for d in docs:
            t = self._tokens_of(d)
            at = t.norm.find(hit.norm)
            while at >= 0:
                w = bisect.bisect_left(t.norm_pos, at)
                if w < len(t.norm_pos) and t.norm_pos[w] == at and (
                        at + len(hit.norm) == len(t.norm) or t.norm[at + len(hit.norm)] == " "):
                    s, e = t.starts[w], t.ends[w + len(hit.words) - 1]
                    return self._chunk(d, s, e, f"{d.id}@{s}"), "text_normalised", ""
                at = t.norm.find(hit.norm, at + 1)
        if not self.fuzzy or len(hit.words) < _SHINGLE:
            return None, "unmatched", "text not found in the corpus" + ("" if doc is None else f" document {doc.id}")
        return self._fuzzy(hit, doc)

    def _index(self) -> dict[tuple[str, ...], list[tuple[int, int]]]:
        if self._shingles is None:
            idx: dict[tuple[str, ...], list[tuple[int, int]]] = {}
            for di, d in enumerate(self.corpus):  # type: ignore[union-attr]
                w = self._tokens_of(d).words
                for i in range(len(w) - _SHINGLE + 1):
                    idx.setdefault(tuple(w[i:i + _SHINGLE]), []).append((di, i))
            self._shingles = idx
        return self._shingles

    def _fuzzy(self, hit: _Tokens, doc: Document | None) -> tuple[Chunk | None, str, str]:
        docs = self.corpus.documents  # type: ignore[union-attr]
        want = {tuple(hit.words[i:i + _SHINGLE]) for i in range(len(hit.words) - _SHINGLE + 1)}
        positions: dict[int, list[int]] = {}
        for sh in want:
            for di, pos in self._index().get(sh, ()):
                if doc is None or docs[di].id == doc.id:
                    positions.setdefault(di, []).append(pos)
        best: tuple[int, int, int, int] | None = None  # (count, -doc index, first, last)
        width = 2 * len(hit.words)
        for di, ps in positions.items():
            ps.sort()
            lo = 0
            for hi in range(len(ps)):
                while ps[hi] - ps[lo] > width:
                    lo += 1
                cand = (hi - lo + 1, -di, ps[lo], ps[hi])
                if best is None or cand[:2] > best[:2]:
                    best = cand
        if best is None:
            return None, "unmatched", "text not found in the corpus, not even approximately"
        count, neg_di, first, last = best
        similarity = min(1.0, count / len(want))
        if similarity < self.min_similarity:
            return None, "unmatched", (f"text not found; the closest passage shares {similarity:.0%} of its word "
                                       f"trigrams (min_similarity {self.min_similarity:.0%})")
        d = docs[-neg_di]
        t = self._tokens_of(d)
        s, e = t.starts[first], t.ends[min(last + _SHINGLE - 1, len(t.ends) - 1)]
        return self._chunk(d, s, e, f"{d.id}@{s}~"), "text_fuzzy", ""
