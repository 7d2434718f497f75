"""OpenTelemetry spans in the OpenInference conventions: what an app's retrievers searched, question by question.

OpenInference instrumentations (LlamaIndex, LangChain, Haystack; Arize Phoenix collects them) record each
retrieval as a span of kind ``RETRIEVER`` (attribute ``openinference.span.kind``) whose ``input.value`` is the query
and whose ``retrieval.documents.N.document.{id,content,score,metadata}`` are the hits, best first. This module reads
such spans from files, with no OpenTelemetry package, and turns them into :class:`SpanTrace` values: one per trace
(one question), holding its searches in the order they started, each a query and raw hits that the one matcher
(:class:`~ragtune.evaluate.match.HitMatcher`) matches as it matches every outside hit.

The files read (:func:`read_spans`; a row of :data:`ragtune.evaluate.formats.RUN_FORMATS` sniffs them):

- **OTLP JSON**: ``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}``, the JSON encoding of an OTLP export
  request, as the OpenTelemetry Collector's file exporter writes it (one request per line) and OTLP/HTTP sends it;
  one object or one per line, camelCase or protobuf's snake_case field names, ``instrumentationLibrarySpans``
  (before OTLP 0.15) too; trace and span ids hex or base64 (they are only compared); attribute values typed
  (``{"stringValue": ...}``, ``intValue``, ``doubleValue``, ``boolValue``, ``arrayValue``, ``kvlistValue``);
- **the SDK's span JSON**: the objects ``ReadableSpan.to_json()`` writes in opentelemetry-sdk (``"context":
  {"trace_id": ...}``, ``"parent_id"``, ``"start_time"``, plain ``"attributes"``), one per line
  (``to_json(indent=None)``), printed one after another as ``ConsoleSpanExporter`` prints them, or in a JSON list.

What makes a question of a trace (:func:`traces_from_spans`):

- the trace's **searches** are its RETRIEVER spans that no other RETRIEVER span encloses (a fusion retriever's
  span is the search; the sub-retrievers it called are part of it), by start time, ties in the order read;
- its **question id**: an attribute ``ragtune.qid`` on any of its spans, or ``qid`` in the OpenInference
  ``metadata`` attribute (``using_metadata({"qid": "q1"})``), the root span's first; else, for a trace in an
  OpenInference session (``session.id``, ``using_session("c1")``), ``<session>#<n>``, its turn in the session by
  start time, as a golden conversation's turns are named (``c1#2``; a reader whose golden set has no such id falls
  back to the question's text);
- its **question**: the root span's ``input.value`` (a JSON input: its query string), else the first search's query;
- each **hit** is named by what its document's metadata says it is (``anchor``, ``url``, ``file_path``,
  ``source``, ``path``, ``file_name``, ``doc_id``), else by ``document.id`` (LlamaIndex writes a node's random id
  there: the text is then located in the corpus), with ``document.content`` as its text and ``document.score``.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import ConfigError, CorpusNotFoundError
from ..io import Sample, check_regular_file
from .hits import ExternalHit, to_hit

__all__ = ["Span", "SpanTrace", "read_spans", "parse_spans", "traces_from_spans", "read_traces", "is_span_file",
           "trace_searches",
           "SPAN_KIND", "RETRIEVER", "QID_ATTRIBUTE"]

SPAN_KIND = "openinference.span.kind"
RETRIEVER = "RETRIEVER"
QID_ATTRIBUTE = "ragtune.qid"
SESSION = "session.id"
INPUT = "input.value"
DOCUMENTS = "retrieval.documents"
#: document metadata keys that name what a hit is, in the order preferred, with the hit field each becomes
ID_KEYS = (("anchor", "anchor"), ("url", "url"), ("file_path", "path"), ("source", "path"), ("path", "path"),
           ("file_name", "path"), ("filename", "path"), ("doc_id", "id"), ("document_id", "id"))
_OFFSETS = ("start", "end", "start_char_idx", "end_char_idx", "start_index", "end_index")
_QUERY_KEYS = ("query_str", "query", "question", "input", "str_or_query_bundle", "query_bundle", "message", "q")


@dataclass(frozen=True)
class Span:
    """One span, as much of it as a trace of searches needs. ``start`` orders spans (nanoseconds since the epoch);
    ``order`` is its position in what was read, the tie-break; ``end`` (nanoseconds) is 0 when not recorded."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    attributes: Mapping[str, Any]
    order: int = 0
    end: int = 0

    @property
    def seconds(self) -> float | None:
        """How long the span took, when its end was recorded."""
        return (self.end - self.start) / 1e9 if self.end >= self.start > 0 else None

    @property
    def kind(self) -> str | None:
        v = self.attributes.get(SPAN_KIND)
        return str(v).upper() if v is not None else None


