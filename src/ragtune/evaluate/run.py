"""``Run``: one system's per-question rankings and scores, the input of :func:`ragtune.compare`.

A run is made from

- an evaluation result: :meth:`Run.from_result` takes an :class:`EvalResult`
  or the dict of ``EvalResult.to_dict()`` (an ``eval --json`` file);
- a sweep: :func:`load_runs` on a sweep folder or its ``results.json`` gives
  one run per configuration, named by its label;
- a TREC run file (``qid Q0 docid rank score tag``): :meth:`Run.from_trec`
  scores it against a golden set with the same metric functions as ``evaluate``.

Only answerable questions carry scores; they are the questions compared.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import ConfigError, CorpusNotFoundError, UnknownAnchorError
from .evaluate import DEFAULT_KS, Judgement, score_judgement

__all__ = ["Run", "load_run", "load_runs", "read_trec"]


def _few(ids: Iterable[str], n: int = 5) -> str:
    ids = sorted(ids)
    more = f" and {len(ids) - n} more" if len(ids) > n else ""
    return ", ".join(map(repr, ids[:n])) + more


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
    ``sweep_baseline``, true for the sweep's baseline).
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
        """Per-question values of ``metric``; a metric the run lacks is a :class:`ConfigError`."""
        out = {}
        for q, s in self.scores.items():
            if metric not in s:
                raise ConfigError(f"metric {metric!r} is not in the results of run {self.name!r} (have: "
                                  f"{', '.join(sorted(s)) or 'none'}); pick one of those, or re-evaluate with the "
                                  "k it needs")
            out[q] = s[metric]
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

    @classmethod
    def from_ranx(cls, run: Any, golden: Any, *, corpus: Any = None, name: str | None = None,
                  ks: Sequence[int] = DEFAULT_KS) -> Run:
        """Score a ``ranx.Run`` against ``golden`` exactly as :meth:`from_trec` scores a TREC file
        (score descending, ties by doc id descending; ``corpus`` lets document ids and sections match)."""
        if not hasattr(run, "to_dict"):
            raise ConfigError(f"from_ranx takes a ranx.Run, got {type(run).__name__}")
        rows = {str(q): [(str(d), 0, float(s), "ranx") for d, s in docs.items()] for q, docs in run.to_dict().items()}
        label = name or getattr(run, "name", None) or "ranx"
        return _score_trec(rows, golden, corpus, name=label, ks=ks, source=f"ranx run {label!r}")

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
        for q in result["questions"]:
            qid = str(q["id"])
            (dupes if qid in seen else seen).add(qid)
            if not q.get("answerable", True):
                continue
            scores[qid] = q.get("scores") or {}
            ranks[qid] = q.get("first_hit_rank")
            if q.get("retrieved"):
                rankings[qid] = tuple(str(h.get("anchor") or h.get("chunk_id")) for h in q["retrieved"])
        if dupes:
            raise ConfigError(f"{source or name}: duplicate question id(s) {_few(dupes)}; every question must "
                              "appear once (fix the golden set with `ragtune golden check`)")
        ks = (result.get("config") or {}).get("ks") or DEFAULT_KS
        return cls(name, scores, ranks, rankings, tuple(ks), source, meta or {})

    @classmethod
    def from_trec(cls, path: str | os.PathLike[str], golden: Any, *, corpus: Any = None, name: str | None = None,
                  ks: Sequence[int] = DEFAULT_KS) -> Run:
        """Score a TREC run file (``qid Q0 docid rank score tag``) against ``golden``.

        Hits are ordered by score, highest first, ties by doc id descending (as
        trec_eval does; the rank column is ignored). A doc id that is one of the
        question's golden anchors matches it directly; with a ``corpus``, any doc id
        that resolves (``doc`` or ``doc#section``) covers the relevant anchors it
        overlaps, as a chunk does in ``evaluate``. Golden questions missing from the
        file score 0; unanswerable ones are not scored; a question id the golden
        set lacks, or a doc id listed twice for a question, is an error.
        """
        rows = read_trec(path)
        tags = {r[3] for hits in rows.values() for r in hits}
        name = name or (next(iter(tags)) if len(tags) == 1 else Path(path).stem)
        return _score_trec(rows, golden, corpus, name=name, ks=ks, source=str(path))


def _import_ranx() -> Any:
    try:
        import ranx
    except ImportError:
        from ..errors import MissingDependencyError

        raise MissingDependencyError("ranx interop needs ranx: pip install ranx") from None
    return ranx


def read_trec(path: str | os.PathLike[str]) -> dict[str, list[tuple[str, int, float, str]]]:
    """TREC run rows by question id: ``[(docid, rank, score, tag), ...]`` in file order."""
    p = Path(path)
    if not p.is_file():
        raise CorpusNotFoundError(f"{p}: no such run file")
    out: dict[str, list[tuple[str, int, float, str]]] = {}
    with open(p, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                raise ConfigError(f"{p} line {n}: expected 6 columns `qid Q0 docid rank score tag`, got "
                                  f"{len(parts)}; is this a TREC run file?")
            qid, _, docid, rank, score, tag = parts
            try:
                out.setdefault(qid, []).append((docid, int(rank), float(score), tag))
            except ValueError:
                raise ConfigError(f"{p} line {n}: rank must be an integer and score a number, got "
                                  f"{rank!r} and {score!r}") from None
    if not out:
        raise ConfigError(f"{p}: the run file is empty")
    return out


def _covers(hit, span) -> bool:
    if hit.doc_id != span.doc_id:
        return False
    if span.section is None:
        return True
    return hit.start < span.end and max(hit.end, hit.start + 1) > span.start


def _score_trec(rows: Mapping[str, list[tuple[str, int, float, str]]], golden: Any, corpus: Any, *, name: str,
                ks: Sequence[int], source: str) -> Run:
    if golden is None:
        raise ConfigError(f"{source}: a TREC run is scored against a golden set; pass golden= (CLI: --golden FILE)")
    items = {item.id: item for item in golden}
    unknown = set(rows) - set(items)
    if unknown:
        raise ConfigError(f"{source}: {len(unknown)} question id(s) are not in the golden set: {_few(unknown)}; "
                          "score the run against the golden set it was made for")
    ks = tuple(sorted(set(DEFAULT_KS) | {int(k) for k in ks}))
    resolved: dict[str, Any] = {}

    def resolve(anchor: str):
        if anchor not in resolved:
            try:
                resolved[anchor] = corpus.resolve(anchor)
            except UnknownAnchorError:
                resolved[anchor] = None
        return resolved[anchor]

    scores: dict[str, dict[str, float]] = {}
    ranks: dict[str, int | None] = {}
    rankings: dict[str, tuple[str, ...]] = {}
    matched = 0
    for item in golden:
        hits = rows.get(item.id, [])
        docids = [h[0] for h in hits]
        if len(set(docids)) != len(docids):
            twice = {d for d in docids if docids.count(d) > 1}
            raise ConfigError(f"{source}: question {item.id!r} lists doc id(s) {_few(twice)} more than once")
        ordered = [h[0] for h in sorted(hits, key=lambda h: (-h[2], _desc(h[0])))]
        rankings[item.id] = tuple(ordered)
        if not item.answerable:
            continue
        anchors = list(item.relevant)
        spans = None
        if corpus is not None:
            spans = []
            for a in anchors:
                span = resolve(a)
                if span is None:
                    raise UnknownAnchorError(f"question {item.id!r}: unknown anchor {a!r}; run `ragtune golden "
                                             "check` to list every problem")
                spans.append(span)
        first = np.full(len(anchors), np.inf)
        rank_hits = np.zeros(len(ordered), dtype=bool)
        for r, docid in enumerate(ordered, start=1):
            hit_span = resolve(docid) if corpus is not None and docid not in item.relevant else None
            if docid in item.relevant or hit_span is not None:
                matched += 1
            for i, a in enumerate(anchors):
                if docid == a or (hit_span is not None and _covers(hit_span, spans[i])):
                    rank_hits[r - 1] = True
                    if first[i] == np.inf:
                        first[i] = r
        j = Judgement(first, np.asarray(list(item.relevant.values()), dtype=np.float64), rank_hits)
        scores[item.id] = score_judgement(j, ks)
        ranks[item.id] = j.first_hit_rank
    if matched == 0 and any(rows.values()):
        if corpus is None:
            raise ConfigError(f"{source}: no doc id in the run is an anchor of the golden set; if the run names "
                              "documents or sections of a corpus, pass corpus= (CLI: --corpus)")
        raise ConfigError(f"{source}: no doc id in the run names a document or section of the corpus; is it "
                          "the corpus the run was made from?")
    return Run(name, scores, ranks, rankings, ks, source)


class _desc(str):
    """Sorts strings in descending order (trec_eval's tie-break on doc id)."""

    def __lt__(self, other: str) -> bool:  # type: ignore[override]
        return str.__gt__(self, other)


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
        meta = {"key": c["key"], "sweep_baseline": c["key"] == data.get("baseline")}
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


def load_runs(path: str | os.PathLike[str], *, golden: Any = None, corpus: Any = None, name: str | None = None,
              config: str | None = None, ks: Sequence[int] = DEFAULT_KS) -> list[Run]:
    """Every run in ``path``: an eval JSON (one run, named after the file), a sweep folder or its
    results.json (one run per configuration, named by label; ``config`` keeps one key), a sweep
    ``runs/<key>.json`` file, or a TREC run file (needs ``golden``, and ``corpus`` when hits are not
    golden anchors). ``name`` renames a single run."""
    p = Path(path)
    if p.is_dir():
        if not (p / "results.json").is_file():
            raise CorpusNotFoundError(f"{p}: a folder must be a sweep output folder holding results.json")
        p = p / "results.json"
    if not p.exists():
        raise CorpusNotFoundError(f"{p}: no such file or folder")
    with open(p, "rb") as f:
        head = f.read(64).lstrip()
    is_sweep = False
    if not head.startswith((b"{", b"[")):
        runs = [Run.from_trec(p, golden, corpus=corpus, ks=ks)]
    else:
        data = _read_json(p)
        if not isinstance(data, Mapping):
            raise ConfigError(f"{p}: not an eval or sweep result (expected a JSON object)")
        if "questions" in data and "metrics" in data:  # eval --json
            runs = [Run.from_result(data, name=p.stem, source=str(p))]
        elif "result" in data and "spec" in data:  # one sweep run
            runs = [Run.from_result(data["result"], name=data.get("label") or p.stem, source=str(p),
                                    meta={"key": data.get("key")})]
        elif "configs" in data:  # sweep results.json
            runs = _sweep_runs(p, data, config)
            is_sweep = True
        else:
            raise ConfigError(f"{p}: not an eval result, sweep results.json, sweep run file or TREC run")
    if config is not None and not is_sweep:
        raise ConfigError(f"{p}: config= picks a configuration of a sweep, but this is not a sweep's results.json")
    if name is not None:
        if len(runs) != 1:
            raise ConfigError(f"{p}: name= renames one run, but this sweep has {len(runs)}; pick one with config=KEY")
        runs = [runs[0].renamed(name)]
    return runs


def load_run(path: str | os.PathLike[str], *, golden: Any = None, corpus: Any = None, name: str | None = None,
             config: str | None = None, ks: Sequence[int] = DEFAULT_KS) -> Run:
    """One run from ``path`` (see :func:`load_runs`); for a sweep, the top-ranked configuration
    unless ``config`` names another."""
    runs = load_runs(path, golden=golden, corpus=corpus, config=config, ks=ks)
    run = runs[0]
    return run.renamed(name) if name is not None else run
