"""``Run``: one system's per-question rankings and scores, the input of :func:`ragtune.compare`.

A run is made from

- an evaluation result: :meth:`Run.from_result` takes an :class:`EvalResult`
  or the dict of ``EvalResult.to_dict()`` (an ``eval --json`` file);
- a sweep: :func:`load_runs` on a sweep folder or its ``results.json`` gives
  one run per configuration, named by its label;
- a run file, in any format ``eval --run`` reads (a TREC run, ranx JSON, JSON Lines or JSON hit lists, an
  ``eval --json`` result's ``retrieved`` lists): :meth:`Run.from_file` reads it through the table of input formats
  (:func:`ragtune.evaluate.formats.read_run`), matches its hits with the one matcher (:class:`~ragtune.evaluate.match.HitMatcher`)
  and scores them with the metric functions of ``evaluate``; ``eval --run``, ``compare`` and the CI gate all
  read run files this way, so one file gives one set of figures.

Only answerable questions carry scores; they are the questions compared.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from ..io import some
from ..errors import ConfigError, CorpusNotFoundError
from ..io import check_regular_file
from .evaluate import DEFAULT_KS, EvalResult
from .formats import RunFile, _eval_questions, _ranx_hits, _short, read_rankings, read_run, read_trec
from .hits import ExternalHit
from .match import HitMatcher, MatchOptions, hits_to_ranking, score_matched, searches_to_ranking
from ..types import Ranking

__all__ = ["Run", "load_run", "load_runs", "read_trec", "read_rankings", "score_run_file", "PARTIAL"]

PARTIAL = ("evidence",)
"""Metrics scored only for the questions they apply to (``evidence@k``: questions with evidence groups)."""



@dataclass(frozen=True)
class Run:
    """One system's results on a golden set, question by question.

    ``scores`` maps each answerable question id to its metric values
    (``{"recall@10": 1.0, "mrr": 0.5, ...}``); ``first_hit_ranks`` the
    1-based rank of its first relevant result (``None`` if none was
    retrieved); ``rankings`` the retrieved ids in order, where known (an
    eval result keeps the top ``max(ks)`` anchors, a sweep's results.json
    keeps none). ``ks`` are the cut-offs the run was scored at; ``meta`` holds
    where it came from (for a sweep configuration: ``key`` and
    ``sweep_baseline``, true for the sweep's baseline, ``sweep_recommended``, true for the configuration it
    recommends, and ``sweep``, its results.json).
    """

    name: str
    scores: Mapping[str, Mapping[str, float]]
    first_hit_ranks: Mapping[str, int | None] = field(default_factory=dict)
    rankings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    ks: tuple[int, ...] = DEFAULT_KS
    source: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigError(f"a run needs a non-empty name, got {self.name!r}")
        scores = {str(q): MappingProxyType({str(m): float("nan") if v is None else float(v) for m, v in s.items()})
                  for q, s in self.scores.items()}
        ranks = {q: self.first_hit_ranks.get(q) for q in scores}
        object.__setattr__(self, "scores", MappingProxyType(scores))
        object.__setattr__(self, "first_hit_ranks", MappingProxyType(ranks))
        object.__setattr__(self, "rankings", MappingProxyType({str(q): tuple(r) for q, r in self.rankings.items()}))
        object.__setattr__(self, "ks", tuple(sorted({int(k) for k in self.ks})) or DEFAULT_KS)
        object.__setattr__(self, "meta", MappingProxyType(dict(self.meta)))

    @property
    def question_ids(self) -> tuple[str, ...]:
        """The answerable questions, sorted."""
        return tuple(sorted(self.scores))

    @property
    def metrics(self) -> tuple[str, ...]:
        """Every metric some question has a value for, sorted."""
        return tuple(sorted({m for s in self.scores.values() for m in s}))

    def values(self, metric: str) -> dict[str, float]:
        """Per-question values of ``metric``; a metric the run lacks is a :class:`ConfigError`. A metric some
        questions have and others lack by design (``evidence@k``: only questions with evidence groups) gives the
        questions that have it."""
        partial = metric.partition("@")[0] in PARTIAL
        out = {}
        for q, s in self.scores.items():
            if metric not in s:
                if partial:
                    continue
                raise ConfigError(f"metric {metric!r} is not in the results of run {self.name!r} (have: "
                                  f"{', '.join(sorted(s)) or 'none'}); pick one of those, or re-evaluate with the "
                                  "k it needs")
            out[q] = s[metric]
        if partial and not out:
            raise ConfigError(f"metric {metric!r} is not in the results of run {self.name!r}: no question has "
                              "evidence groups (golden items with \"evidence\")")
        return out

    def mean(self, metric: str) -> float:
        v = list(self.values(metric).values())
        return float(np.mean(v)) if v else float("nan")

    def renamed(self, name: str) -> Run:
        return replace(self, name=name)

    # -- ranx ------------------------------------------------------------------

    def to_ranx(self) -> Any:
        """This run's rankings as a ``ranx.Run`` named after it: each id once (its best rank), scores
        decreasing with rank. Needs ``pip install ranx``; a run without rankings (a sweep's results.json)
        is a :class:`ConfigError`."""
        ranx = _import_ranx()
        if not self.rankings:
            raise ConfigError(f"run {self.name!r} keeps no rankings (a sweep's results.json has only scores); "
                              "make the ranx run from an eval result or a TREC file")
        docs = {q: list(dict.fromkeys(r)) for q, r in self.rankings.items()}
        return ranx.Run.from_dict({q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in docs.items()},
                                  name=self.name)

    # -- loaders ---------------------------------------------------------------

    @classmethod
    def from_result(cls, result: Any, *, name: str = "run", source: str | None = None,
                    meta: Mapping[str, Any] | None = None) -> Run:
        """A run from an :class:`EvalResult` or its ``to_dict()`` (a sweep record's ``result`` too)."""
        if hasattr(result, "to_dict") and not isinstance(result, Mapping):
            result = result.to_dict()
        if not isinstance(result, Mapping) or not isinstance(result.get("questions"), list):
            raise ConfigError(f"{source or name}: not an evaluation result (expected a 'questions' list, as "
                              "written by `ragtune eval --json`)")
        seen: set[str] = set()
        dupes: set[str] = set()
        scores: dict[str, Mapping[str, Any]] = {}
        ranks: dict[str, int | None] = {}
        rankings: dict[str, tuple[str, ...]] = {}
        where = source or name
        for n, q, qid in _eval_questions(result["questions"], where, "an 'id'"):
            (dupes if qid in seen else seen).add(qid)
            if not q.get("answerable", True):
                continue
            scores[qid] = _scores_of(q.get("scores"), f"{where}: question {qid!r}")
            rank = q.get("first_hit_rank")
            if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
                raise ConfigError(f"{where}: question {qid!r}: 'first_hit_rank' must be a rank (an integer >= 1) or "
                                  f"null, got {_short(rank)}")
            ranks[qid] = rank
            retrieved = q.get("retrieved")
            if retrieved is not None and not (isinstance(retrieved, list) and
                                              all(isinstance(h, Mapping) for h in retrieved)):
                raise ConfigError(f"{where}: question {qid!r}: 'retrieved' must be a list of hit objects (anchor, "
                                  f"doc_id, start, end, score), got {_short(retrieved)}")
            if retrieved:
                rankings[qid] = tuple(str(h.get("anchor") or h.get("chunk_id")) for h in retrieved)
        if dupes:
            raise ConfigError(f"{where}: duplicate question id(s) {some(dupes, quote=True)}; every question must "
                              "appear once (fix the golden set with `ragtune golden check`)")
        ks = (result.get("config") or {}).get("ks") if isinstance(result.get("config"), Mapping) else None
        if ks is not None and not (isinstance(ks, list) and ks and
                                   all(isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in ks)):
            raise ConfigError(f"{where}: 'config.ks' must be a list of positive integers, got {_short(ks)}")
        return cls(name, scores, ranks, rankings, tuple(ks or DEFAULT_KS), source, meta or {})

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], golden: Any, *, corpus: Any = None, name: str | None = None,
                  ks: Sequence[int] = DEFAULT_KS, options: MatchOptions | Mapping[str, Any] | None = None,
                  field: str | None = None, **match: Any) -> Run:
        """The run in a run file (any format of :func:`read_rankings`: TREC, ranx JSON, JSONL hits, a
        ``{question id: [hits]}`` object, an ``eval --json`` result), scored against ``golden``.

        Hits are matched by the one matcher (:class:`~ragtune.evaluate.match.HitMatcher`; ``options`` or the
        keywords ``base_url``, ``path_prefix``, ``fuzzy``, ``anchor_span``, ``doc_hits``) and scored as
        :func:`score_run_file` scores them, so the run's figures are those ``eval --run`` prints. An eval result
        is the exception: it already holds its scores, which are kept (``Run.from_result``), as ``compare`` and
        the gate read it. The name is the run's tag when a TREC file has one, else the file's stem.
        """
        source = str(path)
        data = _eval_result_or_none(Path(path))
        if data is not None:
            return cls.from_result(data, name=name or Path(path).stem, source=source)
        parsed = _by_golden_id(read_run(path, field=field), golden, source)
        result = _score_parsed(parsed, golden, corpus, ks=_with_default_ks(ks), options=MatchOptions.of(options, **match),
                               source=source)
        label = name or parsed.tag or Path(path).stem
        return _from_scored(result, label, source, parsed.hits)

    @classmethod
    def from_trec(cls, path: str | os.PathLike[str], golden: Any, *, corpus: Any = None, name: str | None = None,
                  ks: Sequence[int] = DEFAULT_KS, **match: Any) -> Run:
        """A TREC run file (``qid Q0 docid rank score tag``) scored against ``golden``: :meth:`from_file`, which
        reads every run format. Hits are ordered by score, highest first, ties by doc id descending (as trec_eval
        does; the rank column is ignored)."""
        return cls.from_file(path, golden, corpus=corpus, name=name, ks=ks, **match)

    @classmethod
    def from_ranx(cls, run: Any, golden: Any, *, corpus: Any = None, name: str | None = None,
                  ks: Sequence[int] = DEFAULT_KS, **match: Any) -> Run:
        """Score a ``ranx.Run`` against ``golden`` exactly as :meth:`from_file` scores the same rankings in a file
        (score descending, ties by doc id descending; ``corpus`` lets document ids and sections match)."""
        if not hasattr(run, "to_dict"):
            raise ConfigError(f"from_ranx takes a ranx.Run, got {type(run).__name__}")
        label = name or getattr(run, "name", None) or "ranx"
        source = f"ranx run {label!r}"
        parsed = RunFile(_ranx_hits(run.to_dict(), source), "ranx", None)
        result = _score_parsed(parsed, golden, corpus, ks=_with_default_ks(ks), options=MatchOptions.of(None, **match),
                               source=source)
        return _from_scored(result, label, source, parsed.hits)


