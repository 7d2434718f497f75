"""The one table of input formats: every format ragtune reads a golden set or a run from, one row each.

:data:`FORMATS` is the table: :data:`ragtune.golden.JUDGMENT_FORMATS` (golden JSONL and YAML, a BEIR folder, TREC
qrels, ranx qrels: rows in ``golden.py``, the lowest layer every reader of judgments can import) followed by
:data:`RUN_FORMATS` (TREC runs, ranx runs, JSON Lines and JSON hit lists, an ``eval --json`` result, JSONL traces
and OpenInference spans, :mod:`ragtune.evaluate.otel`). Each row
(:class:`ragtune.io.InputFormat`) has a ``sniff``, a ``read`` and, where ragtune writes the format, a ``write``.
Every command that takes a golden set reads it through :func:`ragtune.load_golden` (judgments rows), every command
that takes a run through :func:`read_run` (run rows); a path no row recognises is an error listing the rows.
Every judgments row grades by the one rule, :data:`ragtune.golden.GRADE_RULE`: a grade above 0 is relevant with
that grade, 0 or less is judged not relevant and kept, so the same judgments give the same figures, ``judged@k``
included, in every format. Adding a format is adding one row.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as _field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, CorpusNotFoundError
from ..golden import GRADE_RULE, JUDGMENT_FORMATS, read_judgments
from ..io import InputFormat, Sample, check_regular_file, describe_formats, sniff_format, write_text
from .hits import ExternalHit, to_hit
from .otel import is_span_file, read_traces, trace_searches

__all__ = ["FORMATS", "RUN_FORMATS", "JUDGMENT_FORMATS", "GRADE_RULE", "RunFile", "Search", "read_run", "read_rankings",
           "read_trec", "read_judgments", "format_named", "Rankings", "write_trace"]

Rankings = Mapping[str, Sequence[tuple[str, float]]]  # question id -> (doc id, score), best first: what run rows write


Search = tuple[str, list[ExternalHit]]  # one search of a trace: its query and its hits, best first


@dataclass(frozen=True)
class RunFile:
    """What a run row reads: question id -> hits, best first; the row's name; a TREC run's tag, when it has one.

    A trace (a retriever that searched several times per question) also fills ``searches``: question id -> each
    search ``(query, hits)`` in the order made; its ``hits`` are then the searches' hits concatenated in order (the
    scorer merges them with :meth:`ragtune.types.Ranking.from_searches`, repeats dropped). ``questions``: key ->
    the question's text, for a trace whose lines name questions by their text rather than a golden id (the
    scorer matches a key that is no golden id by that text)."""

    hits: dict[str, list[ExternalHit]]
    format: str
    tag: str | None
    searches: dict[str, list[Search]] = _field(default_factory=dict)
    questions: dict[str, str] = _field(default_factory=dict)
    seconds: dict[str, float] = _field(default_factory=dict)  # question id -> what its search(es) took, when recorded


class _desc(str):
    """Sorts strings in descending order (trec_eval's tie-break on doc id)."""

    def __lt__(self, other: str) -> bool:  # type: ignore[override]
        return str.__gt__(self, other)


def _order(rows: list[tuple[str, float]]) -> list[ExternalHit]:
    """(doc id, score) best first: score descending, ties by doc id descending, as trec_eval orders a run."""
    return [ExternalHit(d, score=s) for d, s in sorted(rows, key=lambda r: (-r[1], _desc(r[0])))]


def _score_value(v: Any, where: str) -> float:
    """A run's score: a finite number. NaN would make the order depend on the line order (NaN compares false
    with everything), so it is refused, as are infinities, strings, null, lists and objects."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"{where}: the score must be a number, got {type(v).__name__} {v!r}; write each hit as "
                          '"doc id": score, e.g. {"q1": {"guide.md#refunds": 12.5}}')
    x = float(v)
    if not math.isfinite(x):
        raise ConfigError(f"{where}: the score must be a finite number, got {v!r}; NaN and infinite scores have no "
                          "order (write the rank order as decreasing finite scores)")
    return x


def read_trec(path: str | os.PathLike[str]) -> dict[str, list[tuple[str, int, float, str]]]:
    """TREC run rows by question id: ``[(docid, rank, score, tag), ...]`` in file order. Every line must have 6
    columns, an integer rank and a finite score; a doc id listed twice for one question is an error."""
    p = Path(path)
    text = _text(p)
    out: dict[str, list[tuple[str, int, float, str]]] = {}
    seen: dict[tuple[str, str], int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise ConfigError(f"{p} line {n}: expected 6 columns `qid Q0 docid rank score tag`, got "
                              f"{len(parts)}; is this a TREC run file?")
        qid, _, docid, rank, score, tag = parts
        try:
            r, x = int(rank), float(score)
        except ValueError:
            raise ConfigError(f"{p} line {n}: rank must be an integer and score a number, got "
                              f"{rank!r} and {score!r}") from None
        if not math.isfinite(x):
            raise ConfigError(f"{p} line {n}: score {score!r} is not a finite number; NaN and infinite scores have "
                              "no order (write the rank order as decreasing finite scores)")
        first = seen.setdefault((qid, docid), n)
        if first != n:
            raise ConfigError(f"{p} line {n}: question {qid!r} lists doc id {docid!r} more than once (first on line "
                              f"{first}); a run ranks each document once per question")
        out.setdefault(qid, []).append((docid, r, x, tag))
    if not out:
        raise ConfigError(f"{p}: the run file is empty")
    return out


def _text(p: Path) -> str:
    if not p.exists():
        raise CorpusNotFoundError(f"{p}: no such run file")
    check_regular_file(p, "run file")
    try:
        return p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not UTF-8 text (byte {e.start}); a run file is a TREC, JSON or JSONL text "
                          "file") from None
    except OSError as e:
        raise ConfigError(f"cannot read run file {p}: {e.strerror or e}") from None


def _is_qid(v: Any) -> bool:
    return isinstance(v, (str, int)) and not isinstance(v, bool) and str(v).strip() != ""


def _hit_list(raw: Any, where: str, field: str | None) -> list[ExternalHit]:
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: the hits must be a list, got {type(raw).__name__} {_short(raw)}; e.g. "
                          '["guide.md#refunds", {"url": "https://site/faq#login", "score": 3.1}]')
    return [to_hit(h, field=field, where=f"{where} hit {r}") for r, h in enumerate(raw, start=1)]


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _ranx_hits(data: Mapping[Any, Any], source: str) -> dict[str, list[ExternalHit]]:
    out = {}
    for q, docs in data.items():
        if not isinstance(docs, Mapping):
            raise ConfigError(f"{source}: question {q!r}: expected a {{doc id: score}} object, got "
                              f"{type(docs).__name__} {_short(docs)}")
        out[str(q)] = _order([(str(d), _score_value(v, f"{source}: question {q!r}, doc {d!r}"))
                              for d, v in docs.items()])
    return out


def _eval_questions(questions: Any, where: Any, expected: str) -> Iterator[tuple[int, Mapping[str, Any], str]]:
    """``(position, question, id)`` for each question of an eval JSON's ``questions`` list; one that is not an
    object with an id is refused, naming its position and ``expected`` (what such a question holds)."""
    for n, q in enumerate(questions, start=1):
        if not isinstance(q, Mapping):
            raise ConfigError(f"{where}: question {n} of 'questions' is a {type(q).__name__}, expected an object with "
                              f"{expected} (as `ragtune eval --json` writes)")
        if not _is_qid(q.get("id")):
            raise ConfigError(f"{where}: question {n} of 'questions' has no 'id' (got {_short(q.get('id'))}); every "
                              "question needs the id of its golden question")
        yield n, q, str(q["id"])


def _eval_hits(data: Mapping[str, Any], p: Path) -> dict[str, list[ExternalHit]]:
    """An eval --json result's ``retrieved`` lists: a hit with a document and offsets keeps its span (it scores
    exactly as the chunk did); one without, its anchor."""
    out: dict[str, list[ExternalHit]] = {}
    for n, q, qid in _eval_questions(data["questions"], p, "an 'id' and a 'retrieved' list"):
        if qid in out:
            raise ConfigError(f"{p}: question {qid!r} appears twice in 'questions'; give each question once")
        retrieved = q.get("retrieved")
        if retrieved is None:
            retrieved = []
        where = f"{p}: question {qid!r} 'retrieved'"
        if not isinstance(retrieved, list):
            raise ConfigError(f"{where}: expected a list of hits (objects with doc_id/start/end or anchor), got "
                              f"{type(retrieved).__name__} {_short(retrieved)}")
        hits = []
        for r, h in enumerate(retrieved, start=1):
            if not isinstance(h, Mapping):
                raise ConfigError(f"{where} hit {r}: expected an object with doc_id/start/end or anchor, got "
                                  f"{type(h).__name__} {_short(h)}")
            raw = ({k: h[k] for k in ("doc_id", "start", "end", "score") if h.get(k) is not None}
                   if h.get("doc_id") else {"id": h.get("anchor") or h.get("chunk_id"), "score": h.get("score")})
            if raw.get("score") is not None and not isinstance(raw["score"], (int, float)):
                raw["score"] = None  # a score written as null or text says nothing about the order: rank is kept
            hits.append(to_hit(raw, where=f"{where} hit {r}"))
        out[qid] = hits
    return out


def _json_lines(text: str, p: Path) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSONL file parsed, with its line number; a line that is not JSON is one error."""
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            raise ConfigError(f"{p}:{n}: not JSON ({e})") from None
        yield n, row


