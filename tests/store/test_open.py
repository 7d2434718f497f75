"""open_pipeline's errors name its parameters (corpus, store, version, the pipeline options); the command line
prints them as its flags."""

import pytest

from ragtune.cli import main
from ragtune.errors import ParameterError
from ragtune.store import IndexStore, build_version, open_pipeline
from ragtune import load_corpus
from ragtune.pipeline import PipelineConfig
from tests.helpers import DOCS, write_files


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("open")
    docs = write_files(root / "docs", DOCS)
    store = IndexStore(root / "store")
    build_version(store, load_corpus(docs), PipelineConfig.from_flags({"retriever": "bm25"}))
    return str(docs), str(store.root)


@pytest.mark.parametrize("given, message", [
    ({}, "give corpus (a folder of documents) or store (a built index)"),
    ({"corpus": "C", "store": "S"}, "give corpus or store, not both"),
    ({"corpus": "C", "version": "v0001"}, "version selects a version of an index store; give store too"),
])
def test_errors_name_parameters(given, message):
    with pytest.raises(ParameterError) as e:
        open_pipeline(**given)
    assert str(e.value) == message


def test_contradicting_options_are_named_as_options(built):
    with pytest.raises(ParameterError) as e:
        open_pipeline(store=built[1], flags={"chunker": "fixed", "size": 80})
    assert str(e.value).startswith("with store, chunking, retrieval and the embedder come from the stored "
                                   "version; drop chunker, size (")
    assert "--" not in str(e.value)


def test_the_command_line_prints_flags(built, tmp_path, capsys):
    docs, store = built
    assert main(["search", "--store", store, "--chunker", "fixed", "--size", "80", "x"]) == 2
    assert "error: with --store, chunking, retrieval and the embedder come from the stored version; drop --chunker, " \
           "--size (" in capsys.readouterr().err
    assert main(["search", "--store", store, "--corpus", docs, "x"]) == 2
    assert "error: give --corpus or --store, not both" in capsys.readouterr().err
    assert main(["search", "--corpus", docs, "--version", "v0001", "x"]) == 2
    assert "error: --version selects a version of an index store; give --store too" in capsys.readouterr().err
    assert main(["search", "x"]) == 2
    assert "error: give --corpus (a folder of documents) or --store (a built index)" in capsys.readouterr().err
