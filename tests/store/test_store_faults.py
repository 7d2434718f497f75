"""No store can be left broken: killed gc, damaged files, concurrent refreshes, mass removal, fsync, full disks.

Each test injects the fault (SIGKILL at a chosen point, a damaged file, a failing write, a tiny tmpfs) and
checks what the store guarantees afterwards.
"""

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import ragtune.store.store as store_mod
from ragtune import load_corpus
from ragtune.cli import main
from ragtune.pipeline import PipelineConfig
from ragtune.store import IndexStore, StoreError, build_version, load_pipeline, refresh_version
from tests.helpers import DOCS, write_files

SECTION = {"chunker": "section"}


@pytest.fixture
def corpus_dir(tmp_path):
    return write_files(tmp_path / "c", DOCS)


def _store(tmp_path, corpus_dir, n=1, name="s"):
    store = IndexStore(tmp_path / name)
    corpus = load_corpus(corpus_dir)
    for i in range(n):
        build_version(store, corpus, PipelineConfig.from_flags({"chunker": "fixed", "size": 8 + i} if i else SECTION))
    return store


def _assert_usable(store):
    """Every listed version has all its chunks, loads and searches."""
    for v in store.list():
        assert len(store.chunks(v.id)[0]) == v.manifest["chunks"] > 0
        assert load_pipeline(store, v.id).retriever.search("refunds", k=1).hits


# --- gc killed at any point ---------------------------------------------------------------------
GC_SCRIPT = """
import os, signal, sys
from ragtune.store import IndexStore
crash_at = int(sys.argv[2])
calls = [0]
def counted(fn):
    def wrapper(*a, **k):
        calls[0] += 1
        if calls[0] == crash_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*a, **k)
    return wrapper
for name in ("rename", "unlink", "rmdir", "replace"):
    setattr(os, name, counted(getattr(os, name)))
IndexStore(sys.argv[1]).gc(keep=1)
print(calls[0])
"""


def test_gc_killed_at_any_point_never_leaves_a_half_deleted_version(corpus_dir, tmp_path):
    template = _store(tmp_path, corpus_dir, n=4, name="template")  # 4 BM25 versions of ~10 files each
    shutil.copytree(template.root, tmp_path / "probe")
    done = subprocess.run([sys.executable, "-c", GC_SCRIPT, str(tmp_path / "probe"), "0"],
                          capture_output=True, text=True, check=True)
    total = int(done.stdout.strip())  # file-system changes a complete gc makes
    assert total > 20
    for crash_at in range(1, total + 1, 3):  # every third change of a complete gc
        root = tmp_path / f"crash{crash_at}"
        shutil.copytree(template.root, root)
        proc = subprocess.run([sys.executable, "-c", GC_SCRIPT, str(root), str(crash_at)])
        assert proc.returncode == -signal.SIGKILL
        store = IndexStore(root)
        assert store.current_id() == "v0001"
        _assert_usable(store)  # a version is either all there or not listed
        for v in store.list():
            assert store.promote(v.id).id == v.id
        store.promote("v0001")
        removed = store.gc(keep=1)  # a rerun finishes the job
        assert set(removed).isdisjoint(v.id for v in store.list()) and len(store.list()) <= 2
        assert not (root / "trash").exists() or not any((root / "trash").iterdir())
        _assert_usable(store)


def test_gc_removes_damaged_versions_and_leftovers_of_a_killed_gc(corpus_dir, tmp_path):
    store = _store(tmp_path, corpus_dir, n=3)
    (store.versions_dir / "v0003" / "chunks.jsonl").unlink()  # as the old gc could leave it
    (store.versions_dir / "v0002" / "manifest.json").unlink()
    leftover = store.root / "trash" / "v0009.123.456"
    write_files(leftover, {"chunks.jsonl": "{}\n"})
    assert [v.id for v in store.list()] == ["v0001", "v0003"]
    assert store.get("v0003").problem == "chunks.jsonl is missing"
    assert [v.id for v in store.list(include_damaged=True) if not v.complete] == ["v0002", "v0003"]
    assert store.gc(keep=5) == ["v0002", "v0003"]  # damaged, not current: removed whatever --keep says
    assert [v.id for v in store.list(include_damaged=True)] == ["v0001"] and not leftover.exists()


# --- promote, rollback and load check that a version is complete -----------------------------------
def test_promote_rollback_and_load_refuse_an_incomplete_version(corpus_dir, tmp_path):
    store = _store(tmp_path, corpus_dir, n=2)
    victim = sorted((store.versions_dir / "v0002" / "bm25").iterdir())[0]
    victim.unlink()
    name = f"bm25/{victim.name}"
    with pytest.raises(StoreError, match=rf"version v0002 .* is damaged: {name} is missing\. Recover with "
                                         r"`ragtune index rollback.*rebuild"):
        store.promote("v0002")
    assert store.current_id() == "v0001"
    with pytest.raises(StoreError, match=rf"v0002 .*{name} is missing"):
        load_pipeline(store, "v0002")
    assert store.get("v0002").problem == f"{name} is missing"  # what `index list` shows