def _jsonl(text: str, p: Path, field: str | None) -> dict[str, list[ExternalHit]]:
    out: dict[str, list[ExternalHit]] = {}
    for n, row in _json_lines(text, p):
        qid = (row.get("id", row.get("qid")) if isinstance(row, dict) else None)
        if not _is_qid(qid) or not isinstance(row.get("hits"), list):
            raise ConfigError(f"{p}:{n}: each line needs an \"id\" and a \"hits\" list, e.g. "
                              '{"id": "q1", "hits": ["guide.md#refunds"]}')
        if str(qid) in out:
            raise ConfigError(f"{p}:{n}: question {qid!r} appears twice; give each question one line")
        out[str(qid)] = _hit_list(row["hits"], f"{p}:{n}: question {qid!r}", field)
    if not out:
        raise ConfigError(f"{p}: the run file is empty")
    return out


_TRACE_EXAMPLE = ('{"qid": "q1", "question": "...", "searches": [{"query": "...", "hits": ["guide.md#refunds"]}, '
                  '{"query": "...", "hits": [...]}]}')


def _trace_search(raw: Any, where: str, field: str | None) -> Search:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: a search must be an object with a \"query\" and a \"hits\" list, got "
                          f"{type(raw).__name__} {_short(raw)}")
    query = raw.get("query", "")
    if not isinstance(query, str):
        raise ConfigError(f"{where}: \"query\" must be a string, got {type(query).__name__} {_short(query)}")
    hits = raw.get("hits")
    if hits is None:
        raise ConfigError(f"{where}: the search has no \"hits\" list (it has: {', '.join(map(str, raw)) or 'nothing'})")
    return query, _hit_list(hits, where, field)


