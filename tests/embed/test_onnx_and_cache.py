import ctypes
import errno
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
import urllib.request

import numpy as np
import pytest

from ragtune.embed import CachedEmbedder, EmbeddingCache, get_embedder
from tests.helpers import DOCS, free_port, write_files


class CountingEmbedder:
    """A deterministic fake embedder that counts what it is asked to embed."""

    model_id = "fake"
    dim = 4
    max_tokens = 16
    cache_key = "fake:v1"

    def __init__(self):
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        v = np.array([[len(t), t.count("a"), t.count("e"), 1.0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    embed_queries = embed


def test_cache_embeds_each_text_once_across_runs(tmp_path):
    inner = CountingEmbedder()
    cache_path = tmp_path / "c.sqlite"
    first = CachedEmbedder(inner, EmbeddingCache(cache_path))
    v1 = first.embed(["alpha", "beta", "alpha", "gamma"])
    assert first.stats == {"hits": 1, "misses": 3}  # the repeated "alpha" is embedded once
    assert sorted(inner.calls[0]) == ["alpha", "beta", "gamma"]
    assert np.allclose(v1[0], v1[2])
    second = CachedEmbedder(inner, EmbeddingCache(cache_path))  # a new process would see the same file
    v2 = second.embed(["gamma", "alpha", "delta"])
    assert second.stats == {"hits": 2, "misses": 1}
    assert inner.calls[-1] == ["delta"]
    assert np.allclose(v2[1], v1[0])


def test_cache_keys_include_the_model(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    a = CountingEmbedder()
    b = CountingEmbedder()
    b.cache_key = "fake:v2"
    CachedEmbedder(a, cache).embed(["x"])
    CachedEmbedder(b, cache).embed(["x"])
    assert len(a.calls) == 1 and len(b.calls) == 1
    assert cache.count() == 2


def test_bundled_minilm_is_offline_and_sensible():
    pytest.importorskip("onnxruntime")
    emb = get_embedder("minilm")
    assert emb._session is None  # cheap constructor: nothing loaded yet
    v = emb.embed(["The cat sits on the mat.", "A feline rests on a rug.", "Quarterly stock prices fell."])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sims = v @ v.T
    assert sims[0, 1] > 0.4 > sims[0, 2]
    # order of the batch does not change a text's vector
    w = emb.embed(["Quarterly stock prices fell.", "The cat sits on the mat."])
    assert np.allclose(w[1], v[0], atol=1e-5)


def test_minilm_cache_keys_follow_truncation(tmp_path):
    pytest.importorskip("onnxruntime")
    emb = get_embedder("minilm")
    long_a = "alpha beta gamma " * 200
    long_b = long_a + " a different ending far past the 256-token window"
    ka, kb, kc = emb.input_keys([long_a, long_b, "short text"])
    assert ka == kb != kc
    cached = CachedEmbedder(emb, EmbeddingCache(tmp_path / "c.sqlite"))
    v = cached.embed([long_a, long_b, "short text"])
    assert cached.stats == {"hits": 1, "misses": 2}
    assert np.allclose(v[0], v[1]) and np.allclose(v[0], emb.embed([long_b])[0], atol=1e-5)


# --- an unusable cache never costs a result ------------------------------------------------------------------
WARNING = "warning: embedding cache off for this process: "


def _not_a_cache(tmp_path, form):
    """A cache path that really fails, as root too."""
    if form == "parent-is-a-file":
        (tmp_path / "f").write_text("a file where the cache folder should be")
        return tmp_path / "f" / "embeddings.sqlite"
    p = tmp_path / "embeddings.sqlite"
    if form == "folder":
        p.mkdir()
    elif form == "not-a-database":
        p.write_bytes(b"this is not a database " * 100)
    elif form == "truncated":  # a real cache cut short: open works, reading fails
        cache = EmbeddingCache(p)
        cache.put_many("m", {str(i): np.full(384, i, dtype=np.float32) for i in range(300)})
        cache._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cache.close()
        with open(p, "r+b") as f:
            f.truncate(p.stat().st_size // 3)
    return p


def _assert_embeds_without_cache(cache, capsys, hint):
    inner = CountingEmbedder()
    texts = ["alpha", "beta", "alpha", "gamma"]
    for _ in range(2):  # nothing is cached, nothing crashes, the vectors are the model's
        emb = CachedEmbedder(inner, cache)
        assert np.allclose(emb.embed(texts), inner.embed(texts))
        assert emb.stats == {"hits": 1, "misses": 3}
    assert cache.disabled and cache.count() == 0 and cache.speed("m") is None
    err = capsys.readouterr().err
    assert err.count(WARNING) == 1 and f"{cache.path}" in err and hint in err, err
    assert "same results, slower" in err


@pytest.mark.parametrize("form, hint", [
    ("parent-is-a-file", "a file stands where its folder should be"),
    ("folder", "check that the path is a writable file"),
    ("not-a-database", "it is not a valid SQLite cache: move it away"),
    ("truncated", "it is not a valid SQLite cache: move it away"),
])
def test_an_unusable_cache_file_switches_the_cache_off_with_one_warning(tmp_path, capsys, form, hint):
    path = _not_a_cache(tmp_path, form)
    capsys.readouterr()
    cache = EmbeddingCache(path)  # never raises
    _assert_embeds_without_cache(cache, capsys, hint)
    EmbeddingCache(path)  # a second cache on the same file in this process: no second warning
    assert WARNING not in capsys.readouterr().err


def _fill(mnt, leave):
    filler = mnt / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError as e:
        assert e.errno == errno.ENOSPC
    finally:
        os.close(fd)
    with open(filler, "r+b") as f:
        f.truncate(filler.stat().st_size - leave)


@pytest.mark.parametrize("how", ["tmpfs", "page-limit"])
def test_a_full_cache_switches_off_and_embedding_goes_on(tmp_path, capsys, how):
    """A full disk under the cache: a 256 KiB tmpfs filled up (where one can be mounted), or SQLite's own page
    limit, which fails writes with the same SQLITE_FULL."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if how == "tmpfs" and (os.geteuid() != 0 or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True).returncode != 0):
        pytest.skip("cannot mount a tmpfs here (needs root in a container that allows it)")
    try:
        cache = EmbeddingCache(mnt / "embeddings.sqlite")
        assert cache.disabled is None
        if how == "tmpfs":
            _fill(mnt, 8192)
        else:
            pages = cache._db.execute("PRAGMA page_count").fetchone()[0]
            cache._db.execute(f"PRAGMA max_page_count={pages + 1}")
        inner = CountingEmbedder()
        inner.dim = 256
        inner.embed = lambda texts: np.ones((len(texts), 256), dtype=np.float32) * np.arange(len(texts))[:, None]
        emb = CachedEmbedder(inner, cache)
        texts = [f"text {i}" for i in range(600)]  # 600 KiB of vectors: more than the room left
        assert emb.embed(texts).shape == (600, 256)
        assert emb.embed(texts[:10]).shape == (10, 256)  # off now: embedded again, no error
        assert cache.disabled and "full" in cache.disabled
        err = capsys.readouterr().err
        assert err.count(WARNING) == 1 and "the disk is full: free space" in err
    finally:
        if how == "tmpfs":
            subprocess.run(["umount", str(mnt)], check=False)


def _without_dac_override():
    """In the child only: drop the capabilities that let root write anywhere, so a 0o555 folder really is
    read-only for it (the bounding set applies from the exec on)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _read_only(folder):
    """``folder`` made read-only for a child process, and the preexec function that makes it so for root."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o555)
    if os.geteuid() != 0:
        return None
    probe = subprocess.run([sys.executable, "-c", f"open({str(folder / 'probe')!r}, 'w')"],
                           preexec_fn=_without_dac_override, capture_output=True)
    if probe.returncode == 0:
        pytest.skip("cannot make a folder read-only for a root child here")
    return _without_dac_override


CHILD = """
import sys
import numpy as np
from ragtune.embed import CachedEmbedder, EmbeddingCache
from tests.embed.test_onnx_and_cache import CountingEmbedder
cache = EmbeddingCache(sys.argv[1])
inner = CountingEmbedder()
v = CachedEmbedder(inner, cache).embed(["alpha", "beta"])
assert np.allclose(v, inner.embed(["alpha", "beta"]))
print(cache.disabled)
"""


@pytest.mark.parametrize("filled", [False, True])
def test_a_read_only_cache_folder_switches_the_cache_off(tmp_path, filled):
    """A real read-only folder (no monkeypatching): empty, or holding a cache written earlier (WAL mode cannot
    even read it without writing its -shm file)."""
    folder = tmp_path / "ro"
    if filled:
        folder.mkdir()
        cache = EmbeddingCache(folder / "embeddings.sqlite")
        cache.put_many("m", {"a": np.ones(4, dtype=np.float32)})
        cache.close()
        for p in folder.iterdir():
            p.chmod(0o444)
    preexec = _read_only(folder)
    r = subprocess.run([sys.executable, "-c", CHILD, str(folder / "embeddings.sqlite")], capture_output=True,
                       text=True, preexec_fn=preexec, timeout=60, cwd=os.getcwd())
    assert r.returncode == 0, r.stderr
    assert r.stderr.count(WARNING) == 1, r.stderr
    assert ("readonly database" if filled else "unable to open database file") in r.stdout
    assert "not writable: fix the permissions or set RAGTUNE_CACHE_DIR" in r.stderr
    assert "Traceback" not in r.stderr


def test_build_search_and_serve_of_a_hybrid_store_with_a_read_only_cache(tmp_path):
    """The command line end to end, each command a real process whose cache folder is read-only."""
    pytest.importorskip("onnxruntime")
    corpus = write_files(tmp_path / "c", DOCS)
    preexec = _read_only(tmp_path / "cache")
    env = {**os.environ, "RAGTUNE_CACHE_DIR": str(tmp_path / "cache"), "RAGTUNE_PROGRESS": "never"}
    env.pop("RAGTUNE_API_KEY", None)
    store = str(tmp_path / "s")

    def ragtune(*argv):
        r = subprocess.run([sys.executable, "-m", "ragtune", *argv], capture_output=True, text=True, env=env,
                           preexec_fn=preexec, timeout=300)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (argv, r.stderr[-3000:])
        assert r.stderr.count(WARNING) == 1, (argv, r.stderr)
        return r

    ragtune("index", "build", "--store", store, "--corpus", str(corpus), "--chunker", "section",
            "--retriever", "hybrid")
    hits = json.loads(ragtune("search", "--store", store, "--json", "how long do refunds take").stdout)
    assert "refunds" in json.dumps(hits)
    assert not any((tmp_path / "cache").iterdir())

    port = free_port()
    err = tmp_path / "serve.err"
    proc = subprocess.Popen([sys.executable, "-m", "ragtune", "serve", "--store", store, "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=open(err, "wb"), env=env, preexec_fn=preexec)
    try:
        deadline, body = time.time() + 90, None
        while time.time() < deadline and body is None:
            try:
                req = urllib.request.Request(f"http://127.0.0.1:{port}/search", method="POST",
                                             data=json.dumps({"query": "how long do refunds take"}).encode(),
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=5) as r:
                    body = json.loads(r.read())
            except OSError:
                assert proc.poll() is None, err.read_text(errors="replace")[-3000:]
                time.sleep(0.3)
        assert body is not None, err.read_text(errors="replace")[-3000:]
        assert "refunds" in json.dumps(body)
    finally:
        proc.kill()
        proc.wait(10)
    assert WARNING in err.read_text(errors="replace")


def test_the_default_cache_is_per_user_not_the_working_directory(tmp_path, monkeypatch):
    """Issue 25 item 13: the cache was `.ragtune-cache` under the working directory, so running from another folder
    embedded everything again. The default is now a per-user folder, the same from any folder; RAGTUNE_CACHE_DIR
    still overrides it."""
    from ragtune.embed.cache import default_cache_dir

    monkeypatch.delenv("RAGTUNE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    here = default_cache_dir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert default_cache_dir() == here == tmp_path / "xdg" / "ragtune" and here.is_absolute()
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "ragtune"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # invalid under the XDG spec: ignored
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "ragtune"
    monkeypatch.setenv("RAGTUNE_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this system")
def test_a_session_held_to_one_core_runs_one_thread():
    """Held to one core (taskset, a container's cpuset), a model session sizes its threads by that core, not by
    the machine's count: threads beyond the cores it may use only queue on them."""
    code = textwrap.dedent("""
        import os
        import onnxruntime as ort
        from ragtune.embed.onnx import bundled_minilm_model_path, cpu_session
        from ragtune.paths import usable_cpus
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        print(usable_cpus(), cpu_session(ort, bundled_minilm_model_path()).get_session_options().intra_op_num_threads)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", "1"]
