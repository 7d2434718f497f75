"""No silent waits (an announced estimate, bars on stderr only) and fail-fast offline model loading."""

import time

import numpy as np
import pytest

from ragtune.embed import CachedEmbedder, EmbeddingCache
from ragtune.errors import ConfigError
from ragtune.progress import format_duration, progress_iter


class SlowEmbedder:
    model_id = "org/slow-model@v1"
    dim = 3
    max_tokens = 64
    cache_key = "slow:v1"

    def __init__(self, per_text: float = 0.0):
        self.per_text = per_text
        self.warmed = 0

    def warm_up(self):
        self.warmed += 1

    def embed(self, texts):
        time.sleep(self.per_text * len(texts))
        return np.tile(np.array([[1.0, 0.0, 0.0]], dtype=np.float32), (len(texts), 1))

    embed_queries = embed


def test_misses_are_announced_on_stderr_and_hits_are_silent(tmp_path, capsys):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    texts = [f"text number {i}" for i in range(40)]
    inner = SlowEmbedder()
    CachedEmbedder(inner, cache, show_progress=True).embed(texts)
    out, err = capsys.readouterr()
    assert out == ""  # stdout carries --json output
    assert "embedding 40 chunks with slow-model" in err and "cached for later runs" in err
    assert inner.warmed == 1  # the model loads before the first batch is timed
    assert cache.speed("slow:v1|passage") is not None  # a measured texts/s for the next run's estimate

    again = CachedEmbedder(inner, cache, show_progress=True)
    again.embed(texts)
    out, err = capsys.readouterr()
    assert again.stats == {"hits": 40, "misses": 0}
    assert out == "" and err == ""


def test_estimate_uses_the_stored_speed(tmp_path, capsys):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    cache.put_speed("slow:v1|passage", 0.5)  # half a text per second: 300 texts take 10 minutes
    emb = CachedEmbedder(SlowEmbedder(), cache, show_progress=True)
    emb.embed([f"t{i}" for i in range(300)])
    err = capsys.readouterr().err
    assert "embedding 300 chunks with slow-model, about 10 min on this machine" in err
    # the run measured the real (fast) speed and stored it for the next estimate
    assert cache.speed("slow:v1|passage") > 0.5


def test_first_run_estimate_comes_from_timing_the_first_batch(tmp_path, capsys):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    emb = CachedEmbedder(SlowEmbedder(per_text=0.01), cache, show_progress=True)  # about 100 texts/s
    emb.embed([f"t{i}" for i in range(200)])  # about 2 s
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if x.startswith("embedding 200 chunks"))
    assert "about 2 s" in line or "about 3 s" in line, line


def test_without_show_progress_nothing_is_printed(tmp_path, capsys):
    CachedEmbedder(SlowEmbedder(), EmbeddingCache(tmp_path / "c.sqlite")).embed(["a", "b"])
    assert capsys.readouterr() == ("", "")


def test_bar_is_drawn_on_stderr_only(monkeypatch, capsys):
    monkeypatch.setenv("RAGTUNE_PROGRESS", "always")
    assert list(progress_iter(range(3), "working hard")) == [0, 1, 2]
    out, err = capsys.readouterr()
    assert out == ""
    assert "working hard" in err and "ETA" in err


def test_progress_never_silences_notes(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("RAGTUNE_PROGRESS", "never")
    CachedEmbedder(SlowEmbedder(), EmbeddingCache(tmp_path / "c.sqlite"), show_progress=True).embed(["a"])
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("seconds,text", [(0.2, "under a second"), (40, "about 40 s"), (125, "about 2 min"),
                                          (5400, "about 1.5 h")])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


# -- fail fast offline -------------------------------------------------------------------------------------------

MADE_UP = "ragtune-tests/no-such-model-3f9a1c"


@pytest.fixture
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))


def _unroutable_proxy(monkeypatch, tmp_path):
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setenv("HTTPS_PROXY", "http://10.255.255.1:3128")  # unroutable: the connect times out


def test_cross_encoder_not_cached_offline_fails_fast_with_the_fix(offline):
    pytest.importorskip("sentence_transformers")
    from ragtune.rerank.cross_encoder import CrossEncoderReranker

    with pytest.raises(ConfigError) as e:  # from the check before the model library loads: no network tried
        CrossEncoderReranker(MADE_UP).warm_up()
    msg = str(e.value)
    assert MADE_UP in msg and "not in the local Hugging Face cache" in msg and "HF_HUB_OFFLINE=1" in msg
    assert f"hf download {MADE_UP}" in msg and "--rerank-model /path/to/model" in msg


def test_st_embedder_behind_an_unroutable_proxy_fails_fast(monkeypatch, tmp_path):
    pytest.importorskip("sentence_transformers")
    from ragtune.embed import get_embedder

    _unroutable_proxy(monkeypatch, tmp_path)
    emb = get_embedder(f"st:{MADE_UP}")  # constructing loads nothing
    with pytest.raises(ConfigError) as e:  # one probe bounded at 1 s, not the model library's minute of retries
        emb.embed(["hello"])
    assert MADE_UP in str(e.value) and "through the proxy 10.255.255.1:3128 did not answer within 1 s" in str(e.value)
    assert "--embedder st:/path/to/model" in str(e.value)


def test_a_missing_local_folder_is_named(offline, tmp_path):
    pytest.importorskip("sentence_transformers")
    from ragtune.rerank.cross_encoder import CrossEncoderReranker

    with pytest.raises(ConfigError, match="no such folder"):
        CrossEncoderReranker(str(tmp_path / "nope" / "model")).warm_up()


def test_a_cached_model_loads_from_local_files_when_offline(offline, tmp_path):
    from ragtune.embed.hub import require_model

    snap = tmp_path / "hf" / "hub" / "models--org--cached" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    refs = tmp_path / "hf" / "hub" / "models--org--cached" / "refs"
    refs.mkdir()
    (refs / "main").write_text("abc")
    assert require_model("org/cached", what="model", flag="--x ") is True  # cached: load without the network
    with pytest.raises(ConfigError):
        require_model("org/not-cached", what="model", flag="--x ")