def _trace(text: str, p: Path, field: str | None) -> RunFile:
    """A JSONL trace: one question a line, ``{"qid": ..., "question": ..., "searches": [{"query", "hits"}, ...]}``,
    the searches in the order made (``qid`` or ``id``, else the question's text, names the golden question)."""
    hits: dict[str, list[ExternalHit]] = {}
    searches: dict[str, list[Search]] = {}
    questions: dict[str, str] = {}
    for n, row in _json_lines(text, p):
        if not isinstance(row, Mapping) or not isinstance(row.get("searches"), list):
            raise ConfigError(f"{p}:{n}: each line of a trace needs a \"searches\" list, e.g. {_TRACE_EXAMPLE}")
        qid, question = row.get("qid", row.get("id")), row.get("question")
        if question is not None and (not isinstance(question, str) or not question.strip()):
            raise ConfigError(f"{p}:{n}: \"question\" must be the question's text, got {_short(question)}")
        if not _is_qid(qid) and question is None:
            raise ConfigError(f"{p}:{n}: the line names no question: give \"qid\" (the golden question's id) or "
                              f"\"question\" (its text), e.g. {_TRACE_EXAMPLE}")
        key = str(qid) if _is_qid(qid) else " ".join(question.split())
        if key in searches:
            raise ConfigError(f"{p}:{n}: question {key!r} appears twice; give each question one line with all its "
                              "searches")
        where = f"{p}:{n}: question {key!r}"
        searches[key] = [_trace_search(x, f"{where} search {i}", field) for i, x in enumerate(row["searches"], 1)]
        hits[key] = [h for _, hs in searches[key] for h in hs]
        if question is not None:
            questions[key] = question
    if not searches:
        raise ConfigError(f"{p}: the trace file is empty")
    return RunFile(hits, "trace", None, searches, questions)


