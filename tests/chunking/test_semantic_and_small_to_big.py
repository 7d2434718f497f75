import numpy as np
import pytest

from ragtune import ConfigError, Document, Pipeline, load_corpus, load_golden, make_chunker, run_eval
from ragtune.chunking import SemanticChunker, SemanticChunkerConfig
from ragtune.corpus.markdown import parse_markdown
from tests.helpers import write_files, write_jsonl


class TopicEmbedder:
    """Sentences about cats point one way, about money another."""

    model_id = "topic"
    dim = 2
    max_tokens = 64
    cache_key = "topic:1"

    def embed(self, texts):
        v = np.array([[1.0, 0.05] if ("cat" in t or "kitten" in t) else [0.05, 1.0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    embed_queries = embed


def doc(text):
    p = parse_markdown(text, doc_id="d.md")
    return Document(id="d.md", title="D", text=p.body, sections=p.sections)


def test_semantic_cuts_at_topic_shift():
    text = "The cat sleeps. A kitten plays. The cat eats. Banks lend money. Interest rates rise. Loans cost more."
    ch = SemanticChunker(SemanticChunkerConfig(size=100, threshold=0.5), embedder=TopicEmbedder())
    chunks = ch.chunk(doc(text))
    assert [c.text for c in chunks] == ["The cat sleeps. A kitten plays. The cat eats.",
                                        "Banks lend money. Interest rates rise. Loans cost more."]


def test_semantic_respects_size_and_percentile_mode():
    text = " ".join(f"The cat number {i} naps." for i in range(30))
    ch = SemanticChunker(SemanticChunkerConfig(size=20), embedder=TopicEmbedder())
    chunks = ch.chunk(doc(text))
    assert len(chunks) > 1 and all(c.tokens <= 20 for c in chunks)
    d = doc(text)
    assert all(c.text == d.text[c.start:c.end] for c in chunks)


def test_semantic_config_validation():
    with pytest.raises(ConfigError, match="do not overlap"):
        make_chunker("semantic", overlap=8)
    with pytest.raises(ConfigError, match="threshold=2 must be <= 1"):
        make_chunker("semantic", threshold=2)


def test_semantic_with_real_embedder_offline():
    pytest.importorskip("onnxruntime")
    text = ("Cats are small carnivorous mammals kept as pets. Kittens are young cats that play a lot. "
            "Domestic cats groom themselves often.\n\n"
            "The central bank raised interest rates. Mortgage payments became more expensive. "
            "Inflation slowed after the rate increase.")
    chunks = make_chunker("semantic", size=200, threshold=0.3).chunk(doc(text))
    assert len(chunks) == 2 and chunks[1].text.startswith("The central bank")


def test_small_to_big_children_inside_parents():
    text = "# A\n\n" + " ".join(f"alpha{i}" for i in range(300)) + "\n\n## B\n\n" + " ".join(f"beta{i}" for i in range(50))
    ch = make_chunker("small_to_big", size=40, parent_size=200)
    parents, children = ch.chunk_with_parents(doc(text))
    by_id = {p.id: p for p in parents}
    assert len(children) > len(parents) > 1
    for c in children:
        p = by_id[c.parent_id]
        assert p.start <= c.start and c.end <= p.end and c.tokens <= 40
    assert ch.chunk(doc(text)) == children
    with pytest.raises(ConfigError, match="parent_size=40 must be larger than the child size=40"):
        make_chunker("small_to_big", size=40, parent_size=40)


def test_small_to_big_returns_deduplicated_parents(tmp_path):
    body = " ".join(["filler words here"] * 60)
    files = {"a.md": f"# Alpha\n\nzebra zebra first.\n\n{body}\n\nzebra again later.\n",
             "b.md": f"# Beta\n\nzebra once.\n\n{body}\n"}
    corpus = load_corpus(write_files(tmp_path / "c", files))
    p = Pipeline.build(corpus, chunker="small_to_big", chunker_options={"size": 20, "parent_size": 400})
    ranking = p.retriever.search("zebra", k=5)
    ids = [h.chunk.id for h in ranking.hits]
    assert len(ids) == len(set(ids)) == 2  # two parents, though three children matched
    assert all(h.chunk.parent_id is None for h in ranking.hits)
    assert ranking.hits[0].chunk.doc_id == "a.md"
    assert "parents" in ranking.timings and "bm25" in ranking.timings
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [{"id": "q", "q": "zebra", "relevant": ["b.md"]}]))
    result = run_eval(p, golden)
    assert result.questions[0].first_hit_rank == 2
    assert result.config["parents"] == len(p.parents)
