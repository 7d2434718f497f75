import json

import pytest

import ragtune.sweep.runner as runner_mod
from ragtune import load_corpus, load_golden
from ragtune.cli import main
from ragtune.sweep import SweepStateError, parse_grid, run_sweep, summarize, sweep
from tests.helpers import write_files, write_jsonl

DOCS = {
    "billing/refunds.md": "# Refunds\n\nRefunds are paid within fourteen days of a cancelled order.\n\n## Partial refunds\n\nPart of the order amount is returned when only some items come back.\n",
    "billing/invoices.md": "# Invoices\n\nInvoices are emailed monthly. Download older invoices from the account page.\n",
    "account/password.md": "# Passwords\n\nReset a forgotten password with the link on the sign-in page.\n\n## Two-factor\n\nTwo-factor codes come from an authenticator app.\n",
    "account/delete.md": "# Deleting an account\n\nAccount deletion is permanent after thirty days.\n",
    "shipping.md": "# Shipping\n\nParcels ship within two days. Express shipping arrives the next day.\n",
}
QUESTIONS = [
    ("q1", "how long do refunds take", ["billing/refunds.md#refunds"]),
    ("q2", "return part of an order", ["billing/refunds.md#partial-refunds"]),
    ("q3", "where are old invoices", ["billing/invoices.md"]),
    ("q4", "forgot my password", ["account/password.md#passwords"]),
    ("q5", "authenticator codes", ["account/password.md#two-factor"]),
    ("q6", "is deleting my account permanent", ["account/delete.md"]),
    ("q7", "next day delivery", ["shipping.md"]),
    ("q8", "do you sell gift cards", []),
]
GRID = {"metric": "recall@5", "k": [1, 5], "samples": 500,
        "baseline": {"chunker": "fixed", "size": 8, "overlap": 0},
        "grid": {"chunker": ["fixed", "section"], "size": [8, 24], "overlap": [0, 4], "prefix": [False, True]}}


@pytest.fixture
def setup(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [{"id": i, "q": q, "relevant": r} for i, q, r in QUESTIONS]))
    return corpus, golden, parse_grid(GRID), tmp_path / "out"


def test_sweep_writes_results_and_report(setup):
    corpus, golden, grid, out = setup
    res = sweep(corpus, golden, grid, out, show_progress=False)
    data = json.loads((out / "results.json").read_text())
    assert len(data["configs"]) == len(grid.specs) == 8 + 2
    assert data["baseline"] == grid.resolved(corpus.kind).baseline.key and data["seed"] == 0 and data["correction"] == "holm"
    values = [c["metrics"]["recall@5"] for c in data["configs"]]
    assert values == sorted(values, reverse=True)
    base = next(c for c in data["configs"] if c["key"] == data["baseline"])
    assert base["vs_baseline"] is None
    for c in data["configs"]:
        assert len(c["questions"]) == 8 and {"chunks", "texts_embedded", "index_build_s", "latency_ms"} <= set(c["stats"])
        if c["vs_baseline"]:
            vs = c["vs_baseline"]
            assert vs["wins"] + vs["ties"] + vs["losses"] == 7
            assert vs["p_holm"] >= vs["p"]
            assert vs["delta"] == pytest.approx(c["metrics"]["recall@5"] - base["metrics"]["recall@5"])
    table = res.table()
    assert "(baseline)" in table and "vs baseline" in table.splitlines()[0]
    html = (out / "report.html").read_text()
    assert "http://" not in html and "https://" not in html and "<script src" not in html
    embedded = json.loads(html.split('<script type="application/json" id="data">')[1].split("</script>")[0].replace("<\\/", "</"))
    assert len(embedded["configs"]) == 10 and "questions" in embedded["configs"][0]


def test_interrupted_sweep_resumes_without_recomputing(setup, monkeypatch):
    corpus, golden, grid, out = setup
    built = []
    real = runner_mod.build_retriever
    monkeypatch.setattr(runner_mod, "build_retriever", lambda *a, **k: built.append(1) or real(*a, **k))

    def stop_after_three(record, seen=[]):
        seen.append(record)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(corpus, golden, grid, out, show_progress=False, on_record=stop_after_three)
    assert len(list((out / "runs").glob("*.json"))) == 3
    first = len(built)
    records = run_sweep(corpus, golden, grid, out, show_progress=False)
    assert len(records) == 10
    assert len(built) - first == 10 - 3  # only the unfinished configurations were indexed
    again = run_sweep(corpus, golden, grid, out, show_progress=False)
    assert len(built) - first == 7 and [r["key"] for r in again] == [r["key"] for r in records]
    # a damaged run file is recomputed, not trusted
    victim = next((out / "runs").glob("*.json"))
    victim.write_text("{truncated")
    run_sweep(corpus, golden, grid, out, show_progress=False)
    assert len(built) - first == 8


