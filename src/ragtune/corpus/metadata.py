"""Document metadata as plain, bounded JSON values, and front matter read safely.

Metadata is hashed into the corpus fingerprint, written into every chunk of a store and compared by filters, so
it must be JSON with string keys, and small. :func:`normalise_metadata` is the one place that makes it so; every
:class:`~ragtune.corpus.Corpus` passes its documents' metadata through it:

- keys become strings (YAML reads ``2020: yes`` as the int key 2020; ``true``, ``null`` and dates are keys
  too): ``"2020"``, ``"true"``, ``"null"``, ``"2020-01-01"``. Two keys that become the same string are an error;
- values become JSON values: dates and times their ISO text, sets and tuples lists, binary data its base64
  text, NaN and infinities the strings ``"nan"``, ``"inf"``, ``"-inf"``, anything else its ``str()``;
- at most :data:`MAX_METADATA_VALUES` values (keys, items and scalars), :data:`MAX_METADATA_CHARS` characters
  and :data:`MAX_METADATA_DEPTH` levels per document, counted after YAML aliases expand; a recursive value is
  refused.

:func:`load_front_matter` reads YAML front matter of at most :data:`MAX_FRONT_MATTER_CHARS` characters with
:func:`safe_yaml_load`, the safe loader that refuses a document before building anything when its aliases or
merge keys would expand past the same limits (a 1 kB "billion laughs" block otherwise grows to gigabytes when
serialised), or when it nests too deeply. Other YAML readers can use it with their own limits.
"""

from __future__ import annotations

import base64
import datetime
import math
import re
from collections.abc import Mapping
from typing import Any

import yaml

from ..errors import CorpusError
from ..safe_yaml import BoundedSafeLoader  # noqa: F401 - re-exported
from ..safe_yaml import safe_yaml_load as _safe_yaml_load

__all__ = ["normalise_metadata", "load_front_matter", "safe_yaml_load", "BoundedSafeLoader", "MAX_METADATA_VALUES", "MAX_METADATA_CHARS",
           "MAX_METADATA_DEPTH", "MAX_FRONT_MATTER_CHARS"]

MAX_METADATA_VALUES = 10_000
MAX_METADATA_CHARS = 1_000_000
MAX_METADATA_DEPTH = 32
MAX_FRONT_MATTER_CHARS = 64 * 1024

_LIMITS = (f"at most {MAX_METADATA_VALUES:,} values, {MAX_METADATA_CHARS:,} characters and "
           f"{MAX_METADATA_DEPTH} levels of nesting")


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _text(value: str) -> str:
    """A lone surrogate (``"\\ud800"`` in YAML or JSON) cannot be written as UTF-8: it becomes U+FFFD."""
    return _SURROGATE_RE.sub("\ufffd", value) if _SURROGATE_RE.search(value) else value


def _key(key: Any, source: str) -> str:
    if isinstance(key, str):
        return _text(key)
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return _text(str(_scalar(key)))  # 2020 -> "2020", a date -> its ISO text


