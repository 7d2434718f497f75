"""Anything that is not a regular file (a FIFO would block a read forever) is refused with one line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import write_files

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")


def _ragtune(*args: str) -> subprocess.CompletedProcess:
    # a subprocess with a timeout: a regression would hang, and must fail the test instead of the suite
    return subprocess.run([sys.executable, "-m", "ragtune", *args], capture_output=True, text=True, timeout=60)


def test_fifos_in_a_corpus_golden_set_grid_or_config_are_refused(tmp_path):
    corpus = write_files(tmp_path / "corpus", {"a.md": "# A\n\ntext\n"})
    os.mkfifo(corpus / "pipe.md")
    for name in ("g.jsonl", "grid.toml", "cfg.toml"):
        os.mkfifo(tmp_path / name)
    ok = write_files(tmp_path / "ok", {"a.md": "# A\n\ntext\n"})
    cases = [
        ("anchors", "--corpus", str(corpus)),
        ("golden", "check", "--corpus", str(ok), "--golden", str(tmp_path / "g.jsonl")),
        ("sweep", "--corpus", str(ok), "--golden", str(tmp_path / "g.jsonl"), "--grid", str(tmp_path / "grid.toml"),
         "--out", str(tmp_path / "out"), "--dry-run"),
        ("index", "build", "--store", str(tmp_path / "st"), "--corpus", str(ok), "--config", str(tmp_path / "cfg.toml")),
    ]
    for args in cases:
        r = _ragtune(*args)
        assert r.returncode == 2, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "FIFO (named pipe), not a regular file" in lines[0], (args, r.stderr)


def test_non_finite_numbers_in_filters_are_refused():
    from ragtune.errors import ConfigError
    from ragtune.retrieve.filters import parse_filter

    for bad in ("year>nan", "year>inf", "year = -inf", "x in [1, NaN]", "x < Infinity"):
        with pytest.raises(ConfigError, match="is not a finite number"):
            parse_filter(bad)
    assert parse_filter("x = 'nan'").value == "nan" and parse_filter("x > 1e3").value == 1000.0
