"""``evaluate``: run a retriever over a golden set and score it by anchors."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..corpus.corpus import AnchorSpan, Corpus
from ..io import json_finite
from ..errors import ConfigError, GoldenSetError, UnknownAnchorError
from ..golden import GoldenItem, GoldenSet
from ..progress import progress_iter
from ..retrieve.base import Retriever
from ..retrieve.base import search as run_search
from ..types import Chunk, Ranking
from .searches import search_figures, turn_figures
from .table import METRICS, Judgement

__all__ = ["evaluate", "evaluate_rankings", "apply_k_unit", "K_UNITS", "judge", "EvalResult", "QuestionResult", "Judgement", "covers"]

DEFAULT_KS = (5, 10, 20)
NDCG_K = 10
SNIPPET_CHARS = 300  # of each retrieved chunk's text kept in results, for failure analysis


def covers(chunk: Chunk, span: AnchorSpan) -> bool:
    """Whether ``chunk`` hits an anchor: same document and, for a section (or a page), overlapping spans."""
    if chunk.doc_id != span.doc_id:
        return False
    if span.is_document:
        return True
    return chunk.start < span.end and max(chunk.end, chunk.start + 1) > span.start


def judge(ranking: Ranking, spans: Sequence[AnchorSpan], grades: Sequence[float],
          not_relevant: Sequence[AnchorSpan] = (), *, hole_name: Any = None) -> Judgement:
    """Judge ``ranking`` against one question's anchor ``spans`` (with their ``grades``): for each anchor the rank
    where a chunk first :func:`covers` it, for each rank whether its chunk covers any, and each chunk's tokens.

    What was judged, too: for each rank whether its chunk covers a relevant anchor or one of ``not_relevant``
    (the anchors judged not relevant), and for each unjudged anchor retrieved (a chunk covering no judged anchor,
    named by ``hole_name(chunk)``: the corpus section its start falls in, so a chunk, a span hit or an anchor hit of
    one section name one hole by every path; :attr:`Chunk.anchor` without a corpus) the rank first retrieved:
    the holes.

    The anchors are indexed by document once, so each retrieved chunk is tested only against the anchors of its
    own document (one pass over the ranking, not one :func:`covers` call per rank and anchor)."""
    by_doc: dict[str, list[int]] = {}
    for i, span in enumerate(spans):
        by_doc.setdefault(span.doc_id, []).append(i)
    zero: dict[str, list[AnchorSpan]] = {}
    for span in not_relevant:
        zero.setdefault(span.doc_id, []).append(span)
    first = np.full(len(spans), np.inf)
    rank_hits = np.zeros(len(ranking.hits), dtype=bool)
    judged = np.zeros(len(ranking.hits), dtype=bool)
    holes: dict[str, int] = {}
    for r, hit in enumerate(ranking.hits):
        for i in by_doc.get(hit.chunk.doc_id, ()):
            if covers(hit.chunk, spans[i]):
                rank_hits[r] = True
                if first[i] == np.inf:
                    first[i] = r + 1
        judged[r] = rank_hits[r] or any(covers(hit.chunk, z) for z in zero.get(hit.chunk.doc_id, ()))
        if not judged[r]:
            holes.setdefault(hole_name(hit.chunk) if hole_name else hit.chunk.anchor, r + 1)
    tokens = np.array([h.chunk.tokens or 0 for h in ranking.hits], dtype=np.float64)
    return Judgement(first, np.asarray(grades, dtype=np.float64), rank_hits, tokens, judged,
                     np.array(list(holes.values()), dtype=np.float64))


def _hole_namer(corpus: Corpus | None) -> Any:
    """``chunk -> the anchor of the corpus section its start falls in`` (None without a corpus)."""
    if corpus is None or not hasattr(corpus, "section_at"):
        return None
    return lambda chunk: corpus.section_at(chunk.doc_id, chunk.start)


def context_tokens(ranking: Ranking, k: int) -> float:
    """Tokens handed to the model by the top ``k`` chunks (the cost side of recall@k)."""
    return float(sum(h.chunk.tokens or 0 for h in ranking.hits[:k]))


def score_judgement(j: Judgement, ks: Sequence[int]) -> dict[str, float]:
    """One question's scores: every metric of the table (:data:`ragtune.evaluate.table.METRICS`) that ``j`` has
    the inputs for, at each of ``ks`` where it takes a cut-off (plus its ``always_k``), in table order."""
    s: dict[str, float] = {}
    for row in METRICS.values():
        if row.needs and not row.applies(j):
            continue
        fn = row.fn
        if row.takes_k:
            for k in row.cutoffs(ks):
                s[row.key(k)] = float(fn(j, k))
        else:
            s[row.name] = float(fn(j))
    return s


@dataclass(frozen=True)
class QuestionResult:
    id: str
    q: str
    tags: tuple[str, ...]
    relevant: Mapping[str, float]
    answerable: bool
    first_hit_rank: int | None
    anchor_ranks: Mapping[str, int | None]  # relevant anchor -> rank first covered
    covered: tuple[str, ...]  # relevant anchors covered in the top max(ks)
    missed: tuple[str, ...]
    scores: Mapping[str, float]
    retrieved: tuple[Mapping[str, Any], ...]  # top max(ks): chunk_id, doc_id, anchor, score, start, end, relevant
    latency_s: float
    conversation: str | None = None  # a conversation's turn: the conversation's id and the turn's index (0-based)
    turn: int | None = None
    searches: Mapping[str, Any] | None = None  # per-search figures (evaluate/searches.py), when the run searched more than once

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "q": self.q,
            "tags": list(self.tags),
            "relevant": dict(self.relevant),
            "answerable": self.answerable,
            "first_hit_rank": self.first_hit_rank,
            "anchor_ranks": dict(self.anchor_ranks),
            "covered": list(self.covered),
            "missed": list(self.missed),
            "scores": dict(self.scores),
            "retrieved": [dict(r) for r in self.retrieved],
            "latency_ms": self.latency_s * 1000.0,
            **({"conversation": self.conversation, "turn": self.turn} if self.turn is not None else {}),
            **({"searches": dict(self.searches)} if self.searches else {}),
        }


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": float("nan"), "p95": float("nan")}
    a = np.asarray(values, dtype=np.float64) * 1000.0
    return {"p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95))}


@dataclass(frozen=True)
class EvalResult:
    config: Mapping[str, Any]
    ks: tuple[int, ...]
    metrics: Mapping[str, float]  # means over answerable questions
    by_tag: Mapping[str, Mapping[str, float]]
    questions: tuple[QuestionResult, ...]
    latency_ms: Mapping[str, Any] = field(default_factory=dict)
    matching: Mapping[str, Any] = field(default_factory=dict)  # outside hits: how they matched the corpus
    searches: Mapping[str, Any] = field(default_factory=dict)  # per-search figures, when some question searched twice
    turns: Mapping[str, Any] = field(default_factory=dict)  # every metric by turn index, when there are conversations

    @property
    def n_answerable(self) -> int:
        return sum(q.answerable for q in self.questions)

    @property
    def n_unanswerable(self) -> int:
        return len(self.questions) - self.n_answerable

    @property
    def n_evidence(self) -> int:
        """Answerable questions with evidence groups (those evidence@k is the mean over)."""
        return sum(1 for q in self.questions if q.answerable and any(k.startswith("evidence@") for k in q.scores))

    def failures(self, n: int = 5) -> list[QuestionResult]:
        """The worst answerable questions: lowest recall at the largest k, then latest first hit."""
        kmax = max(self.ks)
        answerable = [q for q in self.questions if q.answerable]
        answerable.sort(key=lambda q: (q.scores[f"recall@{kmax}"], -(q.first_hit_rank or 10**9), q.scores["mrr"], q.id))
        return [q for q in answerable if q.scores[f"recall@{kmax}"] < 1.0 or (q.first_hit_rank or 0) > 1][:n]

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": dict(self.config),
            "metrics": dict(self.metrics),
            "by_tag": {t: dict(m) for t, m in self.by_tag.items()},
            "counts": {
                "questions": len(self.questions),
                "answerable": self.n_answerable,
                "unanswerable": self.n_unanswerable,
                **({"evidence": n} if (n := self.n_evidence) else {}),
            },
            "latency_ms": dict(self.latency_ms),
            **({"matching": dict(self.matching)} if self.matching else {}),
            **({"searches": dict(self.searches)} if self.searches else {}),
            **({"turns": dict(self.turns)} if self.turns else {}),
            "questions": [q.to_dict() for q in self.questions],
        }

    def to_json(self, path: str | os.PathLike[str] | None = None, *, indent: int | None = 2) -> str:
        text = json.dumps(json_finite(self.to_dict()), indent=indent, ensure_ascii=False, allow_nan=False)
        if path is not None:
            parent = os.path.dirname(os.fspath(path))
            if parent:
                os.makedirs(parent, exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        return text



def _mean_scores(results: Sequence[QuestionResult], keys: Sequence[str]) -> dict[str, float]:
    """The mean of each key over the questions that have it (a question without evidence groups has no
    ``evidence@k``, and is left out of its mean); a key no question has is left out."""
    out = {}
    for k in keys:
        v = [q.scores[k] for q in results if k in q.scores]
        if v:
            out[k] = float(np.mean(v))
    return out


def _score_keys(results: Sequence[QuestionResult]) -> list[str]:
    """Every score key some question has, in the order first seen."""
    return list(dict.fromkeys(k for q in results for k in q.scores))


def _resolve_all(golden: GoldenSet, corpus: Corpus) -> dict[str, list[AnchorSpan]]:
    """Question id -> the spans of its relevant anchors."""
    return {item.id: _resolve(item, item.relevant, corpus) for item in golden}


def _resolve_not_relevant(golden: GoldenSet, corpus: Any) -> dict[str, list[AnchorSpan]]:
    """Question id -> the spans of its anchors judged not relevant."""
    return {item.id: _resolve(item, item.not_relevant, corpus) for item in golden}


def _resolve(item: GoldenItem, anchors: Any, corpus: Any) -> list[AnchorSpan]:
    try:
        return [corpus.resolve(a) for a in anchors]
    except UnknownAnchorError as e:
        raise UnknownAnchorError(
            f"question {item.id!r}: {e}; run `ragtune golden check` to list every problem"
        ) from None


def evaluate(
    retriever: Retriever,
    golden: GoldenSet,
    corpus: Corpus,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    depth: int = 100,
    config: Mapping[str, Any] | None = None,
    filters: Any = None,
    show_progress: bool = False,
    k_unit: str | None = None,
) -> EvalResult:
    """Search every golden question and score the rankings by the anchors they cover.

    ``depth`` chunks are retrieved per question (MRR and first-hit rank look
    that deep); answerable questions give the means, unanswerable ones are
    counted and kept in ``questions`` for abstention metrics. ``filters``
    restricts every search (see :mod:`ragtune.retrieve.filters`). ``k_unit``
    (see :func:`apply_k_unit`): what top-k counts, ``chunk`` or ``doc``.
    """
    ks = _check_ks(ks)
    blank = [i.id for i in golden.items if not i.q.strip()]
    if blank:
        raise GoldenSetError(f"{golden.source or 'golden set'}: {len(blank)} question(s) have no text (e.g. "
                             f"{blank[0]!r}): a retriever needs questions to search; qrels carry none, so they "
                             "score run files (eval --run, compare), not retrievers")
    depth = max(int(depth), ks[-1], NDCG_K, *(k for row in METRICS.values() if not row.unit for k in row.always_k))
    spans_by_id = _resolve_all(golden, corpus)
    rankings = {item.id: run_search(retriever, item.q, depth, filters, item.history)
                for item in progress_iter(golden.items, "evaluating", enabled=show_progress)}
    rankings, unit = apply_k_unit(rankings, spans_by_id, k_unit)
    cfg = {"ks": list(ks), "k_unit": unit, "depth": depth, **(dict(config) if config else {})}
    return _score(rankings, golden, spans_by_id, ks, cfg, zero=_resolve_not_relevant(golden, corpus),
                  hole_name=_hole_namer(corpus))


def _check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    ks = tuple(sorted(set(int(k) for k in ks)))
    if not ks or ks[0] < 1:
        raise ConfigError(f"k values must be positive integers, got {ks!r}")
    return ks


def evaluate_rankings(
    rankings: Mapping[str, Ranking],
    golden: GoldenSet,
    corpus: Any,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    config: Mapping[str, Any] | None = None,
    matching: Mapping[str, Any] | None = None,
    k_unit: str | None = None,
) -> EvalResult:
    """Score rankings made elsewhere (question id -> :class:`Ranking`) exactly as :func:`evaluate` scores a retriever's.

    ``corpus`` resolves the golden anchors (anything with ``resolve(anchor)``); a
    golden question without a ranking scores as if nothing was retrieved; a
    ranking for a question id the golden set lacks is a :class:`ConfigError`.
    Latency comes from each ranking's ``timings``. ``matching`` (how outside
    hits were matched to the corpus) is kept in the result.
    """
    ks = _check_ks(ks)
    unknown = set(rankings) - {i.id for i in golden}
    if unknown:
        few = ", ".join(map(repr, sorted(unknown)[:5])) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise ConfigError(f"{len(unknown)} ranked question id(s) are not in the golden set: {few}; score the "
                          "rankings against the golden set they were made for")
    full = {i.id: rankings[i.id] if i.id in rankings else Ranking(i.q, ()) for i in golden}
    depth = max([len(r.hits) for r in full.values()] + [ks[-1]])
    spans_by_id = _resolve_all(golden, corpus)
    full, unit = apply_k_unit(full, spans_by_id, k_unit)
    cfg = {"ks": list(ks), "k_unit": unit, "depth": depth, **(dict(config) if config else {})}
    return _score(full, golden, spans_by_id, ks, cfg, matching, zero=_resolve_not_relevant(golden, corpus),
                  hole_name=_hole_namer(corpus))


def _score(rankings: Mapping[str, Ranking], golden: GoldenSet, spans_by_id: Mapping[str, list[AnchorSpan]],
           ks: tuple[int, ...], cfg: dict[str, Any], matching: Mapping[str, Any] | None = None, *,
           zero: Mapping[str, list[AnchorSpan]] | None = None, hole_name: Any = None) -> EvalResult:
    kmax = ks[-1]
    results: list[QuestionResult] = []
    stage_times: dict[str, list[float]] = {}
    totals: list[float] = []
    for item in golden.items:
        ranking = rankings[item.id]
        results.append(_question_result(item, ranking, spans_by_id[item.id], ks, kmax, (zero or {}).get(item.id, ()),
                                        hole_name))
        for stage, t in ranking.timings.items():
            stage_times.setdefault(stage, []).append(t)
        totals.append(sum(ranking.timings.values()))

    answerable = [q for q in results if q.answerable]
    keys = _score_keys(answerable)
    metrics = _mean_scores(answerable, keys)
    if answerable:
        metrics["reranker_headroom"] = metrics[f"recall@{kmax}"] - metrics[f"recall@{ks[0]}"]
    by_tag: dict[str, dict[str, float]] = {}
    for tag in sorted({t for q in answerable for t in q.tags}):
        tagged = [q for q in answerable if tag in q.tags]
        by_tag[tag] = {**_mean_scores(tagged, keys), "n": len(tagged)}
    latency: dict[str, Any] = {**_percentiles(totals), "stages": {s: _percentiles(v) for s, v in stage_times.items()}} \
        if stage_times else {}  # rankings read from a file carry no timings
    cfg = {**cfg, "labels": getattr(golden, "labels", "human")}  # which labels scored: human, or all (LLM's too)
    results, searches = search_figures(results, rankings, kmax)
    return EvalResult(cfg, ks, metrics, by_tag, tuple(results), latency, dict(matching) if matching else {},
                      searches, turn_figures(results, keys))


def _question_result(item: GoldenItem, ranking: Ranking, spans: list[AnchorSpan], ks: tuple[int, ...],
                     kmax: int, not_relevant: Sequence[AnchorSpan] = (), hole_name: Any = None) -> QuestionResult:
    j = judge(ranking, spans, list(item.relevant.values()), not_relevant, hole_name=hole_name)
    groups = getattr(item, "evidence", ())
    if groups and item.answerable:
        j = replace(j, evidence=evidence_ranks(j.first_ranks, list(item.relevant), groups))
    anchor_ranks = {a: (None if math.isinf(r) else int(r)) for a, r in zip(item.relevant, j.first_ranks)}
    covered = tuple(a for a, r in anchor_ranks.items() if r is not None and r <= kmax)
    missed = tuple(a for a in item.relevant if a not in covered)
    scores = score_judgement(j, ks) if item.answerable else {}
    retrieved = tuple(
        {
            "chunk_id": h.chunk.id, "doc_id": h.chunk.doc_id, "anchor": h.chunk.anchor, "score": h.score,
            "start": h.chunk.start, "end": h.chunk.end, "relevant": bool(j.rank_hits[r]),
            "judged": bool(j.judged[r]), "text": h.chunk.text[:SNIPPET_CHARS],
        }
        for r, h in enumerate(ranking.hits[:kmax])
    )
    return QuestionResult(
        id=item.id, q=item.q, tags=item.tags, relevant=dict(item.relevant), answerable=item.answerable,
        first_hit_rank=j.first_hit_rank, anchor_ranks=anchor_ranks, covered=covered, missed=missed,
        scores=scores, retrieved=retrieved, latency_s=sum(ranking.timings.values()),
        conversation=getattr(item, "conversation", None), turn=getattr(item, "turn", None),
    )


def evidence_ranks(first_ranks: np.ndarray, anchors: Sequence[str], groups: Sequence[Sequence[str]]) -> np.ndarray:
    """Per evidence group, the rank where any of its anchors is first covered (``inf`` if none is): ``first_ranks``
    holds each of ``anchors``' ranks (the question's relevant anchors, of which every group's anchors are part)."""
    at = {a: i for i, a in enumerate(anchors)}
    return np.array([min((first_ranks[at[a]] for a in g if a in at), default=np.inf) for g in groups],
                    dtype=np.float64)


