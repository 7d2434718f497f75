import json

import pytest

from ragtune import CorpusError, CorpusNotFoundError, RagtuneError, UnknownAnchorError, load_corpus
from tests.helpers import write_files, write_jsonl


def test_markdown_folder(md_corpus):
    corpus = load_corpus(md_corpus)
    assert corpus.kind == "markdown"
    assert [d.id for d in corpus] == ["faq.md", "guide/billing.md", "notes.txt"]
    billing = corpus["guide/billing.md"]
    assert billing.title == "Billing guide"  # front matter wins over the H1
    assert billing.metadata == {"title": "Billing guide", "owner": "payments"}
    assert not billing.text.startswith("---")
    assert corpus["faq.md"].title == "Frequently asked"  # setext H1
    assert corpus["notes.txt"].title == "notes"
    anchors = corpus.anchors()
    for a in ["guide/billing.md#refunds", "guide/billing.md#partial-refunds", "guide/billing.md#invoices",
              "guide/billing.md#invoices-1", "faq.md#accounts"]:
        assert a in anchors
    assert "guide/billing.md#not-a-heading" not in anchors


def test_resolve_section_includes_subsections(md_corpus):
    corpus = load_corpus(md_corpus)
    doc = corpus["guide/billing.md"]
    span = corpus.resolve("guide/billing.md#refunds")
    assert "Partial refunds" in doc.text[span.start : span.end]
    assert "Invoices" not in doc.text[span.start : span.end]
    whole = corpus.resolve("guide/billing.md")
    assert (whole.start, whole.end) == (0, len(doc.text))


def test_unknown_anchor_suggests_closest(md_corpus):
    corpus = load_corpus(md_corpus)
    with pytest.raises(UnknownAnchorError) as e:
        corpus.resolve("guide/billing.md#refund")
    assert "guide/billing.md#refunds" in str(e.value)
    assert isinstance(e.value, KeyError) and isinstance(e.value, RagtuneError)


def test_title_falls_back_to_file_name(tmp_path):
    corpus = load_corpus(write_files(tmp_path, {"no-title.md": "## Only h2\ntext\n"}))
    assert corpus["no-title.md"].title == "no-title"


def test_invalid_utf8_names_file_and_line(tmp_path):
    write_files(tmp_path, {"ok.md": "# fine\n", "bad.md": b"# title\nline two \xff\n"})
    with pytest.raises(CorpusError, match=r"bad\.md:2: not valid UTF-8"):
        load_corpus(tmp_path)


def test_empty_folder_and_missing_path(tmp_path):
    with pytest.raises(CorpusError, match=r"no file of a format ragtune reads found \(.*\.md.*\.txt"):
        load_corpus(tmp_path)
    with pytest.raises(CorpusNotFoundError):
        load_corpus(tmp_path / "nope")


def test_bad_front_matter_is_reported(tmp_path):
    write_files(tmp_path, {"x.md": "---\ntitle: [unclosed\n---\n# X\n"})
    with pytest.raises(CorpusError, match=r"x\.md: invalid YAML front matter"):
        load_corpus(tmp_path)


def test_beir_corpus(tmp_path):
    write_jsonl(tmp_path / "corpus.jsonl", [
        {"_id": "d1", "title": "T1", "text": "alpha", "metadata": {"year": 2020}},
        {"_id": 2, "title": "", "text": "beta"},
    ])
    corpus = load_corpus(tmp_path)
    assert corpus.kind == "beir"
    assert [d.id for d in corpus] == ["d1", "2"]
    assert corpus["d1"].metadata == {"year": 2020}


@pytest.mark.parametrize("line, message", [
    ("{not json", r"corpus\.jsonl:2: malformed JSON"),
    (json.dumps({"title": "x", "text": "y"}), r"corpus\.jsonl:2: missing or empty '_id'"),
    (json.dumps({"_id": "a", "text": "dup"}), r"corpus\.jsonl:2: duplicate _id 'a'"),
    (json.dumps({"_id": "b", "text": 3}), r"corpus\.jsonl:2: 'text' must be a string"),
])
def test_beir_errors_name_file_and_line(tmp_path, line, message):
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "a", "text": "ok"}) + "\n" + line + "\n")
    with pytest.raises(CorpusError, match=message):
        load_corpus(tmp_path)


def test_empty_beir_corpus(tmp_path):
    (tmp_path / "corpus.jsonl").write_text("\n")
    with pytest.raises(CorpusError, match="empty corpus"):
        load_corpus(tmp_path)


def test_doc_id_containing_hash_resolves_whole(tmp_path):
    write_jsonl(tmp_path / "corpus.jsonl", [{"_id": "Oil_crisis#0", "text": "x"}])
    corpus = load_corpus(tmp_path)
    assert corpus.resolve("Oil_crisis#0").doc_id == "Oil_crisis#0"
