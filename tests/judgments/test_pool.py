"""Pools: the unjudged sections in the union of several runs' top k."""

import json
import re

import pytest

from ragtune import ConfigError, load_corpus
from ragtune.cli import main
from ragtune.judgments.pool import pool_runs
from ragtune.evaluate.run import read_rankings
from tests.helpers import write_jsonl

B = "guide/billing.md"
GOLDEN = [{"id": "q1", "q": "refunds?", "relevant": [f"{B}#refunds"], "judged": {f"{B}#invoices": 0}},
          {"id": "q2", "q": "accounts?", "relevant": ["faq.md"]}]


def two_runs(tmp_path):
    a = tmp_path / "a.json"  # an outside retriever's hit lists
    a.write_text(json.dumps({"q1": [f"{B}#refunds", f"{B}#partial-refunds", "notes.txt", f"{B}#invoices-1"],
                             "q2": ["faq.md#accounts", f"{B}#billing"]}))
    b = tmp_path / "b.trec"  # a TREC run
    b.write_text(f"q1 Q0 {B}#invoices 1 9.0 b\nq1 Q0 faq.md#accounts 2 8.0 b\nq1 Q0 {B}#billing 3 7.0 b\n"
                 f"q1 Q0 notes.txt 4 6.0 b\nq2 Q0 notes.txt 1 3.0 b\n")
    return a, b


def test_a_pool_of_two_runs_lists_exactly_the_unjudged_union(md_corpus, tmp_path):
    a, b = two_runs(tmp_path)
    golden = write_jsonl(tmp_path / "g.jsonl", GOLDEN)
    pool = pool_runs([a, b], golden, md_corpus, depth=3, out=tmp_path / "pool.jsonl")
    assert pool.runs == ("a", "b")
    q1, q2 = pool.questions
    # q1, top 3: a = refunds (relevant), partial-refunds (inside #refunds: relevant), notes.txt;
    #            b = invoices (judged not relevant), faq.md#accounts, billing (its own text ends where #refunds starts)
    assert {h.anchor: h.found_by for h in q1.holes} == {
        "notes.txt": (("a", 3),), "faq.md#accounts": (("b", 2),), f"{B}#billing": (("b", 3),)}
    assert [h.anchor for h in q1.holes] == ["faq.md#accounts", f"{B}#billing", "notes.txt"]  # best rank, then name
    assert (q1.pooled, q1.judged) == (6, 3)
    # q2: faq.md is relevant as a whole document, so its section is judged
    assert {h.anchor: h.found_by for h in q2.holes} == {f"{B}#billing": (("a", 2),), "notes.txt": (("b", 1),)}
    rows = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["q1", "q2"] and rows[0]["depth"] == 3
    assert rows[0]["holes"][0] == {"anchor": "faq.md#accounts", "doc_id": "faq.md", "title": "Frequently asked > Accounts",
                                   "found_by": [{"run": "b", "rank": 2}]}
    text = pool.summary()
    assert text.startswith("pool depth 3 over 2 run(s) (a, b): 2 questions, 9 sections pooled, 5 holes")
    assert "q1  pooled   6  judged   3  holes   3" in text


def test_a_judged_hole_leaves_the_pool_and_a_found_hole_is_found_by_both(md_corpus, tmp_path):
    a, b = two_runs(tmp_path)
    rows = [dict(GOLDEN[0], judged={f"{B}#invoices": 0, "notes.txt": 0}), GOLDEN[1]]
    pool = pool_runs([a, b], write_jsonl(tmp_path / "g.jsonl", rows), load_corpus(md_corpus), depth=4)
    holes = {h.anchor: h.found_by for h in pool.questions[0].holes}
    assert "notes.txt" not in holes and holes["faq.md#accounts"] == (("b", 2),)


def test_sweep_folders_and_eval_results_are_pooled(md_corpus, tmp_path):
    sweep = tmp_path / "sweep"
    (sweep / "runs").mkdir(parents=True)
    result = {"questions": [{"id": "q1", "retrieved": [{"anchor": "notes.txt"}]}, {"id": "q2", "retrieved": []}]}
    (sweep / "runs" / "k1.json").write_text(json.dumps({"key": "k1", "label": "size=64", "spec": {},
                                                        "result": result}))
    assert read_rankings(sweep / "runs" / "k1.json")["q1"][0].ident == "notes.txt"
    (tmp_path / "eval.json").write_text(json.dumps({**result, "metrics": {}}))
    pool = pool_runs([sweep, tmp_path / "eval.json"], write_jsonl(tmp_path / "g.jsonl", GOLDEN), md_corpus)
    assert pool.runs == ("size=64", "eval")
    assert pool.questions[0].holes[0].found_by == (("size=64", 1), ("eval", 1))


