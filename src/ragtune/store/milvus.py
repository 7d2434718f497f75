"""Store versions kept in Milvus: one collection per version, "current" as a Milvus alias.

The store folder stays the source of truth (manifest, documents, chunks, vectors, CURRENT, history); a version
built with a ``milvus-*`` retriever also owns the collection ``<prefix>_<version id>`` at the URI recorded in its
manifest (``engine``), and promote and rollback move the alias ``<prefix>_current`` with ``alter_alias`` before
they rewrite ``CURRENT``: clients searching through the alias switch with no failed search. ``<prefix>`` is
derived from the store's absolute path, so two stores can share one Milvus.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..engines import engine_of
from ..errors import StoreError
from ..http import redact_url
from ..types import Chunk

__all__ = ["is_milvus", "store_prefix", "build_collection", "point_alias", "drop_version", "open_current"]


def is_milvus(config) -> bool:
    """Whether a :class:`~ragtune.pipeline.PipelineConfig` runs on the milvus engine."""
    return engine_of(config.retriever) == "milvus"


def store_prefix(root) -> str:
    return "ragtune_s" + hashlib.blake2b(os.path.realpath(root).encode(), digest_size=5).hexdigest()


def _uri(uri: str) -> str:
    from ..engines.milvus import check_uri

    uri = check_uri(uri)
    return os.path.abspath(uri) if uri.endswith(".db") else uri


def build_collection(store, config, chunks: Sequence[Chunk], vectors: np.ndarray | None, *, token: str | None = None
                     ) -> tuple[Callable[[str], Mapping[str, Any]], Callable[[], None]]:
    """Load ``chunks`` into a temporary collection now; return ``(publish, discard)``: ``publish(vid)`` renames it
    to the version's name and returns the manifest's ``engine`` record (called by ``write_version`` under the
    store lock, once the version id is known), ``discard()`` drops it (a failed build). ``token``: the server's
    (None: ``MILVUS_TOKEN``)."""
    from ..engines import milvus as m

    cfg = config.retriever_config()
    uri = _uri(cfg.milvus_uri)
    client = m.connect(uri, token)
    prefix = store_prefix(store.root)
    tmp = f"{prefix}_build{os.getpid()}_{time.time_ns() % 10**12}"
    m.create_index(client, tmp, chunks, cfg, vectors=vectors, replace=True)

    def publish(vid: str) -> Mapping[str, Any]:
        final = f"{prefix}_{vid}"
        m.drop_collection(client, final)  # what a build killed between this rename and its manifest left
        try:
            client.rename_collection(tmp, final)
            client.load_collection(final)
        except Exception as e:
            raise m.MilvusError(f"Milvus failed to rename collection {tmp!r} to {final!r}: {e}") from None
        return {"name": "milvus", "uri": uri, "collection": final, "alias": f"{prefix}_current",
                **m.server_info(client).to_dict()}

    def discard() -> None:
        with contextlib.suppress(Exception):
            m.drop_collection(client, tmp)

    return publish, discard


def _client(engine: Mapping[str, Any], uri: str | None = None):
    from ..engines import milvus as m

    return m.connect(uri or engine["uri"])


def point_alias(root, vid: str, engine: Mapping[str, Any]) -> None:
    """Move the store's alias to ``engine['collection']`` (created on the first promote); the target is loaded
    first, so a search through the alias never meets an unloaded collection."""
    from ..engines.milvus import MilvusError

    client = _client(engine)
    coll, alias = engine["collection"], engine["alias"]
    if not client.has_collection(coll):
        raise StoreError(f"version {vid} in {root}: its Milvus collection {coll!r} is gone from "
                         f"{redact_url(engine['uri'])}; "
                         f"rebuild with `ragtune index build --store {root} --corpus PATH`")
    try:
        client.load_collection(coll)
        if alias in client.list_aliases().get("aliases", []):
            client.alter_alias(coll, alias)
        else:
            client.create_alias(coll, alias)
    except Exception as e:
        raise MilvusError(f"Milvus failed to point alias {alias!r} at {coll!r}: {e}; CURRENT is unchanged") from None


def drop_version(engine: Mapping[str, Any]) -> None:
    """Drop a version's collection (aliases first)."""
    from ..engines import milvus as m

    m.drop_collection(_client(engine), engine["collection"])


def open_current(store, *, milvus_uri: str | None = None, embedder: Any = None):
    """A retriever over the store's alias: it always searches the promoted version, follows promotes and
    rollbacks without reloading, and holds no copy of the index (hits are rebuilt from Milvus's ``chunk``
    field). For serving workers that share one Milvus."""
    from ..engines.milvus import MilvusRetriever
    from ..pipeline import PipelineConfig, Resources

    v = store.get()
    engine = v.manifest.get("engine")
    if not engine or engine.get("name") != "milvus":
        raise StoreError(f"the current version {v.id} of {store.root} is not in Milvus; build one with "
                         "`ragtune index build --engine milvus --milvus-uri URI`")
    config = PipelineConfig.from_dict(v.manifest["config"])
    emb = Resources(config.embedder_id).embedder() if embedder is None and config.uses_vectors else embedder
    return MilvusRetriever(_client(engine, milvus_uri), engine["alias"], config.retriever_config(), embedder=emb,
                           uri=milvus_uri or engine["uri"])
