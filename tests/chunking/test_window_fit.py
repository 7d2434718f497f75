"""A default that fits the embedder: sections cut at block boundaries to the window (prefix and special tokens
included), searched as pieces and returned as whole sections; and no window warning on the default's output."""

from __future__ import annotations

from pathlib import Path

import pytest

import ragtune as rt
from ragtune.chunking import chunk_documents
from ragtune.chunking.tokens import get_tokenizer
from ragtune.embed.window import window_overflow
from ragtune.errors import ConfigError
from ragtune.pipeline.build import warn_window
from ragtune.registry import CHUNKERS

ROOT = Path(__file__).resolve().parents[2]
PARAS = "\n\n".join(f"Paragraph {i} explains refunds, invoices and the billing cycle in some detail. " * 3
                    for i in range(12))
CODE = "```python\n" + "\n".join(f"charge(customer_{i}, amount={i})" for i in range(8)) + "\n```"
TEXT = f"# Billing\n\nShort intro.\n\n## Refunds\n\n{PARAS}\n\n{CODE}\n\nClosing words.\n\n## Tiny\n\nOne line.\n"


def _load() -> rt.Document:
    from ragtune.corpus.markdown import parse_markdown

    parsed = parse_markdown(TEXT, doc_id="billing.md")
    return rt.Document(id="billing.md", title="Billing", text=parsed.body, sections=parsed.sections,
                       format="markdown")


def _tokens(text: str) -> int:
    return len(get_tokenizer("minilm").spans(text)) + 2  # [CLS] and [SEP]


def test_long_sections_are_cut_at_block_boundaries_to_fit():
    doc = _load()
    chunker = CHUNKERS.build("section", options={"prefix": True, "max_tokens": 128, "tokenizer": "minilm"})
    chunks = chunker.chunk(doc)
    refunds = [c for c in chunks if c.heading_path[-1] == "Refunds"]
    assert len(refunds) > 3  # the long section became several pieces
    assert all(_tokens(c.embed_text) <= 128 for c in chunks)  # every piece, prefix included, fits
    assert all(c.embed_text.startswith("Billing > Refunds\n\n") for c in refunds)
    assert any(CODE in c.text for c in refunds)  # the code block fits: kept whole in one piece
    cut_inside = [c for c in refunds if c.text.count("Paragraph") and not c.text.rstrip().endswith(".")]
    assert not cut_inside  # paragraphs are never cut in the middle when each fits alone
    spans = [(c.start, c.end) for c in refunds]
    assert spans == sorted(spans) and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # in order, no overlap
    assert [c for c in chunks if c.heading_path[-1] == "Tiny"][0].text == "## Tiny\n\nOne line."
    whole = CHUNKERS.build("section", options={"prefix": True, "max_tokens": 0}).chunk(doc)
    assert len(whole) == len(doc.sections) and len(chunks) > len(whole)


def test_a_block_longer_than_the_window_is_cut_in_token_windows():
    from ragtune.corpus.markdown import parse_markdown

    text = "# T\n\n" + " ".join(f"word{i}" for i in range(600)) + "\n"
    parsed = parse_markdown(text, doc_id="t.md")
    doc = rt.Document(id="t.md", title="T", text=parsed.body, sections=parsed.sections)
    chunks = CHUNKERS.build("section", options={"max_tokens": 64, "tokenizer": "minilm"}).chunk(doc)
    assert len(chunks) > 5 and all(_tokens(c.embed_text) <= 64 for c in chunks)
    assert "".join(c.text for c in chunks).replace(" ", "") == doc.text[doc.sections[0].start:].strip().replace(
        " ", "").replace("\n", "")


def test_small_to_big_with_section_parents_returns_whole_sections():
    doc = _load()
    chunker = CHUNKERS.build("small_to_big", options={"parent": "section", "size": 128, "prefix": True,
                                                      "tokenizer": "minilm"})
    parents, children = chunker.chunk_with_parents(doc)
    assert [p.text for p in parents] == [c.text for c in CHUNKERS.build("section", options={"prefix": True})
                                         .chunk(doc)]
    by_id = {p.id: p for p in parents}
    for c in children:
        p = by_id[c.parent_id]
        assert p.start <= c.start and c.end <= p.end
        assert _tokens(c.embed_text) <= 128
    assert len(children) > len(parents)
    with pytest.raises(ConfigError, match="overlap does not apply to parent=section"):
        CHUNKERS.build("small_to_big", options={"parent": "section", "overlap": 8})


def test_the_default_resolves_to_window_sized_pieces_under_an_embedder():
    cfg = rt.PipelineConfig.from_flags({})
    md = cfg.resolved("markdown")
    assert md.chunker == "small_to_big" and dict(md.chunker_options) == {"parent": "section", "size": 256}
    assert md.label == "small_to_big-256tok:minilm-parent=section-prefix/hybrid"
    assert md.chunker_config().tokenizer == "minilm"
    assert cfg.resolved("documents").chunker == "small_to_big"
    assert rt.PipelineConfig.from_flags({"retriever": "bm25"}).resolved("markdown").chunker == "section"
    assert cfg.resolved("beir").chunker == "document"
    explicit = rt.PipelineConfig.from_flags({"chunker": "section"}).resolved("markdown")
    assert explicit.chunker == "section" and explicit.chunker_config().max_tokens is None


def test_the_default_does_not_warn_about_itself(capsys, monkeypatch):
    """On ragtune's own docs, where whole sections overflow MiniLM's window for about half the chunks."""
    from ragtune.pipeline import build as build_mod

    monkeypatch.setattr(build_mod, "_WARNED_WINDOW", set())  # said once per process: another test may have said it
    corpus = rt.load_corpus(ROOT / "docs")
    emb = rt.get_embedder("minilm")
    for flags, cut in (({}, False), ({"chunker": "section"}, True)):
        cfg = rt.PipelineConfig.from_flags(flags).resolved(corpus.kind)
        chunks, _ = chunk_documents(corpus.documents, CHUNKERS.build(cfg.chunker, options=cfg.chunker_config()))
        found = window_overflow(emb, [c.embed_text for c in chunks], sample=None)
        assert bool(found.over) is cut, (cfg.label, found)
        warn_window(cfg, chunks, emb)
        assert ("longer than the embedder's 256-token window" in capsys.readouterr().err) is cut


def test_whole_documents_get_a_note_with_the_measurement_not_a_warning(tmp_path, capsys, monkeypatch):
    from ragtune.pipeline import build as build_mod

    monkeypatch.setattr(build_mod, "_WARNED_WINDOW", set())
    long_doc = " ".join(f"abstract{i} of a study" for i in range(200))
    corpus = rt.Corpus([rt.Document(id="d1", title="A study", text=long_doc), rt.Document(id="d2", title="B", text="x")],
                       kind="beir")
    cfg = rt.PipelineConfig.from_flags({}).resolved(corpus.kind)
    assert cfg.chunker == "document"
    chunks, _ = chunk_documents(corpus.documents, CHUNKERS.build(cfg.chunker, options=cfg.chunker_config()))
    warn_window(cfg, chunks, rt.get_embedder("minilm"))
    err = capsys.readouterr().err
    assert err.startswith("note: document-prefix/hybrid: 1 of 2 documents (50%) are longer than the embedder's "
                          "256-token window") and "scored the same on SciFact" in err and "warning" not in err
