"""Sweeps logged to MLflow: read back from a real local store with MlflowClient, and from a real `mlflow server`
started here on loopback and queried over its REST API with plain HTTP. Logging the same folder again (a resumed
sweep, a re-ranking, a grown grid) updates its runs and never duplicates them."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

import ragtune
from ragtune import load_corpus, load_golden
from ragtune.cli import main
from ragtune.errors import SweepStateError, TrackingError
from ragtune.sweep import log_to_mlflow, parse_grid, sweep
from tests.helpers import SWEEP_DOCS, SWEEP_GRID, SWEEP_QUESTIONS, golden_rows, write_files, write_jsonl

# MLflow's own SQLAlchemy models use a loader strategy SQLAlchemy deprecates: not ragtune's to fix
pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated")

GRID = {**SWEEP_GRID, "holdout": 0.3}
CONFIGS = 6  # distinct configurations of SWEEP_GRID, the baseline among them


@pytest.fixture(autouse=True)
def quiet_mlflow(monkeypatch):
    """No usage reports from MLflow, and no tracking URI or experiment taken from the environment."""
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    for var in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A finished tiny BM25 sweep (6 configurations, 30% of the questions held out) and the CLI's inputs."""
    root = tmp_path_factory.mktemp("mlflow-sweep")
    corpus = load_corpus(write_files(root / "c", SWEEP_DOCS))
    golden = load_golden(write_jsonl(root / "g.jsonl", golden_rows(SWEEP_QUESTIONS)))
    (root / "grid.yaml").write_text(json.dumps(GRID))  # JSON is YAML
    sweep(corpus, golden, parse_grid(GRID), root / "out", show_progress=False)
    return root


def fresh(swept: Path, tmp_path: Path) -> Path:
    """A copy of the sweep folder never logged anywhere."""
    out = tmp_path / "sweep"
    shutil.copytree(swept / "out", out)
    return out


def cli(swept: Path, out: Path, *extra: str) -> int:
    return main(["sweep", "--corpus", str(swept / "c"), "--golden", str(swept / "g.jsonl"),
                 "--grid", str(swept / "grid.yaml"), "--out", str(out), *extra])


def results_of(out: Path) -> tuple[dict, dict]:
    return (json.loads((out / "results.json").read_text()), json.loads((out / "sweep-state.json").read_text()))