def _scalar(value: Any) -> Any:
    """A JSON scalar for ``value`` (None, bool, int, finite float, str)."""
    if isinstance(value, str):
        return _text(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (datetime.date, datetime.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


class _Budget:
    __slots__ = ("values", "chars", "source")

    def __init__(self, source: str):
        self.values = 0
        self.chars = 0
        self.source = source

    def spend(self, chars: int = 0) -> None:
        self.values += 1
        self.chars += chars
        if self.values > MAX_METADATA_VALUES or self.chars > MAX_METADATA_CHARS:
            raise CorpusError(f"{self.source}: metadata too large (more than {MAX_METADATA_VALUES:,} values or "
                              f"{MAX_METADATA_CHARS:,} characters, YAML aliases expanded); a document's metadata "
                              f"may hold {_LIMITS}: keep bulky data out of front matter")


def _plain(value: Any, budget: _Budget, depth: int, path: list[int]) -> tuple[Any, bool]:
    """(JSON value, whether anything had to change)."""
    if depth > MAX_METADATA_DEPTH:
        raise CorpusError(f"{budget.source}: metadata nested more than {MAX_METADATA_DEPTH} levels deep; "
                          f"a document's metadata may hold {_LIMITS}")
    if isinstance(value, Mapping) or isinstance(value, (list, tuple, set, frozenset)):
        if id(value) in path:
            raise CorpusError(f"{budget.source}: metadata refers to itself (a recursive YAML alias); "
                              "write the value out instead")
        path.append(id(value))
        try:
            return _container(value, budget, depth, path)
        finally:
            path.pop()
    out = _scalar(value)
    budget.spend(len(out) if isinstance(out, str) else 0)
    return out, out is not value


def _container(value: Any, budget: _Budget, depth: int, path: list[int]) -> tuple[Any, bool]:
    budget.spend()
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        changed = type(value) is not dict
        for k, v in value.items():
            key = _key(k, budget.source)
            budget.spend(len(key))
            if key in out:
                raise CorpusError(f"{budget.source}: metadata keys {k!r} and {key!r} are the same key once "
                                  "written as text; rename one of them")
            out[key], c = _plain(v, budget, depth + 1, path)
            changed = changed or c or key is not k
        return out, changed
    items = value
    changed = type(value) is not list
    if isinstance(value, (set, frozenset)):  # a YAML !!set: a list in a stable order
        items = sorted(value, key=lambda x: (type(x).__name__, str(x)))
    result = []
    for v in items:
        item, c = _plain(v, budget, depth + 1, path)
        result.append(item)
        changed = changed or c
    return result, changed


def normalise_metadata(metadata: Any, *, source: str) -> dict[str, Any]:
    """``metadata`` as a dict of JSON values with string keys, within the limits; ``source`` names the document
    in errors. Returns ``metadata`` itself when it already is one."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise CorpusError(f"{source}: metadata must be a mapping (key: value), got {type(metadata).__name__}")
    if not metadata:
        return metadata if type(metadata) is dict else {}
    out, changed = _plain(metadata, _Budget(source), 0, [])
    return out if changed else metadata  # type: ignore[return-value]


def load_front_matter(raw: str, source: str, *, first_line: int = 2) -> dict[str, Any]:
    """The YAML mapping in ``raw`` (a front matter block without its ``---`` lines), normalised; ``first_line``
    is the line of the file that ``raw`` starts on, for error positions."""
    if len(raw) > MAX_FRONT_MATTER_CHARS:
        raise CorpusError(f"{source}: front matter is {len(raw):,} characters, more than the "
                          f"{MAX_FRONT_MATTER_CHARS:,} allowed; keep front matter to a few fields and put the rest "
                          "in the body")
    if not raw.strip():
        return {}
    try:
        data = safe_yaml_load(raw, source, what="front matter")
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + first_line})" if mark is not None else ""
        raise CorpusError(
            f"{source}: invalid YAML front matter{where}: {getattr(e, 'problem', None) or e}; "
            "fix the block between the leading '---' lines or remove it"
        ) from None
    except CorpusError:
        raise
    except RecursionError:
        raise CorpusError(f"{source}: front matter nested too deeply to read; "
                          f"metadata may hold {_LIMITS}") from None
    except (ValueError, TypeError, OverflowError) as e:  # a value YAML resolved but Python cannot hold
        raise CorpusError(f"{source}: invalid value in YAML front matter: {e}; "
                          "quote it to keep it as text") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CorpusError(f"{source}: front matter must be a YAML mapping (key: value lines), "
                          f"got {type(data).__name__}")
    return normalise_metadata(data, source=source)


def safe_yaml_load(text: str, source: str, *, what: str = "YAML", max_values: int = MAX_METADATA_VALUES,
                   max_chars: int = MAX_METADATA_CHARS, max_depth: int = MAX_METADATA_DEPTH,
                   error: type[Exception] = CorpusError) -> Any:
    """:func:`ragtune.safe_yaml.safe_yaml_load` with the corpus's limits and :class:`CorpusError`."""
    return _safe_yaml_load(text, source, what=what, max_values=max_values, max_chars=max_chars, max_depth=max_depth,
                           error=error)
