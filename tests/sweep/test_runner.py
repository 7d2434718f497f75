import json
import re

import pytest

import ragtune.sweep.runner as runner_mod
from ragtune import load_corpus, load_golden
from ragtune.cli import main
from ragtune.sweep import SweepStateError, parse_grid, run_sweep, summarize, sweep
from tests.helpers import PREFIX_ONLY, SWEEP_DOCS, SWEEP_GRID, SWEEP_QUESTIONS, golden_rows, write_files, write_jsonl

# the configurations of SWEEP_GRID by label; tests/helpers.py explains why each question goes the way it does
BASE = "fixed-8-o0/bm25"
F8P = "fixed-8-o0-prefix/bm25"
F40 = "fixed-40-o0/bm25"
F40P = "fixed-40-o0-prefix/bm25"
SEC = "section/bm25"
SECP = "section-prefix/bm25"
ANSWERABLE = {i for i, _, rel in SWEEP_QUESTIONS if rel}
EASY = {"e1", "e2", "e3"}
# answerable questions whose first hit is at rank 1, per configuration
TOP1 = {BASE: {"s1", "s2"} | EASY, F8P: ANSWERABLE, F40P: ANSWERABLE - {"s1"}, SECP: ANSWERABLE - {"s1", "s2"},
        F40: {"s2"} | EASY, SEC: EASY}
# against the baseline: wins, ties, losses, fixed, broken
VS = {F8P: (5, 5, 0, PREFIX_ONLY, ()), F40P: (5, 4, 1, PREFIX_ONLY, ("s1",)),
      SECP: (5, 3, 2, PREFIX_ONLY, ("s1", "s2")), F40: (0, 9, 1, (), ("s1",)), SEC: (0, 8, 2, (), ("s1", "s2"))}


def holm_reference(ps):
    """Holm's step-down adjustment, written out independently of ragtune's."""
    m = len(ps)
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda i: ps[i])):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


def table_rows(text):
    """The numbered configuration rows of a printed sweep table."""
    return [line for line in text.splitlines() if re.match(r"\s*\d+[ ~] ", line)]  # ~: the holes could reorder it


