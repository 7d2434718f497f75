"""What a judge sees for one question: the sections to grade, and a search for the ones the pool missed.

A question's candidates are the union of its pool (the holes of ``--pool`` for the question, or, for a question
the pool file does not hold, the top ``depth`` sections of BM25, dense and hybrid retrieval, each with its
default chunking, built here),
the anchors it already has a grade for, and the sections a drafter proposed. They are de-duplicated by anchor and
shown in corpus order (document, then position), which says nothing about which system found what, or at which
rank: the judge grades without knowing.

A section is shown as its document's text, written as markdown by its loader. A reStructuredText file whose shown
section has a ``:ref:`` or ``:doc:`` role is loaded again for the page, once, with the whole corpus's labels and
document titles, so a reference to another file reads as the docs show it (the section's or document's title), not
as the bare label; the index keeps the text it was built from. (On CPython's library and tutorial files: 2.5 CPU
seconds to show all 429 sections, 31 files loaded again.)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..corpus.corpus import Corpus
from ..errors import ConfigError, UnknownAnchorError
from ..golden import GoldenItem

__all__ = ["Candidate", "Candidates", "SYSTEMS", "question_terms", "pool_query"]

SYSTEMS = ("bm25", "dense", "hybrid")
MAX_TEXT = 6000  # characters of a section shown (the rest is behind the source link)

_STOP = frozenset("""a an and are as at be by can do does for from how i if in is it its me my of on or should so that
the this to use using was what when where which who why will with you your""".split())


def pool_query(item: GoldenItem) -> str:
    """What a question's pool is searched with: its text, after the earlier turns' questions for a turn of a
    conversation ("and how do I test it?" alone finds little)."""
    return " ".join((*item.history, item.q)) if item.history else item.q


def question_terms(q: str) -> list[str]:
    """The words of a question worth highlighting in a section: no stop words, no one- or two-letter words."""
    words = re.findall(r"[A-Za-z0-9_][\w\-.]*[A-Za-z0-9_]|\w", q)
    return list(dict.fromkeys(w.casefold() for w in words if len(w) > 2 and w.casefold() not in _STOP))


@dataclass(frozen=True)
class Candidate:
    anchor: str
    doc_id: str
    title: str  # the heading path, " > " joined
    text: str
    location: dict[str, Any] = field(default_factory=dict)
    order: tuple[int, int] = (0, 0)  # (document index, start offset): corpus order
    in_corpus: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"anchor": self.anchor, "doc_id": self.doc_id, "title": self.title, "text": self.text,
                "location": self.location, "in_corpus": self.in_corpus}


class Candidates:
    """Candidates and search over ``corpus``. ``pool`` maps question id -> hole anchors (a pool file's);
    ``systems`` are the first stages pooled on the spot, ``depth`` hits each; ``embedder`` for dense and hybrid.
    ``sampled`` maps question id -> the holes a pool sample drew (``ragtune pool --sample N``): they are served
    first, before the rest in corpus order, since the estimates need them judged.
    The retrievers are built on first use (or by :meth:`warm`, in a thread), once."""

    def __init__(self, corpus: Corpus, *, pool: dict[str, list[str]] | None = None,
                 systems: Sequence[str] = SYSTEMS, depth: int = 10, embedder: str | None = None,
                 cache_dir: Any = None, sampled: dict[str, list[str]] | None = None):
        unknown = [s for s in systems if s not in SYSTEMS]
        if unknown or not systems:
            raise ConfigError(f"pool systems {', '.join(unknown) or '(none)'}: choose from {', '.join(SYSTEMS)}, "
                              "e.g. --pool-systems bm25,dense")
        # a pool file's hole named by a made-up id (quickstart.rst#id5) is shown, judged and saved by its readable
        # anchor (quickstart.rst#sessions), like every section the systems find
        pool = {q: list(dict.fromkeys(corpus.readable_anchor(a) or a for a in anchors))
                for q, anchors in (pool or {}).items()}
        self.corpus, self.pool, self.systems, self.depth = corpus, pool, tuple(systems), depth
        self.sampled = {q: {corpus.readable_anchor(a) or a: n for n, a in enumerate(anchors)}
                        for q, anchors in (sampled or {}).items()}
        self.embedder, self.cache_dir = embedder, cache_dir
        self._doc_index = {d.id: n for n, d in enumerate(corpus.documents)}
        self._pipelines: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.error: str | None = None
        self._pooled: dict[str, tuple[str, list[str]]] = {}  # question id -> (text, anchors) pooled on the spot
        self._with_roles: dict[str, frozenset[str]] = {}  # rst doc id -> its sections whose source has a :ref:/:doc:
        self._shown: dict[str, dict[str, str]] = {}  # rst doc id -> anchor -> text as shown, where it differs
        self._titles: tuple[dict[str, str], dict[str, str]] | None = None  # (labels, document titles) of the corpus

    # -- retrieval

    @property
    def ready(self) -> bool:
        return all(s in self._pipelines for s in self.systems)

    def warm(self) -> None:
        """Build every retriever now (called in a thread at start; errors are kept for the page to show)."""
        try:
            for s in self.systems:
                self._pipeline(s)
        except Exception as e:  # noqa: BLE001 - shown on the page, the workbench keeps working on BM25
            self.error = f"{type(e).__name__}: {e}"

    def _pipeline(self, system: str):
        built = self._pipelines.get(system)
        if built is not None:  # searching a built retriever never waits for another one being built
            return built
        with self._lock:
            if system not in self._pipelines:
                from ..pipeline import PipelineConfig, build_pipeline

                self._make_resources()
                # the default chunking of each first stage (sections for BM25, window-sized pieces returning their
                # section for dense and hybrid; documents for a BEIR corpus): hits name sections either way
                flags: dict[str, Any] = {"retriever": system}
                if self.embedder:
                    flags["embedder"] = self.embedder
                config = PipelineConfig.from_flags(flags)
                self._pipelines[system] = build_pipeline(self.corpus, config, resources=self._resources)
            return self._pipelines[system]

    def embedder_model(self):
        """The embedder the dense pool uses (made once, through the embedding cache): it also groups traffic."""
        with self._lock:
            self._make_resources()
            return self._resources.embedder()

    def _make_resources(self) -> None:
        if not hasattr(self, "_resources"):
            from ..embed import DEFAULT_EMBEDDER
            from ..paths import default_cache_dir
            from ..pipeline import Resources

            self._resources = Resources(self.embedder or DEFAULT_EMBEDDER, cache_dir=self.cache_dir or default_cache_dir())

    def _top(self, system: str, text: str, k: int) -> list[str]:
        ranking = self._pipeline(system).retriever.search(text, k=k)
        return list(dict.fromkeys(h.chunk.anchor for h in ranking.hits))

    # -- what to show

    def section(self, anchor: str) -> Candidate:
        try:
            span = self.corpus.resolve(anchor)
        except UnknownAnchorError:
            return Candidate(anchor, anchor.partition("#")[0], anchor, "(this anchor is not in the corpus: it may "
                             "have been renamed; `ragtune golden check` suggests the closest)", in_corpus=False,
                             order=(len(self._doc_index), 0))
        doc = self.corpus[span.doc_id]
        if span.section is not None:
            sec = span.section
            title = " > ".join((doc.title, *sec.heading_path)) if doc.title and (not sec.heading_path or
                                                                                 sec.heading_path[0] != doc.title) \
                else " > ".join(sec.heading_path) or sec.title
            text, where = doc.text[sec.start:sec.own_end], doc.location(sec.start, sec.own_end)
            text = self._as_shown(doc, sec) or text
            first, _, rest = text.lstrip().partition("\n")
            if first.lstrip("#").strip() == sec.title.strip():  # the heading is the card's title already
                text = rest
        else:
            title, text, where = doc.title or doc.id, doc.text[span.start:span.end], doc.location(span.start, span.end)
        text = text.strip()
        if len(text) > MAX_TEXT:
            text = text[:MAX_TEXT].rstrip() + "\n\n[...]"
        return Candidate(span.anchor if span.section is not None else anchor, span.doc_id, title, text, where,
                         (self._doc_index.get(span.doc_id, 0), span.start))

    def _as_shown(self, doc: Any, sec: Any) -> str | None:
        """The text of ``doc``'s section ``sec`` as the page shows it, or None to show it as the corpus holds it.

        A reStructuredText file one of whose sections shown has a ``:ref:`` or ``:doc:`` role in its source lines
        is loaded again, once, with the corpus's labels and document titles; the texts of its sections that read
        differently are kept (a file with no such role is never loaded again). A file that changed since the
        corpus was loaded, or that cannot be read, leaves its sections as the corpus holds them."""
        if doc.format != "rst" or not doc.source:
            return None
        with_roles = self._with_roles.get(doc.id)
        if with_roles is None:
            with_roles = self._with_roles[doc.id] = self._sections_with_roles(doc)
        if sec.anchor not in with_roles:
            return None
        shown = self._shown.get(doc.id)
        if shown is None:
            shown = self._shown[doc.id] = self._load_again(doc)
        return shown.get(sec.anchor)

    @staticmethod
    def _sections_with_roles(doc: Any) -> frozenset[str]:
        try:
            lines = Path(doc.source).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return frozenset()
        out = set()
        for sec in doc.sections:
            first = doc.location(sec.start, sec.start).get("line")
            after = doc.location(sec.own_end, sec.own_end).get("line") if sec.own_end < len(doc.text) else None
            if isinstance(first, int):
                part = "\n".join(lines[first - 1:after - 1 if isinstance(after, int) else None])
                if "ref:`" in part or "doc:`" in part:
                    out.add(sec.anchor)
        return frozenset(out)

    def _load_again(self, doc: Any) -> dict[str, str]:
        try:
            from ..corpus.formats.rst import RstLoader

            labels, titles = self._corpus_titles()
            again = RstLoader().load(Path(doc.source).read_bytes(), doc.id, doc.source, labels=labels,
                                     doc_titles=titles)
        except Exception:  # noqa: BLE001 - shown as the corpus holds it
            return {}
        if [s.anchor for s in again.sections] != [s.anchor for s in doc.sections]:
            return {}  # the file changed since the corpus was loaded
        return {new.anchor: again.text[new.start:new.own_end] for old, new in zip(doc.sections, again.sections)
                if again.text[new.start:new.own_end] != doc.text[old.start:old.own_end]}

    def _corpus_titles(self) -> tuple[dict[str, str], dict[str, str]]:
        """Every section label and id of the corpus's reStructuredText files -> its title (labels first), and
        every document path without its suffix -> its title."""
        if self._titles is None:
            labels: dict[str, str] = {}
            ids: dict[str, str] = {}
            titles: dict[str, str] = {}
            for d in self.corpus.documents:
                if d.format != "rst":
                    continue
                stem = d.id.rsplit(".", 1)[0] if "." in d.id.rsplit("/", 1)[-1] else d.id
                titles.setdefault(stem, d.title)
                for s in d.sections:
                    for a in s.aliases:
                        labels.setdefault(a, s.title)
                    ids.setdefault(s.id, s.title)
            self._titles = ({**ids, **labels}, titles)
        return self._titles

    def pooled(self, item: GoldenItem) -> list[str]:
        """The anchors pooled for ``item``: its pool file holes, else the systems' top ``depth`` (kept for the
        question's text, so a reload shows the same pool)."""
        if item.id in self.pool:
            return list(self.pool[item.id])
        query = pool_query(item)
        cached = self._pooled.get(item.id)
        if cached is not None and cached[0] == query:
            return cached[1]
        # while the warm-up still builds a retriever (a first dense index embeds the corpus), pool with those
        # built and keep nothing: the question is pooled again, whole, once they all are
        systems = [s for s in self.systems if s in self._pipelines] or list(self.systems[:1])
        anchors: list[str] = []
        for s in systems:
            try:
                anchors.extend(self._top(s, query, self.depth))
            except Exception as e:  # noqa: BLE001 - a system that cannot be built leaves the others
                self.error = f"{s}: {type(e).__name__}: {e}"
        anchors = list(dict.fromkeys(anchors))
        if len(systems) == len(self.systems):
            self._pooled[item.id] = (query, anchors)
        return anchors

    def for_question(self, item: GoldenItem, extra: Iterable[str] = ()) -> list[Candidate]:
        """Every candidate of ``item`` (pool, graded anchors, proposed sections, ``extra``): the holes a pool sample
        drew first (best rank first), then the rest in corpus order."""
        proposed = [str(a) for a in item.draft.get("proposed", [])] if isinstance(item.draft.get("proposed"), list) \
            else []
        # the question's own anchors first: a section it graded by a made-up id (#id5) keeps that card, and the
        # pool's readable anchor of the same section (#sessions) is not shown twice
        anchors = [*item.relevant, *item.judged, *self.pooled(item), *proposed, *extra]
        seen: dict[str, Candidate] = {}
        for a in anchors:
            c = self.section(a)
            seen.setdefault(self.corpus.readable_anchor(c.anchor) or c.anchor, c)
        drawn = self.sampled.get(item.id, {})
        return sorted(seen.values(), key=lambda c: (drawn.get(c.anchor, len(drawn)), c.order, c.anchor))

    def search(self, text: str, k: int = 10) -> list[Candidate]:
        """Sections for a judge's query (BM25, then dense when built), to add what the pool missed."""
        if not text.strip():
            return []
        anchors = self._top("bm25", text, k)
        if "dense" in self._pipelines:
            anchors += self._top("dense", text, k)
        return [self.section(a) for a in dict.fromkeys(anchors)][: 2 * k]
