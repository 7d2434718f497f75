"""Every kind of outside hit, matched to the corpus, covers what the guide says it covers."""

import json

import pytest

from ragtune import ConfigError, GoldenSet
from ragtune.evaluate import covers
from ragtune.external import ExternalHit, HitMatcher, MatchReport, evaluate_retriever, to_hit
from ragtune.golden import GoldenItem


def covered(corpus, chunk):
    return sorted(a for a in corpus.anchors() if covers(chunk, corpus.resolve(a)))


def test_a_document_id_covers_the_whole_document(corpus):
    chunk, method = HitMatcher(corpus).match(to_hit("account/password.md"))
    assert method == "doc"
    assert covered(corpus, chunk) == ["account/password.md", "account/password.md#passwords",
                                      "account/password.md#two-factor"]


def test_an_anchor_covers_its_section_and_its_parents_as_a_section_chunk_does(corpus):
    m = HitMatcher(corpus)
    parent, method = m.match(to_hit("billing/refunds.md#refunds"))
    assert method == "anchor"
    # its own text: not the subsection below it, exactly as ragtune's section chunk of #refunds
    assert covered(corpus, parent) == ["billing/refunds.md", "billing/refunds.md#refunds"]
    child, _ = m.match(to_hit("billing/refunds.md#partial-refunds"))
    assert covered(corpus, child) == ["billing/refunds.md", "billing/refunds.md#partial-refunds",
                                      "billing/refunds.md#refunds"]
    two_factor, _ = m.match(to_hit("account/password.md#two-factor"))
    # a sibling section is not covered; the enclosing h1 is, as for any chunk inside it
    assert covered(corpus, two_factor) == ["account/password.md", "account/password.md#passwords",
                                           "account/password.md#two-factor"]
    passwords, _ = m.match(to_hit({"anchor": "account/password.md#passwords"}))
    sec = next(s for s in corpus["account/password.md"].sections if s.id == "passwords")
    assert (passwords.start, passwords.end) == (sec.start, sec.own_end) and sec.own_end < sec.end
    assert m.report.to_dict()["coverage"] == {"anchor_span": "own", "doc_hits": "credit"}


def test_anchor_span_subsections_covers_every_section_below(corpus):
    m = HitMatcher(corpus, anchor_span="subsections")
    parent, _ = m.match(to_hit("billing/refunds.md#refunds"))
    assert covered(corpus, parent) == ["billing/refunds.md", "billing/refunds.md#partial-refunds",
                                       "billing/refunds.md#refunds"]
    passwords, _ = m.match(to_hit({"anchor": "account/password.md#passwords"}))
    assert passwords.start == 0 and passwords.end == len(corpus["account/password.md"].text)
    assert m.report.to_dict()["coverage"]["anchor_span"] == "subsections"
    with pytest.raises(ConfigError, match="anchor_span 'tree': choose own .* or subsections"):
        HitMatcher(corpus, anchor_span="tree")


def test_urls_map_through_base_url_and_extension_rules(corpus):
    m = HitMatcher(corpus, base_url="https://help.example.com/docs/")
    chunk, method = m.match(to_hit({"url": "https://help.example.com/docs/account/password.html#two-factor"}))
    assert method == "anchor" and chunk.anchors == ("account/password.md#two-factor",)
    chunk, method = m.match(to_hit("https://help.example.com/docs/shipping"))
    assert method == "doc" and chunk.doc_id == "shipping.md"
    # without base_url a URL's path must name the document by itself
    chunk, method = HitMatcher(corpus).match(to_hit("https://elsewhere.org/docs/shipping"))
    assert method == "unmatched"
    chunk, method = HitMatcher(corpus, path_prefix="/docs").match(to_hit("https://elsewhere.org/docs/shipping"))
    assert method == "doc" and chunk.doc_id == "shipping.md"


def test_a_path_with_an_absolute_root_is_made_relative(corpus):
    path = f"{corpus.root}/account/delete.md"
    chunk, method = HitMatcher(corpus).match(to_hit({"metadata": {"source": path}, "page_content": "x"}))
    assert (method, chunk.doc_id) == ("doc", "account/delete.md")