def test_promote_and_rollback_check_checksums(corpus_dir, tmp_path):
    store = _store(tmp_path, corpus_dir, n=2)
    store.promote("v0002")
    chunks = store.versions_dir / "v0001" / "chunks.jsonl"
    text = chunks.read_text(encoding="utf-8")
    chunks.write_text(text.replace("fourteen", "fifteen!"), encoding="utf-8")  # same size, other content
    assert chunks.stat().st_size == len(text.encode()) and store.get("v0001").complete  # sizes match
    with pytest.raises(StoreError, match="cannot roll back to v0001: it is damaged: chunks.jsonl does not match its "
                                         "checksum"):
        store.rollback()
    with pytest.raises(StoreError, match="v0001 .* chunks.jsonl does not match its checksum"):
        store.promote("v0001")
    assert store.current_id() == "v0002"


# --- damaged files: one StoreError naming the version, the file and the way back ----------------------
def _truncate(p):
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _drop_config(p):
    m = json.loads(p.read_text())
    del m["config"]
    p.write_text(json.dumps(m))


DAMAGE = {
    "truncated chunks": ("chunks.jsonl", _truncate, r"chunks.jsonl has \d+ bytes, the manifest recorded \d+",
                         r"line \d+ of chunks.jsonl is not valid JSON"),
    "manifest without config": ("manifest.json", _drop_config, "manifest.json has no 'config'", None),
    "missing chunks": ("chunks.jsonl", Path.unlink, "chunks.jsonl is missing", None),
    "empty chunks": ("chunks.jsonl", lambda p: p.write_bytes(b""), r"chunks.jsonl has 0 bytes",
                     "chunks.jsonl is empty"),
    "missing documents": ("documents.jsonl", Path.unlink, "documents.jsonl is missing", None),
    "truncated vectors-free documents": ("documents.jsonl", _truncate, r"documents.jsonl has \d+ bytes",
                                         r"line \d+ of documents.jsonl is not valid JSON"),
}