K_UNITS = ("chunk", "doc")


def apply_k_unit(rankings: Mapping[str, Ranking], spans_by_id: Mapping[str, Sequence[AnchorSpan]],
                 k_unit: str | None) -> tuple[dict[str, Ranking], str]:
    """What top-k counts: ``chunk`` (every retrieved chunk is a rank) or ``doc`` (a ranking is de-duplicated by
    document, each keeping its best chunk's rank, as published BEIR figures count). ``None`` follows the golden
    set: ``doc`` when every relevant anchor is a bare document id (document-level labels, e.g. BEIR qrels),
    ``chunk`` otherwise. Returns the rankings to score and the unit used."""
    if k_unit is None:
        spans = [s for ss in spans_by_id.values() for s in ss]
        k_unit = "doc" if spans and all(s.is_document for s in spans) else "chunk"
    if k_unit not in K_UNITS:
        raise ConfigError(f"k unit {k_unit!r}: choose chunk (every chunk is a rank) or doc (distinct documents)")
    if k_unit == "chunk":
        return dict(rankings), k_unit
    out = {}
    for qid, r in rankings.items():
        seen: set[str] = set()
        hits = tuple(h for h in r.hits if not (h.chunk.doc_id in seen or seen.add(h.chunk.doc_id)))
        out[qid] = Ranking(r.query, hits, r.timings, r.searches)
    return out, k_unit
