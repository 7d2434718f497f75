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
from functools import cached_property
from typing import Any, Union

import numpy as np

from ..errors import ConfigError
from ..types import Chunk

__all__ = ["Filter", "ChunkFilter", "parse_filter", "chunk_fields", "combine_filters", "MAX_FILTER_CHARS",
           "MAX_FILTER_DEPTH", "MAX_LIST_VALUES"]

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
            return any(self._in(x) for x in values)
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

    @cached_property
    def _in_keys(self) -> tuple[set[str], set[Any], set[str], set[str], set[str]]:
        """The list of an ``in``, indexed so that a lookup costs the same as ``_eq`` against every value."""
        vals = self.value
        return ({str(c).lower() for c in vals if isinstance(c, bool)},
                {c for c in vals if isinstance(c, (int, float)) and not isinstance(c, bool)},
                {str(c) for c in vals if not isinstance(c, bool)},
                {str(c) for c in vals if not isinstance(c, (bool, int, float))},
                {str(c).lower() for c in vals})

    def _in(self, x: Any) -> bool:
        """``any(_eq(x, c) for c in self.value)`` by set lookups."""
        bools, nums, texts, words, lowered = self._in_keys
        if isinstance(x, bool):
            return str(x).lower() in lowered
        if isinstance(x, str):
            return x.lower() in bools or x in texts
        if str(x).lower() in bools or str(x) in words:
            return True
        try:
            return x in nums
        except TypeError:  # an unhashable value
            return any(x == c for c in nums)


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


def _value(tok: tuple[str, str] | tuple[str, str, int]) -> Any:
    kind, text = tok[0], tok[1]
    if kind == "str":
        return re.sub(r"\\(.)", r"\1", text[1:-1])  # a backslash escapes the character after it
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return text
        if value != value or value in (float("inf"), float("-inf")):
            raise ConfigError(f"invalid filter: {text[:20]!r} is not a finite number; compare with a number, or quote "
                              f"it ('{text[:20]}') to compare text")
        return value


MAX_FILTER_CHARS = 4096
"""Longest filter expression accepted, in characters."""
MAX_FILTER_DEPTH = 32
"""Deepest nesting of parentheses and ``not`` accepted."""
MAX_LIST_VALUES = 256
"""Most values accepted in one ``in [...]`` list."""


def _show(text: str, limit: int = 20) -> str:
    """A token as an error message shows it: quoted, and cut short so input is never echoed at length."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


class _Parser:
    def __init__(self, text: str):
        if len(text) > MAX_FILTER_CHARS:
            self.fail(f"it has {len(text)} characters; the limit is {MAX_FILTER_CHARS}", None)
        self.toks: list[tuple[str, str, int]] = []  # kind, text, position
        pos = 0
        while pos < len(text):
            m = _TOKEN_RE.match(text, pos)
            if not m or m.end() == pos:
                if text[pos:].strip() == "":
                    break
                self.fail(f"unexpected character {_show(text[pos])}", pos)
            kind = m.lastgroup
            assert kind is not None
            self.toks.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.end = len(text)
        self.i = 0
        self.depth = 0

    @staticmethod
    def fail(why: str, pos: int | None) -> None:
        where = f" at character {pos + 1}" if pos is not None else ""
        raise ConfigError(f"invalid filter{where}: {why}; expected e.g. 'dir=tutorial', "
                          "'year>=2020 and lang in [en, de]'")

    def peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def pos(self) -> int:
        tok = self.peek()
        return tok[2] if tok is not None else self.end

    def take(self) -> tuple[str, str, int]:
        tok = self.peek()
        if tok is None:
            self.fail("unexpected end", self.end)
        self.i += 1
        return tok  # type: ignore[return-value]

    def is_word(self, word: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[0] == "word" and tok[1].lower() == word

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_FILTER_DEPTH:
            self.fail(f"parentheses and 'not' nest more than {MAX_FILTER_DEPTH} deep", self.pos())

    def parse(self) -> Filter:
        f = self.or_expr()
        tok = self.peek()
        if tok is not None:
            self.fail(f"unexpected {_show(tok[1])}", tok[2])
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
            self.nest()
            f: Filter = Not(self.unary())
            self.depth -= 1
            return f
        tok = self.peek()
        if tok is not None and tok[0] == "lp":
            self.take()
            self.nest()
            f = self.or_expr()
            close = self.peek()
            if close is None or close[0] != "rp":
                self.fail("missing ')'", self.pos())
            self.take()
            self.depth -= 1
            return f
        return self.comparison()

    def comparison(self) -> Filter:
        kind, field, at = self.take()
        if kind not in ("word", "str"):
            self.fail(f"expected a field name, got {_show(field)}", at)
        field = _value((kind, field)) if kind == "str" else field
        if self.is_word("in"):
            self.take()
            kind, text, at = self.take()
            if kind != "lb":
                self.fail("'in' takes a list like [a, b]", at)
            values = []
            while True:
                kind, text, at = self.take()
                if kind == "rb":
                    break
                if kind == "comma":
                    continue
                if kind not in ("word", "str"):
                    self.fail(f"unexpected {_show(text)} in list", at)
                if len(values) == MAX_LIST_VALUES:
                    self.fail(f"a list holds at most {MAX_LIST_VALUES} values", at)
                values.append(_value((kind, text)))
            return Cmp(str(field), "in", tuple(values))
        if self.peek() is None:
            self.fail(f"expected an operator (=, !=, <, <=, >, >=, in) after {_show(str(field))}", self.end)
        kind, op, at = self.take()
        if kind != "op":
            self.fail(f"expected an operator (=, !=, <, <=, >, >=, in) after {_show(str(field))}", at)
        if self.peek() is None:
            self.fail(f"expected a value after {op!r}", self.end)
        vk, vt, at = self.take()
        if vk not in ("word", "str"):
            self.fail(f"expected a value after {op!r}", at)
        value = _value((vk, vt))
        if op in ("<", "<=", ">", ">=") and (isinstance(value, bool) or not isinstance(value, (int, float))):
            self.fail(f"{op} needs a number, got {_show(vt)}", at)
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
    meta = {k if isinstance(k, str) else str(k): v for k, v in chunk.metadata.items()}  # a field is a name
    return {**meta, "doc_id": chunk.doc_id, "dir": folder.split("/", 1)[0], "path": folder}


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
