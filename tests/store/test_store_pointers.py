"""Damaged pointer files: every read of CURRENT and history.json gives one DamagedStoreError naming the file
and the repair, through the Python API and the command line; gc deletes nothing; a promote by hand repairs.

Each form of damage is written into a real store: CURRENT not UTF-8, a folder, empty, holding something other
than a version id, naming a version that is gone, a FIFO, a megabyte; history.json not UTF-8, not JSON, not a list of ids.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragtune import load_corpus
from ragtune.cli import main
from ragtune.errors import DamagedStoreError
from ragtune.pipeline import PipelineConfig
from ragtune.store import IndexStore, build_version, load_pipeline
from tests.helpers import DOCS, write_files

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """Three BM25 versions; v0001 then v0002 promoted, v0003 built only."""
    root = tmp_path_factory.mktemp("template")
    store = IndexStore(root / "s")
    corpus = load_corpus(write_files(root / "c", DOCS))
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "section"}))
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "fixed", "size": 8}), promote=True)
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "fixed", "size": 9}))
    return store.root


@pytest.fixture
def store(template, tmp_path):
    import shutil

    shutil.copytree(template, tmp_path / "s")
    return IndexStore(tmp_path / "s")


def _folder(p: Path) -> None:
    p.mkdir()
    (p / "something").write_text("v0002\n")


CURRENT_DAMAGE = {
    "not-utf8": (lambda p: p.write_bytes(b"\xff\xfev0002\n"), "it is not UTF-8 text"),
    "folder": (_folder, "it is a folder, not a file"),
    "empty": (lambda p: p.write_bytes(b""), "it is empty"),
    "huge": (lambda p: p.write_bytes(b"v0002" * 200_000), "it holds more than 4,096 bytes"),
    "not-an-id": (lambda p: p.write_text("hello world\n" * 100), "it holds 'hello world\\nhello wo'..., not a version id"),
    "gone": (lambda p: p.write_text("v0042\n"), "it names v0042, which is not in versions/"),
    "fifo": (lambda p: os.mkfifo(p), "it is not a regular file"),
}
HISTORY_DAMAGE = {
    "not-utf8": (lambda p: p.write_bytes(b'["v0001", "\xff"]'), "it is not UTF-8 text"),
    "not-json": (lambda p: p.write_text('["v0001", "v00'), "it is not valid JSON"),
    "not-a-list": (lambda p: p.write_text('"v0001"'), "it is not a list of version ids"),
    "folder": (_folder, "it is a folder, not a file"),
}


def _damage(store, name, form):
    path = store.root / name
    path.unlink()
    table = CURRENT_DAMAGE if name == "CURRENT" else HISTORY_DAMAGE
    table[form][0](path)
    return table[form][1]


def _versions(store):
    return sorted(p.name for p in store.versions_dir.iterdir())


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("form", sorted(CURRENT_DAMAGE))
def test_a_damaged_current_gives_one_clear_error_everywhere(store, form, capsys):
    problem = _damage(store, "CURRENT", form)
    s = str(store.root)
    expect = f"{store.root / 'CURRENT'} is damaged: {problem}"
    repair = f"`ragtune index promote --store {s} VERSION`"

    for call in (store.current_id, store.get, lambda: load_pipeline(store)) if form != "gone" else \
            (store.get, lambda: load_pipeline(store)):
        with pytest.raises(DamagedStoreError) as e:
            call()
        assert str(e.value).startswith(expect) and repair in str(e.value)
        assert "versions: v0001, v0002, v0003" in str(e.value)
    assert [v.id for v in store.list()] == ["v0001", "v0002", "v0003"]  # listing versions needs no pointer

    with pytest.raises(DamagedStoreError, match="^gc deleted nothing: "):
        store.gc(keep=1)
    assert _versions(store) == ["v0001", "v0002", "v0003"]

    code, out, err = _cli(capsys, "search", "--store", s, "refunds")
    assert code == 2 and err.startswith(f"error: {expect}") and "Traceback" not in err
    code, out, err = _cli(capsys, "index", "list", "--store", s)  # the versions, then the error
    assert code == 2 and "v0001" in out and "v0003" in out and err.startswith(f"error: {expect}")
    code, out, err = _cli(capsys, "index", "gc", "--store", s, "--keep", "1")
    assert code == 2 and err.startswith("error: gc deleted nothing: ") and _versions(store) == ["v0001", "v0002", "v0003"]

    if form == "gone":  # rollback goes back from the lost version to the last promoted one that exists
        code, out, err = _cli(capsys, "index", "rollback", "--store", s)
        assert code == 0 and "current: v0002" in out and store.current_id() == "v0002"
        return
    code, out, err = _cli(capsys, "index", "rollback", "--store", s)
    assert code == 2 and err.startswith(f"error: {expect}")

    if form == "folder":  # a promote cannot replace a folder: it says how to move it away, then repairs
        code, out, err = _cli(capsys, "index", "promote", "--store", s, "v0003")
        assert code == 2 and f"move the folder away first (`mv {store.root / 'CURRENT'} " in err
        (store.root / "CURRENT").rename(store.root / "CURRENT.damaged")
    code, out, err = _cli(capsys, "index", "promote", "--store", s, "v0003")
    assert code == 0 and store.current_id() == "v0003" and store.history() == ["v0001", "v0002", "v0003"]
    assert store.rollback().id == "v0002"


@pytest.mark.parametrize("form", sorted(HISTORY_DAMAGE))
def test_a_damaged_history_stops_rollback_and_gc_not_search(store, form, capsys):
    problem = _damage(store, "history.json", form)
    s = str(store.root)
    expect = f"{store.root / 'history.json'} is damaged: {problem}"
    assert load_pipeline(store).retriever.search("refunds", k=1).hits  # search needs only CURRENT
    for call in (store.history, store.rollback):
        with pytest.raises(DamagedStoreError) as e:
            call()
        assert str(e.value).startswith(expect) and "starts a new history at VERSION" in str(e.value)
    with pytest.raises(DamagedStoreError, match="^gc deleted nothing: "):
        store.gc(keep=1)
    code, out, err = _cli(capsys, "index", "gc", "--store", s, "--keep", "1")
    assert code == 2 and err.startswith(f"error: gc deleted nothing: {expect}") and "Traceback" not in err
    assert _versions(store) == ["v0001", "v0002", "v0003"]
    code, out, err = _cli(capsys, "index", "rollback", "--store", s)
    assert code == 2 and err.startswith(f"error: {expect}")
    assert store.current_id() == "v0002"

    if form == "folder":
        (store.root / "history.json").rename(store.root / "history.damaged")
    code, out, err = _cli(capsys, "index", "promote", "--store", s, "v0003")  # the repair: a new history
    assert code == 0 and store.current_id() == "v0003"
    assert store.history() == (["v0003"] if form == "folder" else ["v0002", "v0003"])
    if form != "folder":
        assert "history.json is damaged" in err and "starts a new history" in err


def test_the_real_command_line_reports_damaged_pointers_without_a_traceback(store):
    """``python -m ragtune`` in a child process, as an operator runs it."""
    (store.root / "CURRENT").write_bytes(b"\xc3\x28\n")
    (store.root / "history.json").write_bytes(b"\xff")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    s = str(store.root)
    for argv in (["search", "--store", s, "refunds"], ["index", "list", "--store", s],
                 ["index", "rollback", "--store", s], ["index", "gc", "--store", s, "--keep", "1"]):
        r = subprocess.run([sys.executable, "-m", "ragtune", *argv], capture_output=True, text=True, env=env,
                           timeout=120)
        assert r.returncode == 2, (argv, r.stderr)
        assert "Traceback" not in r.stderr and "is damaged: it is not UTF-8 text" in r.stderr, (argv, r.stderr)
    assert _versions(store) == ["v0001", "v0002", "v0003"]
    r = subprocess.run([sys.executable, "-m", "ragtune", "index", "promote", "--store", s, "v0002"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and "current: v0002" in r.stdout and store.history() == ["v0002"]


def test_a_build_into_a_store_with_a_damaged_current_is_kept_unpromoted(store, capsys):
    (store.root / "CURRENT").write_bytes(b"")
    with pytest.raises(DamagedStoreError):  # build --promote reads CURRENT first: it refuses before any work
        build_version(store, store.corpus("v0001"), PipelineConfig.from_flags({"chunker": "section"}), promote=True)
    assert _versions(store) == ["v0001", "v0002", "v0003"]
    v = build_version(store, store.corpus("v0001"), PipelineConfig.from_flags({"chunker": "section"}))
    assert v.id == "v0004" and "v0004 was built but not promoted" in capsys.readouterr().err
    store.promote("v0004")
    assert store.current_id() == "v0004"


def test_a_hand_written_current_with_a_byte_order_mark_or_crlf_is_read(store):
    (store.root / "CURRENT").write_bytes("\ufeffv0001\r\n".encode("utf-8"))
    assert store.current_id() == "v0001" and store.get().id == "v0001"