@pytest.mark.parametrize("checksums", [True, False], ids=["manifest-with-files", "older-manifest"])
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_files_give_one_clear_store_error(corpus_dir, tmp_path, capsys, damage, checksums):
    store = _store(tmp_path, corpus_dir)
    v = store.get()
    if not checksums:  # versions written before the manifest listed its files: the content checks answer
        m = json.loads((v.path / "manifest.json").read_text())
        del m["files"]
        (v.path / "manifest.json").write_text(json.dumps(m))
    name, hurt, with_files, without_files = DAMAGE[damage]
    hurt(v.path / name)
    expected = with_files if checksums or without_files is None else without_files
    with pytest.raises(StoreError, match=rf"^version v0001 in .* is damaged: {expected}.*rollback.*rebuild") as e:
        load_pipeline(store)
    assert "\n" not in str(e.value)
    assert main(["search", "--store", str(store.root), "refunds"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: version v0001") and err.count("\n") == 1


def test_documents_are_checked_against_the_manifest_count(corpus_dir, tmp_path):
    store = _store(tmp_path, corpus_dir)
    v = store.get()
    m = json.loads((v.path / "manifest.json").read_text())
    del m["files"]
    m["corpus"]["documents"] += 1
    (v.path / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(StoreError, match="documents.jsonl holds 5 records, the manifest recorded 6"):
        store.corpus()


# --- concurrent refreshes --------------------------------------------------------------------------
def test_concurrent_refreshes_never_lose_an_update(corpus_dir, tmp_path, monkeypatch):
    store = _store(tmp_path, corpus_dir)
    a = write_files(tmp_path / "a", {**DOCS, "a.md": "# A\n\nAlpha page.\n"})
    b = write_files(tmp_path / "b", {**DOCS, "b.md": "# B\n\nBeta page.\n"})
    both_read = threading.Barrier(2, timeout=20)
    waited = threading.local()
    waited.done = True  # only the two refresh threads wait
    get = IndexStore.get

    def get_then_wait(self, *args, **kwargs):  # both refreshes read CURRENT before either writes
        v = get(self, *args, **kwargs)
        if not getattr(waited, "done", False):
            waited.done = True
            both_read.wait()
        return v

    monkeypatch.setattr(IndexStore, "get", get_then_wait)
    results, errors = {}, {}

    def refresh(name, folder):
        try:
            results[name] = refresh_version(IndexStore(store.root), load_corpus(folder))[0].id
        except StoreError as e:
            errors[name] = str(e)

    threads = [threading.Thread(target=refresh, args=(n, f)) for n, f in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 1 and len(errors) == 1, (results, errors)
    (winner, vid), = results.items()
    (loser, message), = errors.items()
    assert message.startswith(f"the current version moved from v0001 to {vid} while this refresh ran")
    assert "Run the refresh again" in message
    assert store.current_id() == vid and [v.id for v in store.list()] == ["v0001", vid]
    assert f"{winner}.md" in {d.id for d in store.documents()}
    monkeypatch.undo()
    v3, stats = refresh_version(store, load_corpus(a if loser == "a" else b))  # the rerun applies on top
    assert stats["added"] == [f"{loser}.md"] and stats["removed"] == [f"{winner}.md"]
    assert v3.manifest["parent_version"] == vid


def test_refresh_without_promote_does_not_care_where_current_moved(corpus_dir, tmp_path):
    store = _store(tmp_path, corpus_dir, n=2)
    v, _ = refresh_version(store, load_corpus(corpus_dir), promote=False)
    assert store.current_id() == "v0001" and v.manifest["parent_version"] == "v0001"


# --- mass removal ----------------------------------------------------------------------------------
def test_refresh_refuses_to_remove_most_documents_unless_allowed(corpus_dir, tmp_path, capsys):
    store = _store(tmp_path, corpus_dir)
    wrong = write_files(tmp_path / "wrong", {"shipping.md": DOCS["shipping.md"]})
    with pytest.raises(StoreError, match=r"would remove 4 of the 5 documents of v0001 \(80%, more than the 50% "
                                         r"allowed\) and keep 1: .*Nothing was written.*--allow-mass-removal"):
        refresh_version(store, load_corpus(wrong))
    assert [v.id for v in store.list()] == ["v0001"] and store.current_id() == "v0001"
    two_gone = write_files(tmp_path / "fewer", {k: v for k, v in DOCS.items() if not k.startswith("account/")})
    refresh_version(store, load_corpus(two_gone), promote=False)  # 2 of 5 (40%): allowed
    with pytest.raises(StoreError, match="would remove 2 of the 5"):
        refresh_version(store, load_corpus(two_gone), max_removed_share=0.3)
    v, stats = refresh_version(store, load_corpus(wrong), allow_mass_removal=True)
    assert len(stats["removed"]) == 4 and store.current_id() == v.id and len(store.documents()) == 1


# --- durability --------------------------------------------------------------------------------------
def test_every_file_and_folder_is_synced_before_the_version_is_published(corpus_dir, tmp_path, monkeypatch):
    synced: list[str] = []
    published: list[tuple[str, set[str]]] = []
    fsync, rename = os.fsync, os.rename

    def recording_fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return fsync(fd)

    def recording_rename(src, dst, *a, **k):
        published.append((os.path.realpath(src), set(synced)))
        return rename(src, dst, *a, **k)

    if not os.path.exists("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd to name synced files")
    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "rename", recording_rename)
    store = IndexStore(tmp_path / "s")
    v = build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags({"chunker": "section"}))
    (src, synced_then), = [(s, seen) for s, seen in published if "/building/" in s]
    real = os.path.realpath(v.path)
    version_paths = {src + os.path.realpath(p)[len(real):] for p in [v.path, *v.path.rglob("*")]}
    assert any("/bm25/" in p for p in version_paths)
    assert version_paths - synced_then == set()  # every file and folder, bm25/ included
    assert os.path.realpath(store.versions_dir) in synced  # and the rename itself


# --- leftovers and full disks ------------------------------------------------------------------------
def test_temporary_pointer_files_of_killed_promotes_are_cleaned(corpus_dir, tmp_path):
    store = _store(tmp_path, corpus_dir, n=2)
    for name in (".history.json.tmp4242", ".CURRENT.tmp77"):
        (store.root / name).write_text("v0002")
    keep = store.root / "notes.tmp1"
    keep.write_text("mine")
    store.promote("v0002")
    assert sorted(p.name for p in store.root.iterdir()) == ["CURRENT", "building", "history.json", "notes.tmp1",
                                                            "versions"]


class _FullDisk:
    """open() for writing that fails with ENOSPC once ``budget`` bytes are written, as a full disk does."""

    def __init__(self, budget):
        self.budget = budget

    def __call__(self, path, mode="r", *args, **kwargs):
        f = open(path, mode, *args, **kwargs)
        if "w" not in mode and "a" not in mode:
            return f
        write, disk = f.write, self

        def limited(data):
            disk.budget -= len(data)
            if disk.budget < 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            return write(data)

        f.write = limited
        return f


def _assert_failed_build_left_nothing(store, message):
    assert "Nothing was published" in message and "v0001 is still current" in message
    assert "Free disk space" in message and "\n" not in message
    assert [v.id for v in store.list()] == ["v0001"] and store.current_id() == "v0001"
    assert [p.name for p in store.building_dir.iterdir()] == [".lock"]
    _assert_usable(store)


@pytest.mark.parametrize("budget", [0, 600, 3000])
def test_a_full_disk_during_a_build_publishes_nothing_and_says_so(corpus_dir, tmp_path, monkeypatch, budget):
    store = _store(tmp_path, corpus_dir)
    monkeypatch.setattr(store_mod, "open", _FullDisk(budget), raising=False)
    with pytest.raises(StoreError, match=r"^building v0002 failed while writing \S+: No space left on device "
                                         r"\(ENOSPC\)") as e:
        build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags({"chunker": "fixed", "size": 8, "retriever": "bm25"}))
    _assert_failed_build_left_nothing(store, str(e.value))


def test_a_full_tmpfs_during_a_build(corpus_dir, tmp_path):
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root in a container that allows it)")
    try:
        store = _store(mnt, corpus_dir)
        filler = mnt / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError as e:
            assert e.errno == errno.ENOSPC
        finally:
            os.close(fd)
        with open(filler, "r+b") as f:  # leave room for part of a version
            f.truncate(filler.stat().st_size - 16 * 1024)
        with pytest.raises(StoreError, match=r"^building v0002 failed while writing .*\(ENOSPC\)") as e:
            build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags({"chunker": "fixed", "size": 8, "retriever": "bm25"}))
        _assert_failed_build_left_nothing(store, str(e.value))
        filler.unlink()
        assert build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags({"chunker": "fixed", "size": 8, "retriever": "bm25"})).id \
            == "v0002"
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