@dataclass(frozen=True)
class SpanTrace:
    """One trace as one question: its id when the spans name one, its text, and its searches in order, each
    ``(query, raw hits)`` with hits as :func:`ragtune.evaluate.hits.to_hit` reads them; ``seconds``: what the
    searches took together (the sum of their spans' durations), None when a span lacks its end time."""

    trace_id: str
    qid: str | None
    question: str
    searches: tuple[tuple[str, tuple[dict[str, Any], ...]], ...] = field(default_factory=tuple)
    seconds: float | None = None

    @property
    def key(self) -> str:
        """What identifies the question: its id, else its text."""
        return self.qid if self.qid is not None else self.question


# -- files ------------------------------------------------------------------------------------------------------------

def is_span_file(s: Sample) -> bool:
    """Whether a sample looks like spans: OTLP JSON (``resourceSpans``) or the SDK's span objects (a ``context``
    with a ``trace_id``), read from the first bytes."""
    if s.is_dir or not s.starts_json:
        return False
    head = s.head
    return (b'"resourceSpans"' in head or b'"resource_spans"' in head
            or (b'"context"' in head and b'"trace_id"' in head and b'"span_id"' in head))


def _objects(text: str, where: Path) -> Iterator[Any]:
    """The JSON values of ``text``, one after another (one per line, pretty-printed and concatenated, or one)."""
    dec = json.JSONDecoder()
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            return
        try:
            value, i = dec.raw_decode(text, i)
        except ValueError as e:
            line = text.count("\n", 0, i) + 1
            raise ConfigError(f"{where}:{line}: not JSON ({e}); a span file holds OTLP JSON or the span objects "
                              "opentelemetry-sdk's ReadableSpan.to_json() writes") from None
        yield value


def read_spans(path: str | os.PathLike[str]) -> list[Span]:
    """Every span in the file at ``path`` (the shapes in the module docstring); a file that holds none, or
    something else, is a :class:`ConfigError` naming the file."""
    p = Path(path)
    if not p.exists():
        raise CorpusNotFoundError(f"{p}: no such span file")
    check_regular_file(p, "span file")
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not UTF-8 text (byte {e.start}); a span file is OTLP JSON or span JSON") from None
    except OSError as e:
        raise ConfigError(f"cannot read span file {p}: {e.strerror or e}") from None
    return parse_spans(_objects(text, p), str(p))


def parse_spans(values: Iterable[Any], where: str = "spans") -> list[Span]:
    """Spans from JSON values: OTLP export requests, SDK span objects, or lists of either."""
    out: list[Span] = []
    for n, value in enumerate(values, start=1):
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, Mapping) and _field(item, "resourceSpans") is not None:
                out.extend(_otlp_request(item, where, len(out)))
            elif isinstance(item, Mapping) and isinstance(item.get("context"), Mapping):
                out.append(_sdk_span(item, where, len(out)))
            else:
                raise ConfigError(f"{where}: value {n} is a {type(item).__name__} {_short(item)}, not a span: expected "
                                  'OTLP JSON {"resourceSpans": [...]} or a span object with "context" and "attributes" '
                                  "(ReadableSpan.to_json())")
    if not out:
        raise ConfigError(f"{where}: no spans in the file")
    return out


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _field(obj: Mapping[str, Any], camel: str) -> Any:
    """``obj[camel]``, or its protobuf snake_case spelling."""
    if camel in obj:
        return obj[camel]
    return obj.get("".join("_" + c.lower() if c.isupper() else c for c in camel))


def _otlp_request(req: Mapping[str, Any], where: str, at: int) -> Iterator[Span]:
    for rs in _list(_field(req, "resourceSpans"), "resourceSpans", where):
        scopes = _field(rs, "scopeSpans")
        if scopes is None:
            scopes = _field(rs, "instrumentationLibrarySpans")
        for ss in _list(scopes, "scopeSpans", where):
            for raw in _list(_field(ss, "spans"), "spans", where):
                yield _otlp_span(raw, where, at)
                at += 1


