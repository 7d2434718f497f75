"""The milvus engine and store against a real Milvus standalone server (the session fixture ``milvus_server``,
tests/milvus_server.py: the ``milvus`` package's server, 2.3.5): dense parity with exact search, the server's
version recorded and its missing BM25 said in one line, hybrid fused here, index types with their recall against
exact search, a store's versions as collections behind an alias, and a server that goes away while serving or
building. One server per test run, so every server test lives in this file; each builds few collections (a
collection costs the server a few seconds to create and flush)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("pymilvus")

from ragtune.cli import main  # noqa: E402
from ragtune.corpus.corpus import Corpus  # noqa: E402
from ragtune.engines import milvus as m  # noqa: E402
from ragtune.errors import ConfigError, EngineError  # noqa: E402
from ragtune.golden import load_beir_golden  # noqa: E402
from ragtune.pipeline import PipelineConfig, Resources, build_pipeline, run_eval  # noqa: E402
from ragtune.retrieve.filters import ChunkFilter  # noqa: E402
from ragtune.store import IndexStore, build_version, load_pipeline, open_current  # noqa: E402
from ragtune.types import Document  # noqa: E402
from ragtune import load_corpus  # noqa: E402

TOPICS = ["solar panels turn sunlight into electricity", "sourdough bread rises with a fermented starter",
          "glaciers retreat as mountain valleys warm", "honey bees pollinate crops and store nectar",
          "tidal turbines capture the flow of the sea", "vaccine trials measure protection from disease",
          "coral reefs grow in warm shallow seas", "electric cars charge their batteries from the grid",
          "volcanoes erupt when magma rises through the crust", "sleep apnea stops breathing during the night",
          "chess openings fight for the centre squares", "rivers flood their banks after heavy rain"]
FACETS = [("cost", "The price has fallen over the last decade and budgets matter."),
          ("risk", "Experts warn about dangers, safety failures and harm to people.")]


def _write_beir(root: Path) -> Path:
    docs, queries, qrels = [], [], []
    for t, topic in enumerate(TOPICS):
        for f, (facet, sentence) in enumerate(FACETS):
            did = f"d{t:02d}{f}"
            docs.append({"_id": did, "title": f"{topic} ({facet})", "text": f"{topic.capitalize()}. {sentence} "
                         f"This page is about the {facet} of it.",
                         "metadata": {"year": 2000 + (3 * t + f) % 25, "lang": "en" if t % 3 else "de"}})
            queries.append({"_id": f"q{t:02d}{f}", "text": f"what is the {facet} of {topic.split()[0]} {topic.split()[1]}"})
            qrels.append((f"q{t:02d}{f}", did))
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels").mkdir(exist_ok=True)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in qrels))
    return root


@pytest.fixture(scope="module")
def env(tmp_path_factory, milvus_server):
    """The BEIR fixture, embedded pipelines to compare with, and one Resources (embeddings cached once)."""
    root = tmp_path_factory.mktemp("milvus-server-env")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGTUNE_CACHE_DIR", str(root / "cache"))
        beir = _write_beir(root / "beir")
        corpus, golden = load_corpus(beir), load_beir_golden(beir, "test")
        resources = Resources("minilm")
        pipes = {mode: build_pipeline(corpus, PipelineConfig.from_flags({"retriever": mode}), resources=resources)
                 for mode in ("dense", "hybrid")}
        yield {"root": root, "corpus": corpus, "golden": golden, "resources": resources, "pipes": pipes,
               "uri": milvus_server.uri, "server": milvus_server}
        m.close_all()


def _milvus(env, mode: str, **options):
    flags = {"retriever": f"milvus-{mode}", "milvus_uri": env["uri"], **options}
    return build_pipeline(env["corpus"], PipelineConfig.from_flags(flags), resources=env["resources"])


def _ids(ranking) -> list[str]:
    return [h.chunk.id for h in ranking.hits]


def test_dense_on_the_server_is_exact_search_and_records_the_server_version(env):
    dense = _milvus(env, "dense")
    described = dense.describe()["retriever"]
    assert described["server"] == "Milvus 2.3.5" and described["server_version"] == env["server"].version
    for g in env["golden"]:
        assert _ids(dense.retriever.search(g.q, 10)) == _ids(env["pipes"]["dense"].retriever.search(g.q, 10)), g.q
    ours = run_eval(env["pipes"]["dense"], env["golden"]).metrics["ndcg@10"]
    theirs = run_eval(dense, env["golden"])
    assert ours > 0.5 and abs(ours - theirs.metrics["ndcg@10"]) <= 0.01
    assert theirs.config["retriever"]["server_version"] == env["server"].version  # in every result
    cf = ChunkFilter(dense.chunks)
    for flt in ("lang=de", "year>=2015", "not (lang=de or year<2005)"):  # filters run on the server
        allowed = {c.id for c, ok in zip(dense.chunks, cf.mask(flt)) if ok}
        got = dense.retriever.search("energy from the sea and the sun", len(dense.chunks), filters=flt)
        assert set(_ids(got)) == allowed, flt
        want = env["pipes"]["dense"].retriever.search("energy from the sea and the sun", 10, filters=flt)
        assert _ids(got)[:10] == _ids(want), flt


def test_what_the_server_lacks_is_one_line_and_hybrid_fuses_ragtunes_bm25(env, tmp_path, capsys):
    # Milvus 2.3 has no server-side BM25: milvus-bm25 is refused in one line naming the version
    with pytest.raises(EngineError, match=r"^Milvus 2\.3\.5 at http://127\.0\.0\.1:\d+ \(server version v2\.3\.5"
                                          r"[^)]*\) has no server-side BM25"):
        _milvus(env, "bm25")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Tides\n\nTidal turbines capture the flow of the sea.\n")
    code = main(["search", "tidal power", "--corpus", str(docs), "--engine", "milvus", "--retriever", "bm25",
                 "--milvus-uri", env["uri"], "--milvus-user", "root", "--milvus-password", "s3cret-pw"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "has no server-side BM25" in err and "Milvus 2.3.5" in err and "s3cret-pw" not in err

    # hybrid: the server's dense hits (here through an IVF_FLAT index searching all its clusters) fused with
    # ragtune's BM25 here, and the result says so
    hybrid = _milvus(env, "hybrid", milvus_index="IVF_FLAT", ivf_nlist=4, ivf_nprobe=4)
    described = hybrid.describe()["retriever"]
    assert described["hybrid_bm25"] == "ragtune" and described["milvus_index"] == "IVF_FLAT"
    assert described["recall_vs_exact@10"] == 1.0  # every cluster searched: exact
    ours = run_eval(env["pipes"]["hybrid"], env["golden"]).metrics["ndcg@10"]
    theirs = run_eval(hybrid, env["golden"])
    assert ours > 0.5 and abs(ours - theirs.metrics["ndcg@10"]) <= 0.01
    assert theirs.config["retriever"]["hybrid_bm25"] == "ragtune"
    got = hybrid.retriever.search("the risk of coral reefs", 5, filters="lang=en")
    assert got.hits and all(h.chunk.metadata.get("lang") == "en" for h in got.hits)


def test_index_types_are_configuration_with_recall_against_exact_search(env, tmp_path):
    exact = {g.q: set(_ids(env["pipes"]["dense"].retriever.search(g.q, 10))) for g in env["golden"]}
    built = []
    for ef in (10, 64):  # a sweep over ef: two configurations, one collection (ef is read at search time)
        p = _milvus(env, "dense", milvus_index="HNSW", hnsw_m=4, hnsw_ef_construction=8, hnsw_ef=ef)
        cfg = p.describe()["retriever"]
        assert cfg["milvus_index"] == "HNSW" and cfg["hnsw_ef"] == ef and cfg["recall_probes"] == 200
        assert 0.5 <= cfg["recall_vs_exact@10"] <= 1.0  # reported beside quality in every result
        found = sum(len(set(_ids(p.retriever.search(q, 10))) & want) for q, want in exact.items())
        assert found / (10 * len(exact)) >= 0.8
        built.append((p.config.key, cfg["collection"]))
    assert built[0][0] != built[1][0] and built[0][1] == built[1][1]
    with pytest.raises(ConfigError, match="milvus_index='DISKANN' is not valid; choose one of: 'FLAT', 'HNSW'"):
        PipelineConfig.from_flags({"retriever": "milvus-dense", "milvus_uri": env["uri"], "milvus_index": "DISKANN"})
    # Milvus Lite searches exactly only: an approximate index there is one line naming Lite's version
    lite = PipelineConfig.from_flags({"retriever": "milvus-dense", "milvus_uri": str(tmp_path / "lite.db"),
                                      "milvus_index": "HNSW"})
    with pytest.raises(EngineError, match=r"^Milvus Lite 3\.\d+\.\d+ at .* has no HNSW index"):
        build_pipeline(env["corpus"], lite, resources=env["resources"])


def _store_corpus(tag: str, n: int = 8) -> Corpus:
    return Corpus([Document(f"{tag}/{i}", "", f"{tag} note {i} about rivers, mountains and weather", {"n": i})
                   for i in range(n)], kind="folder", root=tag)


def test_store_versions_are_collections_behind_an_alias_on_the_server(env, tmp_path):
    store = IndexStore(tmp_path / "store")
    cfg = PipelineConfig.from_flags({"retriever": "milvus-dense", "chunker": "document", "milvus_uri": env["uri"]})
    v1 = build_version(store, _store_corpus("blue"), cfg)
    v2 = build_version(store, _store_corpus("green"), cfg)
    assert v1.manifest["engine"]["server_version"] == env["server"].version  # recorded in the manifest
    client = m.connect(env["uri"])
    alias = v1.manifest["engine"]["alias"]
    assert client.describe_alias(alias)["collection_name"] == v1.manifest["engine"]["collection"]
    reader = open_current(store)
    blue, green = ({c.id for c in store.chunks(v.id)[0]} for v in (v1, v2))
    errors, seen, stop = [], set(), threading.Event()

    def search():
        while not stop.is_set():
            try:
                ids = set(_ids(reader.search("rivers and mountains", 4)))
                assert ids and (ids <= blue or ids <= green), "a ranking mixed two versions"
                seen.add("blue" if ids <= blue else "green")
            except Exception as e:  # noqa: BLE001 - counted: the test asserts there are none
                errors.append(repr(e))

    threads = [threading.Thread(target=search) for _ in range(4)]
    for t in threads:
        t.start()
    for _ in range(3):  # blue/green: the alias moves atomically between two searches
        store.promote(v2.id)
        time.sleep(0.05)
        store.rollback()
        time.sleep(0.05)
    store.promote(v2.id)
    time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join()
    assert errors == [] and seen == {"blue", "green"}
    assert client.describe_alias(alias)["collection_name"] == v2.manifest["engine"]["collection"]
    store.rollback()  # rollback by alias
    assert client.describe_alias(alias)["collection_name"] == v1.manifest["engine"]["collection"]
    assert load_pipeline(store, v2.id).retriever.search("weather", 3).hits[0].chunk.doc_id.startswith("green/")
    store.promote(v2.id)
    v3 = build_version(store, _store_corpus("green", 9), cfg, promote=True)
    assert client.describe_alias(alias)["collection_name"] == v3.manifest["engine"]["collection"]
    assert store.gc(keep=1) == [v1.id] and not client.has_collection(v1.manifest["engine"]["collection"])
    assert client.has_collection(v2.manifest["engine"]["collection"])  # the rollback target is kept


def test_a_server_gone_while_serving_is_503_and_a_killed_build_leaves_the_old_version(env, tmp_path):
    from fastapi.testclient import TestClient

    from ragtune.serve.app import create_app

    store = IndexStore(tmp_path / "store")
    cfg = PipelineConfig.from_flags({"retriever": "milvus-dense", "chunker": "document", "milvus_uri": env["uri"]})
    v1 = build_version(store, _store_corpus("blue"), cfg)
    http = TestClient(create_app(str(store.root)), base_url="http://127.0.0.1")
    ok = http.post("/search", json={"query": "rivers", "k": 3})
    assert ok.status_code == 200 and ok.json()["version"] == v1.id

    # kill the server while a build is loading its collection: the build fails, v1 stays current
    failed: list[BaseException] = []

    def build():
        try:
            build_version(store, _store_corpus("green"), cfg, promote=True)
        except BaseException as e:  # noqa: BLE001 - the test asserts what it was
            failed.append(e)

    client = m.connect(env["uri"])
    builder = threading.Thread(target=build)
    builder.start()
    for _ in range(600):  # until the build's temporary collection exists on the server
        if any("_build" in c for c in client.list_collections()):
            break
        time.sleep(0.02)
    env["server"].stop()
    builder.join(timeout=120)
    assert len(failed) == 1 and isinstance(failed[0], EngineError), failed
    assert store.current_id() == v1.id and [v.id for v in store.list()] == [v1.id]

    gone = http.post("/search", json={"query": "rivers", "k": 3})
    assert gone.status_code == 503, gone.text
    detail = gone.json()["detail"]
    assert "Milvus" in detail and "\n" not in detail and "Traceback" not in detail

    env["server"].start()
    for _ in range(300):  # the same app, no restart: it reconnects once the server answers
        back = http.post("/search", json={"query": "rivers", "k": 3})
        if back.status_code == 200:
            break
        time.sleep(0.2)
    assert back.status_code == 200 and back.json()["version"] == v1.id
    assert {h["doc_id"].split("/")[0] for h in back.json()["hits"]} == {"blue"}
