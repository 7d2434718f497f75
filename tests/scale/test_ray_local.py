"""Ray on a real local instance (``ray.init(num_cpus=2)``): embedding as Ray tasks and sweeps in parallel give
the vectors and results of a local run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragtune import load_corpus, load_golden
from ragtune.embed import CachedEmbedder, EmbeddingCache, get_embedder
from ragtune.errors import ConfigError
from ragtune.pipeline import PipelineConfig, run_eval
from ragtune.store import IndexStore, build_version, load_pipeline, refresh_version
from ragtune.sweep import parse_grid, sweep
from tests.helpers import DOCS, QUESTIONS, SWEEP_DOCS, SWEEP_QUESTIONS, golden_rows, write_files, write_jsonl

ray = pytest.importorskip("ray")

from ragtune.scale import RayEmbedder, RayOptions, RaySweepExecutor, ray_embedders  # noqa: E402 - after the skip: needs the extra

# a corpus of enough short texts for several 32-text embedding tasks
TOPICS = ["refunds", "invoices", "passwords", "shipping", "accounts", "gift cards", "returns", "taxes"]
MANY = {f"t{i:02d}.md": f"# {TOPICS[i % 8].title()} {i}\n\nAbout {TOPICS[i % 8]}, note {i}.\n\n"
        f"## Details {i}\n\nMore on {TOPICS[(i * 3) % 8]} and {TOPICS[(i * 5) % 8]} ({i}).\n" for i in range(40)}


@pytest.fixture(scope="module")
def local_ray():
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray
    ray.shutdown()


def use_cache(monkeypatch, path) -> None:
    monkeypatch.setenv("RAGTUNE_CACHE_DIR", str(path))


def test_ray_embedder_gives_the_local_vectors_and_fills_the_cache(local_ray, tmp_path, monkeypatch):
    texts = [f"{TOPICS[i % 8]} question number {i} " + "word " * (i % 13) for i in range(100)]
    use_cache(monkeypatch, tmp_path / "local")
    local = CachedEmbedder(get_embedder("minilm")).embed(texts)
    use_cache(monkeypatch, tmp_path / "ray")
    remote = RayEmbedder("minilm", RayOptions(batch_size=32))
    cached = CachedEmbedder(remote)
    vecs = cached.embed(texts)
    assert vecs.shape == local.shape == (100, 384)
    # bit for bit: the tasks' batches split where the local run's steps split (same padding, same model threads)
    assert np.array_equal(vecs, local)
    assert remote.local._session is None  # the model never loaded in this process: the Ray workers embedded
    assert cached.stats == {"hits": 0, "misses": 100}
    # written into the content-addressed cache under the same keys as a local run: a second pass embeds nothing
    assert EmbeddingCache(tmp_path / "ray" / "embeddings.sqlite").count() == \
        EmbeddingCache(tmp_path / "local" / "embeddings.sqlite").count() == 100
    again = CachedEmbedder(RayEmbedder("minilm", RayOptions(batch_size=32)))
    assert np.array_equal(again.embed(texts), vecs) and again.stats == {"hits": 100, "misses": 0}


def test_index_build_and_refresh_on_ray_match_a_local_run(local_ray, tmp_path, monkeypatch):
    root = write_files(tmp_path / "corpus", {**MANY, **DOCS})
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", golden_rows(QUESTIONS)))
    config = PipelineConfig(retriever="hybrid")
    stores = {}
    for name, opts in (("local", None), ("ray", RayOptions(batch_size=32))):
        use_cache(monkeypatch, tmp_path / f"cache-{name}")  # each run embeds everything itself
        store = IndexStore(tmp_path / f"store-{name}")
        v = build_version(store, load_corpus(root), config, make_embedder=ray_embedders(opts) if opts else None)
        assert v.manifest["stats"]["texts_embedded"] > 64  # several tasks of 32
        (root / "shipping.md").write_text("# Shipping\n\nParcels ship the same day. Express arrives by noon.\n")
        _, stats = refresh_version(store, load_corpus(root), make_embedder=ray_embedders(opts) if opts else None)
        assert stats["changed"] == ["shipping.md"] and stats["texts_embedded"] == 1
        (root / "shipping.md").write_text(DOCS["shipping.md"])
        stores[name] = store
    for vid in ("v0001", "v0002"):
        a, b = stores["local"].vectors(vid), stores["ray"].vectors(vid)
        assert a.shape == b.shape and a.shape[0] == len(stores["local"].chunks(vid)[0])
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    ra = run_eval(load_pipeline(stores["local"]), golden)
    rb = run_eval(load_pipeline(stores["ray"]), golden)
    assert ra.metrics == rb.metrics
    assert [q["first_hit_rank"] for q in ra.to_dict()["questions"]] == \
        [q["first_hit_rank"] for q in rb.to_dict()["questions"]]


GRID = {"metric": "recall@1", "k": [1, 5], "samples": 200,
        "baseline": {"chunker": "fixed", "size": 8, "overlap": 0, "prefix": False, "retriever": "bm25"},
        "grid": {"chunker": ["fixed"], "size": [8, 40], "overlap": [0], "prefix": [False, True],
                 "retriever": ["bm25", "dense"]}}


def ranking(out) -> list[tuple]:
    """Every configuration's metrics and corrected p-value, by key: configurations with equal metrics are ranked by
    their measured latency, which differs from run to run, so their order is not compared."""
    data = json.loads((out / "results.json").read_text())
    return sorted(((c["key"], c["metrics"], c["vs_baseline"] and c["vs_baseline"]["p_holm"]) for c in data["configs"]),
                  key=lambda row: row[0])


def test_sweep_on_ray_matches_a_local_sweep_and_resumes(local_ray, tmp_path, monkeypatch):
    corpus = load_corpus(write_files(tmp_path / "c", SWEEP_DOCS))
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", golden_rows(SWEEP_QUESTIONS)))
    grid = parse_grid(GRID)
    use_cache(monkeypatch, tmp_path / "cache-local")
    sweep(corpus, golden, grid, tmp_path / "local", show_progress=False)
    use_cache(monkeypatch, tmp_path / "cache-ray")
    seen = []
    from ragtune.sweep import run_sweep

    records = run_sweep(corpus, golden, grid, tmp_path / "ray", show_progress=False, on_record=seen.append,
                        executor=RaySweepExecutor(RayOptions()))
    assert len(seen) == len(records) == len(grid.all_specs) == 8
    assert [r["key"] for r in records] == [s.key for s in grid.resolved(corpus.kind).all_specs]  # grid order
    sweep(corpus, golden, grid, tmp_path / "ray", show_progress=False, executor=RaySweepExecutor(RayOptions()))  # resumes: all on disk
    assert ranking(tmp_path / "ray") == ranking(tmp_path / "local")
    # the workers filled the cache folder they were given (the driver's): chunkings and embeddings
    assert list((tmp_path / "cache-ray" / "chunks").glob("*.jsonl"))
    assert EmbeddingCache(tmp_path / "cache-ray" / "embeddings.sqlite").count() > 0
    records2 = run_sweep(corpus, golden, grid, tmp_path / "ray", show_progress=False, executor=RaySweepExecutor(RayOptions()))
    assert records2 == records  # nothing recomputed


def test_a_worker_with_another_ragtune_release_refuses_the_task(local_ray):
    from ragtune.scale.ray import _embed_batch, _get, _remote

    with pytest.raises(ConfigError, match="same ragtune release on every node"):
        _get(local_ray, _remote(local_ray, _embed_batch).remote("minilm", ["a text"], "0.0.0-other"))


def test_a_search_runs_on_ray_with_the_trials_of_a_local_search(local_ray, tmp_path, monkeypatch):
    from ragtune.sweep import LocalExecutor, Search, SweepJob, parse_space
    from ragtune.sweep.runner import SweepProgress

    corpus = load_corpus(write_files(tmp_path / "c", SWEEP_DOCS))
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", golden_rows(SWEEP_QUESTIONS)))
    grid, space = parse_space({**{k: v for k, v in GRID.items() if k != "grid"},
                               "space": {"chunker": ["fixed", "section"], "size": [8, 40], "prefix": [False, True],
                                         "retriever": ["bm25"]}})
    search = Search(grid, space, sampler="random", trials=3, prune_share=0)
    use_cache(monkeypatch, tmp_path / "cache-local")
    local = sweep(corpus, golden, search, tmp_path / "local", show_progress=False)
    use_cache(monkeypatch, tmp_path / "cache-ray")
    remote = sweep(corpus, golden, search, tmp_path / "ray", show_progress=False,
                   executor=RaySweepExecutor(RayOptions()))
    trials = [[(t["params"], t["key"], t["value"], t["state"]) for t in r.search["studies"][0]["trials"]]
              for r in (local, remote)]
    assert trials[0] == trials[1] and len(trials[1]) == 3
    assert ranking(tmp_path / "ray") == ranking(tmp_path / "local")
    assert list((tmp_path / "cache-ray" / "chunks").glob("*.jsonl"))  # the workers chunked, in the cache given
    # the command line: --search with --ray (Ray already started here: that session is used)
    (tmp_path / "space.toml").write_text('metric = "recall@1"\nk = [1, 5]\nsamples = 200\n[baseline]\n'
                                         'chunker = "fixed"\nsize = 8\noverlap = 0\nprefix = false\n'
                                         'retriever = "bm25"\n[space]\nchunker = ["fixed", "section"]\n'
                                         'size = [8, 40]\nprefix = [false, true]\nretriever = ["bm25"]\n')
    from ragtune.cli import main

    assert main(["sweep", "--corpus", str(tmp_path / "c"), "--golden", str(tmp_path / "g.jsonl"), "--grid",
                 str(tmp_path / "space.toml"), "--out", str(tmp_path / "cli"), "--search", "random", "--trials", "3",
                 "--prune-share", "0", "--ray"]) == 0
    assert ranking(tmp_path / "cli") == ranking(tmp_path / "local")
    # a trial's first-questions run (what pruning scores) is a Ray task too, untimed, with the local scores
    spec = grid.resolved(corpus.kind).baseline
    job = SweepJob(corpus, golden, grid.resolved(corpus.kind), questions=frozenset({"p1", "s1", "e1"}), timed=False)
    (_, on_ray), = RaySweepExecutor(RayOptions()).run(job, [(1, spec)], SweepProgress(1, False))
    (_, here), = LocalExecutor().run(job, [(1, spec)], SweepProgress(1, False))
    assert on_ray["stats"]["latency_ms"] is None and [q["id"] for q in on_ray["result"]["questions"]] == \
        ["p1", "s1", "e1"]
    def scored(record):  # each question's latency is measured where it ran
        return [{k: v for k, v in q.items() if k != "latency_ms"} for q in record["result"]["questions"]]

    assert scored(on_ray) == scored(here) and on_ray["result"]["metrics"] == here["result"]["metrics"]
