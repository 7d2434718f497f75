"""A Milvus server refuses a request for a moment after a collection was loaded or an alias moved ("failed to get
delegator ... can not find client of node -1", seen in the server tests under load): the request is retried after
short pauses, and anything else is reported at once."""

import pytest

from ragtune.engines import milvus
from ragtune.engines.milvus import MilvusError

REFUSED = "<MilvusException: (code=65535, message=failed to get delegator -1 for channel by-dev-dml_4v0: can not find client of node -1)>"


class Client:
    """A client whose ``search`` fails with the given errors, in turn, then answers."""

    def __init__(self, *errors):
        self.errors, self.calls = list(errors), 0

    def search(self, *args, **kwargs):
        self.calls += 1
        if self.errors:
            raise Exception(self.errors.pop(0))
        return [[{"pk": 0, "distance": 1.0}]]


def retriever(client):
    r = object.__new__(milvus.MilvusRetriever)
    r.client, r.collection, r.config = client, "c", {"uri": "http://127.0.0.1:1"}
    return r


@pytest.fixture(autouse=True)
def no_pauses(monkeypatch):
    monkeypatch.setattr(milvus, "TRANSIENT_WAITS_S", (0.0, 0.0, 0.0))


def test_a_request_refused_while_a_query_node_takes_up_the_collection_is_retried():
    client = Client(REFUSED, REFUSED)
    assert retriever(client)._call("dense search", "search", "c") == [[{"pk": 0, "distance": 1.0}]]
    assert client.calls == 3


def test_a_refusal_that_lasts_is_reported_after_the_retries_and_other_errors_at_once():
    client = Client(*[REFUSED] * 10)
    with pytest.raises(MilvusError, match="dense search on 'c' failed: .*failed to get delegator"):
        retriever(client)._call("dense search", "search", "c")
    assert client.calls == 4  # the first try and one after each of the three pauses
    other = Client("field vec does not exist")
    with pytest.raises(MilvusError, match="does not exist"):
        retriever(client=other)._call("dense search", "search", "c")
    assert other.calls == 1
