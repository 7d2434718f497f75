"""Every stage has one Protocol (ragtune.stages), checked where a component enters a registry: a class when it is
registered, what a factory returns when it is built. Every built-in entry satisfies its stage's protocol; one that
does not is refused with the class, the stage and the missing members named."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import numpy as np
import pytest

from ragtune import stages
from ragtune.chunking import chunk_documents
from ragtune.config import Config
from ragtune.errors import ConfigError, StageContractError
from ragtune.registry import REGISTRIES, RETRIEVERS, Registry
from ragtune.types import Document

# an argument for each entry that needs one (nothing is loaded: constructors are cheap)
ARGUMENTS = {("embedder", "openai"): "text-embedding-3-small",
             ("generator", "openai"): "gpt-4o-mini", ("judge", "openai"): "gpt-4o-mini",
             ("judge", "anthropic"): "claude-haiku-4-5"}
OPTIONS = {("reranker", "llm"): {"model": "openai:gpt-4o-mini"}, ("strategy", "decompose"): {"llm": "openai:gpt-4o-mini"},
           ("strategy", "rewrite"): {"llm": "openai:gpt-4o-mini"}}
# entries whose factory opens its model folder (or asks the hub) when built: their class is checked instead
OPENS = {"embedder": {"onnx": ("ragtune.embed.onnx", "OnnxEmbedder"),
                      "st": ("ragtune.embed.st", "SentenceTransformerEmbedder")}}


class WordEmbedder:
    """A tiny embedder with every member of the protocol: a bag of hashed words."""

    model_id = "words"
    dim = 16
    max_tokens = 512
    cache_key = "words-1"

    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, sum(map(ord, w)) % self.dim] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    embed_queries = embed


def _spec(stage: str, entry, tmp_path) -> str:
    if entry.argument != "required":
        return entry.name
    return f"{entry.name}:{ARGUMENTS[stage, entry.name]}"


@pytest.mark.parametrize("stage", [s for s in REGISTRIES if s != "retriever"])
def test_every_builtin_entry_builds_into_its_stage_protocol(stage, tmp_path):
    registry = REGISTRIES[stage]
    protocol = stages.PROTOCOLS[stage]
    assert registry.protocol is protocol
    builtins = [e for e in registry
                if e.factory.__module__.startswith("ragtune.") and e.name not in OPENS.get(stage, {})]
    assert builtins
    for entry in builtins:
        built = registry.build(_spec(stage, entry, tmp_path), options=OPTIONS.get((stage, entry.name)))
        # not isinstance(): it reads every member, and an OpenAI embedder's dim asks the API
        assert stages.missing(built, protocol) == [], entry.name
    for module, cls in OPENS.get(stage, {}).values():
        assert stages.missing(getattr(importlib.import_module(module), cls), protocol, methods_only=True) == []


def test_every_builtin_retriever_satisfies_the_retriever_protocol(tmp_path):
    from ragtune.engines.milvus import MilvusRetriever
    from ragtune.pipeline import Resources

    docs = [Document(f"d{i}.md", f"D{i}", f"alpha beta gamma {i} delta") for i in range(3)]
    chunks, _ = chunk_documents(docs, REGISTRIES["chunker"].build("document"))
    resources = Resources(make_embedder=lambda name: WordEmbedder()).for_embedder("minilm")
    for name in ("bm25", "dense", "hybrid"):
        built = RETRIEVERS.build(name, chunks, resources)
        assert isinstance(built, stages.Retriever) and built.search("alpha", k=2).hits, name
    # the Milvus retrievers need a server to build: their class is checked instead
    assert stages.missing(MilvusRetriever, stages.Retriever, methods_only=True) == []
    assert {e.factory.__module__ for e in RETRIEVERS if e.name.startswith("milvus-")} == {"ragtune.engines.milvus"}


@dataclass(frozen=True)
class _NoOptions(Config):
    pass


class Nameless:
    """Has no method of any stage: what a typo in a method name (``serach``) looks like to a registry."""

    name = "nameless"

    def serach(self, query, k=10, filters=None):  # misspelt on purpose
        return None


MISSING = {"loader": "load()", "chunker": "chunk()", "retriever": "search()", "reranker": "rerank()",
           "embedder": "embed(), embed_queries()", "generator": "generate()", "judge": "judge()",
           "strategy": "run()"}
PROTOCOL_NAMES = {"loader": "Loader", "chunker": "Chunker", "retriever": "Retriever", "reranker": "Reranker",
                  "embedder": "Embedder", "generator": "Generator", "judge": "Judge", "strategy": "Strategy"}


@pytest.mark.parametrize("stage", sorted(MISSING))
def test_registering_a_class_without_the_protocols_method_is_refused(stage):
    registry = Registry(stage, f"ragtune.test.{stage}")
    with pytest.raises(StageContractError) as e:
        registry.register("broken", _NoOptions, Nameless)
    assert str(e.value) == (f"{stage} 'broken': class {__name__}.Nameless does not satisfy the "
                            f"{PROTOCOL_NAMES[stage]} protocol (ragtune.stages.{PROTOCOL_NAMES[stage]}): it lacks "
                            f"{MISSING[stage]}")
    assert isinstance(e.value, ConfigError) and isinstance(e.value, TypeError)
    assert "broken" not in registry.names()


@pytest.mark.parametrize("stage", sorted(MISSING))
def test_a_factory_that_builds_something_without_the_protocols_members_is_refused(stage):
    registry = Registry(stage, f"ragtune.test.{stage}")
    registry.register("broken", _NoOptions, lambda config: Nameless())  # a factory: known only when built
    with pytest.raises(StageContractError, match=rf"^{stage} 'broken' gave a {__name__}.Nameless, "
                       rf"which does not satisfy the {PROTOCOL_NAMES[stage]} protocol .*: it lacks "
                       rf"{MISSING[stage].replace('(', '[(]').replace(')', '[)]')}"):
        registry.build("broken")


def test_a_data_member_is_asked_of_the_built_object_not_of_the_class():
    """A loader's ``version`` may be set by its constructor: the class registers, the object it builds must
    have it."""

    class SetsVersion:
        name, cache = "sets", False

        def __init__(self, config):
            self.version = "1"

        def load(self, data, doc_id, source):
            return Document(doc_id, data.decode())

    class ForgetsVersion(SetsVersion):
        def __init__(self, config):
            pass

    registry = Registry("loader", "ragtune.test.loader")
    registry.register("sets", _NoOptions, SetsVersion)
    registry.register("forgets", _NoOptions, ForgetsVersion)
    assert registry.build("sets").version == "1"
    with pytest.raises(StageContractError, match="ForgetsVersion, which does not satisfy the Loader protocol .*: "
                                                 "it lacks version$"):
        registry.build("forgets")


def test_a_property_is_not_run_by_the_check():
    """An embedder's ``cache_key`` may hash its weights: the check sees the property without calling it."""

    class Lazy(WordEmbedder):
        calls = 0

        @property
        def cache_key(self):
            type(self).calls += 1
            raise AssertionError("cache_key was computed")

    registry = Registry("embedder", "ragtune.test.embedder")
    registry.register("lazy", _NoOptions, lambda config: Lazy())
    assert isinstance(registry.build("lazy"), Lazy) and Lazy.calls == 0


