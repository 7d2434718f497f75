"""A Milvus token given on the command line reaches the engine's client as a value: the process environment is
neither written nor needed, and the token is never printed."""

import os

import pytest

from ragtune.cli import main
from ragtune.engines import milvus
from ragtune.errors import EngineError
from tests.helpers import DOCS, write_files


@pytest.fixture
def connects(monkeypatch):
    """What each connect() was given; the first one fails (no Milvus here), after recording."""
    seen = []

    def fake(uri, token=None):
        seen.append((uri, token))
        raise EngineError(f"cannot reach Milvus at {uri}")

    monkeypatch.setattr(milvus, "connect", fake)
    monkeypatch.delenv("MILVUS_TOKEN", raising=False)
    return seen


@pytest.mark.parametrize("command", [["search", "x", "--retriever", "bm25"], ["index", "build", "--store", "{s}"]])
def test_the_token_is_passed_as_a_value(tmp_path, connects, capsys, command):
    docs = write_files(tmp_path / "docs", DOCS)
    argv = [a.replace("{s}", str(tmp_path / "store")) for a in command]
    argv += ["--corpus", str(docs), "--engine", "milvus", "--milvus-uri", "http://milvus.example:19530",
             "--milvus-token", "root:s3cret"]
    if command[0] == "index":
        argv += ["--retriever", "bm25"]
    assert main(argv) == 2
    assert connects == [("http://milvus.example:19530", "root:s3cret")]
    assert "MILVUS_TOKEN" not in os.environ
    out = capsys.readouterr()
    assert "s3cret" not in out.out + out.err


def test_without_the_flag_the_engine_gets_no_token(tmp_path, connects):
    """Without --milvus-token, connect() gets no token and falls back to MILVUS_TOKEN itself (docs/scale.md)."""
    docs = write_files(tmp_path / "docs", DOCS)
    assert main(["search", "x", "--corpus", str(docs), "--retriever", "bm25", "--engine", "milvus",
                 "--milvus-uri", "http://milvus.example:19530"]) == 2
    assert connects == [("http://milvus.example:19530", None)] and "MILVUS_TOKEN" not in os.environ