def _is_trace(s: Sample) -> bool:
    """JSON Lines whose first line holds a ``searches`` list (the head is the file's first 4 KB)."""
    if not _is_jsonl(s):
        return False
    first = s.head.split(b"\n", 1)[0]
    return b'"searches"' in first


def write_trace(traces: Mapping[str, Any], path: Path) -> int:
    """A JSONL trace: question id -> its searches, each a :class:`~ragtune.types.Ranking` (its query and hits) or a
    ``(query, [(doc id, score), ...])`` pair; a ranking that holds ``searches`` is written as those searches, and a
    plain ranking (a Ranking, or ``[(doc id, score), ...]`` as every run row writes) as one search. A ranking's hits are written as spans (doc_id, start, end, score). Returns the
    lines."""
    rows = []
    for qid, value in traces.items():
        if hasattr(value, "searches") and hasattr(value, "hits"):
            value = list(value.searches) or [value]
        if value and all(isinstance(x, (tuple, list)) and len(x) == 2 and isinstance(x[1], (int, float))
                         for x in value):
            value = [("", value)]  # a plain ranking (doc id, score): one search
        out = []
        for s in value:
            if hasattr(s, "hits"):  # a chunk as its span, which scores exactly as the chunk
                out.append({"query": s.query, "hits": [{"doc_id": h.chunk.doc_id, "start": h.chunk.start,
                                                        "end": h.chunk.end, "score": h.score} for h in s.hits]})
            else:
                out.append({"query": s[0], "hits": _hit_rows(s[1])})
        rows.append(json.dumps({"qid": qid, "searches": out}, ensure_ascii=False) + "\n")
    write_text(path, "".join(rows))
    return len(rows)


# -- the run rows ----------------------------------------------------------------------------------------------------

def _read_trec_run(s: Sample, field: str | None = None) -> RunFile:
    rows = read_trec(s.path)
    tags = {r[3] for hits in rows.values() for r in hits}
    return RunFile({q: _order([(d, x) for d, _, x, _ in hits]) for q, hits in rows.items()}, "trec",
                   next(iter(tags)) if len(tags) == 1 else None)


def _read_spans(s: Sample, field: str | None = None) -> RunFile:
    hits, searches, questions, seconds = trace_searches(read_traces(s.path), field=field, where=str(s.path))
    return RunFile(hits, "openinference", None, searches, questions, seconds)


def _read_jsonl_run(s: Sample, field: str | None = None) -> RunFile:
    return RunFile(_jsonl(_text(s.path), s.path, field), "jsonl", None)