def test_parents_are_asked_of_a_parent_chunker_by_its_protocol():
    """chunk_documents asks ParentChunker (isinstance), not getattr: a small-to-big chunker gives parents."""
    chunkers = REGISTRIES["chunker"]
    doc = Document("a.md", "A", "# A\n\n" + " ".join(f"word{i}" for i in range(400)))
    small_to_big = chunkers.build("small_to_big", options={"size": 32, "parent_size": 128, "parent": "recursive"})
    assert isinstance(small_to_big, stages.ParentChunker)
    children, parents = chunk_documents([doc], small_to_big)
    assert parents and {c.parent_id for c in children} <= {p.id for p in parents}
    fixed = chunkers.build("fixed")
    assert not isinstance(fixed, stages.ParentChunker)
    assert chunk_documents([doc], fixed)[1] == []


def test_every_registry_names_its_stage_protocol():
    assert {stage: r.protocol for stage, r in REGISTRIES.items()} == stages.PROTOCOLS


def test_a_retriever_reopened_by_its_load_is_checked_too(tmp_path):
    """A retriever that saves its own index is reopened by its entry's ``load`` from a store version: what that
    returns is held to the Retriever protocol like what its factory builds."""
    from ragtune.corpus import load_corpus
    from ragtune.pipeline import PipelineConfig
    from ragtune.store import IndexStore, build_version, load_pipeline
    from tests.helpers import write_files

    class Saved:
        name = "saved"

        def __init__(self, chunks):
            self.chunks = tuple(chunks)

        def search(self, query, k=10, filters=None):
            from ragtune.types import Hit, Ranking

            return Ranking(query, tuple(Hit(c, 1.0) for c in self.chunks[:k]), {})

        def save(self, folder):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "saved.txt").write_text("x")

    def load(config, chunks, resources, folder):
        return Nameless()  # search misspelt

    RETRIEVERS.register("saved", _NoOptions, lambda config, chunks, resources: Saved(chunks), load=load)
    try:
        docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nalpha beta\n"})
        store = IndexStore(tmp_path / "store")
        build_version(store, load_corpus(docs), PipelineConfig.from_flags({"chunker": "section",
                                                                          "retriever": "saved"}))
        with pytest.raises(StageContractError, match=r"^retriever 'saved' gave a .*Nameless, .*"
                                                     r"it lacks search\(\)$"):
            load_pipeline(store)
    finally:
        RETRIEVERS.unregister("saved")


def test_a_module_registering_a_broken_chunker_fails_on_import(tmp_path, monkeypatch):
    """How make test fails on a built-in (or plugin) module whose class breaks its protocol: importing the module
    raises, so every test that looks the stage up fails, naming the class and what it lacks."""
    (tmp_path / "broken_chunker.py").write_text(
        "from dataclasses import dataclass\n"
        "from ragtune.config import Config\n"
        "from ragtune.registry import CHUNKERS\n\n"
        "@dataclass(frozen=True)\nclass HalvesConfig(Config):\n    prefix: bool = False\n\n"
        "class Halves:\n    name = 'halves'\n"
        "    def __init__(self, config):\n        self.config = config\n"
        "    def chunks(self, doc):  # the protocol's method is chunk\n        return []\n\n"
        "CHUNKERS.register('broken-halves', HalvesConfig, Halves)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(StageContractError, match=r"^chunker 'broken-halves': class broken_chunker.Halves does not "
                                                 r"satisfy the Chunker protocol .*: it lacks chunk\(\)$"):
        importlib.import_module("broken_chunker")
    assert "broken-halves" not in REGISTRIES["chunker"].names()
