"""ragtune.io.write_atomic: the one atomic write (symlinks written through, modes kept, read-only refused)."""

import ast
import json
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from ragtune.errors import ConfigError
from ragtune.io import check_writable, write_atomic, write_text

SRC = Path(__file__).resolve().parents[1] / "src" / "ragtune"


def test_replaces_content_and_leaves_no_temporary(tmp_path):
    p = tmp_path / "sub" / "f.json"
    write_atomic(p, "one")
    write_atomic(p, b"two")
    assert p.read_text() == "two"
    write_atomic(p, lambda f: f.write("three\n"))
    assert p.read_text() == "three\n"
    assert sorted(os.listdir(p.parent)) == ["f.json"]


def test_writes_through_a_symlink_to_its_target(tmp_path):
    target = tmp_path / "real" / "golden.jsonl"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "golden.jsonl"
    link.symlink_to(target)
    write_atomic(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new\n"
    assert sorted(os.listdir(target.parent)) == ["golden.jsonl"]


def test_a_chain_of_links_is_followed_to_the_end(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("a")
    (tmp_path / "l1").symlink_to(target)
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    write_atomic(tmp_path / "l2", "b")
    assert (tmp_path / "l1").is_symlink() and (tmp_path / "l2").is_symlink()
    assert target.read_text() == "b"


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664])
def test_keeps_the_files_mode(tmp_path, mode):
    p = tmp_path / "f.txt"
    p.write_text("x")
    p.chmod(mode)
    write_atomic(p, "y")
    assert stat.S_IMODE(p.stat().st_mode) == mode and p.read_text() == "y"


def test_a_new_file_gets_the_umask_default_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "new.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o644


def test_a_read_only_file_is_refused_and_kept(tmp_path):
    p = tmp_path / "ro.jsonl"
    p.write_text("keep\n")
    p.chmod(0o444)
    with pytest.raises(PermissionError, match="read-only .mode 0444.*chmod u\\+w"):
        write_atomic(p, "lost\n")
    with pytest.raises(ConfigError, match="cannot write .*ro.jsonl: the file is read-only"):
        write_text(p, "lost\n")
    assert p.read_text() == "keep\n" and stat.S_IMODE(p.stat().st_mode) == 0o444
    check_writable(tmp_path / "absent.jsonl")  # a file that does not exist yet is writable


def test_a_failed_write_keeps_the_old_file_and_no_temporary(tmp_path):
    p = tmp_path / "f.txt"
    p.write_text("old")

    def boom(f):
        f.write("half")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        write_atomic(p, boom)
    assert p.read_text() == "old" and os.listdir(tmp_path) == ["f.txt"]


def _replaces(tree: ast.AST) -> list[int]:
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name) and n.func.value.id == "os" and n.func.attr in ("replace", "rename")]


# renames that move whole folders or files another library wrote, not a write of content
FOLDER_MOVES = {"store/store.py", "rerank_export.py"}


def test_no_module_spells_out_its_own_atomic_write():
    """One idiom, one function: an ``os.replace``/``os.rename`` outside io.py is a hand-written atomic write."""
    found = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel == "io.py" or rel in FOLDER_MOVES:
            continue
        lines = _replaces(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            found[rel] = lines
    assert not found, f"use ragtune.io.write_atomic instead: {found}"


def test_the_guard_sees_a_hand_written_write():
    assert _replaces(ast.parse("import os\nos.replace(tmp, path)\n")) == [2]


def test_the_workbench_golden_file_keeps_links_and_modes(tmp_path):
    from ragtune.label.golden_file import GoldenFile

    target = tmp_path / "data" / "golden.jsonl"
    target.parent.mkdir()
    target.write_text(json.dumps({"id": "q1", "q": "what?", "relevant": []}) + "\n")
    target.chmod(0o600)
    link = tmp_path / "golden.jsonl"
    link.symlink_to(target)
    gf = GoldenFile(link)
    gf.change("q1", None, lambda item: replace(item, q="what now?"))
    assert link.is_symlink()
    assert json.loads(target.read_text())["q"] == "what now?"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_the_workbench_refuses_a_read_only_golden_file_at_start(tmp_path):
    from ragtune.label.golden_file import GoldenFile

    p = tmp_path / "golden.jsonl"
    p.write_text(json.dumps({"id": "q1", "q": "what?", "relevant": []}) + "\n")
    p.chmod(0o444)
    with pytest.raises(ConfigError, match=r"golden.jsonl: the file is read-only \(mode 0444\).*saves every judgment"):
        GoldenFile(p)