def _with_default_ks(ks: Sequence[int]) -> tuple[int, ...]:
    """A run is scored at the default cut-offs too, so the metrics compare and the gate default to are there."""
    return tuple(sorted(set(DEFAULT_KS) | {int(k) for k in ks}))


def _scores_of(scores: Any, where: str) -> dict[str, float | None]:
    """A question's recorded scores: metric name -> number (null or NaN: undefined)."""
    if scores is None:
        return {}
    if not isinstance(scores, Mapping):
        raise ConfigError(f"{where}: 'scores' must be an object of metric -> number, got {_short(scores)}")
    for m, v in scores.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise ConfigError(f"{where}: score {m!r} must be a number or null, got {type(v).__name__} {_short(v)}")
    return dict(scores)


def _import_ranx() -> Any:
    try:
        import ranx
    except ImportError:
        from ..errors import MissingDependencyError

        raise MissingDependencyError("ranx interop needs ranx: pip install ranx") from None
    return ranx


def score_run_file(path: str | os.PathLike[str], golden: Any, *, corpus: Any = None, ks: Sequence[int] = DEFAULT_KS,
                   options: MatchOptions | Mapping[str, Any] | None = None, field: str | None = None,
                   **match: Any) -> EvalResult:
    """Score the rankings in a run file (any format of :func:`read_rankings`) against ``golden``, as
    :func:`ragtune.evaluate` scores a retriever's: what ``eval --run`` prints.

    Hits are matched by :class:`~ragtune.evaluate.match.HitMatcher` (``options``, or its keywords
    ``base_url``, ``path_prefix``, ``fuzzy``, ``min_similarity``, ``anchor_span``, ``doc_hits``); without
    ``corpus`` a hit must equal a golden anchor. Golden questions missing from the file score as if nothing was
    retrieved; question ids the golden set lacks are skipped and listed (``matching.questions_not_in_golden``),
    as trec_eval skips them, but a run none of whose questions is in the golden set is an error, and so is one
    none of whose hits matches.
    """
    return _score_parsed(read_run(path, field=field), golden, corpus, ks=ks, options=MatchOptions.of(options, **match),
                         source=str(path))


