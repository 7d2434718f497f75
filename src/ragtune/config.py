"""Typed, validated, hashable configuration.

Configs are frozen dataclasses. Strings from the edges (CLI flags, TOML/YAML)
are parsed once by :meth:`Config.from_dict`, which rejects unknown keys with
the list of valid ones. :attr:`Config.key` (:func:`config_key`) is a stable cache key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from .errors import ConfigError

__all__ = ["Config", "Opt", "NONE_FLAG", "check_choice", "check_range", "config_key"]

C = TypeVar("C", bound="Config")


@dataclasses.dataclass(frozen=True)
class Opt:
    """How an option reads on the command line: help text, range of numbers, a short flag, a metavar,
    ``flag`` for another spelling (e.g. ``--no-fuzzy`` for ``fuzzy: bool = True``), or a name without dashes for
    a positional argument (``flag="SOURCES"``: one or more values when the parameter is a sequence)."""

    help: str
    lo: float | None = None
    hi: float | None = None
    short: str | None = None
    metavar: str | None = None
    flag: str | None = None


class _NoneFlag:
    """``--stemmer none``: an option set to None on purpose, where a flag left out is None (not given) too.
    :meth:`ragtune.pipeline.PipelineConfig.from_flags` turns it into None."""

    def __repr__(self) -> str:
        return "none"


NONE_FLAG = _NoneFlag()


class Config:
    """Mixin for frozen dataclass configs."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[C], data: Mapping[str, Any]) -> C:
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(names))
        if unknown:
            import difflib

            close = difflib.get_close_matches(str(unknown[0]), names, n=1, cutoff=0.6) if len(unknown) == 1 else []
            raise ConfigError(
                f"{cls.__name__}: unknown option(s) {', '.join(map(repr, unknown))}; "
                f"valid options: {', '.join(names) or 'none (it takes no options)'}"
                f"{f' (did you mean {close[0]!r}?)' if close else ''}"
            )
        data = {k: _coerce(cls.__name__, k, v, hints.get(k)) for k, v in data.items()} if (hints := _hints(cls)) else dict(data)
        try:
            return cls(**data)
        except TypeError as e:
            raise ConfigError(f"{cls.__name__}: {e}") from None

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """The value of every option when it is not given."""
        return cls().to_dict()  # type: ignore[call-arg]

    @property
    def key(self) -> str:
        """A stable hash of the config and its type (:func:`config_key`), the same scheme as
        :attr:`ragtune.pipeline.PipelineConfig.key`."""
        return config_key({"type": type(self).__name__, **self.to_dict()})


def config_key(data: Mapping[str, Any]) -> str:
    """The one hash of a configuration: 12 hex digits of SHA-256 over its sorted JSON (tuples as lists)."""
    blob = json.dumps(dict(data), sort_keys=True, default=_plain)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _plain(value: Any) -> Any:
    try:
        return list(value)
    except TypeError:
        return str(value)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of a config class, computed once per class (validating a search space builds
    hundreds of configurations; resolving annotations was most of the time)."""
    import typing

    if cls not in _HINTS:
        try:
            _HINTS[cls] = typing.get_type_hints(cls)
        except Exception:  # pragma: no cover - unresolvable annotations: skip the type check
            return {}
    return _HINTS[cls]


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _coerce(owner: str, name: str, value: Any, hint: Any) -> Any:
    """Check ``value`` against the field's annotation (TOML/YAML/JSON values): lists become tuples where a tuple
    is expected, ints are accepted for floats; anything else of the wrong type is a ConfigError naming the field."""
    import types
    import typing

    if hint is None or hint is Any:
        return value
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _coerce(owner, name, value, option)
            except ConfigError as e:
                errors.append(e)
        raise errors[0] if len(errors) == 1 else ConfigError(
            f"{owner}: {name} must be {' or '.join(_type_name(o) for o in options)}, got {value!r}")
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{owner}: {name} must be a list, got {value!r}")
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        items = tuple(_coerce(owner, f"{name}[{i}]", v, args[0] if args else Any) for i, v in enumerate(value))
        return items if origin is tuple else list(items)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{owner}: {name} must be true or false, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{owner}: {name} must be a number, got {value!r}")
        if value != value or value in (float("inf"), float("-inf")):
            raise ConfigError(f"{owner}: {name} must be a finite number, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{owner}: {name} must be an integer, got {value!r}")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{owner}: {name} must be a string, got {value!r}")
        return value
    return value


def check_choice(owner: str, name: str, value: Any, choices: Iterable[Any]) -> None:
    choices = list(choices)
    if value not in choices:
        raise ConfigError(f"{owner}: {name}={value!r} is not valid; choose one of: {', '.join(map(repr, choices))}")


def check_range(owner: str, name: str, value: Any, *, lo: float | None = None, hi: float | None = None,
                lo_open: bool = False, integer: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{owner}: {name} must be {kind}, got {value!r}")
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise ConfigError(f"{owner}: {name}={value!r} must be {'>' if lo_open else '>='} {lo}")
    if hi is not None and value > hi:
        raise ConfigError(f"{owner}: {name}={value!r} must be <= {hi}")


def read_config_file(path: str) -> dict[str, Any]:
    """A TOML or YAML file of flag names (``chunker = "markdown"``), as a dict; errors say what to fix."""
    import tomllib
    from pathlib import Path

    import yaml

    from .io import check_regular_file
    from .safe_yaml import safe_yaml_load

    p = Path(path)
    check_regular_file(p, "config file")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read {p}: {getattr(e, 'strerror', None) or e}") from None
    try:
        data = tomllib.loads(text) if p.suffix.lower() == ".toml" else safe_yaml_load(text, str(p), what="config file")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as e:
        raise ConfigError(f"{p}: cannot parse: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a table of flag names, e.g. chunker = \"markdown\"")
    return data


def parse_number(text: Any, kind: type = int, lo: float | None = None, hi: float | None = None) -> Any:
    """A number from a flag or a query string (``kind`` int or float, finite, within [lo, hi]); ConfigError says
    what was expected."""
    import math

    try:
        v = kind(text)
    except (TypeError, ValueError):
        raise ConfigError(f"expected {'an integer' if kind is int else 'a number'}, got {text!r}") from None
    if kind is float and not math.isfinite(v):
        raise ConfigError(f"expected a finite number, got {text!r}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        expected = f"{lo}..{hi}" if lo is not None and hi is not None else (f">= {lo}" if lo is not None else f"<= {hi}")
        raise ConfigError(f"{text} is out of range: expected {expected}")
    return v


def parse_list(text: str, kind: type = int, lo: float | None = None, hi: float | None = None) -> list[Any]:
    """Comma-separated numbers (``5,10,20``), each checked by :func:`parse_number`."""
    values = [parse_number(x.strip(), kind, lo, hi) for x in str(text).split(",") if x.strip()]
    if not values:
        raise ConfigError(f"expected comma-separated numbers like 5,10,20, got {text!r}")
    return values
