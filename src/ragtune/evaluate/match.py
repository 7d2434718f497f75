"""Matching hits to spans of the corpus: :class:`HitMatcher`, the one matcher of every run.

Every ranking ragtune did not make itself (a run file read by ``eval --run``, ``compare`` or the gate; an outside
retriever called by :func:`~ragtune.external.evaluate_retriever`; a search service over HTTP) goes through this
module. Each :class:`~ragtune.evaluate.hits.ExternalHit` becomes a :class:`~ragtune.types.Chunk` whose span
decides what it covers, with **the one rule ragtune scores by** (:func:`ragtune.evaluate.covers`): a hit covers a
relevant anchor when it is in the same document and, for a section anchor, its span overlaps the section's span
(the section *with* its subsections). A document-level anchor is covered by any hit in its document.

What span a hit stands for:

- ``doc@start-end`` (a span id, as ``ragtune export --ids span`` writes) and ``start``/``end`` offsets with a
  document: exactly that span, so the figures are those of the chunks themselves;
- an anchor ``doc#X`` (or a URL ``.../doc#X``): by default (``anchor_span="own"``) X's own text, from its heading
  to the next heading of any level, which is the span of ragtune's section chunk of X. So an anchor hit for X
  covers X and the sections that enclose X, exactly as a chunk of X does, and a TREC run of anchors scores as the
  section chunks it was written from. ``anchor_span="subsections"``: X with its subsections, so the hit also
  covers every section below X. The results say which rule was used (``matching.coverage``);
- a document id, path or URL without a fragment: the whole document, so every anchor in it (``doc_hits="credit"``,
  the default), or, with ``doc_hits="ignore"``, only document-level anchors: a page is not credited for the
  sections in it. Either way these hits are counted in the report (``matching.doc_level``) with what they
  contributed to the metrics;
- a URL is turned into a path and fragment (``base_url`` and ``path_prefix`` are cut off first), then matched as
  above under the URL and heading-id rules of the site generator that published it (``site``: ``github``,
  ``mkdocs``, ``sphinx``, ``docusaurus``; :mod:`ragtune.corpus.sites`): the site root is ``index.md`` (or
  ``README.md``), ``guide/`` is ``guide/index.md`` or ``guide.md``, ``#step_1`` is MkDocs' id of the second
  "Step", ``#id1`` Sphinx's. ``site="auto"`` (the default) tries every rule on the hits before matching them and
  keeps the one that matches most (GitHub's on a tie); the report says which rule was used, how many hits each
  would match, and for a hit that matches nothing, which other rule would have matched it;
- text is located in the corpus (in the named document when there is one): exactly first, then on normalised
  text (words only: whitespace, case and markdown markup ignored), then fuzzily (shared word trigrams, at least
  ``min_similarity`` of the hit's); the span found is what it covers.

A hit that matches nothing keeps its rank and covers nothing; it is listed in the :class:`MatchReport`, never
dropped. Without a corpus (:class:`AnchorsOnly`) an identifier covers a golden anchor only if it is that anchor.
The rule, with examples, is in docs/concepts/matching.md; the hit formats in docs/guide/external-retrievers.md.
"""

from __future__ import annotations

import bisect
import math
import re
import urllib.parse
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from ..config import Opt
from ..corpus import sites
from ..corpus.corpus import AnchorSpan, Corpus
from ..errors import ConfigError, RagtuneError, UnknownAnchorError
from ..paths import doc_id_from_path
from ..types import Chunk, Document, Hit, Ranking
from .hits import ExternalHit, to_hit
from .table import shown_keys

__all__ = ["searches_to_ranking", "HitMatcher", "MatchReport", "MatchOptions", "Unmatched", "AnchorsOnly", "METHODS", "ANCHOR_SPANS",
           "DOC_HITS", "SITE_RULES", "hits_to_ranking", "score_matched"]

#: how a hit was matched, in the order they are tried
METHODS = ("span", "anchor", "doc", "text_exact", "text_normalised", "text_fuzzy", "unmatched")
#: what an anchor hit ``doc#X`` covers: X's own text (as a chunk of X), or X with its subsections
ANCHOR_SPANS = ("own", "subsections")
#: what a hit naming a whole document covers: every anchor in it, or document-level anchors only
DOC_HITS = ("credit", "ignore")
#: the site generators whose URL and heading-id rules URL hits are matched by, and ``auto``: detected from the hits
SITE_RULES = ("auto", *sites.SITES)
STAGE = "external"  # the timing key of an outside call

