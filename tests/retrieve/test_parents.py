"""ParentRetriever: parents ranked by their best child, searching deeper until k distinct parents are found."""

import pytest

from ragtune import Chunk, ConfigError, Hit, Ranking
from ragtune.retrieve.parents import ParentRetriever


def chunk(cid, parent=None):
    return Chunk(id=cid, doc_id="d", text=cid, start=0, end=1, embed_text=cid, parent_id=parent)


class ListRetriever:
    """Returns the first k of a fixed ranking of children and records every search."""

    name = "list"

    def __init__(self, children):
        self.children = children
        self.calls = []
        self.queries = []
        self.config = {"inner": True}

    def search(self, query, k=10, filters=None):
        self.calls.append((k, filters))
        self.queries.append(query)
        hits = tuple(Hit(c, 100.0 - i) for i, c in enumerate(self.children[:k]))
        return Ranking(query, hits, {"list": 0.5})


PARENTS = {p: chunk(p) for p in ("P0", "P1", "P2", "P3")}


def test_children_of_one_parent_filling_the_top_k_make_it_search_deeper():
    # 30 children of P0 outrank everything else: the first 4*k children name one parent only
    children = [chunk(f"a{i}", "P0") for i in range(30)] + [chunk("b", "P1"), chunk("c", "P2"), chunk("d", "P3")]
    inner = ListRetriever(children)
    ranking = ParentRetriever(inner, PARENTS).search("q", k=3, filters="doc_id=d")
    assert [h.chunk.id for h in ranking.hits] == ["P0", "P1", "P2"]
    assert [h.score for h in ranking.hits] == [100.0, 100.0 - 30, 100.0 - 31]  # each parent scores as its best child
    assert len(inner.calls) > 1 and inner.calls[-1][0] >= 32 and {f for _, f in inner.calls} == {"doc_id=d"}
    assert ranking.timings["list"] == pytest.approx(0.5 * len(inner.calls))  # every pass is timed
    assert "parents" in ranking.timings


def test_one_search_suffices_when_it_already_names_k_parents():
    children = [chunk("a0", "P0"), chunk("b0", "P1"), chunk("a1", "P0"), chunk("c0", "P2")] + \
        [chunk(f"x{i}", "P3") for i in range(40)]
    inner = ListRetriever(children)
    ranking = ParentRetriever(inner, PARENTS).search("q", k=2)
    assert [h.chunk.id for h in ranking.hits] == ["P0", "P1"]
    assert len(inner.calls) == 1


def test_fewer_parents_than_k_returns_them_all_and_stops():
    inner = ListRetriever([chunk(f"a{i}", "P0") for i in range(5)] + [chunk("b", "P1")])
    ranking = ParentRetriever(inner, PARENTS).search("q", k=3)
    assert [h.chunk.id for h in ranking.hits] == ["P0", "P1"]
    assert len(inner.calls) == 1  # the first pass returned fewer children than asked: there is nothing deeper


def test_children_without_parent_are_refused():
    with pytest.raises(ConfigError, match="small_to_big"):
        ParentRetriever(ListRetriever([chunk("a")]), PARENTS).search("q", k=1)


def test_depth_grows_fourfold_as_documented_and_the_query_is_passed_on():
    children = [chunk(f"a{i}", "P0") for i in range(100)] + [chunk("b", "P1")]
    inner = ListRetriever(children)
    retriever = ParentRetriever(inner, PARENTS)
    ranking = retriever.search("the query", k=2)
    assert [k for k, _ in inner.calls] == [8, 32, 128]  # 4x k, then 16x, then 64x (which holds every child)
    assert inner.queries == ["the query"] * 3 and ranking.query == "the query"
    assert [h.chunk.id for h in ranking.hits] == ["P0", "P1"]
    assert 0 <= ranking.timings["parents"] < 60
    assert retriever.name == "list>parents" and retriever.config == {"inner": True}


def test_exactly_k_parents_in_the_first_pass_is_enough():
    children = [chunk("a0", "P0"), chunk("b0", "P1")] + [chunk(f"a{i}", "P0") for i in range(1, 20)] + [chunk("c", "P2")]
    inner = ListRetriever(children)
    ranking = ParentRetriever(inner, PARENTS).search("q", k=2)
    assert [h.chunk.id for h in ranking.hits] == ["P0", "P1"] and len(inner.calls) == 1


def test_defaults_k_10_and_an_inner_retriever_without_config():
    class Bare:
        name = "bare"

        def search(self, query, k=10, filters=None):
            return ListRetriever([chunk(f"c{i}", f"P{i % 4}") for i in range(20)]).search(query, k, filters)

    retriever = ParentRetriever(Bare(), PARENTS)
    assert retriever.config is None
    inner = ListRetriever([chunk(f"c{i}", f"P{i % 4}") for i in range(100)])
    ParentRetriever(inner, PARENTS).search("q")
    assert inner.calls[0][0] == 40  # k defaults to 10
