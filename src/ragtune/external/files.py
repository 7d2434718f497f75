"""Run and qrels files in and out: TREC, ragtune JSON/JSONL rankings, BEIR and ranx.

In:

- a TREC run (``qid Q0 docid rank score tag``), ordered as trec_eval orders it
  (score descending, ties by doc id descending; :func:`ragtune.evaluate.run.read_trec`);
- ragtune JSON: an ``eval --json`` result (its ``retrieved`` lists) or an object
  ``{question id: [hit, ...]}``; JSONL: one ``{"id": ..., "hits": [...]}`` a line;
- TREC qrels (``qid iteration docid grade``): a golden set without question text.

Out: TREC runs and qrels, a BEIR folder (queries.jsonl + qrels/test.tsv), ranx
JSON (``{qid: {doc: score}}``). With ranx installed, :func:`to_ranx` and :func:`from_ranx` convert golden sets
and runs to and from ``ranx.Qrels`` and ``ranx.Run`` objects.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from ..errors import ConfigError, CorpusNotFoundError, GoldenSetError
from ..config import Opt
from ..evaluate.evaluate import DEFAULT_KS, EvalResult, evaluate_rankings
from ..evaluate.run import _desc, read_trec
from ..golden import GoldenItem, GoldenSet
from .adapter import hits_to_ranking
from .match import HitMatcher

__all__ = ["read_rankings", "evaluate_run_file", "read_qrels", "write_qrels", "write_trec_run", "export_beir",
           "to_ranx_qrels", "to_ranx_run", "to_ranx", "from_ranx", "load_golden_or_qrels", "export_to"]


def _is_json(p: Path) -> bool:
    with open(p, "rb") as f:
        head = f.read(64).lstrip()
    return head.startswith((b"{", b"["))


def read_rankings(path: str | os.PathLike[str]) -> dict[str, list[Any]]:
    """Question id -> raw hits, best first, from a TREC run, ragtune JSON or JSONL (see the module docstring)."""
    p = Path(path)
    if not p.is_file():
        raise CorpusNotFoundError(f"{p}: no such run file")
    if not _is_json(p):
        rows = read_trec(p)
        return {qid: [{"id": d, "score": s} for d, _, s, _ in sorted(hits, key=lambda h: (-h[2], _desc(h[0])))]
                for qid, hits in rows.items()}
    text = p.read_text(encoding="utf-8")
    if p.suffix.lower() == ".jsonl":
        out: dict[str, list[Any]] = {}
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise ConfigError(f"{p}:{n}: not JSON ({e})") from None
            qid = row.get("id", row.get("qid")) if isinstance(row, dict) else None
            if qid is None or not isinstance(row.get("hits"), list):
                raise ConfigError(f"{p}:{n}: each line needs an \"id\" and a \"hits\" list, e.g. "
                                  '{"id": "q1", "hits": ["guide.md#refunds"]}')
            if str(qid) in out:
                raise ConfigError(f"{p}:{n}: question {qid!r} appears twice; give each question one line")
            out[str(qid)] = row["hits"]
        return out
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ConfigError(f"{p}: not JSON ({e})") from None
    if isinstance(data, dict) and isinstance(data.get("questions"), list):  # eval --json
        return {str(q["id"]): [{k: h[k] for k in ("doc_id", "start", "end", "score") if k in h}
                               if h.get("doc_id") else {"id": h.get("anchor"), "score": h.get("score")}
                               for h in q.get("retrieved") or []]
                for q in data["questions"]}
    if isinstance(data, dict) and all(isinstance(v, list) for v in data.values()):
        return {str(k): v for k, v in data.items()}
    if isinstance(data, dict) and all(isinstance(v, dict) for v in data.values()):  # ranx run: {qid: {doc: score}}
        return {str(q): [{"id": d, "score": s} for d, s in sorted(docs.items(), key=lambda x: (-x[1], _desc(x[0])))]
                for q, docs in data.items()}
    raise ConfigError(f"{p}: not a run: expected an eval --json result, {{question id: [hits]}}, or ranx "
                      "{question id: {doc: score}}")


def evaluate_run_file(path: str | os.PathLike[str], golden: GoldenSet, *, corpus: Any = None,
                      ks: Sequence[int] = DEFAULT_KS, base_url: str | None = None, path_prefix: str | None = None,
                      fuzzy: bool = True, field: str | None = None) -> EvalResult:
    """Score the rankings in a run file against ``golden``, as :func:`ragtune.evaluate` scores a retriever's.

    Hits are matched like any outside hit (:class:`HitMatcher`); without ``corpus`` a hit must equal a
    golden anchor. Golden questions missing from the file score as if nothing was retrieved.
    """
    raw = read_rankings(path)
    matcher = HitMatcher(corpus, base_url=base_url, path_prefix=path_prefix, fuzzy=fuzzy)
    by_id = {i.id: i for i in golden}
    unjudged = sorted(set(raw) - set(by_id))  # trec_eval skips them too; listed in result.matching
    rankings = {qid: hits_to_ranking(by_id[qid].q, hits, len(hits), matcher, question=qid, field=field)
                for qid, hits in raw.items() if qid in by_id}
    matching = {**matcher.report.to_dict(), **({"questions_not_in_golden": unjudged} if unjudged else {})}
    result = evaluate_rankings(rankings, golden, matcher.scoring_corpus, ks=ks,
                               config={"run": str(path), "golden": golden.source}, matching=matching)
    if matcher.report.total and not matcher.report.matched:
        hint = ("pass the corpus (CLI: --corpus) if the run names documents or sections" if corpus is None
                else "is it the corpus the run was made from?")
        raise ConfigError(f"{path}: no hit in the run matches the golden set's anchors or the corpus; {hint}")
    return result


# -- qrels -------------------------------------------------------------------------------------------------------

def read_qrels(path: str | os.PathLike[str]) -> GoldenSet:
    """A golden set from TREC qrels (``qid iteration docid grade``); grade <= 0 is not relevant.

    Qrels carry no question text: such a golden set scores run files, not retrievers.
    """
    p = Path(path)
    if not p.is_file():
        raise CorpusNotFoundError(f"{p}: no such qrels file")
    rel: dict[str, dict[str, float]] = {}
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise GoldenSetError(f"{p}:{n}: expected 4 columns `qid iteration docid grade`, got {len(parts)}; "
                                 "is this a TREC qrels file?")
        qid, _, doc, grade = parts
        try:
            g = float(grade)
        except ValueError:
            g = math.nan
        if not math.isfinite(g):
            raise GoldenSetError(f"{p}:{n}: grade {grade!r} is not a number; use 0 for not relevant, 1+ for relevant")
        rel.setdefault(qid, {})
        if g > 0:
            if doc in rel[qid]:
                raise GoldenSetError(f"{p}:{n}: question {qid!r} judges {doc!r} twice")
            rel[qid][doc] = g
    if not rel:
        raise GoldenSetError(f"{p}: the qrels file is empty")
    return GoldenSet([GoldenItem(q, "", grades) for q, grades in rel.items()], source=str(p))


def load_golden_or_qrels(path: str | os.PathLike[str], *, split: str | None = None) -> GoldenSet:
    """:func:`ragtune.load_golden`, plus TREC qrels (a ``.qrels`` file, or any file of 4-column lines)."""
    from ..golden import load_golden

    p = Path(path)
    if p.is_file() and (p.suffix.lower() in (".qrels", ".txt", ".tsv") or
                        (p.suffix.lower() not in (".jsonl", ".json", ".yaml", ".yml") and not _is_json(p))):
        return read_qrels(p)
    return load_golden(p, split=split)


def write_qrels(golden: GoldenSet, path: str | os.PathLike[str]) -> int:
    """TREC qrels for the answerable questions (grades as integers when whole); returns the lines written."""
    lines = [f"{i.id} 0 {a} {_num(g)}" for i in golden for a, g in i.relevant.items()]
    _write(path, lines)
    return len(lines)


def _num(g: float) -> str:
    return str(int(g)) if float(g).is_integer() else repr(float(g))


def _retrieved(result: EvalResult | Mapping[str, Any], ids: str = "anchor") -> list[tuple[str, list[tuple[str, float]]]]:
    if ids not in ("anchor", "span"):
        raise ConfigError(f"ids must be 'anchor' or 'span', got {ids!r}")
    data = result.to_dict() if hasattr(result, "to_dict") else result
    if not isinstance(data, Mapping) or not isinstance(data.get("questions"), list):
        raise ConfigError("not an evaluation result (expected a 'questions' list, as written by `ragtune eval --json`)")
    out = []
    for q in data["questions"]:
        seen: dict[str, float] = {}
        for h in q.get("retrieved") or []:
            anchor = (f"{h['doc_id']}@{h['start']}-{h['end']}" if ids == "span" and h.get("doc_id")
                      else str(h.get("anchor") or h.get("chunk_id")))
            if anchor not in seen:  # a run names each document once: the best-ranked chunk of an anchor stands
                seen[anchor] = float(h["score"]) if h.get("score") is not None else math.nan
        out.append((str(q["id"]), list(seen.items())))
    return out


def write_trec_run(result: EvalResult | Mapping[str, Any], path: str | os.PathLike[str], *, tag: str = "ragtune",
                   ids: str = "anchor") -> int:
    """The top ``max(ks)`` of each question as a TREC run; returns the lines written.

    ``ids="anchor"``: one line per anchor (its best-ranked chunk), for qrels that name anchors (trec_eval,
    ranx); ``ids="span"``: one line per chunk as ``doc@start-end``, which ragtune scores exactly as the
    chunks themselves. Scores are rewritten to strictly decrease with rank, so trec_eval keeps the order.
    """
    if not tag or any(c.isspace() for c in tag):
        raise ConfigError(f"the run tag must be one word, got {tag!r}")
    lines = []
    for qid, hits in _retrieved(result, ids):
        n = len(hits)
        lines.extend(f"{qid} Q0 {a} {r} {n - r + 1} {tag}" for r, (a, _) in enumerate(hits, start=1))
    _write(path, lines)
    return len(lines)


def to_ranx_run(result: EvalResult | Mapping[str, Any], *, ids: str = "anchor") -> dict[str, dict[str, float]]:
    """``{qid: {anchor: score}}`` with scores decreasing with rank (what ``ranx.Run.from_dict`` takes)."""
    return {qid: {a: float(len(hits) - r) for r, (a, _) in enumerate(hits)} for qid, hits in _retrieved(result, ids)}


def to_ranx_qrels(golden: GoldenSet) -> dict[str, dict[str, int]]:
    """``{qid: {anchor: grade}}`` for the answerable questions (what ``ranx.Qrels.from_dict`` takes)."""
    return {i.id: {a: int(round(g)) for a, g in i.relevant.items()} for i in golden if i.answerable}


def to_ranx(obj: Any, *, ids: str = "anchor", name: str | None = None) -> Any:
    """A golden set as a ``ranx.Qrels`` (answerable questions, grades as :func:`to_ranx_qrels` gives them), or
    a run (an :class:`EvalResult`, its dict, or a :class:`~ragtune.evaluate.run.Run`) as a ``ranx.Run``."""
    from ..evaluate.run import Run, _import_ranx

    ranx = _import_ranx()
    if isinstance(obj, GoldenSet):
        return ranx.Qrels.from_dict(to_ranx_qrels(obj))
    if isinstance(obj, Run):
        return obj.to_ranx() if name is None else obj.renamed(name).to_ranx()
    return ranx.Run.from_dict(to_ranx_run(obj, ids=ids), name=name or "ragtune")


def from_ranx(obj: Any, golden: GoldenSet | None = None, *, corpus: Any = None, ks: Sequence[int] = DEFAULT_KS,
              questions: Mapping[str, str] | None = None) -> Any:
    """A ``ranx.Qrels`` as a :class:`GoldenSet` (grade <= 0 not relevant; question text from ``questions``,
    else empty, as TREC qrels), or a ``ranx.Run`` as a :class:`~ragtune.evaluate.run.Run` scored against
    ``golden`` (see :meth:`Run.from_ranx <ragtune.evaluate.run.Run.from_ranx>`)."""
    from ..evaluate.run import Run

    kind = type(obj).__name__
    if kind == "Qrels" and hasattr(obj, "to_dict"):
        texts = questions or {}
        return GoldenSet([GoldenItem(str(q), texts.get(str(q), ""), {str(d): float(g) for d, g in docs.items() if g > 0})
                          for q, docs in obj.to_dict().items()], source="ranx qrels")
    if kind == "Run" and hasattr(obj, "to_dict"):
        return Run.from_ranx(obj, golden, corpus=corpus, ks=ks)
    raise ConfigError(f"from_ranx takes a ranx.Qrels or a ranx.Run, got {kind}")


def export_beir(golden: GoldenSet, folder: str | os.PathLike[str], *, split: str = "test") -> Path:
    """A BEIR golden set: ``queries.jsonl`` and ``qrels/<split>.tsv`` (anchors as corpus ids)."""
    root = Path(folder)
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    _write(root / "queries.jsonl", [json.dumps({"_id": i.id, "text": i.q}, ensure_ascii=False) for i in golden])
    _write(root / "qrels" / f"{split}.tsv", ["query-id\tcorpus-id\tscore"] +
           [f"{i.id}\t{a}\t{_num(g)}" for i in golden for a, g in i.relevant.items()])
    return root


def _write(path: str | os.PathLike[str], lines: list[str]) -> None:
    p = Path(path)
    try:
        if p.parent and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot write {p}: {e.strerror or e}") from None


def export_to(
    format: Annotated[Literal["trec", "beir", "ranx"], Opt("trec: qrels and/or run files; beir: a golden-set folder; "
                                                          "ranx: JSON dicts for ranx")],
    out: Annotated[str, Opt("file stem or folder: trec writes PATH.qrels / PATH.run, ranx PATH.qrels.json / "
                            "PATH.run.json, beir the folder PATH", metavar="PATH")], *,
    golden: Annotated[Any, Opt("golden set to export (.jsonl, .yaml, BEIR folder with --split, or TREC qrels)")] = None,
    split: Annotated[str | None, Opt("BEIR qrels split (e.g. test)")] = None,
    result: Annotated[Any, Opt("an `eval --json` result to export as a run", metavar="EVAL_JSON")] = None,
    tag: Annotated[str, Opt("run tag in TREC's sixth column")] = "ragtune",
    ids: Annotated[Literal["anchor", "span"], Opt("run ids: anchor (one line per anchor, for anchor qrels) or span "
                                                  "(doc@start-end, exact)")] = "anchor",
) -> list[dict[str, Any]]:
    """Write ``golden`` (a set or a path) and/or ``result`` (an EvalResult, its dict or an eval JSON path) as
    ``fmt`` (trec, beir, ranx) under ``out``; returns what was written (path, what, lines)."""
    fmt = format
    if fmt not in ("trec", "beir", "ranx"):
        raise ConfigError(f"unknown export format {fmt!r}; pick one of trec, beir, ranx")
    if golden is None and result is None:
        raise ConfigError("nothing to export: pass a golden set (--golden) and/or an eval result (--result)")
    if isinstance(golden, (str, os.PathLike)):
        golden = load_golden_or_qrels(golden, split=split)
    if isinstance(result, (str, os.PathLike)):
        rp = Path(result)
        if not rp.is_file():
            raise CorpusNotFoundError(f"{rp}: no such eval result")
        try:
            result = json.loads(rp.read_text(encoding="utf-8"))
        except ValueError as e:
            raise ConfigError(f"{rp}: not JSON ({e}); pass a file written by `ragtune eval --json`") from None
    out = Path(out)
    written: list[dict[str, Any]] = []
    if fmt == "beir":
        if result is not None:
            raise ConfigError("BEIR has no run format; export an eval result with --format trec or ranx")
        export_beir(golden, out)
        written.append({"path": str(out), "what": "BEIR golden set", "lines": len(golden)})
        return written
    if golden is not None:
        path = out.with_name(out.name + (".qrels" if fmt == "trec" else ".qrels.json"))
        if fmt == "trec":
            n = write_qrels(golden, path)
        else:
            qrels = to_ranx_qrels(golden)
            _write(path, [json.dumps(qrels, ensure_ascii=False, indent=1)])
            n = sum(map(len, qrels.values()))
        written.append({"path": str(path), "what": "qrels", "lines": n})
    if result is not None:
        path = out.with_name(out.name + (".run" if fmt == "trec" else ".run.json"))
        if fmt == "trec":
            n = write_trec_run(result, path, tag=tag, ids=ids)
        else:
            run = to_ranx_run(result, ids=ids)
            _write(path, [json.dumps(run, ensure_ascii=False, indent=1)])
            n = sum(map(len, run.values()))
        written.append({"path": str(path), "what": "run", "lines": n})
    return written
