"""Metadata filters, applied before ranking.

Every chunk carries its document's metadata plus three derived fields:
``doc_id``, ``dir`` (the top folder of the document path, ``""`` at the root)
and ``path`` (the folder part of the document id). A filter is a small
expression::

    dir=tutorial
    lang in [en, de] and year>=2020
    (type=faq or type=guide) and not draft=true

Operators: ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in [..]``; combined
with ``and``, ``or``, ``not`` and parentheses. Values are numbers, ``true``/
``false``, bare words or quoted strings. A list-valued field matches ``=``
when any element matches. Filters compile to a boolean mask over the chunks,
so every retriever ranks only the allowed chunks and still returns ``k``
results when ``k`` exist.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from ..errors import ConfigError
from ..types import Chunk

__all__ = ["Filter", "ChunkFilter", "parse_filter", "chunk_fields", "combine_filters"]

_TOKEN_RE = re.compile(r"""\s*(?:(?P<op><=|>=|!=|=|<|>)|(?P<lp>\()|(?P<rp>\))|(?P<lb>\[)|(?P<rb>\])|(?P<comma>,)
    |(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(?P<word>[^\s()\[\],=!<>"']+))""", re.X)


@dataclass(frozen=True)
class Cmp:
    field: str
    op: str  # = != < <= > >= in
    value: Any

    def matches(self, meta: Mapping[str, Any]) -> bool:
        if self.field not in meta:
            return False
        v = meta[self.field]
        values = v if isinstance(v, (list, tuple, set)) else [v]
        if self.op == "in":
            return any(_eq(x, c) for x in values for c in self.value)
        if self.op == "=":
            return any(_eq(x, self.value) for x in values)
        if self.op == "!=":
            return not any(_eq(x, self.value) for x in values)
        for x in values:
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                try:
                    x = float(str(x))
                except ValueError:
                    continue
            if ((self.op == "<" and x < self.value) or (self.op == "<=" and x <= self.value)
                    or (self.op == ">" and x > self.value) or (self.op == ">=" and x >= self.value)):
                return True
        return False

    def fields(self) -> set[str]:
        return {self.field}


@dataclass(frozen=True)
class And:
    parts: tuple["Filter", ...]

    def matches(self, meta: Mapping[str, Any]) -> bool:
        return all(p.matches(meta) for p in self.parts)

    def fields(self) -> set[str]:
        return set().union(*(p.fields() for p in self.parts))


@dataclass(frozen=True)
class Or:
    parts: tuple["Filter", ...]

    def matches(self, meta: Mapping[str, Any]) -> bool:
        return any(p.matches(meta) for p in self.parts)

    def fields(self) -> set[str]:
        return set().union(*(p.fields() for p in self.parts))


@dataclass(frozen=True)
class Not:
    part: "Filter"

    def matches(self, meta: Mapping[str, Any]) -> bool:
        return not self.part.matches(meta)

    def fields(self) -> set[str]:
        return self.part.fields()


Filter = Union[Cmp, And, Or, Not]


def _eq(x: Any, c: Any) -> bool:
    if isinstance(c, bool) or isinstance(x, bool):
        return str(x).lower() == str(c).lower()
    if isinstance(c, (int, float)) and not isinstance(x, str):
        return x == c
    return str(x) == str(c)


def _value(tok: tuple[str, str]) -> Any:
    kind, text = tok
    if kind == "str":
        return re.sub(r"\\(.)", r"\1", text[1:-1])  # a backslash escapes the character after it
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN_RE.match(text, pos)
            if not m or m.end() == pos:
                if text[pos:].strip() == "":
                    break
                self.fail(f"unexpected character {text[pos]!r} at position {pos}")
            kind = m.lastgroup
            assert kind is not None
            self.toks.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def fail(self, why: str) -> None:
        raise ConfigError(f"invalid filter {self.text!r}: {why}; expected e.g. 'dir=tutorial', "
                          "'year>=2020 and lang in [en, de]'")

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            self.fail("unexpected end")
        self.i += 1
        return tok  # type: ignore[return-value]

    def is_word(self, word: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[0] == "word" and tok[1].lower() == word

    def parse(self) -> Filter:
        f = self.or_expr()
        if self.peek() is not None:
            self.fail(f"unexpected {self.peek()[1]!r}")  # type: ignore[index]
        return f

    def or_expr(self) -> Filter:
        parts = [self.and_expr()]
        while self.is_word("or"):
            self.take()
            parts.append(self.and_expr())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def and_expr(self) -> Filter:
        parts = [self.unary()]
        while self.is_word("and"):
            self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def unary(self) -> Filter:
        if self.is_word("not"):
            self.take()
            return Not(self.unary())
        tok = self.peek()
        if tok is not None and tok[0] == "lp":
            self.take()
            f = self.or_expr()
            if self.take()[0] != "rp":
                self.fail("missing ')'")
            return f
        return self.comparison()

    def comparison(self) -> Filter:
        kind, field = self.take()
        if kind not in ("word", "str"):
            self.fail(f"expected a field name, got {field!r}")
        field = _value((kind, field)) if kind == "str" else field
        if self.is_word("in"):
            self.take()
            if self.take()[0] != "lb":
                self.fail("'in' takes a list like [a, b]")
            values = []
            while True:
                tok = self.take()
                if tok[0] == "rb":
                    break
                if tok[0] == "comma":
                    continue
                if tok[0] not in ("word", "str"):
                    self.fail(f"unexpected {tok[1]!r} in list")
                values.append(_value(tok))
            return Cmp(str(field), "in", tuple(values))
        if self.peek() is None:
            self.fail(f"expected an operator (=, !=, <, <=, >, >=, in) after {field!r}")
        kind, op = self.take()
        if kind != "op":
            self.fail(f"expected an operator (=, !=, <, <=, >, >=, in) after {field!r}")
        vk, vt = self.take()
        if vk not in ("word", "str"):
            self.fail(f"expected a value after {op!r}")
        value = _value((vk, vt))
        if op in ("<", "<=", ">", ">=") and (isinstance(value, bool) or not isinstance(value, (int, float))):
            self.fail(f"{op} needs a number, got {vt!r}")
        return Cmp(str(field), op, value)


def parse_filter(text: str | Filter | None) -> Filter | None:
    """Parse a filter expression (a parsed filter or None pass through)."""
    if text is None or not isinstance(text, str):
        return text
    if not text.strip():
        return None
    return _Parser(text).parse()


def combine_filters(filters: Sequence[str | Filter | None]) -> Filter | None:
    """AND of several filters (each ``--filter`` flag is one)."""
    parsed = [f for f in (parse_filter(x) for x in filters) if f is not None]
    if not parsed:
        return None
    return parsed[0] if len(parsed) == 1 else And(tuple(parsed))


def chunk_fields(chunk: Chunk) -> dict[str, Any]:
    """The fields a filter sees for ``chunk``: its metadata plus doc_id, dir and path."""
    folder = chunk.doc_id.rsplit("/", 1)[0] if "/" in chunk.doc_id else ""
    return {**chunk.metadata, "doc_id": chunk.doc_id, "dir": folder.split("/", 1)[0], "path": folder}


class ChunkFilter:
    """Filter masks over one fixed list of chunks, with the fields computed once."""

    def __init__(self, chunks: Sequence[Chunk]):
        self._fields = [chunk_fields(c) for c in chunks]
        self.known: set[str] = set().union(*(f.keys() for f in self._fields)) if self._fields else set()
        self._cache: dict[str, np.ndarray] = {}

    def mask(self, flt: str | Filter | None) -> np.ndarray | None:
        """Boolean mask of the chunks ``flt`` allows (None when there is no filter).

        A field that no chunk has is a mistake, not an empty result: it raises
        with the list of fields that exist.
        """
        flt = parse_filter(flt)
        if flt is None:
            return None
        key = repr(flt)  # not the filter itself: True == 1 == 1.0 would share an entry
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        unknown = sorted(flt.fields() - self.known)
        if unknown:
            raise ConfigError(f"unknown filter field(s) {', '.join(map(repr, unknown))}; fields in this corpus: "
                              f"{', '.join(sorted(self.known))}")
        mask = np.fromiter((flt.matches(f) for f in self._fields), dtype=bool, count=len(self._fields))
        if len(self._cache) > 64:
            self._cache.clear()
        self._cache[key] = mask
        return mask
