"""Sentence segmentation for the extractive answerer and the heuristic judge (issue 25, item 7)."""

from __future__ import annotations

import pytest

from ragtune.answer import ExtractiveGenerator
from ragtune.answer.judge import claims
from ragtune.answer.sentences import split_sentences
from ragtune.types import Chunk


@pytest.mark.parametrize("text, expected", [
    # inline code with a dot and a space inside
    ("It returns a named two-tuple `request. scope` of values. Then it stops.",
     ["It returns a named two-tuple `request. scope` of values.", "Then it stops."]),
    # identifiers, file names, versions
    ("Read `request.query_params` for them. Settings live in config.toml by default. Use Python 3.11 or v0.12.1 now.",
     ["Read `request.query_params` for them.", "Settings live in config.toml by default.",
      "Use Python 3.11 or v0.12.1 now."]),
    ("Call fastapi.routing.APIRoute directly. It works.", ["Call fastapi.routing.APIRoute directly.", "It works."]),
    # URLs, bare and in links
    ("See https://fastapi.tiangolo.com/tutorial/query-params/ for more. Also www.example.org. Done.",
     ["See https://fastapi.tiangolo.com/tutorial/query-params/ for more.", "Also www.example.org.", "Done."]),
    ("Read [the guide. Part 2](https://example.org/a.b.html) first. Then code.",
     ["Read [the guide. Part 2](https://example.org/a.b.html) first.", "Then code."]),
    # abbreviations, initials, enumerators, lowercase continuations
    ("Use a type, e.g. Optional or a union. It is fine.", ["Use a type, e.g. Optional or a union.", "It is fine."]),
    ("Some values, i.e. Ones and Twos, work. Good.", ["Some values, i.e. Ones and Twos, work.", "Good."]),
    ("It was written by J. R. R. Tolkien in the U.S. Army years. Later too.",
     ["It was written by J. R. R. Tolkien in the U.S. Army years.", "Later too."]),
    ("It costs approx. five dollars. Yes.", ["It costs approx. five dollars.", "Yes."]),
    ("Is it? Yes! Sure.", ["Is it?", "Yes!", "Sure."]),
    ('He said "Go." Then he left.', ['He said "Go."', "Then he left."]),
    # markdown blocks: a soft-wrapped paragraph is one sentence; list items, headings, code lines apart
    ("The first line of a sentence\nthat wraps onto the next line.\n\n## Heading { #h }\n- item one\n- item two",
     ["The first line of a sentence that wraps onto the next line.", "## Heading { #h }", "- item one",
      "- item two"]),
    ("1. Install it with pip.\n2. Run it.", ["1. Install it with pip.", "2. Run it."]),
    ("Code:\n\n```python\nx = a.b\ny = 2\n```\nAfter.", ["Code:", "```python", "x = a.b", "y = 2", "After."]),
])
def test_split_sentences_keeps_technical_dots(text, expected):
    assert split_sentences(text) == expected


def test_extractive_answer_quotes_the_whole_sentence():
    text = ("The `Request` object is a Starlette request. Its `request.client` attribute is a named two-tuple "
            "`request.client.host, request.client.port` with the host and port. See "
            "https://www.starlette.io/requests/#client-address for details.")
    ctx = Chunk(id="c1", doc_id="d.md", text=text, start=0, end=len(text), embed_text=text)
    ans = ExtractiveGenerator(max_sentences=1).generate("What is the client attribute of the request?", [ctx])
    assert ans.outcome == "answered"
    assert ans.text == ("Its `request.client` attribute is a named two-tuple `request.client.host, request.client.port` "
                        "with the host and port. [1]")


def test_claims_do_not_split_at_abbreviations_or_inside_code():
    out = claims("Use a type, e.g. Optional, from `typing. Optional`. [1] Python 3.11 works. [2]")
    assert out == [("Use a type, e.g. Optional, from `typing. Optional`.", [1]), ("Python 3.11 works.", [2])]
