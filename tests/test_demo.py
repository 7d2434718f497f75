"""The bundled demo: ragtune's own docs and the golden set over them stay in step."""

from pathlib import Path

from ragtune import check_golden, load_corpus, load_golden

ROOT = Path(__file__).resolve().parents[1]


def test_demo_golden_set_matches_the_docs():
    corpus = load_corpus(ROOT / "docs")
    golden = load_golden(ROOT / "docs" / "golden.jsonl")
    report = check_golden(golden, corpus)
    assert report.ok, [p.message for p in report.problems]
    assert len(golden) >= 40 and len(golden.unanswerable) >= 5
    assert {"paraphrase", "identifier", "keyword", "multi-hop", "unanswerable"} <= set(golden.tag_counts())
    assert len(corpus) >= 15


def test_fastapi_golden_set_is_well_formed():
    golden = load_golden(ROOT / "bench" / "golden" / "fastapi.jsonl")
    assert len(golden) >= 30 and len({i.id for i in golden}) == len(golden)
    docs = ROOT.parent / "shared" / "datasets" / "fastapi_docs" / "md" / "docs" / "en" / "docs"
    if docs.exists():  # the anchors resolve against the real docs when they are here
        assert check_golden(golden, load_corpus(docs)).ok
