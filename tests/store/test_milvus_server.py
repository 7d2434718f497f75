"""The milvus engine and store against a real Milvus standalone server (the session fixture ``milvus_server``,
tests/milvus_server.py): one server per test run, so every server test lives in this file."""

from __future__ import annotations

import pytest

pytest.importorskip("pymilvus")


def test_the_fixture_runs_a_real_milvus_server(milvus_server):
    from pymilvus import MilvusClient

    assert milvus_server.version.startswith("v2.3.")  # the standalone server, not Lite (milvus_lite-3.x)
    c = MilvusClient(uri=milvus_server.uri)
    c.create_collection("smoke", dimension=4)
    assert c.has_collection("smoke")
    c.drop_collection("smoke")