def test_a_sweep_logged_to_the_default_local_store_reads_back(swept, tmp_path, capsys):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    out = fresh(swept, tmp_path)
    assert cli(swept, out, "--mlflow", "--json") == 0
    captured = capsys.readouterr()
    json.loads(captured.out)  # standard output is results.json alone: nothing MLflow prints lands there
    uri = f"sqlite:///{out.resolve().as_posix()}/mlruns/mlflow.db"
    parent_id = captured.err.split("mlflow: parent run ")[1].split()[0]
    assert f"mlflow: parent run {parent_id} at {uri}" in captured.err
    results, state = results_of(out)

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("ragtune")
    assert exp.artifact_location == (out / "mlruns" / "artifacts").resolve().as_uri()  # inside the sweep folder
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if r.data.tags["ragtune.role"] == "sweep"]
    children = {r.data.tags["ragtune.config_key"]: r for r in runs if r.data.tags["ragtune.role"] == "config"}
    assert [p.info.run_id for p in parents] == [parent_id] and len(children) == CONFIGS == len(results["configs"])
    parent = parents[0]
    assert parent.info.run_name == "sweep" and parent.info.status == "FINISHED" and parent.info.end_time

    for rank, c in enumerate(results["configs"], start=1):
        run = children[c["key"]]
        d = run.data
        assert d.tags["mlflow.parentRunId"] == parent_id and run.info.run_name == c["label"] == d.tags["ragtune.label"]
        assert run.info.status == "FINISHED"
        # params: the pipeline configuration, flat
        for k, v in c["config"].items():
            if v is not None:
                assert d.params[k] == str(v), k
        assert d.params["tokenizer"] == "regex"  # a resolved chunker default the grid never set
        # metrics, with their intervals, named without "@"
        assert d.metrics["rank"] == rank
        assert d.metrics["recall_at_1"] == c["metrics"]["recall@1"] and d.metrics["mrr"] == c["metrics"]["mrr"]
        assert d.metrics["ndcg_at_10"] == c["metrics"]["ndcg@10"]
        for m in ("recall@1", "recall@5", "mrr", "ndcg@10"):
            name = m.replace("@", "_at_")
            assert [d.metrics[f"{name}_ci_low"], d.metrics[f"{name}_ci_high"]] == c["metrics_ci"][m]
        assert d.metrics["latency_p50_ms"] == c["stats"]["latency_ms"]["p50"]
        assert d.metrics["latency_p95_ms"] == c["stats"]["latency_ms"]["p95"]
        assert d.metrics["chunks"] == c["stats"]["chunks"]
        vs = c["vs_baseline"]
        assert d.tags["ragtune.is_baseline"] == ("true" if vs is None else "false")
        if vs:
            assert d.metrics["recall_at_1_delta"] == vs["delta"] and d.metrics["recall_at_1_p_holm"] == vs["p_holm"]
            assert [d.metrics["recall_at_1_delta_ci_low"], d.metrics["recall_at_1_delta_ci_high"]] == vs["delta_ci"]
            assert d.metrics["recall_at_1_wins"] == vs["wins"]
        else:
            assert c["key"] == results["baseline"] and "recall_at_1_delta" not in d.metrics
        # tags: where the figures come from
        assert d.tags["ragtune.corpus_fingerprint"] == state["corpus"]
        assert d.tags["ragtune.golden_fingerprint"] == state["golden"]
        assert d.tags["ragtune.version"] == ragtune.__version__
        assert d.tags["ragtune.is_recommended"] == str(c["key"] == results["selection"]["chosen"]).lower()

    # the per-question table of a configuration, as an artifact
    best = results["configs"][0]
    table = Path(client.download_artifacts(children[best["key"]].info.run_id, "questions.csv", str(tmp_path)))
    rows = list(csv.DictReader(table.open()))
    assert [r["id"] for r in rows] == [q["id"] for q in best["questions"]]
    assert [float(r["recall@1"]) for r in rows if r["recall@1"]] == \
           [q["scores"]["recall@1"] for q in best["questions"] if q["scores"].get("recall@1") is not None]
    held = set(results["selection"]["held_out_ids"])
    assert {r["id"] for r in rows if r["held_out"] == "True"} == held and len(held) == 3

    # the parent: the report and results.json as artifacts, the held-out figures as metrics
    assert {a.path for a in client.list_artifacts(parent_id)} == {"report.html", "results.json"}
    logged = Path(client.download_artifacts(parent_id, "results.json", str(tmp_path / "p")))
    assert json.loads(logged.read_text()) == results
    s = results["selection"]
    pm = parent.data.metrics
    assert pm["holdout_optimism"] == s["optimism"] and pm["holdout_held_out_score"] == s["held_out_score"]
    assert pm["holdout_selection_score"] == s["selection_score"]
    assert [pm["holdout_held_out_ci_low"], pm["holdout_held_out_ci_high"]] == s["held_out_ci"]
    assert parent.data.tags["ragtune.recommended"] == s["chosen"] == results["recommended"]["key"]
    assert parent.data.tags["ragtune.holdout.select"] == "best"
    assert pm["recommended_recall_at_1_held_out"] == s["held_out_score"]
    assert not any(t.startswith(("ragtune.best", "ragtune.holdout.chosen")) for t in parent.data.tags)
    assert parent.data.tags["ragtune.metric"] == "recall@1"
    assert "Quote the held-out figure." in parent.data.tags["mlflow.note.content"]
    assert parent.data.params["ks"] == "[1, 5]" and parent.data.metrics["configurations"] == CONFIGS

    # logged again, unchanged: the same runs, untouched
    before = {r.info.run_id: r.data.tags["ragtune.digest"] for r in runs}
    assert log_to_mlflow(out) == parent_id
    again = client.search_runs([exp.experiment_id])
    assert {r.info.run_id: r.data.tags["ragtune.digest"] for r in again} == before
    assert json.loads((out / "mlflow.json").read_text())["logged"][uri]["parent_run_id"] == parent_id

    # the same folder chosen by 2-fold cross-validation instead: the fold figures join the same runs, and the
    # holdout's choice, which no longer holds, is untagged
    assert cli(swept, out, "--mlflow", "--folds", "2", "--holdout", "0") == 0
    s = json.loads((out / "results.json").read_text())["selection"]
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == CONFIGS + 1
    parent = next(r for r in runs if r.info.run_id == parent_id)
    assert parent.data.metrics["folds_held_out_score"] == s["held_out_score"] and parent.data.metrics["folds"] == 2
    assert parent.data.metrics["folds_optimism"] == s["optimism"]
    assert json.loads(parent.data.tags["ragtune.folds.chosen_counts"]) == s["chosen_counts"]
    assert parent.data.tags["ragtune.recommended_basis"] == "folds"
    children = [r for r in runs if r.info.run_id != parent_id]
    assert sum(r.data.metrics["folds_chosen"] for r in children) == 2
    assert [r.data.tags["ragtune.config_key"] for r in children if r.data.tags["ragtune.is_recommended"] == "true"] \
        == [parent.data.tags["ragtune.recommended"]]