def _eval_data(s: Sample) -> Mapping[str, Any] | None:
    data = s.json
    if isinstance(data, Mapping) and isinstance(data.get("result"), Mapping) and "questions" in data["result"]:
        data = data["result"]  # a sweep's runs/<key>.json: the eval result of one configuration
    return data if isinstance(data, Mapping) and "questions" in data else None


def _read_eval(s: Sample, field: str | None = None) -> RunFile:
    data = _eval_data(s)
    assert data is not None  # sniffed
    if not isinstance(data["questions"], list):
        raise ConfigError(f"{s.path}: 'questions' must be a list (as `ragtune eval --json` writes), got "
                          f"{type(data['questions']).__name__}")
    return RunFile(_eval_hits(data, s.path), "eval", None)


def _all_values(s: Sample, kind: type) -> bool:
    data = s.json if s.head[:1] == b"{" and s.suffix != ".jsonl" else None
    return isinstance(data, dict) and bool(data) and "questions" not in data and all(
        isinstance(v, kind) for v in data.values())


def _is_jsonl(s: Sample) -> bool:
    if s.is_dir or not s.starts_json:
        return False
    if s.suffix == ".jsonl":
        return True
    return s.head[:1] == b"{" and s.json is None and "Extra data" in (s.json_error or "")


