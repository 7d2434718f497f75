"""A real two-node Ray cluster on this machine (``ray start --head`` + ``ray start --address``, one CPU each):
a sweep joined by address gives the results of a local sweep.

Starting two Ray nodes takes about 25 s on a loaded 2-core machine, more than this suite's time budget for Ray,
so the test runs when ``RAGTUNE_TEST_RAY_CLUSTER=1`` (``tests/scale/test_ray_local.py`` covers the same code on
``ray.init`` in every run)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragtune import load_corpus, load_golden
from ragtune.sweep import parse_grid, sweep
from tests.helpers import SWEEP_DOCS, SWEEP_QUESTIONS, golden_rows, write_files, write_jsonl

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.skipif(os.environ.get("RAGTUNE_TEST_RAY_CLUSTER") != "1",
                                reason="starting a two-node Ray cluster takes ~25 s: set RAGTUNE_TEST_RAY_CLUSTER=1")

from ragtune.scale import RayOptions, RaySweepExecutor  # noqa: E402

START_S = 90  # give up (skip) when the two nodes are not up by then


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if ray.is_initialized():
        ray.shutdown()
    ray_bin = str(Path(sys.executable).with_name("ray"))
    port, client_port = free_port(), free_port()  # ephemeral ports: outside Ray's worker port range
    temp = tmp_path_factory.mktemp("ray")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    common = ["--block", "--num-cpus", "1", "--disable-usage-stats"]
    # each node in its own process group, so that the teardown ends exactly what this test started
    head = subprocess.Popen([ray_bin, "start", "--head", "--port", str(port), "--ray-client-server-port",
                             str(client_port), "--include-dashboard=false", "--temp-dir", str(temp), *common],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    worker = subprocess.Popen([ray_bin, "start", "--address", f"127.0.0.1:{port}", *common], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    old = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        while True:
            try:
                ray.init(address=address, logging_level="ERROR")
                if sum(n["Alive"] for n in ray.nodes()) >= 2:
                    break
                ray.shutdown()
            except (ConnectionError, RuntimeError):
                pass
            if time.monotonic() > deadline or head.poll() is not None or worker.poll() is not None:
                pytest.skip(f"a two-node Ray cluster did not start within {START_S} s here")
            time.sleep(0.5)
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for p in (worker, head):
            with_group = os.getpgid(p.pid) if p.poll() is None else None
            if with_group is not None:
                os.killpg(with_group, signal.SIGKILL)
            p.wait(timeout=10)
        if old is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = old
        shutil.rmtree(temp, ignore_errors=True)


def test_sweep_on_a_head_and_a_worker_matches_a_local_sweep(cluster, tmp_path, monkeypatch):
    corpus = load_corpus(write_files(tmp_path / "c", SWEEP_DOCS))
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", golden_rows(SWEEP_QUESTIONS)))
    grid = parse_grid({"metric": "recall@1", "k": [1, 5], "samples": 200,
                       "baseline": {"chunker": "fixed", "size": 8, "overlap": 0, "prefix": False, "retriever": "bm25"},
                       "grid": {"chunker": ["fixed"], "size": [8], "overlap": [0], "prefix": [False, True],
                                "retriever": ["bm25"]}})
    monkeypatch.setenv("RAGTUNE_CACHE_DIR", str(tmp_path / "cache-local"))
    sweep(corpus, golden, grid, tmp_path / "local", show_progress=False)
    monkeypatch.setenv("RAGTUNE_CACHE_DIR", str(tmp_path / "cache-ray"))
    sweep(corpus, golden, grid, tmp_path / "ray", show_progress=False, executor=RaySweepExecutor(RayOptions(address=cluster)))
    assert sum(n["Alive"] for n in ray.nodes()) == 2

    def ranked(out):
        data = json.loads((out / "results.json").read_text())
        return [(c["key"], c["metrics"]) for c in data["configs"]]

    assert len(ranked(tmp_path / "ray")) == 2 and ranked(tmp_path / "ray") == ranked(tmp_path / "local")