# --- a folder that is not a store -------------------------------------------------------------------------
def test_reading_a_folder_that_is_not_a_store_fails_and_building_creates_it(corpus_dir, tmp_path, capsys):
    missing = tmp_path / "nowhere"
    for read in (lambda s: s.list(), lambda s: s.get(), lambda s: s.rollback(), lambda s: s.promote("v0001")):
        with pytest.raises(StoreError, match=rf"^no index store at {re.escape(str(missing))}; build one with "
                                             rf"`ragtune index build --store {re.escape(str(missing))} --corpus PATH`$"):
            read(IndexStore(missing))
    assert main(["index", "list", "--store", str(missing)]) == 2
    assert capsys.readouterr().err.startswith(f"error: no index store at {missing}")
    assert not missing.exists()
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(StoreError, match="no index store .no versions/ folder. at"):
        IndexStore(plain).list()
    assert build_version(IndexStore(missing), load_corpus(corpus_dir), PipelineConfig.from_flags(SECTION)).id == "v0001"


# --- the CLI -----------------------------------------------------------------------------------------------
def test_cli_lists_incomplete_versions_and_refuses_mass_removal_unless_allowed(corpus_dir, tmp_path, capsys):
    store = _store(tmp_path, corpus_dir, n=3)
    (store.versions_dir / "v0002" / "documents.jsonl").unlink()
    (store.versions_dir / "v0003" / "manifest.json").write_text("{")
    s = str(store.root)
    assert main(["index", "list", "--store", s]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines] == ["*", "v0002", "v0003"] and "INCOMPLETE" not in lines[0]
    assert lines[1].endswith("INCOMPLETE: documents.jsonl is missing")
    assert "INCOMPLETE: manifest.json is unreadable" in lines[2]
    assert main(["index", "list", "--store", s, "--json"]) == 0
    assert [r["problem"] for r in json.loads(capsys.readouterr().out)][:2] == [None, "documents.jsonl is missing"]
    assert main(["index", "promote", "--store", s, "v0002"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: version v0002 in ") and "documents.jsonl is missing" in err and err.count("\n") == 1
    wrong = write_files(tmp_path / "wrong", {"shipping.md": DOCS["shipping.md"]})
    assert main(["index", "refresh", "--store", s, "--corpus", str(wrong)]) == 2
    assert "would remove 4 of the 5 documents" in capsys.readouterr().err
    assert main(["index", "refresh", "--store", s, "--corpus", str(wrong), "--allow-mass-removal"]) == 0
    assert "4 removed" in capsys.readouterr().out and len(store.documents()) == 1


def test_gc_never_removes_a_version_only_because_this_ragtune_cannot_read_its_config(corpus_dir, tmp_path):
    from ragtune.errors import RagtuneError

    store = _store(tmp_path, corpus_dir, n=2)
    path = store.versions_dir / "v0002" / "manifest.json"
    m = json.loads(path.read_text())
    m["config"]["retriever"] = "from-a-newer-ragtune"
    path.write_text(json.dumps(m))
    assert store.get("v0002").complete and store.gc(keep=5) == []  # files intact: kept for the ragtune that wrote it
    with pytest.raises(RagtuneError, match="from-a-newer-ragtune"):
        load_pipeline(store, "v0002")
