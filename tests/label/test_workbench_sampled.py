"""The workbench serves a pool sample's drawn holes first."""

from ragtune import load_corpus
from ragtune.golden import GoldenItem
from ragtune.judgments.pool import pool_runs, read_pool_file
from ragtune.judgments.sample import read_sampled
from ragtune.label.candidates import Candidates
from tests.helpers import write_jsonl
from tests.judgments.test_pool import GOLDEN, two_runs


def test_the_drawn_holes_come_first_then_the_rest_in_corpus_order(md_corpus, tmp_path):
    a, b = two_runs(tmp_path)
    out = tmp_path / "pool.jsonl"
    pool = pool_runs([a, b], write_jsonl(tmp_path / "g.jsonl", GOLDEN), md_corpus, depth=3, out=out, sample=3, seed=5)
    corpus = load_corpus(md_corpus)
    sampled = read_sampled(out)
    assert sampled == pool.sample.sampled() and sum(len(v) for v in sampled.values()) == 3
    plain = Candidates(corpus, systems=["bm25"], pool=dict(read_pool_file(out)))
    served = Candidates(corpus, systems=["bm25"], pool=dict(read_pool_file(out)), sampled=sampled)
    item = GoldenItem("q1", "refunds?", relevant={"guide/billing.md#refunds": 2.0})
    drawn = sampled["q1"]
    shown = [c.anchor for c in served.for_question(item)]
    assert shown[:len(drawn)] == drawn  # drawn first, best rank first
    rest = [c for c in plain.for_question(item) if c.anchor not in drawn]
    assert shown[len(drawn):] == [c.anchor for c in rest]  # then corpus order, as without a sample
    assert read_sampled(tmp_path / "g.jsonl") == {}  # a file with no sample: nothing served first