def _list(v: Any, what: str, where: str) -> list[Any]:
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, Mapping) for x in v):
        raise ConfigError(f"{where}: OTLP {what!r} must be a list of objects, got {_short(v)}")
    return v


def _otlp_span(raw: Mapping[str, Any], where: str, order: int) -> Span:
    trace, span = _field(raw, "traceId"), _field(raw, "spanId")
    if not trace or not span:
        raise ConfigError(f"{where}: an OTLP span has no traceId/spanId (span {raw.get('name')!r})")
    attrs = {}
    for kv in _list(raw.get("attributes"), "attributes", where):
        if "key" in kv:
            attrs[str(kv["key"])] = _any_value(kv.get("value"))
    parent = _field(raw, "parentSpanId") or None
    start, end = _field(raw, "startTimeUnixNano"), _field(raw, "endTimeUnixNano")
    return Span(_hex_id(trace), _hex_id(span), _hex_id(parent) if parent else None, str(raw.get("name", "")),
                _nanos(start, where), attrs, order, _nanos(end, where))


def _hex_id(v: Any) -> str:
    """An id as lowercase hex: OTLP JSON writes hex, protobuf's JSON mapping base64; the SDK ``0x...``."""
    s = str(v).strip()
    if s.startswith("0x"):
        return s[2:].lower()
    if len(s) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in s):
        return s.lower()
    try:
        return base64.b64decode(s, validate=True).hex()
    except ValueError:
        return s


def _any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as a plain value."""
    if not isinstance(v, Mapping) or not v:
        return None
    key, x = next(iter(v.items()))
    key = key.replace("_", "").lower()
    if key == "intvalue":
        return int(x)
    if key == "doublevalue":
        return float(x)
    if key == "arrayvalue":
        return [_any_value(i) for i in (x or {}).get("values", [])]
    if key == "kvlistvalue":
        return {str(i.get("key")): _any_value(i.get("value")) for i in (x or {}).get("values", [])}
    return x


def _nanos(v: Any, where: str) -> int:
    if v is None or v == "":
        return 0
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return int(v)
    s = str(v)
    if s.isdigit():
        return int(s)
    try:
        t = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{where}: a span's start time {s!r} is neither nanoseconds nor an ISO time") from None
    return int(t.timestamp()) * 10 ** 9 + t.microsecond * 1000


def _sdk_span(raw: Mapping[str, Any], where: str, order: int) -> Span:
    ctx = raw["context"]
    trace, span = ctx.get("trace_id"), ctx.get("span_id")
    if not trace or not span:
        raise ConfigError(f"{where}: span {raw.get('name')!r} has no context trace_id/span_id")
    attrs = raw.get("attributes") or {}
    if not isinstance(attrs, Mapping):
        raise ConfigError(f"{where}: span {raw.get('name')!r}: 'attributes' must be an object, got {_short(attrs)}")
    parent = raw.get("parent_id")
    return Span(_hex_id(trace), _hex_id(span), _hex_id(parent) if parent else None, str(raw.get("name", "")),
                _nanos(raw.get("start_time"), where), dict(attrs), order, _nanos(raw.get("end_time"), where))


# -- traces -----------------------------------------------------------------------------------------------------------

def traces_from_spans(spans: Sequence[Span], where: str = "spans") -> list[SpanTrace]:
    """One :class:`SpanTrace` per trace that holds a RETRIEVER span, in the order their first spans were read
    (the rules are in the module docstring). Spans with no RETRIEVER span at all is a :class:`ConfigError`."""
    by_trace: dict[str, list[Span]] = {}
    sessions: dict[str, tuple[str | None, int, int]] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    out = []
    for trace_id, members in by_trace.items():
        ids = {s.span_id: s for s in members}
        searches = sorted((s for s in members if _is_retriever(s) and not _inside_retriever(s, ids)),
                          key=lambda s: (s.start, s.order))
        if not searches:
            continue
        root = min((s for s in members if s.parent_id is None or s.parent_id not in ids),
                   key=lambda s: (s.start, s.order), default=searches[0])
        steps = tuple((_query(s) or str(s.attributes.get(INPUT, "")),
                       _documents(_with_documents(s, members, ids), where)) for s in searches)
        question = _query(root) or steps[0][0]
        times = [s.seconds for s in searches]
        seconds = None if any(t is None for t in times) else sum(t for t in times if t is not None)
        out.append(SpanTrace(trace_id, _qid(root, members), question, steps, seconds))
        sessions[trace_id] = (_attribute(root, members, SESSION), root.start, root.order)
    if not out:
        kinds = sorted({s.kind or "none" for s in spans})
        raise ConfigError(f"{where}: {len(spans)} span(s) in {len(by_trace)} trace(s), none a RETRIEVER span "
                          f"(openinference.span.kind: {', '.join(kinds)}); record the app with an OpenInference "
                          "instrumentation, whose retriever spans carry retrieval.documents")
    return _turns(out, sessions)


def _turns(traces: list[SpanTrace], sessions: Mapping[str, tuple[str | None, int, int]]) -> list[SpanTrace]:
    """Traces of one OpenInference session (``session.id``) that no qid names become its turns, ``<session>#<n>``
    by start time, as a golden conversation's turns are named (``c1#2``)."""
    turns: dict[str, list[SpanTrace]] = {}
    for t in traces:
        session = sessions[t.trace_id][0]
        if t.qid is None and session is not None:
            turns.setdefault(session, []).append(t)
    named = {}
    for session, members in turns.items():
        for n, t in enumerate(sorted(members, key=lambda t: sessions[t.trace_id][1:]), start=1):
            named[t.trace_id] = replace(t, qid=f"{session}#{n}")
    return [named.get(t.trace_id, t) for t in traces]


