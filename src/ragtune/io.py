"""Writing results: JSON and JSON Lines files, with errors that say what to fix."""

from __future__ import annotations

import json
import os
from typing import Any

from .errors import ConfigError

__all__ = ["write_text", "write_json", "write_jsonl"]


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
