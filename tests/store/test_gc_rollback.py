"""gc never deletes the version a rollback would return to, however old it is."""

import json

import pytest

from ragtune.errors import ConfigError
from ragtune.store import IndexStore, StoreError


def make_store(root, n):
    """A store with versions v0001..v000n as plain folders: an empty index each, whose well-formed manifest
    lists no files (so every version is complete)."""
    for i in range(1, n + 1):
        v = root / "versions" / f"v{i:04d}"
        v.mkdir(parents=True)
        (v / "manifest.json").write_text(json.dumps({
            "id": v.name, "created": f"2026-01-0{i}", "config": {}, "corpus": {"kind": "markdown", "documents": 0},
            "documents": {}, "chunks": 0, "build_s": 0.0, "files": {}}))
    return IndexStore(root)


def test_gc_keeps_an_old_rollback_target(tmp_path):
    store = make_store(tmp_path / "s", 6)
    store.promote("v0001")
    store.promote("v0003")  # rollback from v0003 goes to v0001, the oldest version of all
    removed = store.gc(keep=1)
    assert sorted(removed) == ["v0002", "v0004", "v0005"]  # v0006: newest; v0003: current; v0001: rollback target
    assert [v.id for v in store.list()] == ["v0001", "v0003", "v0006"]
    assert store.rollback().id == "v0001" and store.current_id() == "v0001"


def test_gc_after_a_rollback_keeps_the_next_target(tmp_path):
    store = make_store(tmp_path / "s", 5)
    for v in ("v0001", "v0002", "v0004"):
        store.promote(v)
    assert store.rollback().id == "v0002"  # history is now v0001, v0002: the next rollback goes to v0001
    removed = store.gc(keep=1)
    assert sorted(removed) == ["v0003", "v0004"]
    assert store.rollback().id == "v0001"
    with pytest.raises(StoreError, match="nothing to roll back to"):
        store.rollback()


def test_gc_with_a_single_promoted_version(tmp_path):
    store = make_store(tmp_path / "s", 3)
    store.promote("v0001")  # no rollback target yet
    assert store.gc(keep=1) == ["v0002"]
    assert [v.id for v in store.list()] == ["v0001", "v0003"]


def test_gc_keep_must_be_positive(tmp_path):
    store = make_store(tmp_path / "s", 2)
    with pytest.raises(ConfigError, match="^gc: keep must be at least 1$"):
        store.gc(keep=0)
    assert [v.id for v in store.list()] == ["v0001", "v0002"]


def test_gc_removes_a_damaged_version(tmp_path):
    store = make_store(tmp_path / "s", 3)
    store.promote("v0001")
    (store.root / "versions" / "v0002" / "manifest.json").write_text("{not json")
    assert "v0002" in store.gc(keep=2)
    assert not (store.root / "versions" / "v0002").exists()
