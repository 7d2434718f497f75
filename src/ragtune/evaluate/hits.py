"""What an outside retriever returns, normalised: :class:`ExternalHit`.

A retriever outside ragtune names its results by whatever it has. :func:`to_hit`
accepts

- a string: an identifier (an anchor ``path.md#section``, a document id or
  path, or a URL with or without ``#fragment``);
- a mapping with any of ``anchor``, ``id``/``doc_id``/``document_id``,
  ``path``/``source``/``file_path``, ``url``, ``text``/``content``/
  ``page_content``/``snippet``, ``start``/``end`` (character offsets in the
  document) and ``score``; identifiers also found under ``metadata``;
- an object with such attributes (a LangChain ``Document``, a LlamaIndex node);
- an ``(identifier, score)`` pair.

Nothing is matched here: :class:`~ragtune.evaluate.match.HitMatcher` turns an
``ExternalHit`` into a span of the corpus. (``ragtune.external.hits`` re-exports this module: run files
and outside retrievers share it.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

__all__ = ["ExternalHit", "to_hit", "HIT_FIELDS"]

_ANCHOR = ("anchor",)
_DOC = ("doc_id", "document_id", "docid", "id", "ref_doc_id")
_PATH = ("path", "file_path", "source", "filename", "file")
_URL = ("url", "link", "href")
_TEXT = ("text", "content", "page_content", "chunk", "snippet", "passage")
_SCORE = ("score", "similarity", "relevance_score", "_score")

#: every field name :func:`to_hit` reads, in the order it prefers them
HIT_FIELDS = _ANCHOR + _DOC + _PATH + _URL + _TEXT + _SCORE + ("start", "end", "metadata")


@dataclass(frozen=True, slots=True)
class ExternalHit:
    """One result of an outside retriever, as it named it.

    ``ident`` is what identifies it (an anchor, a document id or path, a
    URL), ``text`` its text, when known; ``start``/``end`` character offsets
    in the named document, when the retriever kept them.
    """

    ident: str | None = None
    text: str | None = None
    score: float | None = None
    start: int | None = None
    end: int | None = None
    kind: str | None = None  # the field the identifier came from: anchor, doc, path, url; None for a bare string

    def describe(self) -> str:
        """A short form for reports: the identifier, or the start of the text."""
        if self.ident is not None:
            return self.ident
        t = " ".join((self.text or "").split())
        return f"text:{t[:60]!r}" + ("..." if len(t) > 60 else "")


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _first(obj: Any, names: tuple[str, ...]) -> Any:
    for n in names:
        v = _get(obj, n)
        if v is not None and v != "":
            return v
    return None


def _number(v: Any, what: str, where: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool):
        raise ConfigError(f"{where}: {what} must be a number, got {v!r}")
    try:
        return float(v)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {what} must be a number, got {v!r}") from None


def _offset(v: Any, what: str, where: str) -> int | None:
    x = _number(v, what, where)
    if x is None:
        return None
    if x != int(x) or x < 0:
        raise ConfigError(f"{where}: {what} must be a character offset (an integer >= 0), got {v!r}")
    return int(x)


def to_hit(raw: Any, *, field: str | None = None, where: str = "hit") -> ExternalHit:
    """Normalise one raw hit (see the module docstring); ``field`` names the one field that identifies it."""
    if isinstance(raw, ExternalHit):
        return raw
    if isinstance(raw, str):
        if not raw.strip():
            raise ConfigError(f"{where}: an empty string names nothing; return an anchor, a document id, a URL or "
                              "{'text': ...}")
        return ExternalHit(ident=raw.strip())
    if isinstance(raw, (tuple, list)) and len(raw) == 2 and not isinstance(raw[1], (str, Mapping)):
        inner = to_hit(raw[0], field=field, where=where)
        return ExternalHit(inner.ident, inner.text, _number(raw[1], "score", where), inner.start, inner.end, inner.kind)
    if raw is None or isinstance(raw, (int, float, bool, bytes)):
        raise ConfigError(f"{where}: cannot read a hit from {type(raw).__name__} {raw!r}; return a string (anchor, "
                          "document id or URL), a dict with anchor/id/url/text/score, or an object with such attributes")
    meta = _get(raw, "metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    score = _number(_first(raw, _SCORE), "score", where)
    text = _first(raw, _TEXT)
    text = text if isinstance(text, str) else None
    if field is not None:
        v = _get(raw, field)
        if v is None:
            v = meta.get(field)
        if v is None or (isinstance(v, str) and not v.strip()):
            raise ConfigError(f"{where}: the hit has no field {field!r} (it has: {_names(raw)}); pick the field "
                              "that identifies a hit")
        kind = "text" if field in _TEXT else None
        if kind == "text":
            return ExternalHit(None, str(v), score, kind="text")
        return ExternalHit(str(v).strip(), text, score, *_span(raw, meta, where), kind=_kind_of(field))
    start, end = _span(raw, meta, where)
    for names, kind in ((_ANCHOR, "anchor"), (_URL, "url"), (_DOC, "doc"), (_PATH, "path")):
        v = _first(raw, names)
        if v is None:
            v = _first(meta, names)
        if v is not None and isinstance(v, (str, int)) and not isinstance(v, bool) and str(v).strip():
            return ExternalHit(str(v).strip(), text, score, start, end, kind)
    if text is not None and text.strip():
        return ExternalHit(None, text, score, kind="text")
    raise ConfigError(f"{where}: the hit names nothing ragtune can match (fields: {_names(raw)}); give it an "
                      "anchor, id, path, url or text, or say which field identifies it")


def _kind_of(field: str) -> str | None:
    for names, kind in ((_ANCHOR, "anchor"), (_URL, "url"), (_DOC, "doc"), (_PATH, "path")):
        if field in names:
            return kind
    return None


def _span(raw: Any, meta: Mapping[str, Any], where: str) -> tuple[int | None, int | None]:
    start = _first(raw, ("start", "start_char_idx", "start_index"))
    end = _first(raw, ("end", "end_char_idx", "end_index"))
    if start is None and end is None:
        start = _first(meta, ("start", "start_char_idx", "start_index"))
        end = _first(meta, ("end", "end_char_idx", "end_index"))
    s, e = _offset(start, "start", where), _offset(end, "end", where)
    if s is None or e is None:
        return None, None
    if e < s:
        raise ConfigError(f"{where}: end {e} is before start {s}; offsets are [start, end) in the document")
    return s, e


def _names(raw: Any) -> str:
    if isinstance(raw, Mapping):
        return ", ".join(map(str, raw)) or "none"
    names = [n for n in HIT_FIELDS if getattr(raw, n, None) is not None]
    return ", ".join(names) or f"none of {', '.join(HIT_FIELDS)} ({type(raw).__name__})"