def read_traces(path: str | os.PathLike[str]) -> list[SpanTrace]:
    """:func:`traces_from_spans` over :func:`read_spans`."""
    return traces_from_spans(read_spans(path), str(path))


def _is_retriever(s: Span) -> bool:
    kind = s.kind
    return kind == RETRIEVER or (kind is None and _has_documents(s))


def _ancestors(s: Span, ids: Mapping[str, Span]) -> Iterator[Span]:
    """The spans enclosing ``s`` in its trace, innermost first (a parent outside the file ends the walk)."""
    seen = set()
    p = s.parent_id
    while p is not None and p in ids and p not in seen:
        seen.add(p)
        yield ids[p]
        p = ids[p].parent_id


def _inside_retriever(s: Span, ids: Mapping[str, Span]) -> bool:
    return any(_is_retriever(a) for a in _ancestors(s, ids))


def _has_documents(s: Span) -> bool:
    return any(k.startswith(DOCUMENTS) for k in s.attributes)


def _with_documents(search: Span, members: Sequence[Span], ids: Mapping[str, Span]) -> Span:
    """The span whose documents are the search's: its own, or, when it records none (LlamaIndex's ``retrieve``
    records them, the ``_retrieve`` inside it does not; a wrapper may do the opposite), the first retriever span
    inside it that does."""
    if _has_documents(search):
        return search
    inner = [s for s in members if s is not search and _is_retriever(s) and _has_documents(s)
             and any(a is search for a in _ancestors(s, ids))]
    return min(inner, key=lambda s: (s.start, s.order)) if inner else search


def _query(s: Span) -> str:
    """A span's input as text: ``input.value``, or, when that is JSON (a framework's call arguments), the query
    string in it: under a key such as ``query``/``query_str``/``question``, nested or not (Haystack's
    ``{"data": {"retriever": {"query": ...}}}``); "" when it holds none."""
    v = s.attributes.get(INPUT)
    if not isinstance(v, str):
        return ""
    if v[:1] in "{[" and v.rstrip()[-1:] in "}]":
        try:
            return _query_in(json.loads(v), 4)
        except ValueError:
            return v
    return v


def _query_in(v: Any, depth: int) -> str:
    if isinstance(v, str):
        return v
    if depth <= 0:
        return ""
    if isinstance(v, Mapping):
        for k in _QUERY_KEYS:
            q = _query_in(v.get(k), depth - 1) if k in v else ""
            if q:
                return q
        inner: Iterable[Any] = (x for x in v.values() if isinstance(x, (Mapping, list)))
    elif isinstance(v, list):
        inner = v
    else:
        return ""
    return next((q for q in (_query_in(x, depth - 1) for x in inner if not isinstance(x, str)) if q), "")