def test_text_is_located_exactly_then_normalised_then_fuzzily(corpus):
    m = HitMatcher(corpus)
    doc = corpus["billing/refunds.md"]
    exact = "Part of the order amount is returned"
    chunk, method = m.match(to_hit({"text": exact}))
    assert method == "text_exact" and doc.text[chunk.start:chunk.end] == exact
    assert covered(corpus, chunk) == ["billing/refunds.md", "billing/refunds.md#partial-refunds",
                                      "billing/refunds.md#refunds"]
    chunk, method = m.match(to_hit({"text": "## PARTIAL   refunds\n\n**Part** of the\norder amount"}))
    assert method == "text_normalised"
    assert doc.text[chunk.start:chunk.end] == "Partial refunds\n\nPart of the order amount"
    chunk, method = m.match(to_hit({"text": "Part of the order amount is given back when only some items come back"}))
    assert method == "text_fuzzy" and chunk.doc_id == "billing/refunds.md"
    assert "billing/refunds.md#partial-refunds" in covered(corpus, chunk)
    _, method = m.match(to_hit({"text": "Our gift cards never expire and can be topped up online"}), question="q9",
                        rank=3)
    assert method == "unmatched"
    report = m.report.to_dict()
    assert report["by_method"] == {"text_exact": 1, "text_normalised": 1, "text_fuzzy": 1, "unmatched": 1}
    assert report["match_rate"] == pytest.approx(0.75)
    assert report["unmatched"][0]["question"] == "q9" and report["unmatched"][0]["rank"] == 3


def test_fuzzy_can_be_turned_off_and_thresholded(corpus):
    text = {"text": "Part of the order amount is given back when only some items come back"}
    assert HitMatcher(corpus, fuzzy=False).match(to_hit(text))[1] == "unmatched"
    assert HitMatcher(corpus, min_similarity=1.0).match(to_hit(text))[1] == "unmatched"


def test_text_with_a_document_is_located_inside_it(corpus):
    m = HitMatcher(corpus)
    chunk, method = m.match(to_hit({"doc_id": "account/password.md", "text": "Two-factor codes come from"}))
    assert method == "text_exact" and chunk.anchors[0] == "account/password.md#two-factor"
    # text that is not in the named document: the document still covers (a document-id hit)
    chunk, method = m.match(to_hit({"doc_id": "shipping.md", "text": "Two-factor codes come from"}))
    assert method == "doc" and chunk.doc_id == "shipping.md"


def test_offsets_give_the_exact_span(corpus):
    m = HitMatcher(corpus)
    text = corpus["account/password.md"].text
    s = text.index("Two-factor codes")
    chunk, method = m.match(ExternalHit("account/password.md", start=s, end=s + 10))
    assert method == "span" and (chunk.start, chunk.end) == (s, s + 10)
    _, method = m.match(ExternalHit("account/password.md", start=0, end=len(text) + 1))
    assert method == "unmatched"
    assert "past the end" in m.report.unmatched[-1].reason


def test_an_unknown_section_or_document_is_unmatched_with_a_reason(corpus):
    m = HitMatcher(corpus)
    assert m.match(to_hit("shipping.md#returns"))[1] == "unmatched"
    assert m.match(to_hit("shiping.md"))[1] == "unmatched"
    reasons = [u.reason for u in m.report.unmatched]
    assert reasons[0] == "no section #returns in shipping.md"
    assert "closest: shipping.md" in reasons[1]


def test_without_a_corpus_identifiers_must_equal_golden_anchors():
    golden = GoldenSet([GoldenItem("q1", "refunds", {"a.md#refunds": 1.0})])
    result = evaluate_retriever(lambda q, k: ["a.md", "a.md#refunds"], golden, ks=(1, 2))
    assert result.metrics["recall@1"] == 0.0 and result.metrics["recall@2"] == 1.0
    result = evaluate_retriever(lambda q, k: [{"text": "refunds are paid"}], golden, ks=(1,))
    assert result.matching["unmatched"][0]["reason"].startswith("a text hit needs a corpus")