def _score_parsed(parsed: RunFile, golden: Any, corpus: Any, *, ks: Sequence[int], options: MatchOptions,
                  source: str) -> EvalResult:
    if golden is None:
        raise ConfigError(f"{source}: a run file is scored against a golden set; pass golden= (CLI: --golden FILE)")
    matcher = HitMatcher(corpus, options=options)
    by_id = {i.id: i for i in golden}
    parsed = _by_golden_id(parsed, golden, source)
    unjudged = sorted(set(parsed.hits) - set(by_id))
    if parsed.hits and len(unjudged) == len(parsed.hits):
        raise ConfigError(f"{source}: none of the run's {len(parsed.hits)} question id(s) is in the golden set "
                          f"({some(unjudged, quote=True)}); score the run against the golden set it was made for")
    matcher.detect_raw(h for qid, hits in parsed.hits.items() if qid in by_id for h in hits)
    rankings = {qid: _ranking(parsed, qid, by_id[qid].q, matcher) for qid in parsed.hits if qid in by_id}
    extra = {"format": parsed.format, **({"questions_not_in_golden": unjudged} if unjudged else {})}
    result = score_matched(rankings, golden, matcher, ks=ks, config={"run": source, "golden": getattr(golden, "source", None)}, matching=extra)
    if matcher.report.total and not matcher.report.matched:
        hint = ("pass the corpus (corpus=, CLI: --corpus) if the run names documents or sections"
                if corpus is None else "is it the corpus the run was made from?")
        raise ConfigError(f"{source}: no hit in the run matches the golden set's anchors or the corpus; {hint}")
    if corpus is None and matcher.report.total and any(by_id[q].relevant for q in rankings):
        if not any(h.chunk.doc_id in by_id[q].relevant for q, r in rankings.items() for h in r.hits):
            raise ConfigError(f"{source}: no doc id in the run is an anchor of the golden set; if the run names "
                              "documents or sections of a corpus, pass corpus= (CLI: --corpus)")
    return result