def test_mlflow_is_imported_only_when_a_sweep_is_logged():
    code = "import sys, ragtune.sweep, ragtune.cli; print(sorted(m for m in sys.modules if m.split('.')[0] == 'mlflow'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_without_mlflow_the_sweep_fails_before_it_runs(swept, tmp_path, monkeypatch, capsys):
    for name in ("mlflow", "mlflow.tracking"):
        monkeypatch.setitem(sys.modules, name, None)  # as if it were not installed
    out = tmp_path / "never"
    assert cli(swept, out, "--mlflow") == 2
    assert "error: logging a sweep to MLflow needs mlflow: pip install 'ragtune[mlflow]'" in capsys.readouterr().err
    assert not out.exists()  # nothing ran


def test_an_unreachable_server_and_an_empty_folder_are_clear_errors(swept, tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    out = fresh(swept, tmp_path)
    uri = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(TrackingError, match=f"MLflow at {uri} refused or failed: .*The sweep's results are kept in"):
        log_to_mlflow(out, uri=uri)
    assert (out / "results.json").exists() and (out / "report.html").exists()
    with pytest.raises(SweepStateError, match="holds no results.json: run the sweep first"):
        log_to_mlflow(tmp_path / "empty", uri=uri)


SECRET = "s3cr3tPW"


def everything_under(folder: Path) -> bytes:
    """Every file below ``folder``, concatenated: what a run left on disk."""
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_an_unreachable_tracker_fails_in_bounded_time_keeps_the_results_and_prints_no_password(swept, tmp_path):
    """The whole command in a process of its own, MLflow's retry settings left at ragtune's: it ends (before the
    fix it retried a refused connection for about four minutes; 120 s here is only a guard against a hang), the
    sweep's results are complete, the exit status and the one error line say the tracking failed, not the sweep,
    and the password in the URI appears nowhere: not on stdout, stderr, or in any file written."""
    pytest.importorskip("mlflow")
    port = free_port()  # nothing listens there
    out = fresh(swept, tmp_path)  # the sweep resumes: its configurations are read back, not recomputed
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(MLFLOW_DISABLE_TELEMETRY="true", RAGTUNE_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "ragtune", "sweep", "--corpus", str(swept / "c"),
                           "--golden", str(swept / "g.jsonl"), "--grid", str(swept / "grid.yaml"), "--out", str(out),
                           "--mlflow", f"http://alice:{SECRET}@127.0.0.1:{port}/"],
                          capture_output=True, env=env, cwd=tmp_path, timeout=120)
    stderr = proc.stderr.decode()
    assert proc.returncode == 3, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(
        f"error: the sweep finished, logging it to MLflow failed: MLflow at http://***@127.0.0.1:{port}/ refused "
        "or failed: "), stderr
    assert f"The sweep's results are kept in {out}" in errors[0]
    results = json.loads((out / "results.json").read_text())
    assert len(results["configs"]) == CONFIGS and (out / "report.html").is_file()
    assert f"wrote {out}/results.json".encode() in proc.stdout
    for where, data in (("stdout", proc.stdout), ("stderr", proc.stderr), ("files", everything_under(tmp_path))):
        assert SECRET.encode() not in data and b"alice" not in data, where


