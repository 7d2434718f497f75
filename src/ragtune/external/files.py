"""Run and qrels files in and out: TREC, ragtune JSON/JSONL rankings, BEIR and ranx.

Every format is a row of the one table, :data:`ragtune.evaluate.formats.FORMATS`; the functions here read and write
through its rows. In:

- run files (a TREC run, ranx JSON, ragtune JSON or JSONL hit lists, an ``eval --json`` result): read by
  :func:`ragtune.evaluate.formats.read_run` (:func:`read_rankings` is re-exported here), scored by
  :func:`evaluate_run_file`;
- judgments in any format (golden JSONL/YAML, BEIR, TREC qrels, ranx qrels): :func:`ragtune.load_golden`, graded by
  the one rule (:data:`ragtune.golden.GRADE_RULE`: grade <= 0 is judged not relevant, and kept).

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

from ..errors import ConfigError, CorpusNotFoundError, GoldenSetError, ParameterError
from ..config import Opt
from ..evaluate.evaluate import DEFAULT_KS, EvalResult
from ..evaluate.match import MatchOptions
from ..evaluate.formats import format_named, ranx_run, read_rankings, write_trec_run as write_run
from ..evaluate.run import score_run_file
from ..golden import GoldenSet, judgments_from_ranx, load_golden, ranx_qrels, read_trec_qrels, write_beir_golden

__all__ = ["read_rankings", "evaluate_run_file", "read_qrels", "write_qrels", "write_trec_run", "export_beir",
           "to_ranx_qrels", "to_ranx_run", "to_ranx", "from_ranx", "load_golden_or_qrels", "export_to"]


def evaluate_run_file(path: str | os.PathLike[str], golden: GoldenSet, *, corpus: Any = None,
                      ks: Sequence[int] = DEFAULT_KS, base_url: str | None = None, path_prefix: str | None = None,
                      fuzzy: bool = True, field: str | None = None, anchor_span: str = "own",
                      doc_hits: str = "credit", site: str = "auto") -> EvalResult:
    """Score the rankings in a run file against ``golden``, as :func:`ragtune.evaluate` scores a retriever's:
    :func:`ragtune.evaluate.run.score_run_file`, the one reader and matcher that ``compare`` and the gate use too.

    Without ``corpus`` a hit must equal a golden anchor. Golden questions missing from the file score as if
    nothing was retrieved. ``anchor_span`` and ``doc_hits`` choose what anchor and whole-page hits cover, ``site``
    the generator whose URL and heading-id rules URL hits follow
    (:mod:`ragtune.evaluate.match`).
    """
    return score_run_file(path, golden, corpus=corpus, ks=ks, field=field,
                          options=MatchOptions(base_url=base_url, path_prefix=path_prefix, fuzzy=fuzzy,
                                               anchor_span=anchor_span, doc_hits=doc_hits, site=site))


# -- qrels -------------------------------------------------------------------------------------------------------

def read_qrels(path: str | os.PathLike[str]) -> GoldenSet:
    """A golden set from TREC qrels (``qid iteration docid grade``), graded by the one rule
    (:data:`ragtune.golden.GRADE_RULE`: grade <= 0 is judged not relevant, and kept): the ``trec-qrels`` row.

    Qrels carry no question text: such a golden set scores run files, not retrievers.
    """
    return read_trec_qrels(path)


def load_golden_or_qrels(path: str | os.PathLike[str], *, split: str | None = None,
                         labels: str = "human") -> GoldenSet:
    """:func:`ragtune.load_golden`, which reads every judgments format of the table (TREC qrels included)."""
    return load_golden(path, split=split, labels=labels)  # type: ignore[arg-type]


def gate_inputs(baseline: str | os.PathLike[str] | None, golden: str | os.PathLike[str], *, split: str | None = None,
                corpus: Any = None, options: Any = None) -> dict[str, Any]:
    """What the regression gate needs to score a ``baseline`` that is a run file (TREC, ranx, JSONL) as
    ``eval --run`` would: the golden set (or qrels), the corpus and the matching options; empty without one."""
    if not baseline:
        return {}
    return {"golden": load_golden_or_qrels(golden, split=split), "corpus": corpus, "options": options}


def write_qrels(golden: GoldenSet, path: str | os.PathLike[str]) -> int:
    """TREC qrels for the answerable questions (grades as integers when whole; anchors judged not relevant as 0):
    the ``trec-qrels`` row's writer. Returns the lines written."""
    return format_named("trec-qrels").write(golden, Path(path))


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
    return write_run(dict(_retrieved(result, ids)), Path(path), tag=tag)


def to_ranx_run(result: EvalResult | Mapping[str, Any], *, ids: str = "anchor") -> dict[str, dict[str, float]]:
    """``{qid: {anchor: score}}`` with scores decreasing with rank (what ``ranx.Run.from_dict`` takes)."""
    return ranx_run(dict(_retrieved(result, ids)))


def to_ranx_qrels(golden: GoldenSet) -> dict[str, dict[str, int]]:
    """``{qid: {anchor: grade}}`` for the answerable questions, anchors judged not relevant as 0 (what
    ``ranx.Qrels.from_dict`` takes)."""
    return ranx_qrels(golden)


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
    """A ``ranx.Qrels`` as a :class:`GoldenSet` (graded by the one rule, :data:`ragtune.golden.GRADE_RULE`: grade
    <= 0 is judged not relevant, and kept; question text from ``questions``, else empty, as TREC qrels), or a
    ``ranx.Run`` as a :class:`~ragtune.evaluate.run.Run` scored against
    ``golden`` (see :meth:`Run.from_ranx <ragtune.evaluate.run.Run.from_ranx>`)."""
    from ..evaluate.run import Run

    kind = type(obj).__name__
    if kind == "Qrels" and hasattr(obj, "to_dict"):
        return judgments_from_ranx(obj.to_dict(), "ranx qrels", questions)
    if kind == "Run" and hasattr(obj, "to_dict"):
        return Run.from_ranx(obj, golden, corpus=corpus, ks=ks)
    raise ConfigError(f"from_ranx takes a ranx.Qrels or a ranx.Run, got {kind}")


def export_beir(golden: GoldenSet, folder: str | os.PathLike[str], *, split: str = "test") -> Path:
    """A BEIR golden set: ``queries.jsonl`` and ``qrels/<split>.tsv`` (anchors as corpus ids, anchors judged not
    relevant as score 0): the ``beir`` row's writer."""
    return write_beir_golden(golden, Path(folder), split=split)


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
        raise ParameterError("nothing to export: pass a golden set ({}) and/or an eval result ({})", "golden",
                             "result")
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
            raise ParameterError("BEIR has no run format; export an eval result with {} trec or ranx", "format")
        export_beir(golden, out)
        written.append({"path": str(out), "what": "BEIR golden set", "lines": len(golden)})
        return written
    if golden is not None:
        path = out.with_name(out.name + (".qrels" if fmt == "trec" else ".qrels.json"))
        if fmt == "trec":
            n = write_qrels(golden, path)
        else:
            n = format_named("ranx-qrels").write(golden, path)
        written.append({"path": str(path), "what": "qrels", "lines": n})
    if result is not None:
        path = out.with_name(out.name + (".run" if fmt == "trec" else ".run.json"))
        if fmt == "trec":
            n = write_trec_run(result, path, tag=tag, ids=ids)
        else:
            n = format_named("ranx-run").write(dict(_retrieved(result, ids)), path)
        written.append({"path": str(path), "what": "run", "lines": n})
    return written
