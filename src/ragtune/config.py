"""Typed, validated, hashable configuration.

Configs are frozen dataclasses. Strings from the edges (CLI flags, TOML/YAML)
are parsed once by :meth:`Config.from_dict`, which rejects unknown keys with
the list of valid ones. :meth:`Config.config_hash` is a stable cache key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from .errors import ConfigError

__all__ = ["Config", "check_choice", "check_range"]

C = TypeVar("C", bound="Config")


class Config:
    """Mixin for frozen dataclass configs."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[C], data: Mapping[str, Any]) -> C:
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ConfigError(
                f"{cls.__name__}: unknown option(s) {', '.join(map(repr, unknown))}; "
                f"valid options: {', '.join(names)}"
            )
        try:
            return cls(**data)
        except TypeError as e:
            raise ConfigError(f"{cls.__name__}: {e}") from None

    def config_hash(self) -> str:
        blob = json.dumps({"type": type(self).__name__, **self.to_dict()}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


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
