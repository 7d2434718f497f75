"""Writing results: JSON and JSON Lines files, with errors that say what to fix."""

from __future__ import annotations

import json
import math
import os
from typing import Any

from .errors import ConfigError

__all__ = ["write_text", "write_json", "write_jsonl", "check_regular_file", "json_finite", "some"]


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path``, creating its folder; an OSError becomes one ConfigError line."""
    try:
        folder = os.path.dirname(os.fspath(path))
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise ConfigError(f"cannot write {os.fspath(path)}: {e.strerror or e}") from None


def write_json(path: str | os.PathLike[str], data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def write_jsonl(path: str | os.PathLike[str], rows: list[Any]) -> None:
    write_text(path, "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows))


def check_regular_file(path: str | os.PathLike[str], what: str = "file") -> None:
    """Refuse a path that is not a regular file before anything reads it (reading a FIFO or a device would block
    forever or never end): :func:`ragtune.paths.check_input_file`, the one check."""
    from .paths import check_input_file

    check_input_file(path, what)


def json_finite(o: Any) -> Any:
    """``o`` with NaN and infinities made None (in dicts, lists and tuples, recursively), so the JSON is standard."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: json_finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [json_finite(v) for v in o]
    return o


def some(items: Any, n: int = 5, *, quote: bool = False) -> str:
    """The first ``n`` of ``items`` in sorted order, comma-separated, and how many more: for error messages."""
    items = sorted(items)
    shown = ", ".join(map(repr if quote else str, items[:n]))
    return shown + (f" and {len(items) - n} more" if len(items) > n else "")
