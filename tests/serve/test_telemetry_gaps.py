import json
import multiprocessing as mp

import numpy as np
import pytest

from ragtune.cli import main
from ragtune.serve.gaps import cluster_gaps
from ragtune.serve.telemetry import TelemetryLog


def _writer(path, n, who):
    log = TelemetryLog(path)
    for i in range(n):
        log.log(query=f"{who} question {i}", outcome="not_found" if i % 2 else "answered",
                retrieved=[{"anchor": "a.md", "score": 1.0}], source=who)


def test_concurrent_writers_lose_no_row(tmp_path):
    path = str(tmp_path / "t.sqlite")
    TelemetryLog(path)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, 150, f"p{i}")) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    log = TelemetryLog(path)
    assert log.count() == 600
    assert len(list(log.rows(outcome="not_found"))) == 300


class Topics:
    model_id = dim = max_tokens = cache_key = None

    def embed_queries(self, texts):
        v = np.array([[t.count("refund") + t.count("money back"), t.count("invoice") + t.count("bill"), 0.05]
                      for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_gaps_group_what_the_corpus_misses():
    queries = ["refund for a gift card", "can I get my money back on gift cards", "refund gift card balance",
               "refund for a gift card", "invoice in euros", "bill in another currency", "weather today"]
    clusters = cluster_gaps(queries, Topics(), distance=0.3)
    assert clusters[0]["size"] == 4 and clusters[0]["distinct"] == 3 and "refund" in clusters[0]["examples"][0]
    assert clusters[1]["size"] == 2
    assert sum(c["size"] for c in clusters) == len(queries)


def test_gaps_and_export_cli(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    path = str(tmp_path / "t.sqlite")
    log = TelemetryLog(path)
    for q in ["How do I get a refund on a gift card?", "Can gift cards be refunded?", "Gift card refund policy",
              "Do you ship to Antarctica?", "Shipping to the South Pole", "What colour is the logo?"]:
        log.log(query=q, outcome="not_found", retrieved=[])
    log.log(query="answered one", outcome="answered", retrieved=[])
    assert main(["gaps", "--log", path, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["not_found"] == 6
    biggest = out["clusters"][0]
    assert biggest["size"] >= 2 and all("gift" in q.lower() or "ship" in q.lower() for q in biggest["queries"])
    export = tmp_path / "log.jsonl"
    assert main(["log", "export", "--log", path, "--out", str(export)]) == 0
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    assert len(rows) == 7 and rows[-1]["outcome"] == "answered"


def test_reading_a_missing_log_is_an_error(tmp_path, capsys):
    assert main(["gaps", "--log", str(tmp_path / "typo.sqlite")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "typo.sqlite").exists()
