"""Answer telemetry in SQLite (WAL): what was asked, what was retrieved, and whether it was found.

Several processes may write at once (WAL + a busy timeout; each row is its own
transaction). API keys are never logged: only the fields below are stored.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["TelemetryLog", "parse_since"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts REAL NOT NULL,
  query TEXT NOT NULL,
  version TEXT,
  filters TEXT,
  outcome TEXT NOT NULL,
  reason TEXT,
  retrieved TEXT NOT NULL,
  latency_ms REAL,
  source TEXT
);
CREATE INDEX IF NOT EXISTS answers_ts ON answers (ts);
CREATE INDEX IF NOT EXISTS answers_outcome ON answers (outcome);
"""


def parse_since(text: str | None) -> float | None:
    """``7d``, ``12h``, ``30m`` -> a unix time that far back (None: no limit)."""
    if not text:
        return None
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    try:
        return time.time() - float(text[:-1]) * units[text[-1]]
    except (KeyError, ValueError):
        from ..errors import ConfigError

        raise ConfigError(f"--since {text!r}: use a number and a unit, like 7d, 12h or 30m") from None


class TelemetryLog:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=30000")
        self._db.executescript(_SCHEMA)

    def log(self, *, query: str, outcome: str, retrieved: list[dict[str, Any]], version: str | None = None,
            filters: str | None = None, reason: str | None = None, latency_ms: float | None = None,
            source: str = "cli") -> None:
        rows = [{"anchor": r.get("anchor"), "score": r.get("score")} for r in retrieved]
        for attempt in range(20):
            try:
                self._db.execute(
                    "INSERT INTO answers (ts, query, version, filters, outcome, reason, retrieved, latency_ms, source) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (time.time(), query, version, filters, outcome, reason, json.dumps(rows), latency_ms, source))
                return
            except sqlite3.OperationalError as e:  # "database is locked" beyond the busy timeout
                if "locked" not in str(e) or attempt == 19:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def rows(self, *, since: float | None = None, outcome: str | None = None) -> Iterator[dict[str, Any]]:
        q = "SELECT id, ts, query, version, filters, outcome, reason, retrieved, latency_ms, source FROM answers WHERE 1=1"
        args: list[Any] = []
        if since is not None:
            q += " AND ts >= ?"
            args.append(since)
        if outcome is not None:
            q += " AND outcome = ?"
            args.append(outcome)
        for row in self._db.execute(q + " ORDER BY id", args):
            keys = ("id", "ts", "query", "version", "filters", "outcome", "reason", "retrieved", "latency_ms", "source")
            d = dict(zip(keys, row))
            d["retrieved"] = json.loads(d["retrieved"])
            yield d

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        self._db.close()