@pytest.mark.parametrize("raw, message", [
    ("  ", "an empty string names nothing"),
    (42, "cannot read a hit from int"),
    ({"score": 1.0}, "names nothing ragtune can match"),
    ({"id": "a.md", "score": "high"}, "score must be a number"),
    ({"id": "a.md", "start": 5, "end": 2}, "end 2 is before start 5"),
])
def test_unreadable_hits_fail_with_one_clear_line(raw, message):
    with pytest.raises(ConfigError, match=message):
        to_hit(raw)


def test_a_named_field_identifies_hits():
    assert to_hit({"id": "x", "doc": "a.md"}, field="doc").ident == "a.md"
    with pytest.raises(ConfigError, match="no field 'doc'.*it has: id"):
        to_hit({"id": "x"}, field="doc")


def test_objects_and_pairs_are_hits():
    class Node:
        def __init__(self):
            self.page_content = "some text"
            self.metadata = {"source": "a.md"}

    h = to_hit(Node())
    assert (h.ident, h.kind, h.text) == ("a.md", "path", "some text")
    assert to_hit(("a.md#x", 0.5)) == ExternalHit("a.md#x", score=0.5)


PAGES = {  # question -> what a site search answered: whole pages (no #fragment), then one section anchor
    "q1": ["https://help.example.com/shipping", "https://help.example.com/billing/refunds"],
    "q2": ["https://help.example.com/billing/refunds"],
    "q3": ["https://help.example.com/billing/invoices"],
    "q4": ["https://help.example.com/billing/refunds", "https://help.example.com/account/password#passwords"],
    "q5": ["https://help.example.com/shipping"],
}


def test_whole_page_hits_are_counted_with_what_they_contributed(corpus, golden):
    def search(query, k):
        qid = next(i.id for i in golden if i.q == query)
        return PAGES.get(qid, [])

    common = dict(corpus=corpus, ks=(1, 5), base_url="https://help.example.com/")
    credit = evaluate_retriever(search, golden, **common)
    ignore = evaluate_retriever(search, golden, doc_hits="ignore", **common)
    doc = credit.matching["doc_level"]
    assert doc["hits"] == 6  # every hit but the one with #passwords
    # refunds.md credited for q1 (#refunds, rank 2) and q2 (#partial-refunds, rank 1): section anchors hit only as a
    # whole page; invoices.md for q3 is a document-level anchor, credited under either rule
    assert doc["section_hits"] == 2 and doc["questions_credited"] == 2 and doc["questions"] == ["q1", "q2"]
    assert doc["delta"]["recall@5"] == pytest.approx(2 / 7) and doc["delta"]["mrr"] == pytest.approx((0.5 + 1) / 7)
    assert credit.metrics["recall@5"] - ignore.metrics["recall@5"] == pytest.approx(doc["delta"]["recall@5"])
    q3 = next(q for q in ignore.questions if q.id == "q3")
    assert q3.first_hit_rank == 1  # a page still covers a document-level anchor
    assert ignore.matching["coverage"]["doc_hits"] == "ignore"
    assert ignore.matching["doc_level"]["delta"] == doc["delta"]  # what crediting them would add
    text = MatchReport.from_dict(credit.matching).summary()
    assert "matched only at document level (no #fragment): 6 hit(s); 2 cover a relevant section only as the whole " \
           "page, in the top 5 of 2 question(s); crediting them adds recall@1" in text
    assert "--doc-hits ignore to score without" in text
    assert "would add" in MatchReport.from_dict(ignore.matching).summary()


def test_eval_run_doc_hits_flag_and_summary(tmp_path, corpus, golden, capsys):
    from ragtune.cli import main

    golden.to_jsonl(tmp_path / "g.jsonl")
    (tmp_path / "pages.jsonl").write_text("".join(json.dumps({"id": q, "hits": h}) + "\n" for q, h in PAGES.items()))
    args = ["eval", "--run", str(tmp_path / "pages.jsonl"), "--golden", str(tmp_path / "g.jsonl"), "--corpus",
            str(corpus.root), "--base-url", "https://help.example.com/", "-k", "1,5"]
    assert main(args) == 0
    assert "matched only at document level (no #fragment): 6 hit(s)" in capsys.readouterr().out
    assert main([*args, "--doc-hits", "ignore", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["matching"]["coverage"] == {"anchor_span": "own", "doc_hits": "ignore"}
    assert data["matching"]["doc_level"]["section_hits"] == 2