def test_bad_sources_say_what_a_pool_takes(md_corpus, tmp_path):
    golden = write_jsonl(tmp_path / "g.jsonl", GOLDEN)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="must be a sweep folder with runs/<key>.json"):
        pool_runs([tmp_path / "empty"], golden, md_corpus)
    with pytest.raises(FileNotFoundError, match="no such run file or sweep folder"):
        pool_runs([tmp_path / "nope.trec"], golden, md_corpus)
    with pytest.raises(ConfigError, match="pool depth must be a whole number >= 1"):
        pool_runs([tmp_path / "nope.trec"], golden, md_corpus, depth=0)


def test_the_command_prints_depth_and_holes_and_writes_jsonl(md_corpus, tmp_path, capsys):
    a, b = two_runs(tmp_path)
    golden = write_jsonl(tmp_path / "g.jsonl", GOLDEN)
    out = tmp_path / "pool.jsonl"
    assert main(["pool", str(a), str(b), "--golden", str(golden), "--corpus", str(md_corpus), "--depth", "3",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "pool depth 3 over 2 run(s)" in text and f"wrote {out}" in text
    assert len(out.read_text().splitlines()) == 2


def test_pool_sample_writes_each_holes_inclusion_probability_and_draws_the_same_again(md_corpus, tmp_path, capsys):
    a, b = two_runs(tmp_path)
    golden = write_jsonl(tmp_path / "g.jsonl", GOLDEN)
    out = tmp_path / "pool.jsonl"
    args = ["pool", str(a), str(b), "--golden", str(golden), "--corpus", str(md_corpus), "--depth", "3",
            "--sample", "3", "--seed", "5", "--out", str(out)]
    assert main(args) == 0
    assert "sampled 3 of 5 holes (seed 5; best rank: 1: 1 of 1, 2-3: 2 of 4)" in capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    holes = [h for r in rows for h in r["holes"]]
    assert rows[0]["sample"]["n"] == 3 and rows[0]["sample"]["seed"] == 5
    assert sum(h["pi"] for h in holes) == pytest.approx(3.0) and sum(h["sampled"] for h in holes) == 3
    assert {(h["stratum"], h["pi"]) for h in holes} == {("1", 1.0), ("2-3", 0.5)}
    first = out.read_text()
    assert main(args) == 0 and out.read_text() == first  # the same seed draws the same holes
    from ragtune.judgments.sample import read_pool_sample

    runs = {(r["id"], h["anchor"]): len(h["found_by"]) for r in rows for h in r["holes"]}
    assert {(h.question, h.anchor): h.runs for h in read_pool_sample(out).holes} == runs  # what the model reads
    from ragtune.judgments.pool import read_pool_file

    for (_, anchors), row in zip(read_pool_file(out), rows):  # the drawn holes come first
        drawn = [h["anchor"] for h in row["holes"] if h["sampled"]]
        assert anchors[:len(drawn)] == drawn


def test_eval_shows_the_estimate_and_its_interval_beside_the_judged_only_figure(md_corpus, tmp_path, capsys):
    a, b = two_runs(tmp_path)
    golden = write_jsonl(tmp_path / "g.jsonl", GOLDEN)
    out = tmp_path / "pool.jsonl"
    pool = pool_runs([a, b], golden, md_corpus, depth=3, out=out, sample=3, seed=5)
    rows = [dict(r) for r in GOLDEN]
    for row in rows:  # judge the drawn holes: the first relevant, the others not
        drawn = [h.anchor for h in pool.sample.holes if h.sampled and h.question == row["id"]]
        row["relevant"] = [*row["relevant"], *drawn[:1]]
        row["judged"] = {**row.get("judged", {}), **{d: 0 for d in drawn[1:]}}
    judged = write_jsonl(tmp_path / "judged.jsonl", rows)
    args = ["eval", "--run", str(a), "--golden", str(judged), "--corpus", str(md_corpus), "-k", "3",
            "--pool-sample", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "estimated from the pool sample (3 of 3 drawn holes judged, 2 questions; 95% intervals):" in text
    assert re.search(r"recall@3 +judged-only 0\.750 +estimate 0\.\d+ \[0\.\d+, 0\.\d+\] +worst\.\.best 0\.750\.\.", text)
    assert main([*args, "--json"]) == 0
    est = json.loads(capsys.readouterr().out)["estimate"]["metrics"]
    low, high = est["recall@3"]["ci95"]
    assert low <= est["recall@3"]["estimate"] <= high and est["precision@3"]["judged_only"] is not None
    assert est["recall@3"]["worst"] is not None and est["recall@3"]["best"] >= est["recall@3"]["worst"]