def test_results_of_another_golden_set_are_not_mixed(setup, tmp_path):
    corpus, golden, grid, out = setup
    run_sweep(corpus, golden, parse_grid({**GRID, "grid": {"chunker": ["section"]}}), out, show_progress=False)
    other = load_golden(write_jsonl(tmp_path / "g2.jsonl", [{"id": "x", "q": "refunds", "relevant": ["shipping.md"]}]))
    with pytest.raises(SweepStateError, match="different golden"):
        run_sweep(corpus, other, grid, out, show_progress=False)


def test_cli_sweep_and_compare(setup, tmp_path, capsys):
    corpus, golden, grid, out = setup
    grid_file = tmp_path / "grid.toml"
    grid_file.write_text('metric = "recall@5"\nk = [1, 5]\nsamples = 500\n[baseline]\nchunker = "fixed"\nsize = 8\n'
                         'overlap = 0\n[grid]\nchunker = ["section", "fixed"]\nsize = [24]\noverlap = [4]\n')
    args = ["--corpus", corpus.root, "--golden", golden.source, "--grid", str(grid_file), "--out", str(out)]
    assert main(["sweep", *args, "--dry-run"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 3
    assert main(["sweep", *args]) == 0
    text = capsys.readouterr().out
    assert "(baseline)" in text and "report.html" in text
    # compare two plain eval outputs
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["eval", "--corpus", corpus.root, "--golden", golden.source, "--chunker", "fixed", "--size", "8",
                 "--overlap", "0", "--json", str(a)]) == 0
    assert main(["eval", "--corpus", corpus.root, "--golden", golden.source, "--json", str(b)]) == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--metric", "mrr", "--samples", "500", "--json"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert c["n"] == 7 and c["wins"] + c["ties"] + c["losses"] == 7 and c["seed"] == 0
    assert main(["compare", str(a), str(out), "--metric", "recall@5", "--samples", "200"]) == 0
    assert "wins" in capsys.readouterr().out


def test_sweep_killed_with_sigkill_resumes(setup, tmp_path):
    """A real kill -9 in the middle of a sweep: the rerun finishes and recomputes only what was not written."""
    import os
    import signal
    import subprocess
    import sys
    import time

    corpus, golden, grid, out = setup
    grid_file = tmp_path / "grid.json"
    grid_file.write_text(json.dumps(GRID))
    script = (
        "import json, sys, time\n"
        "import ragtune.sweep.runner as r\n"
        "from ragtune import load_corpus, load_golden\n"
        "from ragtune.sweep import parse_grid\n"
        "real = r.build_retriever\n"
        "def slow(*a, **k):\n    time.sleep(0.3)\n    return real(*a, **k)\n"
        "r.build_retriever = slow\n"
        f"r.run_sweep(load_corpus({corpus.root!r}), load_golden({golden.source!r}), "
        f"parse_grid(json.load(open({str(grid_file)!r}))), {str(out)!r}, show_progress=False)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=os.getcwd())
    runs = out / "runs"
    deadline = time.time() + 60
    while time.time() < deadline and len(list(runs.glob("*.json")) if runs.exists() else []) < 3:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = {p.name: p.stat().st_mtime_ns for p in runs.glob("*.json")}
    assert 3 <= len(done) < 10
    records = run_sweep(corpus, golden, grid, out, show_progress=False)
    assert len(records) == 10
    assert not list(runs.glob("*.tmp*"))  # debris of the killed write is cleaned up
    for name, mtime in done.items():  # finished configurations were not recomputed
        assert (runs / name).stat().st_mtime_ns == mtime


def test_chunkings_are_cached_on_disk_by_corpus_and_config(setup, monkeypatch):
    corpus, golden, grid, out = setup
    calls = []
    real = runner_mod.chunk_documents
    monkeypatch.setattr(runner_mod, "chunk_documents", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = run_sweep(corpus, golden, grid, out / "a", show_progress=False)
    n = len(calls)
    assert n > 0
    second = run_sweep(corpus, golden, grid, out / "b", show_progress=False)  # fresh output, warm chunk cache
    assert len(calls) == n
    assert [r["result"]["metrics"] for r in first] == [r["result"]["metrics"] for r in second]
