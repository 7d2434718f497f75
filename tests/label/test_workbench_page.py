"""What the workbench's page says and shows: ``u`` marks a question unanswerable and ``U`` puts it back (never a
silent toggle), with a message; a search says which matches it left out because the pool holds them; a section's
lists are drawn as lists and a reStructuredText ``:ref:``/``:doc:`` reads as the docs show it.

The page's script runs in node over a small stand-in for the DOM (``page_harness.js``), so these run without a
browser; test_workbench_browser.py drives the whole page in chromium where one is installed."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ragtune import load_corpus
from ragtune.label.golden_file import GoldenFile
from tests.helpers import SWEEP_DOCS, write_files

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient as _TestClient  # noqa: E402

from ragtune.label.app import Workbench, create_app  # noqa: E402
from ragtune.label.candidates import Candidates  # noqa: E402

W = {"X-Ragtune-Workbench": "1"}
HERE = Path(__file__).parent
PAGE = HERE.parents[1] / "src" / "ragtune" / "label" / "static" / "workbench.js"
NODE = shutil.which("node") or shutil.which("nodejs")
needs_node = pytest.mark.skipif(NODE is None, reason="needs node to run the page's script")


def _page(tmp_path, scenario: str):
    """Run ``scenario`` (the body of an async function, in the page's scope) after the page's script."""
    (tmp_path / "scenario.js").write_text(scenario)
    out = subprocess.run([NODE, str(HERE / "page_harness.js"), str(PAGE), str(tmp_path / "scenario.js")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def client(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", SWEEP_DOCS))
    bench = Workbench(corpus, GoldenFile(tmp_path / "g.jsonl"), Candidates(corpus, systems=["bm25"], depth=5),
                      judge="ana")
    c = _TestClient(create_app(bench), base_url="http://127.0.0.1:8400")
    return c, bench


def _add(c, q):
    r = c.post("/api/questions", json={"questions": [{"q": q}]}, headers=W)
    assert r.status_code == 200, r.text
    return r.json()["added"][0]


def _unanswerable(c, qid, value):
    rev = c.get(f"/api/question/{qid}").json()["rev"]
    r = c.post(f"/api/question/{qid}/unanswerable", json={"rev": rev, "value": value}, headers=W)
    assert r.status_code == 200, r.text
    return r.json()


def test_unanswerable_is_set_and_unset_never_toggled_and_says_what_happened(client):
    """The guide's order, "u, grade the pool 0, u", ends unanswerable, not back at "to judge"."""
    c, _ = client
    qid = _add(c, "Do you sell televisions?")
    r = _unanswerable(c, qid, True)
    assert (r["status"], r["message"], r["changed"]) == ("unanswerable", "marked unanswerable", True)
    pool = [x["anchor"] for x in r["candidates"]]
    for anchor in pool:
        rev = c.get(f"/api/question/{qid}").json()["rev"]
        c.post(f"/api/question/{qid}/grade", json={"rev": rev, "anchor": anchor, "grade": 0}, headers=W)
    r = _unanswerable(c, qid, True)
    assert (r["status"], r["changed"]) == ("unanswerable", False)
    assert r["message"] == "already marked unanswerable: nothing changed"
    r = _unanswerable(c, qid, False)
    assert (r["status"], r["message"], r["changed"]) == ("to judge", "back to judging", True)
    r = _unanswerable(c, qid, False)
    assert r["message"] == "not marked unanswerable: nothing changed" and not r["changed"]


_STATE = """
responses.push((path, body) => {
  if (path === "/api/state") return { questions: [], golden: "g.jsonl", retrieval: { ready: true, systems: [], error: null },
    progress: { questions: 1, complete: 0, to_go: 1, minutes_left: null } };
});
"""


@needs_node
def test_u_sets_and_shift_u_unsets_and_the_page_says_so(tmp_path):
    out = _page(tmp_path, _STATE + """
    S.q = { id: "q1", rev: "r0", q: "x", status: "to judge", tags: [], terms: [], candidates: [] };
    S.current = "q1";
    responses.unshift((path, body) => {
      if (!path.endsWith("/unanswerable")) return undefined;
      const was = S.q.status === "unanswerable";
      return { id: "q1", rev: "r" + requests.length, q: "x", tags: [], terms: [], candidates: [],
               status: body.value ? "unanswerable" : "to judge", changed: was !== body.value,
               message: body.value ? (was ? "already marked unanswerable: nothing changed" : "marked unanswerable")
                                   : (was ? "back to judging" : "not marked unanswerable: nothing changed") };
    });
    const said = [];
    for (const key of ["u", "u", "U"]) { await press(key); said.push(bySelector["#message"].textContent); }
    return { values: requests.filter((r) => r.path.endsWith("/unanswerable")).map((r) => r.body.value), said,
             button: bySelector["#unanswerable"].textContent };
    """)
    assert out["values"] == [True, True, False]
    assert out["said"] == ["marked unanswerable · U puts it back to judging",
                           "already marked unanswerable: nothing changed · U puts it back to judging",
                           "back to judging · u marks it unanswerable"]
    assert out["button"] == "Unanswerable (u)"


def test_search_says_which_matches_the_pool_already_holds(client):
    c, _ = client
    qid = _add(c, "How do I descale the kettle?")
    pool = {x["anchor"] for x in c.get(f"/api/question/{qid}").json()["candidates"]}
    assert "kettle.md#kettle" in pool
    r = c.get("/api/search", params={"q": "kettle descale", "qid": qid}).json()
    assert "kettle.md#kettle" in r["in_pool"] and set(r["in_pool"]) <= pool
    assert not {x["anchor"] for x in r["results"]} & pool
    everything = c.get("/api/search", params={"q": "kettle descale"}).json()  # no question: nothing left out
    assert everything["in_pool"] == [] and "kettle.md#kettle" in [x["anchor"] for x in everything["results"]]


@needs_node
def test_the_page_says_how_many_matches_it_did_not_show(tmp_path):
    out = _page(tmp_path, _STATE + """
    S.q = { id: "q1", rev: "r0", q: "x", status: "to judge", tags: [], terms: [], candidates: [] };
    responses.unshift((path) => path.startsWith("/api/search") ? { results: [], in_pool: ["a.md#a", "b.md#b"] } : undefined);
    await search("kettle");
    const none = bySelector["#message"].textContent;
    responses.unshift((path) => path.startsWith("/api/search") ?
      { results: [{ anchor: "c.md#c", title: "C", text: "c", location: {}, grade: null }], in_pool: ["a.md#a"] } : undefined);
    await search("kettle");
    return { none, some: bySelector["#message"].textContent };
    """)
    assert out["none"] == "no section outside the pool matches that search; 2 matches already in the pool not shown"
    assert out["some"] == "1 match already in the pool not shown"


RST = {
    "guide/steps.rst": """Steps
=====

Do this:

1. Open the lid
   and look inside.
2. See :ref:`ctx`, :ref:`the hooks <hooks>` and :doc:`../reference/api`.

   - a nested point
   - another

#. Close it.

a) first alpha
b) second alpha
""",
    "reference/api.rst": """API reference
=============

.. _ctx:

Context visibility
------------------

What a view sees.

.. _hooks:

Hooks
-----

Before and after, unlike :ref:`ctx`.
""",
}


def test_rst_references_read_as_the_docs_show_them(tmp_path):
    pytest.importorskip("docutils")
    corpus = load_corpus(write_files(tmp_path / "c", RST))
    text = Candidates(corpus, systems=["bm25"]).section("guide/steps.rst#steps").text
    assert "See Context visibility, the hooks and API reference." in text
    assert "ctx" not in text and "../reference/api" not in text
    assert "See ctx, the hooks and ../reference/api." in corpus["guide/steps.rst"].text  # the index is unchanged
    hooks = Candidates(corpus, systems=["bm25"]).section("reference/api.rst#hooks").text
    assert hooks == "Before and after, unlike Context visibility."  # a label of the same file, another section


@needs_node
def test_lists_are_drawn_as_lists_not_one_paragraph(tmp_path):
    pytest.importorskip("docutils")
    corpus = load_corpus(write_files(tmp_path / "c", RST))
    text = Candidates(corpus, systems=["bm25"]).section("guide/steps.rst#steps").text
    out = _page(tmp_path, f"""
    const el = document.createElement("div");
    renderText(el, {json.dumps(text)});
    const md = document.createElement("div");
    renderText(md, "Steps:\\n- one\\n- two\\n\\nb) beta\\nc) gamma\\n\\nA plain\\nparagraph.");
    return {{ rst: html(el), md: html(md) }};
    """)
    assert out["rst"] == (
        '<div><p>Do this:</p><ol><li value="1">Open the lid and look inside.</li><li value="2">See Context '
        'visibility, the hooks and API reference.<ul><li>a nested point</li><li>another</li></ul></li>'
        '<li value="3">Close it.</li></ol><ol><li value="1">first alpha</li><li value="2">second alpha</li></ol>'
        '</div>'), out["rst"]
    assert out["md"] == ('<div><p>Steps:</p><ul><li>one</li><li>two</li></ul><ol type="a"><li>beta</li>'
                         '<li>gamma</li></ol><p>A plain\nparagraph.</p></div>')


@needs_node
def test_the_page_refuses_a_body_over_the_servers_limit_before_sending_it(client, tmp_path):
    c, _ = client
    given = c.get("/api/state").json()["limits"]
    assert given["body_bytes"] == 4 * 1024 * 1024 and given["body_message"].startswith("request body over 4,194,304")
    out = _page(tmp_path, f"""
    S.limits = {json.dumps({**given, "body_bytes": 1000})};
    const r = await addQuestions([{{ q: "x".repeat(5000) }}]);
    return {{ r, sent: requests.map((x) => x.path), said: bySelector["#message"].textContent }};
    """)
    assert out["r"] is None and out["sent"] == [] and out["said"] == given["body_message"]