def test_mlflow_is_given_bounded_retries_only_while_ragtune_logs(swept, tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    from mlflow.environment_variables import MLFLOW_HTTP_REQUEST_MAX_RETRIES, MLFLOW_HTTP_REQUEST_TIMEOUT
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    from ragtune.sweep import tracking

    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "7")  # the user's own setting wins
    seen = []

    def spy(self, name):  # what MLflow's HTTP layer would read at this request
        seen.append((MLFLOW_HTTP_REQUEST_MAX_RETRIES.get(), MLFLOW_HTTP_REQUEST_TIMEOUT.get()))
        raise MlflowException("down")

    monkeypatch.setattr(MlflowClient, "get_experiment_by_name", spy)
    with pytest.raises(TrackingError):
        log_to_mlflow(fresh(swept, tmp_path), uri="http://127.0.0.1:9")
    assert seen == [(tracking.HTTP_RETRIES, 7)]
    assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ and os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "7"


# --- a real tracking server -------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    """`mlflow server` on loopback with its own SQLite store and artifact folder; killed (its process group) after."""
    pytest.importorskip("mlflow")
    port = free_port()
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true",
           "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # no background job workers (GenAI evaluation)
    env.pop("MLFLOW_TRACKING_URI", None)
    log = open(tmp_path / "server.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
                             "--workers", "1", "--backend-store-uri", f"sqlite:///{tmp_path.as_posix()}/server.db",
                             "--artifacts-destination", str(tmp_path / "server-artifacts")],
                            cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            if proc.poll() is not None:
                pytest.fail(f"mlflow server exited with {proc.returncode}:\n{(tmp_path / 'server.log').read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not answer in 240 s:\n{(tmp_path / 'server.log').read_text()}")
            time.sleep(0.3)
        yield url
    finally:
        with_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with_group(proc, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


def with_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def rest(url: str, path: str, body: dict | None = None, **query: str) -> dict:
    """One call of MLflow's REST API: GET with a query string, or POST with a JSON body."""
    full = f"{url}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(full, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"{}")


def search(url: str, experiment_id: str, role: str) -> list[dict]:
    body = {"experiment_ids": [experiment_id], "filter": f"tags.`ragtune.role` = '{role}'", "max_results": 1000}
    return rest(url, "/api/2.0/mlflow/runs/search", body).get("runs", [])


def kv(entries: list[dict]) -> dict:
    return {e["key"]: e["value"] for e in entries}


def test_a_tracking_server_holds_the_nested_runs_and_a_rerun_duplicates_none(swept, tmp_path, mlflow_server, capfd):
    url = mlflow_server
    out = fresh(swept, tmp_path)
    # the URI with credentials in it (this server asks for none): logged, and the password shown or kept nowhere
    with_password = url.replace("http://", f"http://alice:{SECRET}@")
    assert cli(swept, out, "--mlflow", with_password) == 0
    captured = capfd.readouterr()  # what reached the terminal, MLflow's own logging included
    assert SECRET not in captured.out + captured.err and SECRET.encode() not in everything_under(out)
    assert f"at {url.replace('http://', 'http://***@')}" in captured.err
    assert list(json.loads((out / "mlflow.json").read_text())["logged"]) == [url.replace("http://", "http://***@")]
    parent_id = captured.err.split("mlflow: parent run ")[1].split()[0]
    results, state = results_of(out)

    exp = rest(url, "/api/2.0/mlflow/experiments/get-by-name", experiment_name="ragtune")["experiment"]
    parents, children = search(url, exp["experiment_id"], "sweep"), search(url, exp["experiment_id"], "config")
    assert [p["info"]["run_id"] for p in parents] == [parent_id] and len(children) == CONFIGS
    by_key = {kv(r["data"]["tags"])["ragtune.config_key"]: r for r in children}
    for c in results["configs"]:
        run = by_key[c["key"]]
        tags, metrics, params = kv(run["data"]["tags"]), kv(run["data"]["metrics"]), kv(run["data"]["params"])
        assert tags["mlflow.parentRunId"] == parent_id and tags["ragtune.corpus_fingerprint"] == state["corpus"]
        assert metrics["recall_at_1"] == c["metrics"]["recall@1"]
        assert [metrics["recall_at_1_ci_low"], metrics["recall_at_1_ci_high"]] == c["metrics_ci"]["recall@1"]
        assert params["chunker"] == c["config"]["chunker"] and run["info"]["status"] == "FINISHED"
    listed = rest(url, "/api/2.0/mlflow/artifacts/list", run_id=parent_id)
    assert {f["path"] for f in listed["files"]} == {"report.html", "results.json"}
    best = by_key[results["configs"][0]["key"]]["info"]["run_id"]
    with urllib.request.urlopen(f"{url}/get-artifact?" + urllib.parse.urlencode(
            {"path": "questions.csv", "run_uuid": best}), timeout=30) as r:
        rows = list(csv.DictReader(io.StringIO(r.read().decode())))
    assert [row["id"] for row in rows] == [q["id"] for q in results["configs"][0]["questions"]]
    parent = kv(parents[0]["data"]["metrics"])
    assert parent["holdout_optimism"] == results["selection"]["optimism"]

    # the same sweep again (it resumes: nothing is recomputed) and the same folder ranked on mrr: no new run
    assert cli(swept, out, "--mlflow", url) == 0
    assert cli(swept, out, "--mlflow", url, "--metric", "mrr") == 0
    assert f"mlflow: parent run {parent_id} at {url}" in capfd.readouterr().err
    parents, children = search(url, exp["experiment_id"], "sweep"), search(url, exp["experiment_id"], "config")
    assert [p["info"]["run_id"] for p in parents] == [parent_id] and len(children) == CONFIGS
    assert kv(parents[0]["data"]["tags"])["ragtune.metric"] == "mrr"
    ranked = json.loads((out / "results.json").read_text())["configs"]
    for rank, c in enumerate(ranked, start=1):
        metrics = kv(next(r for r in children if kv(r["data"]["tags"])["ragtune.config_key"] == c["key"])["data"]["metrics"])
        assert metrics["rank"] == rank and ("mrr_delta" in metrics) == (c["vs_baseline"] is not None)

    # a grown grid in the same folder: one more configuration, one more run, under the same parent
    grown = {**GRID, "grid": {**GRID["grid"], "size": [8, 16, 40]}}
    corpus, golden = load_corpus(swept / "c"), load_golden(swept / "g.jsonl")
    result = sweep(corpus, golden, parse_grid(grown), out, show_progress=False)
    assert log_to_mlflow(out, result=result, uri=url) == parent_id
    children = search(url, exp["experiment_id"], "config")
    assert len(children) == len(result.records) == CONFIGS + 2  # fixed-16, with and without the prefix
    assert {kv(r["data"]["tags"])["mlflow.parentRunId"] for r in children} == {parent_id}
    assert len(search(url, exp["experiment_id"], "sweep")) == 1
