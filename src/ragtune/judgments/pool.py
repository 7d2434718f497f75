"""Pools: the unjudged sections in the union of several runs' top k, the next things to judge.

TREC's way of judging an incomplete collection: take the top ``depth`` of every run, keep what nobody judged,
and judge those. Here a run is any file the one run reader reads (:func:`~ragtune.evaluate.run.read_rankings`:
an ``eval --json`` result, a sweep's ``runs/<key>.json`` or the whole sweep folder, a TREC run, JSON or JSONL hit
lists from an outside retriever); its hits become corpus spans through the one matcher
(:class:`~ragtune.evaluate.match.HitMatcher`). A hit is judged when it :func:`~ragtune.evaluate.covers` an anchor
with a judgment (relevant, or judged not relevant: ``GoldenItem.judged_anchors``), the same rule ``judged@k``
uses; an unjudged hit is a hole, named by its section anchor (:attr:`Chunk.anchor`). The pool file holds one
JSON line per question::

    {"id": "q1", "q": "...", "depth": 10, "pooled": 7, "judged": 4,
     "holes": [{"anchor": "guide.md#fees", "doc_id": "guide.md", "title": "Guide > Fees",
                "found_by": [{"run": "bm25", "rank": 2}, {"run": "dense", "rank": 5}]}]}

``pooled`` counts the distinct sections in the union of the runs' top ``depth``, ``judged`` those of them a
judgment covers; holes come best rank first. See docs/concepts/judgments.md.

With ``sample`` (``ragtune pool --sample N``) the pool also draws N holes to judge (:mod:`.sample`: stratified by
depth, rank-weighted, reproducible from ``seed``); each line then carries ``"sample": {"n", "seed", "strata"}``
and each hole its best ``rank``, its ``stratum``, its inclusion probability ``pi`` and whether it was
``sampled``: what ``ragtune eval --pool-sample FILE`` estimates the metrics from (:mod:`.estimate`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from ..config import Opt
from ..corpus import load_corpus
from ..corpus.corpus import Corpus
from ..errors import ConfigError, CorpusNotFoundError, UnknownAnchorError
from ..golden import GoldenSet, load_golden
from ..evaluate.evaluate import covers
from ..evaluate.hits import ExternalHit
from ..evaluate.match import HitMatcher, MatchOptions, hits_to_ranking
from ..evaluate.run import read_rankings
from .decide import Decides, decides_from_sweep
from .sample import PoolSample, draw_sample

__all__ = ["Hole", "PoolQuestion", "Pool", "pool_runs", "read_pool_sources", "read_pool_file"]


@dataclass(frozen=True)
class Hole:
    """An unjudged section in the pool: which runs retrieved it, and at which rank (each run's first)."""

    anchor: str
    doc_id: str
    title: str
    found_by: tuple[tuple[str, int], ...]  # (run name, rank)

    @property
    def best_rank(self) -> int:
        return min(r for _, r in self.found_by)

    def to_dict(self) -> dict[str, Any]:
        return {"anchor": self.anchor, "doc_id": self.doc_id, "title": self.title,
                "found_by": [{"run": n, "rank": r} for n, r in self.found_by]}


@dataclass(frozen=True)
class PoolQuestion:
    id: str
    q: str
    pooled: int  # distinct sections in the union of the runs' top depth
    judged: int  # of them, those a judgment covers
    holes: tuple[Hole, ...]

    def to_dict(self, depth: int) -> dict[str, Any]:
        return {"id": self.id, "q": self.q, "depth": depth, "pooled": self.pooled, "judged": self.judged,
                "holes": [h.to_dict() for h in self.holes]}


@dataclass(frozen=True)
class Pool:
    depth: int
    runs: tuple[str, ...]
    questions: tuple[PoolQuestion, ...]
    unmatched: int = 0  # hits in the pooled top depth that match nothing in the corpus (never holes)
    written: str | None = None  # the JSON Lines file pool_runs wrote, if any
    sample: PoolSample | None = None  # the holes drawn to judge (pool_runs(sample=N)), if any
    decides: Decides | None = None  # the holes in the order that decides a sweep's recommendation (order="decides")

    def __str__(self) -> str:
        return self.summary()

    @property
    def holes(self) -> int:
        return sum(len(q.holes) for q in self.questions)

    def to_jsonl(self, path: str | os.PathLike[str]) -> None:
        parent = os.path.dirname(os.fspath(path))
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            for q in self.questions:
                f.write(json.dumps(self._line(q), ensure_ascii=False) + "\n")

    def _line(self, q: PoolQuestion) -> dict[str, Any]:
        line = q.to_dict(self.depth)
        if self.sample is not None:
            drawn = {h.anchor: h for h in self.sample.by_question().get(q.id, [])}
            line["sample"] = self.sample.to_dict()
            for h in line["holes"]:
                s = drawn[h["anchor"]]
                h.update(rank=s.rank, stratum=s.stratum, pi=s.pi, sampled=s.sampled)
        if self.decides is not None:  # the holes that decide first, in that order
            at = {h.anchor: i for i, h in enumerate(self.decides.holes, start=1) if h.question == q.id}
            for h in line["holes"]:
                if h["anchor"] in at:
                    h.update(decides=at[h["anchor"]], before_stop=at[h["anchor"]] <= self.decides.stop)
            line["holes"].sort(key=lambda h: h.get("decides", len(self.decides.holes) + 1))
        return line

    def summary(self) -> str:
        """Pool depth, runs, and per question the sections pooled and the holes; what ``ragtune pool`` prints."""
        pooled = sum(q.pooled for q in self.questions)
        lines = [f"pool depth {self.depth} over {len(self.runs)} run(s) ({', '.join(self.runs)}): "
                 f"{len(self.questions)} questions, {pooled} sections pooled, {self.holes} holes (never judged)"]
        width = max([len(q.id) for q in self.questions] + [2])
        lines += [f"  {q.id:<{width}}  pooled {q.pooled:>3}  judged {q.judged:>3}  holes {len(q.holes):>3}"
                  for q in self.questions]
        if self.sample is not None:
            lines.append(self.sample.summary())
        if self.decides is not None:
            lines.append(str(self.decides))
        if self.unmatched:
            lines.append(f"{self.unmatched} hit(s) matched nothing in the corpus and were left out")
        if self.written is not None:
            lines.append(f"wrote {self.written}: judge the holes, then record them in the golden set (docs/concepts/judgments.md)")
        return "\n".join(lines)


def read_pool_file(path: str | os.PathLike[str]) -> list[tuple[str, list[str]]]:
    """(question id, hole anchors best first) for each line of a pool file ``ragtune pool --out`` wrote; the holes
    of a sample (``--sample N``) that were drawn come first."""
    from ..corpus.loaders import iter_jsonl

    path = Path(path)
    if not path.is_file():
        raise CorpusNotFoundError(f"{path}: no such pool file (`ragtune pool ... --out FILE` writes one)")
    out = []
    for lineno, row in iter_jsonl(path):
        if not isinstance(row, Mapping) or "id" not in row or not isinstance(row.get("holes"), list):
            raise ConfigError(f"{path}:{lineno}: not a pool line (expected {{\"id\", \"q\", \"holes\": [...]}} as "
                              "`ragtune pool` writes)")
        holes = [h for h in row["holes"] if isinstance(h, Mapping) and h.get("anchor")]
        holes.sort(key=lambda h: not h.get("sampled"))  # stable: best rank first within each part
        out.append((str(row["id"]), [str(h["anchor"]) for h in holes]))
    return out


def read_pool_sources(sources: Sequence[str | os.PathLike[str]]) -> dict[str, dict[str, list[ExternalHit]]]:
    """Run name -> question id -> hits, best first, from every source: a run file of any format the one run reader
    reads, or a sweep folder (each ``runs/<key>.json``, named by the configuration's label). Names are made
    unique with ``#2``, ``#3``."""
    out: dict[str, dict[str, list[ExternalHit]]] = {}
    for source in sources:
        p = Path(source)
        if not p.exists():
            raise CorpusNotFoundError(f"{p}: no such run file or sweep folder")
        files = sorted((p / "runs").glob("*.json")) if p.is_dir() else [p]
        if p.is_dir() and not files:
            raise ConfigError(f"{p}: a folder to pool must be a sweep folder with runs/<key>.json files (the "
                              "rankings of each configuration); give run files otherwise")
        for f in files:
            name = _label(f) if p.is_dir() else f.stem
            unique, n = name, 1
            while unique in out:
                n += 1
                unique = f"{name}#{n}"
            out[unique] = read_rankings(f)
    if not out:
        raise ConfigError("no runs to pool: give run files (eval --json results, TREC runs, hit lists) or sweep folders")
    return out


def _label(f: Path) -> str:
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f.stem
    return str(data.get("label") or f.stem) if isinstance(data, Mapping) else f.stem


def pool_runs(
    sources: Annotated[Sequence[str | os.PathLike[str]], Opt("run files (eval --json, TREC, hit lists) or sweep "
                                                                 "folders", flag="SOURCES")],
    golden: Annotated[GoldenSet | str | os.PathLike[str], Opt("golden set (.jsonl, .yaml) or a BEIR folder with "
                                                                  "--split")],
    corpus: Annotated[Corpus | str | os.PathLike[str], Opt("a folder of documents (any format ragtune reads), a "
                                                           "BEIR folder or corpus.jsonl")],
    *,
    split: Annotated[str | None, Opt("BEIR qrels split (e.g. test)")] = None,
    depth: Annotated[int, Opt("the top K of every run that is pooled", lo=1, metavar="K")] = 10,
    out: Annotated[str | None, Opt("write the pool as JSON Lines to FILE", metavar="FILE")] = None,
    options: MatchOptions | Mapping[str, Any] | None = None,
    sample: Annotated[int | None, Opt("also draw N holes to judge, with known inclusion probabilities (stratified "
                                      "by depth, rank-weighted), written into the pool file", lo=1,
                                      metavar="N")] = None,
    seed: Annotated[int, Opt("seed of the --sample draw (the same seed draws the same holes)")] = 0,
    order: Annotated[Literal["rank", "decides"], Opt(
        "rank: holes best rank first; decides: by how much each hole's grade could change the recommendation of the "
        "sweep folder among the sources (recommended vs runner-up), with the line after which judging can stop")] = "rank",
) -> Pool:
    """Pool the top ``depth`` of every run in ``sources`` (see :func:`read_pool_sources`): per golden question,
    the sections nobody judged, with which runs found each and at which rank. ``golden`` and ``corpus`` are
    loaded when given as paths; ``options`` say how the runs' hits match the corpus
    (:class:`~ragtune.evaluate.match.MatchOptions`); ``out`` writes the pool as JSON Lines. ``sample`` draws that
    many holes to judge (:func:`~ragtune.judgments.sample.draw_sample`, reproducible from ``seed``). ``order``
    ``"decides"`` orders the holes by how much they could change the recommendation of the sweep folder among
    ``sources`` (:func:`~ragtune.judgments.decide.decides_from_sweep`), with the stop line."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ConfigError(f"pool depth must be a whole number >= 1 (the top k of each run), got {depth!r}")
    if not isinstance(golden, GoldenSet):
        golden = load_golden(golden, split=split)
    if not isinstance(corpus, Corpus):
        corpus = load_corpus(corpus)
    runs = read_pool_sources(sources)
    matchers = {name: HitMatcher(corpus, options=options) for name in runs}
    questions = []
    unmatched = 0
    for item in golden:
        try:
            judged = [corpus.resolve(a) for a in item.judged_anchors]
        except UnknownAnchorError as e:
            raise UnknownAnchorError(f"question {item.id!r}: {e}; run `ragtune golden check`") from None
        pooled: set[str] = set()
        judged_anchors: set[str] = set()
        holes: dict[str, dict[str, int]] = {}  # anchor -> run -> first rank
        docs: dict[str, str] = {}
        for name, by_question in runs.items():
            ranking = hits_to_ranking(item.q, by_question.get(item.id, [])[:depth], depth, matchers[name],
                                      question=item.id)
            for rank, hit in enumerate(ranking.hits, start=1):
                chunk = hit.chunk
                if not chunk.doc_id:
                    unmatched += 1
                    continue
                anchor = chunk.anchor
                pooled.add(anchor)
                if any(covers(chunk, s) for s in judged):
                    judged_anchors.add(anchor)
                    continue
                holes.setdefault(anchor, {}).setdefault(name, rank)
                docs[anchor] = chunk.doc_id
        found = [Hole(a, docs[a], _title(corpus, a), tuple(by.items())) for a, by in holes.items()]
        found.sort(key=lambda h: (h.best_rank, -len(h.found_by), h.anchor))
        questions.append(PoolQuestion(item.id, item.q, len(pooled), len(judged_anchors & pooled), tuple(found)))
    drawn = None if sample is None else draw_sample(
        {q.id: [(h.anchor, h.best_rank, len(h.found_by)) for h in q.holes] for q in questions}, sample, seed=seed)
    decides = None
    if order == "decides":
        sweeps = [s for s in sources if (Path(s) / "results.json").is_file()]
        if not sweeps:
            raise ConfigError("order 'decides' needs a sweep folder among the sources (`ragtune sweep --out DIR` "
                              "writes one): the holes are ordered by how much they could change its recommendation")
        decides = decides_from_sweep(sweeps[0])
    pool = Pool(depth, tuple(runs), tuple(questions), unmatched, None if out is None else str(out), drawn, decides)
    if out is not None:
        pool.to_jsonl(out)
    return pool


def _title(corpus: Corpus, anchor: str) -> str:
    try:
        span = corpus.resolve(anchor)
    except UnknownAnchorError:
        return ""
    if span.section is None:
        return corpus[span.doc_id].title
    return " > ".join(span.section.heading_path)  # ends with the section's own title