@pytest.fixture
def setup(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", SWEEP_DOCS))
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", golden_rows(SWEEP_QUESTIONS)))
    return corpus, golden, parse_grid(SWEEP_GRID), tmp_path / "out"


def test_sweep_writes_results_and_report(setup):
    corpus, golden, grid, out = setup
    res = sweep(corpus, golden, grid, out, show_progress=False)
    data = json.loads((out / "results.json").read_text())
    assert len(data["configs"]) == len(grid.specs) == 6
    assert data["baseline"] == grid.resolved(corpus.kind).baseline.key and data["seed"] == 0 and data["correction"] == "holm"
    by_label = {c["label"]: c for c in data["configs"]}
    assert set(by_label) == set(TOP1)
    # best first: small chunks with the prefix answer everything; the whole-section chunks without it do worst
    assert [c["label"] for c in data["configs"]] == [F8P, F40P, SECP, BASE, F40, SEC]
    for label, c in by_label.items():
        assert len(c["questions"]) == 11 and {"chunks", "texts_embedded", "index_build_s", "latency_ms"} <= set(c["stats"])
        top1 = {q["id"] for q in c["questions"] if q["answerable"] and q["first_hit_rank"] == 1}
        assert top1 == TOP1[label], label
        assert c["metrics"]["recall@1"] == pytest.approx(len(TOP1[label]) / 10)
    assert by_label[BASE]["vs_baseline"] is None
    for label, (wins, ties, losses, fixed, broken) in VS.items():
        vs = by_label[label]["vs_baseline"]
        assert (vs["wins"], vs["ties"], vs["losses"]) == (wins, ties, losses), label
        assert (tuple(vs["fixed"]), tuple(vs["broken"])) == (fixed, broken), label
        assert vs["delta"] == pytest.approx((wins - losses) / 10), label
        assert vs["n"] == 10 and vs["k"] == 1
    assert by_label[F8P]["vs_baseline"]["delta"] > 0 > by_label[SEC]["vs_baseline"]["delta"]
    # Holm over the five comparisons: the clearest improvement (5 wins, no loss) has the smallest p, multiplied by 5
    others = [by_label[label]["vs_baseline"] for label in VS]
    assert [v["p_holm"] for v in others] == pytest.approx(holm_reference([v["p"] for v in others]))
    best = by_label[F8P]["vs_baseline"]
    assert best["p"] == min(v["p"] for v in others) and best["p"] < 0.2
    assert best["p_holm"] == pytest.approx(min(1.0, 5 * best["p"])) and best["p_holm"] > best["p"]
    assert by_label[F40]["vs_baseline"]["p"] == pytest.approx(1.0)  # one loss, nothing else differs
    table = res.table()
    assert any("vs baseline" in line for line in table.splitlines())
    rows = table_rows(table)  # numbered rows, best first
    assert len(rows) == 6 and "(baseline)" in rows[3]
    assert "yes" in rows[0] and "+0.500" in rows[0] and "5/5/0" in rows[0]
    assert "-0.200" in rows[5] and "0/8/2" in rows[5]
    html = (out / "report.html").read_text()
    assert "http://" not in html and "https://" not in html and "<script src" not in html
    embedded = json.loads(html.split('<script type="application/json" id="data">')[1].split("</script>")[0].replace("<\\/", "</"))
    assert [c["label"] for c in embedded["configs"]] == [F8P, F40P, SECP, BASE, F40, SEC]
    assert "questions" in embedded["configs"][0]


def test_a_sweep_ranked_by_context_tokens_puts_the_smallest_first(setup):
    corpus, golden, _, out = setup
    grid = parse_grid({**SWEEP_GRID, "metric": "context_tokens@1"})
    res = sweep(corpus, golden, grid, out, show_progress=False)
    ranked = res.ranked()
    values = [r["result"]["metrics"]["context_tokens@1"] for r in ranked]
    assert values == sorted(values) and values[0] < values[-1]
    # 8-token windows hand the model at most 8 tokens at rank 1; sections (short here) more; 40-token windows,
    # which run across the short sections of a document, the most
    assert {r["label"] for r in ranked[:2]} == {BASE, F8P} and values[1] <= 8
    assert {r["label"] for r in ranked[2:4]} == {SEC, SECP} and {r["label"] for r in ranked[4:]} == {F40, F40P}
    data = json.loads((out / "results.json").read_text())
    assert [c["label"] for c in data["configs"]] == [r["label"] for r in ranked]


def test_interrupted_sweep_resumes_without_recomputing(setup, monkeypatch):
    corpus, golden, grid, out = setup
    built = []
    from ragtune.registry import RETRIEVERS

    real = RETRIEVERS.build
    monkeypatch.setattr(RETRIEVERS, "build", lambda *a, **k: built.append(1) or real(*a, **k))

    def stop_after_three(record, seen=[]):
        seen.append(record)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(corpus, golden, grid, out, show_progress=False, on_record=stop_after_three)
    assert len(list((out / "runs").glob("*.json"))) == 3
    first = len(built)
    records = run_sweep(corpus, golden, grid, out, show_progress=False)
    assert len(records) == 6
    assert len(built) - first == 6 - 3  # only the unfinished configurations were indexed
    again = run_sweep(corpus, golden, grid, out, show_progress=False)
    assert len(built) - first == 3 and [r["key"] for r in again] == [r["key"] for r in records]
    # a damaged run file is recomputed, not trusted
    victim = next((out / "runs").glob("*.json"))
    victim.write_text("{truncated")
    run_sweep(corpus, golden, grid, out, show_progress=False)
    assert len(built) - first == 4


def test_results_of_another_golden_set_are_not_mixed(setup, tmp_path):
    corpus, golden, grid, out = setup
    run_sweep(corpus, golden, parse_grid({**SWEEP_GRID, "grid": {"chunker": ["section"]}}), out, show_progress=False)
    other = load_golden(write_jsonl(tmp_path / "g2.jsonl", [{"id": "x", "q": "refunds", "relevant": ["shipping.md"]}]))
    with pytest.raises(SweepStateError, match="different golden"):
        run_sweep(corpus, other, grid, out, show_progress=False)


def test_cli_sweep_and_compare(setup, tmp_path, capsys):
    corpus, golden, grid, out = setup
    grid_file = tmp_path / "grid.toml"
    grid_file.write_text('metric = "recall@1"\nk = [1, 5]\nsamples = 500\n[baseline]\nchunker = "fixed"\nsize = 8\n'
                         'overlap = 0\nprefix = false\nretriever = "bm25"\n[grid]\nchunker = ["section", "fixed"]\n'
                         'size = [40]\noverlap = [0]\nprefix = [false]\nretriever = ["bm25"]\n')
    args = ["--corpus", corpus.root, "--golden", golden.source, "--grid", str(grid_file), "--out", str(out)]
    assert main(["sweep", *args, "--dry-run"]) == 0
    planned = [line.split(None, 1)[1] for line in capsys.readouterr().out.splitlines() if re.match(r"[0-9a-f]{12}  ", line)]
    assert sorted(planned) == sorted([BASE, F40, SEC])  # one line per configuration: key and label
    assert main(["sweep", *args]) == 0
    text = capsys.readouterr().out
    assert "(baseline)" in text and "report.html" in text
    rows = table_rows(text)  # ranked: the baseline (8-token windows) first, whole sections last
    assert len(rows) == 3
    assert "(baseline)" in rows[0] and "-0.100" in rows[1] and "0/9/1" in rows[1] and "-0.200" in rows[2] and "0/8/2" in rows[2]
    # compare two plain eval outputs: 8-token windows against whole sections (BM25, no prefix)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    common = ["--corpus", corpus.root, "--golden", golden.source, "--k", "1,5", "--retriever", "bm25", "--no-prefix"]
    assert main(["eval", *common, "--chunker", "fixed", "--size", "8", "--overlap", "0", "--out", str(a)]) == 0
    assert main(["eval", *common, "--out", str(b)]) == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--metric", "recall@1", "--samples", "500", "--json"]) == 0
    c = json.loads(capsys.readouterr().out)
    base, row = c["rows"][0], c["rows"][1]
    assert c["n"] == 10 and c["seed"] == 0 and row["k"] == 1
    assert (row["wins"], row["ties"], row["losses"]) == (0, 8, 2) and row["fixed"] == [] and row["broken"] == ["s1", "s2"]
    assert row["delta"] == pytest.approx(-0.2) and base["mean"] == pytest.approx(0.5)
    # the other way round, what was broken is fixed and losses become wins
    assert main(["compare", str(b), str(a), "--metric", "recall@1", "--samples", "500", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][1]
    assert (row["wins"], row["ties"], row["losses"]) == (2, 8, 0) and row["fixed"] == ["s1", "s2"] and row["broken"] == []
    assert row["delta"] == pytest.approx(0.2)
    assert main(["compare", str(a), str(out), "--metric", "recall@1", "--samples", "200"]) == 0
    digest = capsys.readouterr().out  # an eval run against a whole sweep: the digest, the tables on request
    assert digest.startswith("4 system(s) against the baseline a on 10 questions") and "--all" in digest
    assert "wins" not in digest
    assert main(["compare", str(a), str(out), "--metric", "recall@1", "--samples", "200", "--all"]) == 0
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
    grid_file.write_text(json.dumps(SWEEP_GRID))
    script = (
        "import json, sys, time\n"
        "import ragtune.sweep.runner as r\n"
        "from ragtune import load_corpus, load_golden\n"
        "from ragtune.sweep import parse_grid\n"
        "from ragtune.registry import RETRIEVERS\n"
        "real = RETRIEVERS.build\n"
        "def slow(*a, **k):\n    time.sleep(0.3)\n    return real(*a, **k)\n"
        "RETRIEVERS.build = slow\n"
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
    assert 3 <= len(done) < 6
    records = run_sweep(corpus, golden, grid, out, show_progress=False)
    assert len(records) == 6
    assert not list(runs.glob("*.tmp*"))  # debris of the killed write is cleaned up
    for name, mtime in done.items():  # finished configurations were not recomputed
        assert (runs / name).stat().st_mtime_ns == mtime


def test_chunkings_are_cached_on_disk_by_corpus_and_config(setup, monkeypatch):
    corpus, golden, grid, out = setup
    calls = []
    import ragtune.chunking as chunking_mod

    real = chunking_mod.chunk_documents
    monkeypatch.setattr(chunking_mod, "chunk_documents", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = run_sweep(corpus, golden, grid, out / "a", show_progress=False)
    n = len(calls)
    assert n > 0
    second = run_sweep(corpus, golden, grid, out / "b", show_progress=False)  # fresh output, warm chunk cache
    assert len(calls) == n
    assert [r["result"]["metrics"] for r in first] == [r["result"]["metrics"] for r in second]


def test_a_conversation_turn_with_other_history_is_another_golden_set():
    """A sweep folder's state names the golden set by its items; a turn asked after other questions is another
    question (the history strategy searches with them), so its fingerprint differs."""
    from dataclasses import replace

    from ragtune.golden import GoldenItem, GoldenSet
    from ragtune.sweep.runner import golden_fingerprint

    turn = GoldenItem(id="c1#2", q="and how do I test it?", relevant={"a.md#x": 2}, conversation="c1", turn=1,
                      history=("How do I write a dependency?",))
    other = replace(turn, history=("How do I write a middleware?",))
    assert golden_fingerprint(GoldenSet([turn])) != golden_fingerprint(GoldenSet([other]))
    plain = GoldenItem(id="q1", q="What is a dependency?", relevant={"a.md#x": 2})
    assert golden_fingerprint(GoldenSet([plain])) == golden_fingerprint(GoldenSet([replace(plain)]))