# The matching options, declared once: every command that reads hits (eval --run/--endpoint, compare) takes them.
BaseUrl = Annotated[str | None, Opt("cut off hit URLs to get corpus paths", metavar="URL")]
PathPrefix = Annotated[str | None, Opt("cut off hit paths to get corpus paths", metavar="PREFIX")]
Fuzzy = Annotated[bool, Opt("locate text hits exactly or normalised only")]
AnchorSpanOpt = Annotated[Literal["own", "subsections"], Opt(
    "what an anchor hit doc#X covers: own (X's own text, like a section chunk of X: X and the sections around it) "
    "or subsections (X and every section below it)")]
SiteOpt = Annotated[Literal["auto", "github", "mkdocs", "sphinx", "docusaurus"], Opt(
    "the site generator whose URL and heading-id rules hit URLs follow (MkDocs: guide/ -> guide/index.md, "
    "#step_1; Sphinx: page.html#id1); auto: the rule that matches most of the hits")]
DocHitsOpt = Annotated[Literal["credit", "ignore"], Opt(
    "a hit naming a whole page (no #fragment): credit (it covers every section in it) or ignore (it covers only "
    "document-level anchors)")]

_WORD = re.compile(r"\w+", re.UNICODE)
_SPAN_ID = re.compile(r"^(.+)@(\d+)-(\d+)$")
_ANCHOR_MARK = "\x00"  # a resolved fragment that is a section id of the corpus (the hit was an anchor)
_GITHUB_BLOB = re.compile(r"^/?[^/]+/[^/]+/(?:blob|tree|raw)/[^/]+/(.+)$")
_SHINGLE = 3
_UNMATCHED_KEPT = 200  # unmatched hits listed in a report (all are counted)
_QUESTIONS_KEPT = 50  # question ids listed in the doc-level block


