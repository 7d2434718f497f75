import pytest

from ragtune import ConfigError, chunk_corpus, load_corpus, make_chunker


def test_section_chunker_spans_anchors_and_paths(md_corpus):
    corpus = load_corpus(md_corpus)
    doc = corpus["guide/billing.md"]
    chunks = make_chunker("section").chunk(doc)
    for c in chunks:
        assert c.text == doc.text[c.start:c.end]
        assert c.text == c.text.strip()
    assert chunks[0].text == "Intro text before any heading."
    assert chunks[0].anchors == () and chunks[0].anchor == "guide/billing.md"
    refunds = next(c for c in chunks if c.text.startswith("## Refunds"))
    assert refunds.anchors == ("guide/billing.md#refunds",)
    assert refunds.heading_path == ("Billing", "Refunds")
    assert "Partial" not in refunds.text
    code = next(c for c in chunks if "Not a heading" in c.text)
    assert code.anchor == "guide/billing.md#invoices"
    assert chunks[0].metadata["owner"] == "payments"


def test_prefix_changes_embed_text_only(md_corpus):
    corpus = load_corpus(md_corpus)
    doc = corpus["guide/billing.md"]
    plain = make_chunker("section").chunk(doc)
    pref = make_chunker("section", prefix=True).chunk(doc)
    p = next(c for c in pref if c.text.startswith("### Partial"))
    assert p.embed_text.startswith("Billing guide > Billing > Refunds > Partial refunds\n\n### Partial")
    assert [(c.start, c.end, c.text) for c in plain] == [(c.start, c.end, c.text) for c in pref]


def test_document_chunker_anchors_every_section(md_corpus):
    corpus = load_corpus(md_corpus)
    chunks = chunk_corpus(corpus, make_chunker("document"))
    assert [c.doc_id for c in chunks] == ["faq.md", "guide/billing.md", "notes.txt"]
    assert chunks[0].anchors == ("faq.md#frequently-asked", "faq.md#accounts")


def test_chunk_ids_are_stable_and_unique(md_corpus):
    corpus = load_corpus(md_corpus)
    a = chunk_corpus(corpus, make_chunker("section"))
    b = chunk_corpus(load_corpus(md_corpus), make_chunker("section"))
    assert [c.id for c in a] == [c.id for c in b]
    assert len({c.id for c in a}) == len(a)


def test_unknown_chunker_and_option():
    with pytest.raises(ConfigError, match="unknown chunker 'fixd'; choose one of: fixed, recursive, markdown, semantic, small_to_big, section, document"):
        make_chunker("fixd")
    with pytest.raises(ConfigError, match="unknown option\\(s\\) .size.; valid options: prefix, max_tokens, tokenizer"):
        make_chunker("section", size=3)
