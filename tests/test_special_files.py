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


def test_fifos_given_as_a_corpus_golden_set_grid_or_config_are_refused(tmp_path):
    for name in ("g.jsonl", "grid.toml", "cfg.toml", "c.md"):
        os.mkfifo(tmp_path / name)
    ok = write_files(tmp_path / "ok", {"a.md": "# A\n\ntext\n"})
    cases = [
        ("anchors", "--corpus", str(tmp_path / "c.md")),
        ("golden", "check", "--corpus", str(ok), "--golden", str(tmp_path / "g.jsonl")),
        ("sweep", "--corpus", str(ok), "--golden", str(tmp_path / "g.jsonl"), "--grid", str(tmp_path / "grid.toml"),
         "--out", str(tmp_path / "out"), "--dry-run"),
        ("index", "build", "--store", str(tmp_path / "st"), "--corpus", str(ok), "--config", str(tmp_path / "cfg.toml")),
    ]
    for args in cases:
        r = _ragtune(*args)
        assert r.returncode == 2, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "FIFO (named pipe), not a" in lines[0], (args, r.stderr)
        assert "does not exist" not in lines[0]


def test_a_fifo_or_device_as_the_corpus_path_says_what_it_is(tmp_path):
    from ragtune import CorpusError, load_corpus

    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(CorpusError, match=r"pipe is a FIFO \(named pipe\), not a folder or a regular file"):
        load_corpus(tmp_path / "pipe")
    if os.path.exists("/dev/zero"):
        with pytest.raises(CorpusError, match="/dev/zero is a device, not a folder or a regular file"):
            load_corpus("/dev/zero")
    for name in ("corpus.jsonl", "c.md"):
        os.mkfifo(tmp_path / name)
        with pytest.raises(CorpusError, match=f"{name} is a FIFO"):
            load_corpus(tmp_path / name)
    beir = tmp_path / "beir"
    beir.mkdir()
    os.mkfifo(beir / "corpus.jsonl")  # a BEIR folder whose corpus is a FIFO: said so, not "no .md files"
    with pytest.raises(CorpusError, match=r"corpus\.jsonl is a FIFO \(named pipe\), not a regular file"):
        load_corpus(beir)
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    with pytest.raises(FileNotFoundError, match="is a symbolic link to .*gone, which does not exist"):
        load_corpus(tmp_path / "dangling")


def test_special_files_inside_a_corpus_folder_are_skipped_unopened_with_a_warning(tmp_path, capsys):
    from ragtune import CorpusError, load_corpus

    corpus = write_files(tmp_path / "corpus", {"a.md": "# A\n\ntext\n"})
    os.mkfifo(corpus / "pipe.md")  # opening it would block the load forever
    if os.path.exists("/dev/zero"):
        os.symlink("/dev/zero", corpus / "zero.txt")  # outside the folder, and a device
    loaded = load_corpus(corpus)
    assert [d.id for d in loaded] == ["a.md"]
    err = capsys.readouterr().err
    assert "skipped" in err and "pipe.md: a FIFO (named pipe), not a regular file" in err
    assert any(p.endswith("pipe.md") for p, _ in loaded.skipped)
    with pytest.raises(CorpusError, match="pipe.md: a FIFO"):
        load_corpus(corpus, strict=True)
    r = _ragtune("anchors", "--corpus", str(corpus))  # the command runs, and says what it left out
    assert r.returncode == 0 and "warning: corpus: skipped" in r.stderr and "pipe.md" in r.stderr, r.stderr


def test_check_input_file_names_what_the_path_is(tmp_path):
    from ragtune.errors import ConfigError
    from ragtune.paths import check_input_file

    os.mkfifo(tmp_path / "run.fifo")
    (tmp_path / "ok.txt").write_text("x")
    assert check_input_file(tmp_path / "ok.txt", "run file").st_size == 1
    cases = [(tmp_path / "run.fifo", r"run file .*run\.fifo is a FIFO \(named pipe\), not a regular file"),
             (tmp_path, "is a folder, not a regular file"), (tmp_path / "nope", r"run file .*nope does not exist")]
    if os.path.exists("/dev/zero"):
        cases.append(("/dev/zero", "run file /dev/zero is a device, not a regular file"))
    for path, message in cases:
        with pytest.raises(ConfigError, match=message):
            check_input_file(path, "run file")
    with pytest.raises(FileNotFoundError):
        check_input_file(tmp_path / "nope", "run file", missing=FileNotFoundError)


def test_non_finite_numbers_in_filters_are_refused():
    from ragtune.errors import ConfigError
    from ragtune.retrieve.filters import parse_filter

    for bad in ("year>nan", "year>inf", "year = -inf", "x in [1, NaN]", "x < Infinity"):
        with pytest.raises(ConfigError, match="is not a finite number"):
            parse_filter(bad)
    assert parse_filter("x = 'nan'").value == "nan" and parse_filter("x > 1e3").value == 1000.0
