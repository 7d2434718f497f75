import pytest

from ragtune import ConfigError, chunk_corpus, load_corpus, make_chunker
from ragtune.retrieve import BM25Config, BM25Retriever
from ragtune.retrieve.filters import ChunkFilter, chunk_fields, parse_filter
from tests.helpers import write_files


@pytest.mark.parametrize("expr, meta, expected", [
    ("dir=tutorial", {"dir": "tutorial"}, True),
    ("dir=tutorial", {"dir": "advanced"}, False),
    ("dir!=tutorial", {"dir": "advanced"}, True),
    ("lang in [en, de]", {"lang": "de"}, True),
    ("lang in [en, 'de']", {"lang": "fr"}, False),
    ("year>=2020", {"year": 2021}, True),
    ("year>=2020", {"year": 2019}, False),
    ("year<2020 or draft=true", {"year": 2021, "draft": True}, True),
    ("year>2000 and year<=2010", {"year": 2010}, True),
    ("not draft=true", {"draft": False}, True),
    ("(a=1 or a=2) and b=x", {"a": 2, "b": "x"}, True),
    ("(a=1 or a=2) and b=x", {"a": 3, "b": "x"}, False),
    ("tags=faq", {"tags": ["guide", "faq"]}, True),
    ('title="Hello world"', {"title": "Hello world"}, True),
    ("year>=2020", {"year": "2024"}, True),
    ("missing=1", {}, False),
])
def test_expressions(expr, meta, expected):
    assert parse_filter(expr).matches(meta) is expected


@pytest.mark.parametrize("expr, message", [
    ("dir", "expected an operator"),
    ("year>=soon", ">= needs a number"),
    ("a=1 and", "unexpected end"),
    ("(a=1", "missing '\\)'|unexpected end"),
    ("lang in en", "'in' takes a list"),
])
def test_syntax_errors_are_explained(expr, message):
    with pytest.raises(ConfigError, match=message):
        parse_filter(expr)


def corpus_with_metadata(tmp_path):
    files = {}
    for i in range(12):
        folder = "tutorial" if i % 3 else "advanced"
        files[f"{folder}/page{i}.md"] = f"---\nyear: {2015 + i}\n---\n# Page {i}\n\nrefunds and invoices {'refunds ' * (i + 1)}\n"
    return load_corpus(write_files(tmp_path / "c", files))


def test_fields_include_path_segments(tmp_path):
    corpus = corpus_with_metadata(tmp_path)
    c = chunk_corpus(corpus, make_chunker("document"))[0]
    assert chunk_fields(c) == {"year": 2015, "doc_id": "advanced/page0.md", "dir": "advanced", "path": "advanced"}


def test_filter_applies_before_ranking_and_still_returns_k(tmp_path):
    corpus = corpus_with_metadata(tmp_path)
    chunks = chunk_corpus(corpus, make_chunker("document"))
    r = BM25Retriever.build(chunks, BM25Config())
    full = [h.chunk.doc_id for h in r.search("refunds", k=12).hits]
    # filtering after ranking would lose results: the unfiltered top 3 holds tutorial pages
    assert sum(d.startswith("advanced/") for d in full[:3]) < 3
    filtered = r.search("refunds", k=3, filters="dir=advanced")
    assert [h.chunk.doc_id for h in filtered.hits] == [d for d in full if d.startswith("advanced/")][:3]
    ranged = r.search("refunds", k=10, filters="year>=2020 and dir=tutorial")
    assert {h.chunk.metadata["year"] for h in ranged.hits} == {2020, 2022, 2023, 2025, 2026}


def test_unknown_field_lists_known_ones(tmp_path):
    corpus = corpus_with_metadata(tmp_path)
    f = ChunkFilter(chunk_corpus(corpus, make_chunker("document")))
    with pytest.raises(ConfigError, match="unknown filter field\\(s\\) 'lang'; fields in this corpus: dir, doc_id, path, year"):
        f.mask("lang=en")


def test_mask_cache_tells_true_from_one_and_quotes_keep_unicode(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", {"a.md": "---\ndraft: true\nplace: café\n---\n# A\ntext\n",
                                                      "b.md": "---\ndraft: 1\n---\n# B\ntext\n"}))
    f = ChunkFilter(chunk_corpus(corpus, make_chunker("document")))
    assert f.mask("draft=true").tolist() == [True, False]
    assert f.mask("draft=1").tolist() == [False, True]  # not the cached mask of draft=true
    assert f.mask('place="café"').tolist() == [True, False]
    assert parse_filter(r'place="a \"quoted\" word"').value == 'a "quoted" word'


def test_errors_give_the_position_and_never_echo_the_input():
    with pytest.raises(ConfigError, match="at character 7: >= needs a number, got 'soon'"):
        parse_filter("year>=soon")
    long_word = "w" * 3000
    with pytest.raises(ConfigError) as e:
        parse_filter(f"a=1 {long_word}")
    assert "at character 5: unexpected 'wwwwwwwwwwwwwwwwwwww...'" in str(e.value) and len(str(e.value)) < 200


@pytest.mark.parametrize("expr, message", [
    ("a=" + "x" * 5000, "it has 5002 characters; the limit is 4096"),
    ("(" * 2000 + "a=1" + ")" * 2000, "nest more than 32 deep"),
    ("not " * 33 + "a=1", "nest more than 32 deep"),
    ("a in [" + ", ".join(str(i) for i in range(300)) + "]", "a list holds at most 256 values"),
])
def test_size_depth_and_list_limits(expr, message):
    with pytest.raises(ConfigError, match=message) as e:
        parse_filter(expr)
    assert len(str(e.value)) < 200  # no echo of a long input


def test_limits_admit_what_they_name():
    from ragtune.retrieve.filters import MAX_FILTER_DEPTH, MAX_LIST_VALUES

    assert parse_filter("(" * MAX_FILTER_DEPTH + "a=1" + ")" * MAX_FILTER_DEPTH).matches({"a": 1})
    assert parse_filter("not " * MAX_FILTER_DEPTH + "a=1").matches({"a": 1})  # an even number of nots
    listed = parse_filter("a in [" + ", ".join(str(i) for i in range(MAX_LIST_VALUES)) + "]")
    assert listed.matches({"a": MAX_LIST_VALUES - 1}) and not listed.matches({"a": MAX_LIST_VALUES})


def test_in_lookup_agrees_with_pairwise_equality():
    import itertools

    from ragtune.retrieve.filters import Cmp, _eq

    scalars = [True, False, 1, 0, 1.0, 2.5, 2020, "2020", "true", "True", "FALSE", "a", "A", "1", "1.0", "", -3]
    metadata = scalars + [None, 2020.0, "None", [1], {"k": 1}]
    for r in (1, 2, 3):
        for combo in itertools.combinations(scalars, r):
            cmp = Cmp("f", "in", combo)
            for x in metadata:
                assert cmp._in(x) == any(_eq(x, c) for c in combo), (x, combo)