@dataclass(frozen=True)
class MatchOptions:
    """How hits are matched (see the module docstring); one value, passed from the flags to every reader. Its
    annotated fields are the flags of the commands that read run files (``compare``: ``add_flags(p, MatchOptions)``)."""

    base_url: BaseUrl = None
    path_prefix: PathPrefix = None
    fuzzy: Fuzzy = True
    min_similarity: float = 0.6
    anchor_span: AnchorSpanOpt = "own"
    doc_hits: DocHitsOpt = "credit"
    site: SiteOpt = "auto"

    def __post_init__(self) -> None:
        if self.site not in SITE_RULES:
            raise ConfigError(f"site {self.site!r}: choose one of {', '.join(SITE_RULES)} (the generator that "
                              "published the URLs the hits name; auto: the rule that matches most hits)")
        if self.anchor_span not in ANCHOR_SPANS:
            raise ConfigError(f"anchor_span {self.anchor_span!r}: choose own (an anchor hit covers its section's own "
                              "text, as a section chunk does) or subsections (its section with every subsection)")
        if self.doc_hits not in DOC_HITS:
            raise ConfigError(f"doc_hits {self.doc_hits!r}: choose credit (a whole-document hit covers every "
                              "section in it) or ignore (it covers document-level anchors only)")
        if not (isinstance(self.min_similarity, (int, float)) and 0.0 < self.min_similarity <= 1.0):
            raise ConfigError(f"min_similarity must be in (0, 1], got {self.min_similarity!r}")

    @classmethod
    def of(cls, options: MatchOptions | Mapping[str, Any] | None = None, **overrides: Any) -> MatchOptions:
        """``options`` (a MatchOptions, a mapping of its fields, or None), with ``overrides`` not None applied."""
        base = options if isinstance(options, MatchOptions) else cls(**dict(options or {}))
        given = {k: v for k, v in overrides.items() if v is not None}
        return replace(base, **given) if given else base


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
    """How the hits of an evaluation were matched: counts per method, the hits that matched nothing, the
    coverage rule in force, and (after :func:`score_matched`) what hits matched only at document level
    contributed."""

    counts: Counter = field(default_factory=Counter)
    unmatched: list[Unmatched] = field(default_factory=list)
    anchor_span: str = "own"
    doc_hits: str = "credit"
    doc_level: list[tuple[str, int]] = field(default_factory=list)  # (question, rank) of every whole-document hit
    contribution: dict[str, Any] = field(default_factory=dict)
    site: str = "github"  # the site rule URL hits were matched by
    site_given: str = "auto"  # the rule asked for (auto: detected)
    site_matches: dict[str, int] = field(default_factory=dict)  # auto: hits each rule matched in the detection
    would_match: Counter = field(default_factory=Counter)  # unmatched hits another rule would have matched

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
                "coverage": {"anchor_span": self.anchor_span, "doc_hits": self.doc_hits},
                "site": {"rule": self.site, "given": self.site_given, "detection": dict(self.site_matches),
                         "unmatched_would_match": dict(self.would_match)},
                "doc_level": {"hits": len(self.doc_level), **self.contribution},
                "unmatched": [u.to_dict() for u in self.unmatched],
                "unmatched_listed": len(self.unmatched)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatchReport:
        """The report back from its ``to_dict()`` (an eval result's ``matching``), for :meth:`summary`."""
        cov = data.get("coverage") or {}
        doc = dict(data.get("doc_level") or {})
        n = int(doc.pop("hits", 0) or 0)
        report = cls(Counter(data.get("by_method") or {}),
                     [Unmatched(u["question"], u["rank"], u["hit"], u["reason"]) for u in data.get("unmatched", [])],
                     cov.get("anchor_span", "own"), cov.get("doc_hits", "credit"), [("", 0)] * n, doc)
        site = data.get("site") or {}
        report.site = site.get("rule", "github")
        report.site_given = site.get("given", "auto")
        report.site_matches = dict(site.get("detection") or {})
        report.would_match = Counter(site.get("unmatched_would_match") or {})
        return report

    def summary(self) -> str:
        if not self.total:
            return "hits matched: none returned"
        methods = ", ".join(f"{m} {self.counts[m]}" for m in METHODS if self.counts[m])
        anchor = ("its section with its subsections" if self.anchor_span == "subsections"
                  else "its section's own text, like a section chunk")
        page = "are credited for the sections in them" if self.doc_hits == "credit" else \
            "cover document-level anchors only"
        lines = [f"hits matched: {self.matched}/{self.total} ({self.match_rate:.1%}; {methods})",
                 f"coverage: an anchor hit covers {anchor} (--anchor-span {self.anchor_span}); whole-page hits "
                 f"{page} (--doc-hits {self.doc_hits})",
                 self._site_line()]
        if self.doc_level:
            c = self.contribution
            line = (f"matched only at document level (no #fragment): {len(self.doc_level)} hit(s); "
                    f"{c.get('section_hits', 0)} cover a relevant section only as the whole page, in the top "
                    f"{c.get('k', '?')} of {c.get('questions_credited', 0)} question(s)")
            delta = c.get("delta") or {}
            if delta:
                shown = ", ".join(f"{m} {v:+.3f}" for m, v in delta.items())
                line += (f"; crediting them {'adds' if self.doc_hits == 'credit' else 'would add'} {shown}"
                         + (" (--doc-hits ignore to score without)" if self.doc_hits == "credit" else ""))
            lines.append(line)
        for u in self.unmatched[:5]:
            lines.append(f"  unmatched: question {u.question!r} rank {u.rank}: {u.hit} ({u.reason})")
        more = self.counts["unmatched"] - min(5, len(self.unmatched))
        if more > 0:
            lines.append(f"  ... and {more} more unmatched (all counted; up to {_UNMATCHED_KEPT} listed in the JSON "
                         "output)")
        return "\n".join(line for line in lines if line)

    def _site_line(self) -> str:
        """Which site rule URL hits were matched by, and which would have matched the hits left unmatched."""
        if self.site_given == "auto" and len(set(self.site_matches.values())) > 1:  # the rules disagreed
            tried = ", ".join(f"{s} {n}" for s, n in sorted(self.site_matches.items(), key=lambda x: -x[1]))
            line = f"site rule: {self.site}, detected from the hits (hits each rule matches: {tried}; --site to choose)"
        elif self.site_given == "auto":
            line = ""
        else:
            line = f"site rule: {self.site} (--site {self.site})"
        if self.would_match:
            best, n = self.would_match.most_common(1)[0]
            more = f"{n} unmatched hit(s) would match under the {best} rule (--site {best})"
            line = f"{line}; {more}" if line else f"site rule: {self.site}; {more}"
        return line