def _ranking(parsed: RunFile, qid: str, question: str, matcher: HitMatcher) -> Ranking:
    """One question's ranking: its hits matched, or for a trace each search matched (hits as outside hits are)
    and merged as :meth:`Ranking.from_searches` merges them."""
    seconds = parsed.seconds.get(qid)  # the time a trace recorded (span durations), else none
    if qid not in parsed.searches:
        hits = parsed.hits[qid]
        return hits_to_ranking(question, hits, len(hits), matcher, question=qid, seconds=seconds)
    searches = parsed.searches[qid]
    return searches_to_ranking(question, searches, max([len(h) for _, h in searches] + [1]), matcher, qid=qid,
                               seconds=seconds)


def _by_golden_id(parsed: RunFile, golden: Any, source: str) -> RunFile:
    """``parsed`` keyed by golden ids: a key that is no golden id but whose question text (``parsed.questions``, a
    trace naming questions by text) is a golden question's text is renamed to that question's id."""
    if not parsed.questions or golden is None:
        return parsed
    ids = {i.id for i in golden}
    by_text: dict[str, str] = {}
    for i in golden:
        by_text.setdefault(_norm(i.q), i.id)
    rename = {}
    for key, text in parsed.questions.items():
        if key not in ids and _norm(text) in by_text:
            rename[key] = by_text[_norm(text)]
    if not rename:
        return parsed
    taken = [k for k in rename.values() if k in parsed.hits or list(rename.values()).count(k) > 1]
    if taken:
        raise ConfigError(f"{source}: question {taken[0]!r} is given twice (by its id or its text); give each "
                          "question one line")
    key = lambda k: rename.get(k, k)  # noqa: E731
    return replace(parsed, hits={key(k): v for k, v in parsed.hits.items()},
                   searches={key(k): v for k, v in parsed.searches.items()},
                   questions={key(k): v for k, v in parsed.questions.items()},
                   seconds={key(k): v for k, v in parsed.seconds.items()})


def _norm(text: str) -> str:
    return " ".join(str(text).split()).casefold()


def _from_scored(result: EvalResult, name: str, source: str, hits: Mapping[str, list[ExternalHit]]) -> Run:
    run = Run.from_result(result, name=name, source=source, meta={"matching": dict(result.matching)})
    judged = {q.id for q in result.questions}
    rankings = {q: tuple(h.describe() for h in hs) for q, hs in hits.items() if q in judged}
    return replace(run, rankings=rankings)


def _read_json(p: Path) -> Any:
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ConfigError(f"{p}: cannot read JSON ({e})") from None