def _scores(hits: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """Scores that strictly decrease with rank (n .. 1), so every reader keeps the order written."""
    return [(d, float(len(hits) - r)) for r, (d, _) in enumerate(hits)]


def write_trec_run(rankings: Rankings, path: Path, *, tag: str = "ragtune") -> int:
    """A TREC run, scores rewritten to decrease with rank (trec_eval orders by score); returns the lines."""
    lines = [f"{q} Q0 {d} {r} {x:g} {tag}" for q, hits in rankings.items()
             for r, (d, x) in enumerate(_scores(hits), start=1)]
    write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def ranx_run(rankings: Rankings) -> dict[str, dict[str, float]]:
    """``{qid: {doc: score}}`` with scores decreasing with rank (what ``ranx.Run.from_dict`` takes)."""
    return {str(q): dict(_scores(hits)) for q, hits in rankings.items()}


def write_ranx_run(rankings: Rankings, path: Path) -> int:
    run = ranx_run(rankings)
    write_text(path, json.dumps(run, ensure_ascii=False, indent=1) + "\n")
    return sum(map(len, run.values()))


def _hit_rows(hits: Sequence[tuple[str, float]]) -> list[dict[str, Any]]:
    return [{"id": d, "score": x} for d, x in hits]


def write_jsonl_run(rankings: Rankings, path: Path) -> int:
    write_text(path, "".join(json.dumps({"id": q, "hits": _hit_rows(h)}, ensure_ascii=False) + "\n"
                             for q, h in rankings.items()))
    return len(rankings)


def write_json_run(rankings: Rankings, path: Path) -> int:
    write_text(path, json.dumps({q: _hit_rows(h) for q, h in rankings.items()}, ensure_ascii=False, indent=1) + "\n")
    return len(rankings)


# The run rows, in the order they are tried. A new run format is one row.
RUN_FORMATS: tuple[InputFormat, ...] = (
    InputFormat("trec-run", "run", "lines `qid Q0 docid rank score tag`, ordered by score as trec_eval orders them",
                lambda s: not s.is_dir and not s.starts_json, _read_trec_run,
                lambda r, p: write_trec_run(r, p)),
    InputFormat("jsonl-trace", "run", 'JSON Lines of {"qid": ..., "searches": [{"query": ..., "hits": [...]}, ...]}, '
                "a retriever that searched several times per question", _is_trace,
                lambda s, field=None: _trace(_text(s.path), s.path, field), write_trace),
    InputFormat("openinference", "run", "OpenTelemetry spans in the OpenInference conventions (OTLP JSON, or the "
                "span JSON of opentelemetry-sdk), one question a trace, each RETRIEVER span a search", is_span_file,
                _read_spans),
    InputFormat("jsonl-run", "run", 'JSON Lines of {"id": ..., "hits": [...]}', _is_jsonl, _read_jsonl_run,
                write_jsonl_run),
    InputFormat("eval-json", "run", "an `eval --json` result or a sweep's runs/<key>.json, scored by its 'retrieved' lists",
                lambda s: _eval_data(s) is not None, _read_eval),
    InputFormat("ranx-run", "run", "JSON {question id: {doc id: score}}", lambda s: _all_values(s, Mapping),
                lambda s, field=None: RunFile(_ranx_hits(s.json, str(s.path)), "ranx", None), write_ranx_run),
    InputFormat("json-run", "run", "JSON {question id: [hits]}", lambda s: _all_values(s, list),
                lambda s, field=None: RunFile({str(q): _hit_list(v, f"{s.path}: question {q!r}", field)
                                               for q, v in s.json.items()}, "json", None), write_json_run),
)

# The one table: every format ragtune reads, judgments first.
FORMATS: tuple[InputFormat, ...] = (*JUDGMENT_FORMATS, *RUN_FORMATS)


def format_named(name: str) -> InputFormat:
    """The row called ``name``; an unknown name is a :class:`ConfigError` listing the rows."""
    for row in FORMATS:
        if row.name == name:
            return row
    raise ConfigError(f"unknown format {name!r}; the formats are: {', '.join(r.name for r in FORMATS)}")


def _why_not_a_run(s: Sample) -> str:
    data = s.json
    if s.json_error:
        return f"not JSON ({s.json_error})"
    if isinstance(data, Mapping) and data:
        first = isinstance(next(iter(data.values())), Mapping)
        q, v = next(((q, v) for q, v in data.items()
                     if not isinstance(v, (list, Mapping)) or isinstance(v, Mapping) != first), (None, None))
        if q is not None:
            return (f"not a run: question {q!r} has {type(v).__name__} {_short(v)}; every question needs a list of "
                    "hits ({question id: [hits]}) or, for a ranx run, a {doc id: score} object, the same for all")
    return "not a run"


def read_run(path: str | os.PathLike[str], *, field: str | None = None) -> RunFile:
    """The run at ``path``, read by the first row of :data:`RUN_FORMATS` that recognises it; a path no row
    recognises is a :class:`ConfigError` saying why and listing the run formats. A path that is not a regular file
    (a folder, FIFO, device) is refused before it is read."""
    p = Path(path)
    if not p.exists():
        raise CorpusNotFoundError(f"{p}: no such run file")
    check_regular_file(p, "run file")
    sample = Sample(p, "run file")
    row = sniff_format(sample, RUN_FORMATS)
    if row is None:
        raise ConfigError(f"{p}: {_why_not_a_run(sample)}; a run file is one of: {describe_formats(RUN_FORMATS)}")
    return row.read(sample, field)


def read_rankings(path: str | os.PathLike[str], *, field: str | None = None) -> dict[str, list[ExternalHit]]:
    """Question id -> hits (:class:`~ragtune.evaluate.hits.ExternalHit`), best first, from any run file:

    - a TREC run (``qid Q0 docid rank score tag``): ordered as trec_eval orders it (score descending, ties by
      doc id descending; the rank column is ignored);
    - ranx JSON ``{question id: {doc id: score}}``: ordered the same way;
    - ``{question id: [hit, ...]}`` JSON, or JSON Lines of ``{"id": ..., "hits": [...]}``: in list order, each hit
      any form :func:`~ragtune.evaluate.hits.to_hit` reads (``field`` names the one field that identifies hits);
    - an ``eval --json`` result: its ``retrieved`` lists (spans where they have them), also inside a sweep's
      ``runs/<key>.json`` (its ``result``).

    Scores must be finite numbers; a malformed file is a :class:`ConfigError` naming the file, the line or
    question, and what was expected. A path that is not a regular file (a folder, FIFO, device) is refused
    before it is read.
    """
    return read_run(path, field=field).hits


