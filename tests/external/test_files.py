"""Run files and qrels: TREC, ragtune JSON/JSONL and ranx dicts in and out, and the CLI over them."""

import json

import pytest

from ragtune import ConfigError, GoldenSetError, Pipeline, evaluate
from ragtune.cli import main
from ragtune.evaluate.run import Run
from ragtune.external.files import (evaluate_run_file, read_qrels, read_rankings, to_ranx_qrels, to_ranx_run,
                                    write_qrels, write_trec_run)

KS = (1, 3, 5)


def retrieval(scores):
    """The metrics every path must agree on. Left out: context tokens (run files carry no token counts) and the
    judgment-coverage rows (judged@k and the upper bounds count retrieved entries, and a run written as anchors
    lists a section once where the native ranking holds several of its chunks)."""
    return {k: v for k, v in scores.items()
            if not k.startswith(("context_tokens", "judged@")) and "_upper" not in k}


@pytest.fixture
def native(corpus, golden):
    pipeline = Pipeline.build(corpus)
    return evaluate(pipeline.retriever, golden, corpus, ks=KS)


def test_a_span_run_round_trips_to_the_same_scores(tmp_path, corpus, golden, native):
    n = write_trec_run(native, tmp_path / "r.trec", ids="span", tag="bm25")
    lines = (tmp_path / "r.trec").read_text().splitlines()
    assert n == len(lines) and lines[0].split()[1] == "Q0" and lines[0].split()[5] == "bm25"
    got = evaluate_run_file(tmp_path / "r.trec", golden, corpus=corpus, ks=KS)
    for a, b in zip(native.questions, got.questions):
        assert retrieval(b.scores) == pytest.approx(retrieval(a.scores)), a.id
    assert got.matching["by_method"] == {"span": n}


def test_an_anchor_run_agrees_with_run_from_trec(tmp_path, corpus, golden, native):
    write_trec_run(native, tmp_path / "r.trec")
    mine = evaluate_run_file(tmp_path / "r.trec", golden, corpus=corpus, ks=KS)
    ref = Run.from_trec(tmp_path / "r.trec", golden, corpus=corpus, ks=KS)
    for q in mine.questions:
        if q.answerable:
            for m in ("recall@1", "recall@3", "mrr", "ndcg@10", "precision@3"):
                assert q.scores[m] == pytest.approx(ref.scores[q.id][m]), (q.id, m)


def test_json_jsonl_and_ranx_runs_read_like_trec(tmp_path, corpus, golden, native):
    write_trec_run(native, tmp_path / "r.trec")
    trec = read_rankings(tmp_path / "r.trec")
    (tmp_path / "r.json").write_text(json.dumps({q: [h.ident for h in hits] for q, hits in trec.items()}))
    (tmp_path / "r.jsonl").write_text("".join(json.dumps({"id": q, "hits": [{"id": h.ident, "score": h.score}
                                                                             for h in hits]}) + "\n"
                                              for q, hits in trec.items()))
    (tmp_path / "ranx.json").write_text(json.dumps(to_ranx_run(native)))
    (tmp_path / "eval.json").write_text(native.to_json())
    ref = evaluate_run_file(tmp_path / "r.trec", golden, corpus=corpus, ks=KS).metrics
    for name in ("r.json", "r.jsonl", "ranx.json"):
        got = evaluate_run_file(tmp_path / name, golden, corpus=corpus, ks=KS).metrics
        assert retrieval(got) == pytest.approx(retrieval(ref)), name
    # an eval result keeps each chunk's span: it scores as the chunks did
    spans = evaluate_run_file(tmp_path / "eval.json", golden, corpus=corpus, ks=KS).metrics
    assert retrieval(spans) == pytest.approx(retrieval(native.metrics))
    # and so do the anchors of section chunks: an anchor hit covers its section's own text, as the chunk does
    assert retrieval(ref) == pytest.approx(retrieval(native.metrics))
    old = evaluate_run_file(tmp_path / "r.trec", golden, corpus=corpus, ks=KS, anchor_span="subsections")
    assert old.matching["coverage"]["anchor_span"] == "subsections"
    assert old.metrics["precision@3"] > ref["precision@3"]  # a parent's anchor also covered its subsections


def test_qrels_round_trip_with_grades(tmp_path, golden):
    from ragtune import GoldenSet
    from ragtune.golden import GoldenItem

    graded = GoldenSet([*golden.items, GoldenItem("g1", "graded", {"shipping.md": 2.0, "billing/invoices.md": 0.5})])
    write_qrels(graded, tmp_path / "g.qrels")
    back = read_qrels(tmp_path / "g.qrels")
    assert {i.id: dict(i.relevant) for i in back} == {i.id: dict(i.relevant) for i in graded if i.answerable}
    assert to_ranx_qrels(back)["g1"] == {"shipping.md": 2, "billing/invoices.md": 0}
    (tmp_path / "bad.qrels").write_text("q1 0 a.md\n")
    with pytest.raises(GoldenSetError, match="bad.qrels:1: expected 4 columns"):
        read_qrels(tmp_path / "bad.qrels")


def test_run_file_problems_are_reported(tmp_path, corpus, golden):
    (tmp_path / "r.trec").write_text("q1 Q0 nowhere.md 1 1.0 x\nzz Q0 shipping.md 1 1.0 x\n")
    with pytest.raises(ConfigError, match="no hit in the run matches"):
        evaluate_run_file(tmp_path / "r.trec", golden, corpus=corpus)
    (tmp_path / "r.trec").write_text("q1 Q0 nowhere.md 1 2.0 x\nq1 Q0 billing/refunds.md 2 1.0 x\nzz Q0 a 1 1 x\n")
    got = evaluate_run_file(tmp_path / "r.trec", golden, corpus=corpus, ks=(1, 2))
    q1 = next(q for q in got.questions if q.id == "q1")
    assert q1.first_hit_rank == 2
    assert got.matching["questions_not_in_golden"] == ["zz"]
    assert got.matching["unmatched"][0]["hit"] == "nowhere.md"
    (tmp_path / "r.jsonl").write_text('{"id": "q1"}\n')
    with pytest.raises(ConfigError, match="needs an \"id\" and a \"hits\" list"):
        read_rankings(tmp_path / "r.jsonl")