class AnchorsOnly:
    """A stand-in corpus when there is none: an identifier covers a golden anchor only if it is that anchor.

    Every anchor "resolves" to itself, so scoring compares identifiers exactly, as trec_eval does.
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


def _doc_chunk(doc: Document, credit: bool) -> Chunk:
    """A hit naming ``doc`` as a whole: its full text (covers every anchor in it), or, not credited, an empty span at
    its end (same document, so it covers a document-level anchor, but no section: no section overlaps it)."""
    start = 0 if credit else len(doc.text)
    return Chunk(id=doc.id, doc_id=doc.id, text=doc.text if credit else "", start=start, end=len(doc.text),
                 embed_text="", anchors=())


class HitMatcher:
    """Turns :class:`ExternalHit` s into chunks of ``corpus`` (see the module docstring for the rules).

    ``corpus=None`` matches identifiers to golden anchors exactly (:class:`AnchorsOnly`);
    text hits then match nothing. ``base_url``/``path_prefix`` are cut off the front of
    URLs and paths; ``fuzzy=False`` stops after the normalised-text stage; ``anchor_span`` and
    ``doc_hits`` choose what anchor and whole-document hits cover; ``site`` the generator rule URL hits follow
    (``auto``: :meth:`detect` picks it from the hits; :func:`hits_to_ranking` calls it on its hits when nobody
    did before). ``options`` (a :class:`MatchOptions`) gives them all at once; keywords given override it.
    """

    def __init__(self, corpus: Corpus | None, *, options: MatchOptions | Mapping[str, Any] | None = None,
                 base_url: str | None = None, path_prefix: str | None = None, fuzzy: bool | None = None,
                 min_similarity: float | None = None, anchor_span: str | None = None, doc_hits: str | None = None,
                 site: str | None = None):
        opts = MatchOptions.of(options, base_url=base_url, path_prefix=path_prefix, fuzzy=fuzzy,
                               min_similarity=min_similarity, anchor_span=anchor_span, doc_hits=doc_hits, site=site)
        self.options = opts
        self.corpus = corpus
        self.base_url = opts.base_url
        self.path_prefix = (opts.path_prefix.strip("/") + "/" if opts.path_prefix and opts.path_prefix.strip("/")
                            else None)
        self.fuzzy = opts.fuzzy
        self.min_similarity = opts.min_similarity
        self.site: str | None = None if opts.site == "auto" else opts.site  # None: not detected yet
        self.report = MatchReport(anchor_span=opts.anchor_span, doc_hits=opts.doc_hits, site=self.site or "github",
                                  site_given=opts.site)
        self._tok: dict[str, _Tokens] = {}
        self._shingles: dict[tuple[str, ...], list[tuple[int, int]]] | None = None
        self._ids: dict[str, tuple[str | None, str]] = {}
        self._pages: dict[str, dict[str, str]] = {}
        self._heads: dict[tuple[str, str], dict[str, Any]] = {}

    # -- the site rule -------------------------------------------------------------------------------------------

    @property
    def detected(self) -> bool:
        """Whether the site rule is settled (given, or detected from hits)."""
        return self.site is not None

    def detect(self, hits: Iterable[ExternalHit]) -> str:
        """Settle the site rule (``site="auto"``): the rule of :data:`~ragtune.corpus.sites.SITES` that fully
        matches most of ``hits`` (document, and section when the hit has a fragment), GitHub's on a tie. The counts
        go into the report. A rule already given or detected is kept."""
        if self.site is not None:
            return self.site
        counts = {s: 0 for s in sites.SITES}
        if self.corpus is not None:
            for h in hits:
                if h.ident is None or h.start is not None or _SPAN_ID.match(h.ident):
                    continue
                for s in sites.SITES:
                    counts[s] += self._matches_under(h, s)
        best = max(sites.SITES, key=lambda s: (counts[s], -sites.SITES.index(s)))
        self.site = best
        self.report.site = best
        self.report.site_matches = counts
        return best

    def detect_raw(self, raw: Iterable[Any], *, field: str | None = None) -> str:
        """:meth:`detect` over raw hits (what a retriever returned or a run file holds); unreadable hits are left to
        the matching, which reports them."""
        hits = []
        for item in raw:
            try:
                hits.append(to_hit(item, field=field, where="hit"))
            except RagtuneError:
                continue
        return self.detect(hits)

    def _matches_under(self, hit: ExternalHit, site: str) -> bool:
        assert hit.ident is not None and self.corpus is not None
        doc_id, frag = self._resolve_ident(hit.ident, hit.kind, site)
        return doc_id is not None and (not frag or self._section(self.corpus[doc_id], frag, site) is not None)



    def _would_match(self, hit: ExternalHit, site: str) -> str | None:
        """The other site rules that fully match ``hit``, which ``site`` did not ("mkdocs or sphinx"; each counted
        in the report), or None."""
        if hit.ident is None or self.corpus is None:
            return None
        others = [s for s in sites.SITES if s != site and self._matches_under(hit, s)]
        for s in others:
            self.report.would_match[s] += 1
        return " or ".join(others) or None

    def _page_map(self, site: str) -> dict[str, str]:
        pages = self._pages.get(site)
        if pages is None:
            ranked: dict[str, tuple[int, str]] = {}
            for d in self.corpus:  # type: ignore[union-attr]
                for key, prio in sites.page_keys(d, site):
                    if key not in ranked or prio < ranked[key][0]:
                        ranked[key] = (prio, d.id)
            pages = self._pages[site] = {k: v for k, (_, v) in ranked.items()}
        return pages

    def _section(self, doc: Document, frag: str, site: str) -> Any:
        """The section of ``doc`` whose id on a ``site`` page is ``frag``, or None. An anchor of the corpus
        (``doc#id``, as ragtune writes it) is read as such under every rule."""
        if frag.startswith(_ANCHOR_MARK):
            return next((s for s in doc.sections if s.id == frag[len(_ANCHOR_MARK):]), None)
        ids = self._heads.get((site, doc.id))
        if ids is None:
            ids = self._heads[(site, doc.id)] = sites.heading_ids(doc, site)
        sec = ids.get(frag)
        if sec is None:
            sec = next((s for s in doc.sections if s.explicit_id == frag), None) or next(
                (s for k, s in ids.items() if k.lower() == frag.lower()), None)
        return sec

    @property
    def scoring_corpus(self) -> Any:
        return self.corpus if self.corpus is not None else AnchorsOnly()

    # -- one hit -------------------------------------------------------------------------------------------------

    def match(self, hit: ExternalHit, *, question: str = "", rank: int = 0) -> tuple[Chunk, str]:
        """The chunk ``hit`` stands for and how it was matched; an unmatched hit gives a chunk covering nothing."""
        chunk, method, reason = self._match(hit)
        self.report.add(method, Unmatched(question, rank, hit.describe(), reason) if chunk is None else None)
        if method == "doc":
            self.report.doc_level.append((question, rank))
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
        site = self.site or self._site_of(hit)
        doc_id, frag = self._resolve_ident(hit.ident, hit.kind, site)
        if doc_id is None:
            if hit.text:
                chunk, method, _ = self._locate(hit.text, None)
                if chunk is not None:
                    return chunk, method, ""
            other = self._would_match(hit, site)
            if other is not None:
                frag = (f"names no document of the corpus under the {site} site rule; the {other} rule matches it "
                        f"(site={other.split(' or ')[0]})")
            return None, "unmatched", frag
        doc = self.corpus[doc_id]
        if hit.start is not None and hit.end is not None:
            if hit.end > len(doc.text):
                return None, "unmatched", f"span [{hit.start}, {hit.end}) is past the end of {doc_id} ({len(doc.text)} characters)"
            return self._chunk(doc, hit.start, hit.end, hit.ident), "span", ""
        if frag:
            sec = self._section(doc, frag, site)
            if sec is None:
                other = self._would_match(hit, site)
                why = "" if other is None else (f" under the {site} heading-id rule; the {other} rule matches it "
                                                f"(site={other.split(' or ')[0]})")
                return None, "unmatched", f"no section #{frag} in {doc_id}{why}"
            end = sec.end if self.options.anchor_span == "subsections" else sec.own_end
            return self._chunk(doc, sec.start, end, sec.anchor, (sec.anchor,)), "anchor", ""
        if hit.text and hit.text.strip():
            chunk, method, _ = self._locate(hit.text, doc)
            if chunk is not None:
                return chunk, method, ""
        return _doc_chunk(doc, self.options.doc_hits == "credit"), "doc", ""

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

    def _site_of(self, hit: ExternalHit) -> str:
        """The rule for one hit while none is settled (:meth:`match` called before :meth:`detect`): the first rule
        that matches it."""
        if hit.ident is None or self.corpus is None:
            return "github"
        return next((s for s in sites.SITES if self._matches_under(hit, s)), "github")

    def _resolve_ident(self, ident: str, kind: str | None, site: str = "github") -> tuple[str | None, str]:
        """(document id, fragment) or (None, why not)."""
        key = f"{site}\x00{kind}\x00{ident}"
        if key not in self._ids:
            self._ids[key] = self._resolve_uncached(ident, kind, site)
        return self._ids[key]

    def _resolve_uncached(self, ident: str, kind: str | None, site: str) -> tuple[str | None, str]:
        corpus = self.corpus
        assert corpus is not None
        if ident in corpus:
            return ident, ""
        if corpus.has_anchor(ident):
            span = corpus.resolve(ident)
            return span.doc_id, _ANCHOR_MARK + span.section.id if span.section else ""
        path = self._strip(ident, kind)
        doc_part, sep, frag = path.partition("#")
        doc_part = doc_part.partition("?")[0]
        page = self._page_map(site).get(sites.page_path(doc_part))
        if page is not None:
            return page, frag
        for cand in self._doc_candidates(doc_part, site):
            if cand in corpus:
                return cand, frag
        hint = corpus.suggest(path)
        more = f"; closest: {', '.join(hint)}" if hint else ""
        return None, (f"names no document of the corpus{more}; set base_url/path_prefix if URLs or paths carry a "
                      "prefix")

    def _doc_candidates(self, path: str, site: str = "github") -> Iterable[str]:
        p = path.strip()
        m = _GITHUB_BLOB.match(p) if site == "github" else None
        if m:  # github.com/<owner>/<repo>/blob/<ref>/<path>
            yield from self._doc_candidates(m.group(1), "")
        root = getattr(self.corpus, "root", None)
        if root and Path(p).is_absolute():
            try:
                p = doc_id_from_path(Path(p).resolve().relative_to(Path(root).resolve()))
            except (ValueError, OSError):
                pass
        p = p.removeprefix("./").lstrip("/")
        yield p
        stem = p.rstrip("/")
        yield stem
        for ext in (".html", ".htm", ".mdx", ".txt"):
            if stem.endswith(ext):
                yield stem[: -len(ext)] + ".md"
        if not stem:  # the site or repository root
            yield "index.md"
            yield "README.md"
            return
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


# -- rankings and scores -------------------------------------------------------------------------------------------

def hits_to_ranking(query: str, raw: Any, k: int, matcher: HitMatcher, *, question: str = "",
                    field: str | None = None, seconds: float | None = None) -> Ranking:
    """Raw hits (best first) -> a :class:`Ranking` of at most ``k`` matched chunks; scores default to ``-rank``."""
    if raw is None:
        raw = []
    if isinstance(raw, (str, bytes, Mapping)) or not hasattr(raw, "__iter__"):
        raise ConfigError(f"question {question!r}: the retriever returned a {type(raw).__name__}, expected a list of "
                          "hits (strings, dicts or objects)")
    items = list(raw)[:k]
    if not matcher.detected:
        matcher.detect_raw(items, field=field)
    hits = []
    for rank, item in enumerate(items, start=1):
        h = to_hit(item, field=field, where=f"question {question!r} hit {rank}")
        chunk, _ = matcher.match(h, question=question, rank=rank)
        if chunk.tokens is None:  # what the model read costs its tokens (evidence@Ntok, the token curves)
            chunk = replace(chunk, tokens=_count_tokens(h.text or chunk.text))
        hits.append(Hit(chunk, float(h.score) if h.score is not None else float(-rank)))
    return Ranking(query, tuple(hits), {STAGE: seconds} if seconds is not None else {})


def _count_tokens(text: str) -> int:
    """An outside hit's tokens, counted with the regex tokenizer (words and punctuation marks)."""
    from ..chunking.tokens import get_tokenizer

    return int(len(get_tokenizer("regex").spans(text)))


def searches_to_ranking(question: str, searches: Any, k: int, matcher: HitMatcher, *, qid: str = "",
                        field: str | None = None, seconds: float | None = None) -> Ranking:
    """Raw searches ``[(query, raw hits), ...]`` in the order made -> one :class:`Ranking` (``searches`` kept, hits
    merged by :meth:`Ranking.from_searches`). Each search's hits are matched as :func:`hits_to_ranking` matches
    them, and a matched chunk is known by its span (``doc@start-end``), so the same section returned by two
    searches counts once and two spans of one page count twice. ``seconds`` (the whole call) is the ranking's time."""
    parts = []
    for query, raw in searches:
        r = hits_to_ranking(query, raw, k, matcher, question=qid or question, field=field)
        parts.append(Ranking(r.query, tuple(Hit(replace(h.chunk, id=f"{h.chunk.doc_id}@{h.chunk.start}-{h.chunk.end}")
                                                    if h.chunk.doc_id else h.chunk, h.score) for h in r.hits)))
    return Ranking.from_searches(question, parts, {STAGE: seconds} if seconds is not None else None)


def score_matched(rankings: Mapping[str, Ranking], golden: Any, matcher: HitMatcher, *, ks: Sequence[int],
                  config: Mapping[str, Any] | None = None, matching: Mapping[str, Any] | None = None) -> Any:
    """Score rankings whose hits ``matcher`` matched (question id -> :class:`Ranking`), as
    :func:`~ragtune.evaluate.evaluate_rankings` does, and record in ``result.matching`` how the hits matched,
    the coverage rule, and what the hits matched only at document level contributed: how many cover a relevant
    section only as the whole page, for how many questions in the top ``max(ks)``, and the change in the
    metrics between crediting them and not (``doc_level.delta``, credited minus ignored). ``matching`` adds keys."""
    from .evaluate import evaluate_rankings

    report = matcher.report
    corpus = matcher.scoring_corpus
    result = evaluate_rankings(rankings, golden, corpus, ks=ks, config=config)
    report.contribution = {}
    if report.doc_level and matcher.corpus is not None:
        report.contribution = _doc_contribution(rankings, golden, matcher, result, ks, config)
    info = {**report.to_dict(), **dict(matching or {})}
    return replace(result, matching=info)


def _doc_contribution(rankings: Mapping[str, Ranking], golden: Any, matcher: HitMatcher, result: Any,
                      ks: Sequence[int], config: Mapping[str, Any] | None) -> dict[str, Any]:
    from .evaluate import evaluate_rankings

    corpus = matcher.corpus
    assert corpus is not None
    credit = matcher.report.doc_hits == "credit"
    kmax = max(result.ks)
    items = {i.id: i for i in golden}
    swapped = {q: list(r.hits) for q, r in rankings.items()}
    section_hits, questions = 0, set()
    for q, rank in matcher.report.doc_level:
        if q not in swapped or not 0 < rank <= len(swapped[q]):
            continue
        hit = swapped[q][rank - 1]
        doc = corpus[hit.chunk.doc_id]
        swapped[q][rank - 1] = Hit(_doc_chunk(doc, not credit), hit.score)
        item = items.get(q)
        if item is None or not item.answerable:
            continue
        spans = []
        for a in item.relevant:
            try:
                spans.append(corpus.resolve(a))
            except UnknownAnchorError:
                continue
        if any(s.section is not None and s.doc_id == doc.id for s in spans):
            section_hits += 1
            if rank <= kmax:
                questions.add(q)
    other = evaluate_rankings({q: Ranking(rankings[q].query, tuple(h), rankings[q].timings)
                               for q, h in swapped.items()}, golden, corpus, ks=ks, config=config)
    credited, ignored = (result, other) if credit else (other, result)
    names = shown_keys("tags", result.ks)  # the columns of eval's per-tag table
    delta = {m: float(credited.metrics[m] - ignored.metrics[m]) for m in names
             if m in credited.metrics and m in ignored.metrics and math.isfinite(credited.metrics[m])
             and math.isfinite(ignored.metrics[m])}
    listed = sorted(questions)
    return {"section_hits": section_hits, "k": kmax, "questions_credited": len(questions),
            "questions": listed[:_QUESTIONS_KEPT], "delta": delta}