def _qid(root: Span, members: Sequence[Span]) -> str | None:
    qid = _attribute(root, members, QID_ATTRIBUTE)
    if qid is None:
        for s in (root, *sorted(members, key=lambda s: (s.start, s.order))):
            meta = _json_object(s.attributes.get("metadata"))
            qid = _text_value(meta.get("qid", meta.get(QID_ATTRIBUTE)))
            if qid is not None:
                break
    return qid


def _attribute(root: Span, members: Sequence[Span], name: str) -> str | None:
    """The attribute ``name`` of the trace: the root's, else the first span's that has one."""
    for s in (root, *sorted(members, key=lambda s: (s.start, s.order))):
        v = _text_value(s.attributes.get(name))
        if v is not None:
            return v
    return None


def _text_value(v: Any) -> str | None:
    return str(v).strip() if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v).strip() else None


def _json_object(v: Any) -> Mapping[str, Any]:
    if isinstance(v, Mapping):
        return v
    if isinstance(v, str) and v[:1] == "{":
        try:
            x = json.loads(v)
        except ValueError:
            return {}
        return x if isinstance(x, Mapping) else {}
    return {}


def _documents(s: Span, where: str) -> tuple[dict[str, Any], ...]:
    """A retriever span's ``retrieval.documents.N.document.*`` as raw hits, by N."""
    docs: dict[int, dict[str, Any]] = {}
    prefix = DOCUMENTS + "."
    for key, value in s.attributes.items():
        if not key.startswith(prefix):
            continue
        n, _, rest = key[len(prefix):].partition(".")
        if not n.isdigit() or not rest.startswith("document."):
            continue
        docs.setdefault(int(n), {})[rest[len("document."):]] = value
    nested = s.attributes.get(DOCUMENTS)
    if not docs and isinstance(nested, list):  # a document list kept as a value (e.g. an exported dataframe)
        docs = {i: {k.removeprefix("document."): v for k, v in d.items()} for i, d in enumerate(nested)
                if isinstance(d, Mapping)}
    return tuple(_hit(docs[i], f"{where}: trace {s.trace_id} span {s.name!r} document {i}") for i in sorted(docs))


def _hit(doc: Mapping[str, Any], where: str) -> dict[str, Any]:
    meta = _json_object(doc.get("metadata"))
    hit: dict[str, Any] = {}
    for key, as_field in ID_KEYS:
        v = meta.get(key)
        if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v).strip():
            hit[as_field] = str(v)
            break
    else:
        if doc.get("id") is not None and str(doc["id"]).strip():
            hit["id"] = str(doc["id"])
    content = doc.get("content")
    if isinstance(content, str) and content.strip():
        hit["text"] = content
    score = doc.get("score")
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise ConfigError(f"{where}: document.score must be a number, got {_short(score)}")
        hit["score"] = float(score)
    offsets = {k: meta[k] for k in _OFFSETS if k in meta}
    if offsets:
        hit["metadata"] = offsets
    if not any(f in hit for f in ("anchor", "url", "path", "id", "text")):
        raise ConfigError(f"{where}: the document has no id, content or metadata naming its source")
    return hit


def trace_searches(traces: Sequence[SpanTrace], *, field: str | None = None, where: str = "spans"
                   ) -> tuple[dict[str, list[ExternalHit]], dict[str, list[tuple[str, list[ExternalHit]]]],
                              dict[str, str], dict[str, float]]:
    """What a run row holds, from traces: question key -> the searches' hits in order, -> each search ``(query,
    hits)``, -> the question's text, -> the seconds its searches took (where the spans say). A question found in
    several traces (asked twice) is scored by the first."""
    hits: dict[str, list[ExternalHit]] = {}
    searches: dict[str, list[tuple[str, list[ExternalHit]]]] = {}
    questions: dict[str, str] = {}
    seconds: dict[str, float] = {}
    for t in traces:
        if t.key in searches:
            continue
        steps = [(query, [to_hit(h, field=field, where=f"{where}: trace {t.trace_id} search {n} hit {r}")
                          for r, h in enumerate(raw, start=1)])
                 for n, (query, raw) in enumerate(t.searches, start=1)]
        searches[t.key] = steps
        hits[t.key] = [h for _, hs in steps for h in hs]
        questions[t.key] = t.question
        if t.seconds is not None:
            seconds[t.key] = t.seconds
    return hits, searches, questions, seconds