def test_cli_export_then_eval_run(tmp_path, corpus, golden, native, capsys):
    golden.to_jsonl(tmp_path / "g.jsonl")
    (tmp_path / "eval.json").write_text(native.to_json())
    out = tmp_path / "exp" / "docs"
    assert main(["export", "--format", "trec", "--golden", str(tmp_path / "g.jsonl"), "--result",
                 str(tmp_path / "eval.json"), "--ids", "span", "--out", str(out)]) == 0
    assert "docs.qrels (qrels" in capsys.readouterr().out
    assert main(["eval", "--run", str(out) + ".run", "--golden", str(tmp_path / "g.jsonl"), "--corpus",
                 str(corpus.root), "-k", "1,3,5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert retrieval(data["metrics"]) == pytest.approx(retrieval(native.metrics))
    assert main(["export", "--format", "beir", "--golden", str(tmp_path / "g.jsonl"), "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "qrels" / "test.tsv").read_text().startswith("query-id\tcorpus-id\tscore\nq1\t")
    assert main(["export", "--format", "ranx", "--golden", str(tmp_path / "g.jsonl"), "--out", str(out)]) == 0
    assert json.loads((tmp_path / "exp" / "docs.qrels.json").read_text())["q1"] == {"billing/refunds.md#refunds": 1}
    capsys.readouterr()
    assert main(["export", "--format", "beir", "--result", str(tmp_path / "eval.json"), "--out", str(out)]) == 2
    assert "BEIR has no run format" in capsys.readouterr().err
    assert main(["eval", "--run", str(out) + ".run", "--golden", str(tmp_path / "g.jsonl"), "--rerank", "x"]) == 2
    assert "configure a ragtune pipeline" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["eval", "--endpoint", "http://127.0.0.1:9/s", "--golden", str(tmp_path / "g.jsonl"), "--header", "X-Key"])
    assert exited.value.code == 2
    assert "argument --header: expected NAME=ENVVAR" in capsys.readouterr().err


def _run_files(tmp_path, native):
    """Every kind of file `eval --run` reads, made from one native evaluation."""
    out = {}
    write_trec_run(native, tmp_path / "anchors.trec")
    write_trec_run(native, tmp_path / "spans.trec", ids="span")
    out["trec-anchor"], out["trec-span"] = tmp_path / "anchors.trec", tmp_path / "spans.trec"
    for ids in ("anchor", "span"):
        path = tmp_path / f"ranx-{ids}.json"
        path.write_text(json.dumps(to_ranx_run(native, ids=ids)))
        out[f"ranx-{ids}"] = path
    hits = {q.id: [{"doc_id": h["doc_id"], "start": h["start"], "end": h["end"], "score": h["score"]}
                   for h in q.to_dict()["retrieved"]] for q in native.questions}
    (tmp_path / "hits.jsonl").write_text("".join(json.dumps({"id": q, "hits": h}) + "\n" for q, h in hits.items()))
    (tmp_path / "hits.json").write_text(json.dumps({q: [f"{x['doc_id']}@{x['start']}-{x['end']}" for x in h]
                                                    for q, h in hits.items()}))
    out["jsonl"], out["json"] = tmp_path / "hits.jsonl", tmp_path / "hits.json"
    bare = {"questions": [{"id": q.id, "retrieved": q.to_dict()["retrieved"]} for q in native.questions]}
    (tmp_path / "retrieved.json").write_text(json.dumps(bare))
    out["eval-retrieved"] = tmp_path / "retrieved.json"
    (tmp_path / "eval.json").write_text(native.to_json())
    out["eval"] = tmp_path / "eval.json"
    return out


def test_every_file_eval_run_reads_compare_and_the_gate_read_too(tmp_path, corpus, golden, native, capsys):
    golden.to_jsonl(tmp_path / "g.jsonl")
    common = ["--golden", str(tmp_path / "g.jsonl"), "--corpus", str(corpus.root)]
    (tmp_path / "native.json").write_text(native.to_json())
    for kind, path in _run_files(tmp_path, native).items():
        assert main(["eval", "--run", str(path), *common, "-k", "1,3,5", "--json"]) == 0, kind
        scored = json.loads(capsys.readouterr().out)["metrics"]
        # compare reads it (ragtune's own `export --ids span` output was refused before)
        assert main(["compare", str(tmp_path / "native.json"), str(path), *common, "--metric", "recall@3,precision@3",
                     "--samples", "200", "--json"]) == 0, kind
        report = json.loads(capsys.readouterr().out)
        other = report["systems"][1]  # named by the TREC tag, else the file's stem
        assert other == ("ragtune" if path.suffix == ".trec" else path.stem), kind
        rows = {(r["system"], r["metric"]): r for r in report["rows"]}
        for m in ("recall@3", "precision@3"):
            assert rows[(other, m)]["mean"] == pytest.approx(scored[m]), (kind, m)
            assert scored[m] == pytest.approx(native.metrics[m]), (kind, m)
        # and the gate takes it as the baseline
        assert main(["eval", "--run", str(path), *common, "-k", "1,3,5", "--baseline", str(path), "--metric",
                     "recall@3"]) == 0, kind
        assert "regression gate PASSED" in capsys.readouterr().out, kind