def _sweep_runs(p: Path, data: Mapping[str, Any], config: str | None) -> list[Run]:
    configs = data["configs"]
    if config is not None:
        configs = [c for c in configs if c.get("key") == config]
        if not configs:
            raise ConfigError(f"{p}: no configuration {config!r}; keys: {', '.join(c['key'] for c in data['configs'])}")
    runs = []
    for c in configs:
        meta = {"key": c["key"], "sweep_baseline": c["key"] == data.get("baseline"), "sweep": str(p),
                "sweep_recommended": c["key"] == (data.get("recommended") or {}).get("key")}
        questions = c.get("questions")
        run_file = p.parent / "runs" / f"{c['key']}.json"
        if questions is None and run_file.exists():
            runs.append(Run.from_result(_read_json(run_file)["result"], name=c["label"], source=str(run_file),
                                        meta=meta))
            continue
        if questions is None:
            raise ConfigError(f"{p}: configuration {c['key']!r} has no per-question scores and {run_file} is missing")
        result = {"questions": [{"answerable": True, **q} for q in questions], "config": {"ks": data.get("ks")}}
        runs.append(Run.from_result(result, name=c["label"], source=f"{p}#{c['key']}", meta=meta))
    return runs


def _eval_result_or_none(p: Path) -> Mapping[str, Any] | None:
    """The JSON object at ``p`` when it is an eval result with its scores (``questions`` and ``metrics``), else
    None (another run format, read by :func:`read_rankings`)."""
    if not p.exists():
        raise CorpusNotFoundError(f"{p}: no such file or folder")
    check_regular_file(p, "run file")
    data = _json_object_or_none(p)
    return data if data is not None and isinstance(data.get("questions"), list) and "metrics" in data else None


def load_runs(path: str | os.PathLike[str], *, golden: Any = None, corpus: Any = None, name: str | None = None,
              config: str | None = None, ks: Sequence[int] = DEFAULT_KS,
              options: MatchOptions | Mapping[str, Any] | None = None) -> list[Run]:
    """Every run in ``path``: an eval JSON (one run with its own scores, named after the file), a sweep folder or
    its results.json (one run per configuration, named by label; ``config`` keeps one key), a sweep
    ``runs/<key>.json`` file, or a run file in any format ``eval --run`` reads (TREC, ranx JSON, JSONL or JSON
    hit lists: :meth:`Run.from_file`, which needs ``golden``, and ``corpus`` when hits are not golden anchors;
    ``options`` say how hits match). ``name`` renames a single run."""
    p = Path(path)
    if p.is_dir():
        if not (p / "results.json").is_file():
            raise CorpusNotFoundError(f"{p}: a folder must be a sweep output folder holding results.json")
        p = p / "results.json"
    if not p.exists():
        raise CorpusNotFoundError(f"{p}: no such file or folder")
    check_regular_file(p, "run file")
    data = _json_object_or_none(p)
    is_sweep = False
    if data is None or not ({"questions", "configs"} & set(data) or {"result", "spec"} <= set(data)):
        runs = [Run.from_file(p, golden, corpus=corpus, ks=ks, options=options)]
    elif "questions" in data and "metrics" in data:  # eval --json
        runs = [Run.from_result(data, name=p.stem, source=str(p))]
    elif "result" in data and "spec" in data:  # one sweep run
        runs = [Run.from_result(data["result"], name=data.get("label") or p.stem, source=str(p),
                                meta={"key": data.get("key")})]
    elif "configs" in data:  # sweep results.json
        runs = _sweep_runs(p, data, config)
        is_sweep = True
    else:  # an eval result without scores: its retrieved lists are a run
        runs = [Run.from_file(p, golden, corpus=corpus, ks=ks, options=options)]
    if config is not None and not is_sweep:
        raise ConfigError(f"{p}: config= picks a configuration of a sweep, but this is not a sweep's results.json")
    if name is not None:
        if len(runs) != 1:
            raise ConfigError(f"{p}: name= renames one run, but this sweep has {len(runs)}; pick one with config=KEY")
        runs = [runs[0].renamed(name)]
    return runs


def _json_object_or_none(p: Path) -> dict[str, Any] | None:
    with open(p, "rb") as f:
        head = f.read(64).lstrip()
    if not head.startswith(b"{") or p.suffix.lower() == ".jsonl":
        return None
    try:
        data = json.loads(p.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def load_run(path: str | os.PathLike[str], *, golden: Any = None, corpus: Any = None, name: str | None = None,
             config: str | None = None, ks: Sequence[int] = DEFAULT_KS,
             options: MatchOptions | Mapping[str, Any] | None = None) -> Run:
    """One run from ``path`` (see :func:`load_runs`); for a sweep, the configuration it recommends (results.json
    ``recommended``: the selection rule's choice, or the baseline when nothing is significantly better; the
    top-ranked row for a results.json written before sweeps recommended one) unless ``config`` names another."""
    runs = load_runs(path, golden=golden, corpus=corpus, config=config, ks=ks, options=options)
    run = next((r for r in runs if r.meta.get("sweep_recommended")), runs[0])
    return run.renamed(name) if name is not None else run
