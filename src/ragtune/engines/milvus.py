"""Milvus as a first stage: Milvus Lite in a local file, or a Milvus server or cluster by URI, one code path.

Registered retrievers ``milvus-bm25``, ``milvus-dense`` and ``milvus-hybrid`` (see :func:`ragtune.engines.engine_retriever`).
One collection holds one index::

    pk       INT64 primary key    the chunk's row in the index (its position in the chunk list)
    chunk_id VARCHAR              ragtune's chunk id
    doc_id   VARCHAR, anchor VARCHAR, start INT64, end INT64   where the chunk comes from
    meta     JSON                 the chunk's filter fields, encoded so that ragtune's filters become an ``expr``
    chunk    JSON                 the whole chunk record (a search through an alias needs no local copy)
    text     VARCHAR (analyzer)   ragtune's own BM25 tokens (stemmed, stop words removed) joined by spaces;
    sparse   SPARSE_FLOAT_VECTOR  ... turned into BM25 term weights by a Milvus BM25 function  (bm25, hybrid)
    vec      FLOAT_VECTOR         the embedder's normalised vectors, FLAT index, inner product (dense, hybrid)

What Milvus Lite 3.2 / pymilvus 3.0 need, and this module does: text is analysed here (Lite's ``standard``
analyzer has no English stemming or stop words), a filter goes into every ``AnnSearchRequest`` (a top-level
``filter=`` of ``hybrid_search`` is never sent), ``output_fields`` is always given, hits are ranked by the order
Milvus returns (Lite's BM25 scores are negative), data is flushed after loading, a collection is loaded after
reopening, aliases are dropped before their collection, inserts go in bounded batches, and the VARCHAR and top-k
limits are checked here with a message that says what to change.

The server token is a value: ``Resources(credentials={"milvus": token})`` (what ``open_pipeline``,
``build_version`` and ``load_pipeline`` take as ``credentials``, and the CLI's ``--milvus-token`` gives) or
``connect(uri, token=...)``; without one, the ``MILVUS_TOKEN`` environment variable is read (never written). It
is never part of a configuration, so it never reaches a manifest, a sweep result or a cache key.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np

from ..config import Config, Opt, check_choice, check_range
from ..errors import ConfigError, EngineError, MissingDependencyError, ParameterError, RagtuneError
from ..http import redact_text, redact_url
from ..retrieve.filters import And, Cmp, Not, Or, chunk_fields, parse_filter
from ..types import Chunk, Hit, Ranking

__all__ = ["MilvusBM25Config", "MilvusDenseConfig", "MilvusHybridConfig", "MilvusRetriever", "MilvusError",
           "ServerInfo", "server_info", "recall_vs_exact", "INDEXES", "reopen", "connect", "analyze", "filter_expr", "filter_record", "create_index", "content_name", "drop_collection",
           "MAX_VARCHAR_BYTES", "MAX_TOP_K", "TOKEN_ENV"]

MAX_VARCHAR_BYTES = 65_535
"""Longest VARCHAR value Milvus stores, in UTF-8 bytes."""
MAX_JSON_BYTES = 65_536
"""Largest JSON value Milvus accepts by default, in bytes."""
MAX_TOP_K = 16_384
"""Most results one Milvus search returns."""
TOKEN_ENV = "MILVUS_TOKEN"
BATCH_ROWS = 2_000
BATCH_BYTES = 64 << 20  # far below the 256 MiB gRPC message cap
STEMMERS = ("english", "porter", None)
CONNECT_TIMEOUT_S = 20.0
"""How long connecting (reading the server version) may take."""
SEARCH_TIMEOUT_S = 30.0
"""How long one search may take before it fails (a server that went away: an error, not a hung request)."""


MilvusError = EngineError  # Milvus refused or failed an operation (the message names it and the collection)


def _pymilvus():
    try:
        import pymilvus
    except ImportError:
        raise MissingDependencyError("the milvus engine needs pymilvus and milvus-lite: "
                                     "pip install 'ragtune[milvus]'") from None
    return pymilvus


# --- configuration ---------------------------------------------------------------------------------------------
def check_uri(uri: Any) -> str:
    """A Milvus URI: a Milvus Lite file (``*.db``) or a server address (``http://``, ``https://``, ``tcp://``)."""
    if not isinstance(uri, str) or not uri.strip():
        raise ParameterError("the milvus engine needs {}: a Milvus Lite file such as ./index.db or a server such "
                             "as http://localhost:19530", "milvus_uri")
    if uri.startswith(("http://", "https://", "tcp://", "unix:")) or uri.endswith(".db"):
        return uri
    raise ConfigError(f"milvus_uri {redact_url(uri)!r} is neither a Milvus Lite file (a path ending in .db, e.g. "
                      "./index.db) "
                      "nor a server address (http://host:19530, https://..., tcp://...)")


def _check_analysis(owner: str, stemmer: Any, stopwords: Any) -> None:
    check_choice(owner, "stemmer", stemmer, STEMMERS)
    check_choice(owner, "stopwords", stopwords, ("en", None))


@dataclass(frozen=True)
class MilvusBM25Config(Config):
    """BM25 in Milvus over ragtune's own analysed tokens (same ``stemmer`` and ``stopwords`` as ``bm25``).
    Milvus Lite fixes k1=1.5, b=0.75 (a server is told the same)."""

    milvus_uri: Annotated[str, Opt("Milvus Lite file (.db) or server URL")] = ""
    stemmer: Annotated[str | None, Opt("stemmer language for BM25 tokens (none: no stemming)")] = "english"
    stopwords: Annotated[str | None, Opt("stop-word list for BM25 tokens (none: keep every word)")] = "en"

    def __post_init__(self) -> None:
        _check_analysis(type(self).__name__, self.stemmer, self.stopwords)


INDEXES = ("FLAT", "HNSW", "IVF_FLAT")
"""Milvus vector index types ragtune configures: FLAT searches exactly, HNSW and IVF_FLAT approximately."""


@dataclass(frozen=True)
class _VectorIndex:
    """The vector index of a Milvus collection (dense and hybrid): ``milvus_index`` FLAT (exact; the only one
    Milvus Lite has), HNSW (``hnsw_m`` links per node, ``hnsw_ef_construction`` while building, ``hnsw_ef``
    candidates while searching, raised to k when k is larger) or IVF_FLAT (``ivf_nlist`` clusters, ``ivf_nprobe``
    of them searched). Each is a stage option, so a sweep grid can list several."""

    milvus_index: Annotated[str, Opt("Milvus vector index: FLAT (exact), HNSW or IVF_FLAT (approximate; a server)")] = "FLAT"
    hnsw_m: Annotated[int, Opt("HNSW links per node (M)")] = 16
    hnsw_ef_construction: Annotated[int, Opt("HNSW candidate list while building (efConstruction)")] = 200
    hnsw_ef: Annotated[int, Opt("HNSW candidate list while searching (ef; at least k)")] = 64
    ivf_nlist: Annotated[int, Opt("IVF_FLAT clusters (nlist)")] = 128
    ivf_nprobe: Annotated[int, Opt("IVF_FLAT clusters searched (nprobe)")] = 16

    def _check_index(self) -> None:
        owner = type(self).__name__
        check_choice(owner, "milvus_index", self.milvus_index, INDEXES)
        check_range(owner, "hnsw_m", self.hnsw_m, lo=2, hi=2048, integer=True)
        check_range(owner, "hnsw_ef_construction", self.hnsw_ef_construction, lo=1, hi=1 << 20, integer=True)
        check_range(owner, "hnsw_ef", self.hnsw_ef, lo=1, hi=1 << 20, integer=True)
        check_range(owner, "ivf_nlist", self.ivf_nlist, lo=1, hi=65_536, integer=True)
        check_range(owner, "ivf_nprobe", self.ivf_nprobe, lo=1, hi=65_536, integer=True)

    def index_params(self) -> dict[str, Any]:
        """What ``add_index`` is given for the vector field."""
        if self.milvus_index == "HNSW":
            return {"index_type": "HNSW", "params": {"M": self.hnsw_m, "efConstruction": self.hnsw_ef_construction}}
        if self.milvus_index == "IVF_FLAT":
            return {"index_type": "IVF_FLAT", "params": {"nlist": self.ivf_nlist}}
        return {"index_type": "FLAT", "params": {}}

    def search_params(self, k: int) -> dict[str, Any]:
        """What a dense search is given: the metric and the index's search-time knob."""
        if self.milvus_index == "HNSW":
            return {"metric_type": "IP", "params": {"ef": max(self.hnsw_ef, k)}}
        if self.milvus_index == "IVF_FLAT":
            return {"metric_type": "IP", "params": {"nprobe": min(self.ivf_nprobe, self.ivf_nlist)}}
        return {"metric_type": "IP"}


@dataclass(frozen=True)
class MilvusDenseConfig(_VectorIndex, Config):
    """Inner product in Milvus over the pipeline embedder's normalised vectors, through a FLAT (exact), HNSW or
    IVF_FLAT index (see ``_VectorIndex``)."""

    milvus_uri: Annotated[str, Opt("Milvus Lite file (.db) or server URL")] = ""

    def __post_init__(self) -> None:
        self._check_index()


@dataclass(frozen=True)
class MilvusHybridConfig(_VectorIndex, MilvusBM25Config):
    """BM25 + dense in Milvus, fused by reciprocal rank fusion like ``hybrid``: ``rrf_k`` the RRF constant,
    ``fusion_depth`` the candidates taken from each, ``weights`` (bm25, dense) weights (fused by ragtune).
    On a server without BM25 (Milvus before 2.5) the BM25 half is ragtune's own, fused with the server's dense
    hits here; the retriever's configuration says which (``hybrid_bm25``: ``milvus`` or ``ragtune``)."""

    rrf_k: int = 60
    weights: tuple[float, ...] | None = None
    fusion_depth: int = 50

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_index()
        check_range("MilvusHybridConfig", "rrf_k", self.rrf_k, lo=0, integer=True)
        check_range("MilvusHybridConfig", "fusion_depth", self.fusion_depth, lo=1, hi=MAX_TOP_K, integer=True)
        if self.weights is not None:
            w = tuple(self.weights)
            if len(w) != 2 or any(not math.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
                raise ConfigError(f"MilvusHybridConfig: weights are two finite numbers >= 0 (bm25, dense), not both "
                                  f"0; got {list(w)!r}")
            object.__setattr__(self, "weights", tuple(float(x) for x in w))


def _mode(config: Config) -> str:
    return {MilvusBM25Config: "bm25", MilvusDenseConfig: "dense", MilvusHybridConfig: "hybrid"}[type(config)]


# --- the server: its version and what it can do ---------------------------------------------------------------
@dataclass(frozen=True)
class ServerInfo:
    """What ``get_server_version`` said at connect: ``version`` as reported (``milvus_lite-3.2.2`` for Milvus Lite;
    ``v2.3.5-lite`` for the ``milvus`` package's standalone server, a real server whatever its suffix), ``lite``
    and ``release`` (major, minor, patch; zeros when the text names none)."""

    version: str
    lite: bool
    release: tuple[int, int, int]

    @classmethod
    def parse(cls, text: str) -> "ServerInfo":
        text = str(text).strip()
        m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
        release = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else (0, 0, 0)
        return cls(text, text.lower().startswith("milvus_lite"), release)

    @property
    def label(self) -> str:
        number = ".".join(map(str, self.release)) if any(self.release) else repr(self.version)
        return f"Milvus Lite {number}" if self.lite else f"Milvus {number}"

    @property
    def bm25(self) -> bool:
        """Server-side BM25 (a BM25 function over a sparse field): Milvus Lite 3.x, a server from 2.5 on."""
        return self.release >= ((3, 0, 0) if self.lite else (2, 5, 0))

    @property
    def ann(self) -> bool:
        """Approximate vector indexes (HNSW, IVF_FLAT): a server; Milvus Lite searches exactly only."""
        return not self.lite

    def to_dict(self) -> dict[str, str]:
        return {"server": self.label, "server_version": self.version}


_INFO: dict[int, ServerInfo] = {}
_URI: dict[int, str] = {}  # the URI each client was opened with (for messages; redacted when shown)


def server_info(client) -> ServerInfo:
    """The version of the Milvus behind ``client``, read once (at :func:`connect`) and kept."""
    info = _INFO.get(id(client))
    if info is None:
        try:
            info = ServerInfo.parse(client.get_server_version())
        except Exception as e:
            raise MilvusError(f"cannot read the version of the Milvus server: {redact_text(e)}") from None
        _INFO[id(client)] = info
    return info


def _lacks(info: ServerInfo, uri: str, what: str, instead: str) -> MilvusError:
    return MilvusError(f"{info.label} at {redact_url(uri)} (server version {info.version}) has no {what}; {instead}")


def _require(info: ServerInfo, uri: str, mode: str, config: Config) -> None:
    """One line naming the server version when ``config`` needs what the server lacks."""
    if mode == "bm25" and not info.bm25:
        raise _lacks(info, uri, "server-side BM25 (Milvus 2.5 and Milvus Lite 3.x have it)",
                     "use retriever milvus-dense, or milvus-hybrid, which fuses the server's dense hits with "
                     "ragtune's own BM25")
    index = getattr(config, "milvus_index", "FLAT")
    if mode != "bm25" and index != "FLAT" and not info.ann:
        raise _lacks(info, uri, f"{index} index (Milvus Lite searches exactly)",
                     "use milvus_index FLAT, or point milvus_uri at a Milvus server")


def _server_bm25(info: ServerInfo, mode: str) -> bool:
    """Whether the collection holds BM25 (bm25 always; hybrid when the server has it)."""
    return mode == "bm25" or (mode == "hybrid" and info.bm25)


# --- connections -----------------------------------------------------------------------------------------------
class _LiteNoise(logging.Filter):
    """Milvus Lite's in-process gRPC server logs a traceback for every AllocTimestamp call pymilvus makes when it
    creates a collection (Lite does not implement it; nothing fails). Only that record is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, NotImplementedError) and "AllocTimestamp" in _tb_names(record.exc_info[2]))


class _RpcNoise(logging.Filter):
    """pymilvus logs every failed call at ERROR, and each failed reconnection at WARNING, with a traceback in the
    message; ragtune raises the failure as one :class:`MilvusError` line instead, so those records (and only
    those) are dropped, on pymilvus's own handlers."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.funcName not in ("_log_rpc_error", "_recover")


def _quiet_pymilvus() -> None:
    root = logging.getLogger("pymilvus")
    for target in (logging.getLogger("pymilvus.decorators"), *root.handlers):
        if not any(isinstance(f, _RpcNoise) for f in target.filters):
            target.addFilter(_RpcNoise())


def _tb_names(tb) -> str:
    names = []
    while tb is not None:
        names.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return " ".join(names)


_CLIENTS: dict[tuple[str, str | None], Any] = {}
_CLIENTS_LOCK = threading.Lock()
_KEY: dict[int, tuple[str, str | None]] = {}  # client -> its (uri, token)
_BROKEN: set[int] = set()  # clients whose server went away: connect() replaces them


def connect(uri: str, token: str | None = None):
    """A shared ``MilvusClient`` for ``uri`` (one per URI and token in this process: only one process may open a
    Milvus Lite file; several processes share one through ``milvus-lite server`` and an http:// URI).
    ``token`` defaults to the ``MILVUS_TOKEN`` environment variable."""
    uri = check_uri(uri)
    token = token if token is not None else (os.environ.get(TOKEN_ENV) or None)
    if uri.endswith(".db"):
        uri = os.path.abspath(uri)
        grpc_log = logging.getLogger("grpc._server")
        if not any(isinstance(f, _LiteNoise) for f in grpc_log.filters):
            grpc_log.addFilter(_LiteNoise())
        if not os.path.isdir(os.path.dirname(uri)):
            raise ConfigError(f"the folder of the Milvus Lite file {uri} does not exist; create it first")
    key = (uri, token)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is not None and id(client) in _BROKEN:  # its server went away: a new client, a new channel
            _forget(key, client)
            client = None
        if client is None:
            pymilvus = _pymilvus()
            _quiet_pymilvus()
            try:
                client = pymilvus.MilvusClient(uri=uri, **({"token": token} if token else {}))
                # the version is read now: what the engine may ask of this server, and what results record
                _INFO[id(client)] = ServerInfo.parse(client.get_server_version(timeout=CONNECT_TIMEOUT_S))
                _URI[id(client)] = uri
                _KEY[id(client)] = key
            except Exception as e:
                hint = ("another process may hold this Milvus Lite file (one process per file: serve it with "
                        "`milvus-lite server --data-dir D --port P` and use http://127.0.0.1:P)" if uri.endswith(".db")
                        else "check the address, that the server runs, and the token or user and password")
                raise MilvusError(f"cannot connect to Milvus at {redact_url(uri)}: {_secret_free(e, token)}; "
                                  f"{hint}") from None
            _CLIENTS[key] = client
        return client


def _forget(key: tuple[str, str | None], client) -> None:
    """Stop handing out ``client`` (its server went away). It is not closed: pymilvus may share its connection
    with the client that replaces it. It stays marked, so :func:`reopen` of it keeps trying for a new one."""
    _CLIENTS.pop(key, None)


def _unreachable(e: Exception) -> bool:
    """Whether a pymilvus failure says the server cannot be reached (it went away, or is restarting)."""
    text = str(e)
    return getattr(e, "code", None) == 2 or any(
        t in text for t in ("Fail connecting to server", "UNAVAILABLE", "Connection refused", "Socket closed"))


TRANSIENT = ("failed to get delegator", "shard leader", "channel not available")
"""What a Milvus server says for a moment after a collection was loaded or an alias moved, while a query node takes
up the collection's channel: the same request succeeds a moment later."""
TRANSIENT_WAITS_S = (0.1, 0.3, 0.6, 1.0, 2.0)  # the pauses before each retry of a transiently refused request


def _transient(e: Exception) -> bool:
    return any(t in str(e) for t in TRANSIENT)


def reopen(client):
    """``client`` again, or a new client for its URI and token when its server went away (pymilvus does not
    reconnect a channel to a restarted server by itself); :class:`MilvusError` while it is still away."""
    key = _KEY.get(id(client))
    if key is None or id(client) not in _BROKEN:
        return client
    return connect(*key)


def _secret_free(e: Exception, token: str | None) -> str:
    """An exception's text, one line, with URL credentials and the token (and its password part) removed."""
    text = " ".join(redact_text(e).split())
    for secret in {token or "", *(token or "").split(":", 1)[1:]} - {""}:
        if len(secret) >= 3:
            text = text.replace(secret, "***")
    return text[:400]


def close_all() -> None:
    """Close every client this process opened (tests; a Lite file can then be opened by another process)."""
    with _CLIENTS_LOCK:
        for client in _CLIENTS.values():
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        _CLIENTS.clear()
        _INFO.clear()
        _URI.clear()
        _KEY.clear()
        _BROKEN.clear()


# --- analysis ----------------------------------------------------------------------------------------------------
class Analyzer:
    """ragtune's BM25 analysis (bm25s's splitter, English stop words, Snowball stemming), as space-joined text."""

    def __init__(self, stemmer: str | None = "english", stopwords: str | None = "en"):
        from bm25s.tokenization import Tokenizer

        from ..retrieve.bm25 import _stemmer

        tok = Tokenizer(stopwords=stopwords or [], stemmer=None)
        self._split = tok.splitter
        self._stop = frozenset(tok.stopwords or ())
        self._stem = _stemmer(stemmer)
        self._memo: dict[str, str] = {}

    def tokens(self, text: str) -> list[str]:
        words = [w for w in self._split(text.lower()) if w not in self._stop]
        if self._stem is None:
            return words
        memo = self._memo
        out = []
        for w in words:
            s = memo.get(w)
            if s is None:
                s = self._stem(w)
                if len(memo) < 1_000_000:  # bounded: a server analyses every query
                    memo[w] = s
            out.append(s)
        return out

    def __call__(self, text: str) -> str:
        return " ".join(self.tokens(text))


def analyze(text: str, stemmer: str | None = "english", stopwords: str | None = "en") -> str:
    """``text`` as ragtune's BM25 sees it, tokens joined by spaces (what goes into the BM25 input field)."""
    return Analyzer(stemmer, stopwords)(text)


# --- filters -----------------------------------------------------------------------------------------------------
# ragtune's filter semantics (retrieve/filters.py) compare values three ways: as lowercase text when either side
# is a boolean, as numbers when the filter value is a number and the stored one is not text, and as text
# otherwise. Each stored value is written as the keys under which each way can find it, hashed with the field
# name (so expressions hold only hex literals: no quoting, no length surprises); ``<``..``>=`` compare the
# field's smallest or largest numeric value. Every atom is guarded so that it is true or false, never null:
# Milvus, like SQL, makes ``not (missing < 5)`` null, which would drop chunks that ragtune's ``not`` keeps.
def _h(*parts: str) -> str:
    return "h" + hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=8).hexdigest()


def _canon(x: int | float) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 2 ** 63:
        return str(int(x))
    return str(x) if isinstance(x, int) else repr(x)


def _number(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        v = float(x)
    else:
        try:
            v = float(str(x))
        except (ValueError, OverflowError):
            return None
    if math.isnan(v):
        return None
    return max(min(v, 1.7976931348623157e308), -1.7976931348623157e308)


def _value_keys(x: Any) -> list[str]:
    if isinstance(x, bool):
        return ["b:" + str(x).lower()]
    keys = ["a:" + str(x).lower(), "s:" + str(x)]
    if isinstance(x, (int, float)):
        keys.append("n:" + _canon(x))
    return keys


def _query_keys(c: Any) -> list[str]:
    low = str(c).lower()
    if isinstance(c, bool):
        return ["b:" + low, "a:" + low]
    if isinstance(c, (int, float)):
        return ["b:" + low, "n:" + _canon(c), "s:" + str(c)]
    return ["b:" + low, "s:" + str(c)]


def filter_record(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The ``meta`` JSON of one chunk: its filter fields (``chunk_fields``) encoded for :func:`filter_expr`."""
    keys: list[str] = []
    present: list[str] = []
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    for name, v in fields.items():
        fh = _h(name)
        present.append(fh)
        values = v if isinstance(v, (list, tuple, set)) else [v]
        nums = []
        for x in values:
            keys.extend(_h(name, k) for k in _value_keys(x))
            n = _number(x)
            if n is not None:
                nums.append(n)
        if nums:
            lo[fh], hi[fh] = min(nums), max(nums)
    return {"k": sorted(set(keys)), "p": present, "n": sorted(lo), "lo": lo, "hi": hi}


def _literal(v: float | int) -> str:
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else repr(float(v))


def filter_expr(flt: Any) -> str | None:
    """A Milvus boolean ``expr`` over the ``meta`` field for a ragtune filter (string or parsed), or None."""
    flt = parse_filter(flt)
    if flt is None:
        return None
    return _expr(flt)


def _expr(f: Any) -> str:
    if isinstance(f, And):
        return "(" + " and ".join(_expr(p) for p in f.parts) + ")"
    if isinstance(f, Or):
        return "(" + " or ".join(_expr(p) for p in f.parts) + ")"
    if isinstance(f, Not):
        return f"(not {_expr(f.part)})"
    if not isinstance(f, Cmp):
        raise ConfigError(f"the milvus engine cannot translate the filter part {f!r}; use =, !=, <, <=, >, >=, in, "
                          "and, or, not")
    fh = _h(f.field)
    if f.op in ("=", "in", "!="):
        values = f.value if f.op == "in" else (f.value,)
        keys = sorted({_h(f.field, k) for c in values for k in _query_keys(c)})
        if not keys:  # `in []` matches nothing
            return "(pk < 0)"
        any_ = f"json_contains_any(meta[\"k\"], [{', '.join(json.dumps(k) for k in keys)}])"
        if f.op == "!=":
            return f"(json_contains(meta[\"p\"], \"{fh}\") and not {any_})"
        return any_
    side = "lo" if f.op in ("<", "<=") else "hi"
    return f"(json_contains(meta[\"n\"], \"{fh}\") and meta[\"{side}\"][\"{fh}\"] {f.op} {_literal(f.value)})"


# --- collections -------------------------------------------------------------------------------------------------
def _utf8_len(s: str) -> int:
    return len(s.encode("utf-8"))


def _check_varchar(what: str, chunk: Chunk, value: str, fix: str) -> None:
    n = _utf8_len(value)
    if n > MAX_VARCHAR_BYTES:
        raise ConfigError(f"chunk {chunk.id} of {chunk.doc_id!r}: its {what} is {n:,} bytes, over Milvus's VARCHAR "
                          f"limit of {MAX_VARCHAR_BYTES:,}; {fix}")


def _rows(chunks: Sequence[Chunk], vectors: np.ndarray | None, analyzer: Analyzer | None,
          start: int) -> Iterable[dict[str, Any]]:
    for i, c in enumerate(chunks, start):
        _check_varchar("document id", c, c.doc_id, "shorten the document ids")
        anchor = c.anchor
        _check_varchar("anchor", c, anchor, "shorten the heading ids")
        record = c.to_dict()
        blob = json.dumps(record, ensure_ascii=False)
        meta = filter_record(chunk_fields(c))
        if _utf8_len(blob) > MAX_JSON_BYTES or _utf8_len(json.dumps(meta)) > MAX_JSON_BYTES:
            raise ParameterError(": use a smaller chunk size ({}) or fewer metadata", "size",
                                 prefix=f"chunk {c.id} of {c.doc_id!r} is {_utf8_len(blob):,} bytes as JSON, over "
                                        f"Milvus's JSON limit of {MAX_JSON_BYTES:,}")
        row = {"pk": i, "chunk_id": c.id, "doc_id": c.doc_id, "anchor": anchor, "start": c.start, "end": c.end,
               "meta": meta, "chunk": record}
        if analyzer is not None:
            text = analyzer(c.embed_text)
            _check_varchar("analysed text", c, text, "use a smaller chunk size (--size)")
            row["text"] = text
        if vectors is not None:
            row["vec"] = vectors[i - start].tolist()
        yield row


def _batches(rows: Iterable[dict[str, Any]], dim: int) -> Iterable[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        est = 4 * dim + 2 * (len(row.get("text", "")) + len(json.dumps(row["chunk"]))) + 512
        if batch and (len(batch) >= BATCH_ROWS or size + est > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(row)
        size += est
    if batch:
        yield batch


def _schema(pymilvus, mode: str, dim: int | None, description: str):
    DataType = pymilvus.DataType
    s = pymilvus.MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False, description=description)
    s.add_field("pk", DataType.INT64, is_primary=True)
    s.add_field("chunk_id", DataType.VARCHAR, max_length=1024)
    s.add_field("doc_id", DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES)
    s.add_field("anchor", DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES)
    s.add_field("start", DataType.INT64)
    s.add_field("end", DataType.INT64)
    s.add_field("meta", DataType.JSON)
    s.add_field("chunk", DataType.JSON)
    if mode in ("bm25", "hybrid"):
        s.add_field("text", DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES, enable_analyzer=True,
                    analyzer_params={"type": "standard"})
        s.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        s.add_function(pymilvus.Function(name="bm25", function_type=pymilvus.FunctionType.BM25,
                                         input_field_names=["text"], output_field_names=["sparse"]))
    if mode in ("dense", "hybrid"):
        s.add_field("vec", DataType.FLOAT_VECTOR, dim=dim)
    return s


def _index_params(client, mode: str, config: Config | None = None):
    """``mode`` is the collection's: ``hybrid`` on a server without BM25 holds only the vectors (``dense``)."""
    ip = client.prepare_index_params()
    if mode in ("bm25", "hybrid"):
        ip.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25",
                     params={"bm25_k1": 1.5, "bm25_b": 0.75})  # Lite's fixed values; a server is told the same
    if mode in ("dense", "hybrid"):
        index = config.index_params() if isinstance(config, _VectorIndex) else {"index_type": "FLAT", "params": {}}
        ip.add_index("vec", metric_type="IP", **index)
    return ip


_INDEX_DEFAULTS = {f: getattr(_VectorIndex, f) for f in ("milvus_index", "hnsw_m", "hnsw_ef_construction", "hnsw_ef",
                                                          "ivf_nlist", "ivf_nprobe")}


_SEARCH_TIME = ("hnsw_ef", "ivf_nprobe")  # options of the search, not of the index


def content_name(chunks: Sequence[Chunk], config: Config, embedder_key: str | None) -> str:
    """A collection name that changes with anything the index depends on (chunks, analysis, vectors' model,
    the vector index; index options at their defaults are left out, so names from before they existed hold).
    The index options read only at search time (``hnsw_ef``, ``ivf_nprobe``) are left out too: a sweep over
    them searches one collection."""
    h = hashlib.sha256()
    settings = {k: v for k, v in config.to_dict().items() if k not in _SEARCH_TIME
                and not (k in _INDEX_DEFAULTS and v == _INDEX_DEFAULTS[k])}
    h.update(json.dumps([_mode(config), settings, embedder_key], sort_keys=True, default=str).encode())
    for c in chunks:
        h.update(hashlib.sha256(json.dumps(c.to_dict(), sort_keys=True, ensure_ascii=False).encode()).digest())
    return "ragtune_" + h.hexdigest()[:24]


def _fail(what: str, name: str, e: Exception) -> MilvusError:
    if _unreachable(e):
        return MilvusError(f"Milvus failed to {what} collection {name!r}: the server cannot be reached "
                           f"({_secret_free(e, None)[:200]})")
    return MilvusError(f"Milvus failed to {what} collection {name!r}: {_secret_free(e, None)}")


def drop_collection(client, name: str) -> None:
    """Drop ``name`` and every alias pointing at it first (Milvus refuses to drop an aliased collection)."""
    if not client.has_collection(name):
        return
    try:
        for alias in client.list_aliases(collection_name=name).get("aliases", []):
            client.drop_alias(alias)
        client.drop_collection(name)
    except Exception as e:
        raise _fail("drop", name, e) from None


def create_index(client, name: str, chunks: Sequence[Chunk], config: Config, *, vectors: np.ndarray | None = None,
                 replace: bool = False, properties: Mapping[str, str] | None = None) -> None:
    """Create collection ``name`` holding ``chunks`` (and their ``vectors`` for dense and hybrid), flushed and
    loaded. Written under a temporary name and renamed when complete, so a failed or killed load never leaves a
    collection under ``name``. An existing ``name`` is kept unless ``replace``."""
    pymilvus = _pymilvus()
    mode = _mode(config)
    info = server_info(client)
    _require(info, _URI.get(id(client), ""), mode, config)
    if mode == "hybrid" and not _server_bm25(info, mode):
        mode = "dense"  # the BM25 half is ragtune's own: the collection holds the vectors
    if chunks and vectors is None and not replace and client.has_collection(name):
        client.load_collection(name)  # built before (a configuration differing only at search time)
        return
    if mode != "bm25":
        if vectors is None:
            raise ConfigError(f"milvus-{mode} needs the chunk vectors")
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
            raise ConfigError(f"{vectors.shape} vectors for {len(chunks)} chunks")
    if not chunks:
        raise ConfigError("cannot build a Milvus index over zero chunks; is the corpus empty?")
    if client.has_collection(name) and not replace:
        return
    analyzer = Analyzer(config.stemmer, config.stopwords) if mode != "dense" else None
    dim = int(vectors.shape[1]) if vectors is not None else None
    tmp = f"{name}_tmp{os.getpid()}_{time.time_ns() % 10**12}"
    try:
        client.create_collection(tmp, schema=_schema(pymilvus, mode, dim, f"ragtune milvus-{_mode(config)}"),
                                 index_params=_index_params(client, mode, config))
        for batch in _batches(_rows(chunks, vectors if mode != "bm25" else None, analyzer, 0), dim or 0):
            client.insert(tmp, batch)
        client.flush(tmp)  # unflushed data is searched 10-50x slower on Lite
        props = {"ragtune.chunks": str(len(chunks)), "ragtune.mode": mode, **dict(properties or {})}
        client.alter_collection_properties(tmp, properties=props)
        if client.has_collection(name):
            if not replace:  # another process built the same content meanwhile: keep theirs, never drop a
                drop_collection(client, tmp)  # collection someone may be searching
                client.load_collection(name)
                return
            drop_collection(client, name)
        client.rename_collection(tmp, name)
        client.load_collection(name)
    except ConfigError:
        drop_collection(client, tmp)
        raise
    except Exception as e:
        if _unreachable(e):
            _BROKEN.add(id(client))  # the next connect() opens a new client
        try:
            drop_collection(client, tmp)
        except Exception:  # noqa: BLE001 - a server that went away cannot drop it: gc_builds does, later
            pass
        raise _fail("build", name, e) from None


# --- the retriever -----------------------------------------------------------------------------------------------
def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"k must be an integer >= 1, got {k!r}")
    if k > MAX_TOP_K:
        raise ConfigError(f"k={k} is over Milvus's top-k limit of {MAX_TOP_K:,}; ask for fewer results")
    return k


class MilvusRetriever:
    """Searches one Milvus collection (or alias) in ``bm25``, ``dense`` or ``hybrid`` mode.

    With ``chunks`` (the index's chunks, in row order), hits are those chunk objects and filters on unknown
    fields fail like the embedded engine's; without (a search through an alias that a promote may move), hits
    are rebuilt from the ``chunk`` field Milvus returns.
    """

    def __init__(self, client, collection: str, config: Config, *, chunks: Sequence[Chunk] | None = None,
                 embedder: Any = None, uri: str = "", load: bool = True, bm25: Any = None):
        self.mode = _mode(config)
        self.server = server_info(client)
        self.name = f"milvus-{self.mode}"
        self.client = client
        self.collection = collection
        self.embedder = embedder
        self.chunks = tuple(chunks) if chunks is not None else None
        self.vectors = None  # the chunk vectors when this retriever was just built from them (a store saves them)
        self._settings = config
        self._analyzer = Analyzer(config.stemmer, config.stopwords) if self.mode != "dense" else None
        self._known = (set().union(*(chunk_fields(c).keys() for c in self.chunks)) if self.chunks else None)
        self._exprs: dict[str, str | None] = {}
        self.config = {"engine": "milvus", "uri": redact_url(uri), "collection": collection, **config.to_dict(),
                       **self.server.to_dict()}
        self.config.pop("milvus_uri", None)
        if self.mode != "bm25" and embedder is None:
            raise ConfigError(f"{self.name} needs the pipeline's embedder for query vectors")
        _require(self.server, uri, self.mode, config)
        self._bm25_here = None  # ragtune's BM25, for hybrid on a server without BM25
        if self.mode == "hybrid":
            self.config["hybrid_bm25"] = "milvus" if self.server.bm25 else "ragtune"
            if not self.server.bm25:
                self._bm25_here = bm25 if bm25 is not None else self._own_bm25(uri)
        if load:
            try:
                client.load_collection(collection)  # after a reopen a collection is not searchable until loaded
            except Exception as e:
                raise MilvusError(f"cannot load Milvus collection {collection!r}: {redact_text(e)}. Was the index built with this "
                                  "milvus_uri? (`ragtune index build --engine milvus --milvus-uri ...`)") from None

    def _own_bm25(self, uri: str):
        if self.chunks is None:
            raise _lacks(self.server, uri, "server-side BM25, and a search through an alias holds no chunks for "
                         "ragtune's own", "serve a milvus-dense version, or load the version with its chunks "
                         "(load_pipeline)")
        from ..retrieve.bm25 import BM25Config, BM25Retriever

        cfg = self._settings
        return BM25Retriever.build(self.chunks, BM25Config(stemmer=cfg.stemmer, stopwords=cfg.stopwords))

    # -- pieces ---------------------------------------------------------------------------------------------
    def _expr(self, filters: Any) -> str | None:
        if filters is None:
            return None
        key = filters if isinstance(filters, str) else repr(filters)
        if key in self._exprs:
            return self._exprs[key]
        flt = parse_filter(filters)
        if flt is not None and self._known is not None:
            unknown = sorted(flt.fields() - self._known)
            if unknown:
                raise ConfigError(f"unknown filter field(s) {', '.join(map(repr, unknown))}; fields in this corpus: "
                                  f"{', '.join(sorted(self._known))}")
        expr = _expr(flt) if flt is not None else None
        if len(self._exprs) > 64:
            self._exprs.clear()
        self._exprs[key] = expr
        return expr

    @property
    def _fields(self) -> list[str]:
        return ["pk"] if self.chunks is not None else ["pk", "chunk"]

    def _chunk(self, hit: Mapping[str, Any]) -> Chunk:
        if self.chunks is not None:
            return self.chunks[int(hit["pk"] if "pk" in hit else hit["id"])]
        return Chunk.from_dict(hit["entity"]["chunk"])

    def _hits(self, result, positive: bool = False) -> list[Hit]:
        rows = result[0] if result else []
        # rank by Milvus's order, never re-sort by score: Lite reports BM25 scores negated
        return [Hit(self._chunk(r), abs(float(r["distance"])) if positive else float(r["distance"])) for r in rows]

    def _call(self, what: str, method: str, *args, **kwargs):
        """``self.client.<method>(...)``; a server that went away is one :class:`MilvusError` line (the server
        answers 503 with it), and the next call opens a new connection, so searches recover when it returns. A
        request refused while a query node takes up the collection (:data:`TRANSIENT`) is retried after each pause
        of :data:`TRANSIENT_WAITS_S`, then reported."""
        try:
            self.client = reopen(self.client)
            for wait in (*TRANSIENT_WAITS_S, None):
                try:
                    return getattr(self.client, method)(*args, **kwargs)
                except Exception as e:
                    if "not loaded" in str(e):  # a restarted server may come back with the collection released
                        self.client.load_collection(self.collection)
                        return getattr(self.client, method)(*args, **kwargs)
                    if wait is None or not _transient(e):
                        raise
                    time.sleep(wait)  # a query node still taking up the collection: the same call, a moment later
        except RagtuneError:
            raise
        except Exception as e:
            if _unreachable(e):
                _BROKEN.add(id(self.client))
                raise MilvusError(f"the Milvus server at {self.config['uri']} cannot be reached ({what} on "
                                  f"{self.collection!r}); searches resume when it is back") from None
            raise MilvusError(f"Milvus {what} on {self.collection!r} failed: {_secret_free(e, None)}") from None

    def _bm25(self, query: str, n: int, expr: str | None) -> list[Hit]:
        text = self._analyzer(query)
        if not text:  # no term survives analysis: nothing matches, as in the embedded engine
            return []
        res = self._call("BM25 search", "search", self.collection, data=[text], anns_field="sparse",
                         limit=n, filter=expr or "", output_fields=self._fields,
                         search_params={"metric_type": "BM25"}, timeout=SEARCH_TIMEOUT_S)
        return self._hits(res, positive=True)

    def _dense(self, q: np.ndarray, n: int, expr: str | None) -> list[Hit]:
        res = self._call("dense search", "search", self.collection, data=[q.tolist()], anns_field="vec",
                         limit=n, filter=expr or "", output_fields=self._fields,
                         search_params=self._settings.search_params(n), timeout=SEARCH_TIMEOUT_S)
        return self._hits(res)

    # -- search ---------------------------------------------------------------------------------------------
    def search(self, query: str, k: int = 10, filters: Any = None) -> Ranking:
        k = _check_k(k)
        expr = self._expr(filters)
        timings: dict[str, float] = {}
        if self.mode == "bm25":
            t0 = time.perf_counter()
            hits = self._bm25(query, k, expr)
            return Ranking(query, tuple(hits), {"milvus": time.perf_counter() - t0})
        t0 = time.perf_counter()
        q = np.asarray(self.embedder.embed_queries([query])[0], dtype=np.float32)
        timings["embed_query"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        if self.mode == "dense":
            hits = self._dense(q, k, expr)
        else:
            hits = self._hybrid(query, q, k, expr, filters)
        timings["milvus"] = time.perf_counter() - t1
        return Ranking(query, tuple(hits), timings)

    def _hybrid(self, query: str, q: np.ndarray, k: int, expr: str | None, filters: Any = None) -> list[Hit]:
        from ..retrieve.fusion import rrf

        cfg = self._settings
        n = max(cfg.fusion_depth, k)
        if self._bm25_here is not None:  # a server without BM25: ragtune's BM25 fused with the server's dense hits
            rankings = [self._bm25_here.search(query, n, filters), Ranking(query, tuple(self._dense(q, n, expr)))]
            return list(rrf(rankings, k=cfg.rrf_k, weights=cfg.weights, depth=n).hits[:k])
        text = self._analyzer(query)
        if cfg.weights is not None or not text:
            # weighted RRF, or no BM25 term: ragtune's own fusion over the two Milvus searches
            rankings = [Ranking(query, tuple(self._bm25(query, n, expr))), Ranking(query, tuple(self._dense(q, n, expr)))]
            return list(rrf(rankings, k=cfg.rrf_k, weights=cfg.weights, depth=n).hits[:k])
        pymilvus = _pymilvus()
        # the filter goes into each request: pymilvus drops a top-level filter= of hybrid_search
        reqs = [pymilvus.AnnSearchRequest(data=[text], anns_field="sparse", param={"metric_type": "BM25"}, limit=n,
                                          expr=expr or ""),
                pymilvus.AnnSearchRequest(data=[q.tolist()], anns_field="vec", param=cfg.search_params(n), limit=n,
                                          expr=expr or "")]
        res = self._call("hybrid search", "hybrid_search", self.collection, reqs,
                         pymilvus.RRFRanker(cfg.rrf_k), limit=k, output_fields=self._fields, timeout=SEARCH_TIMEOUT_S)
        return self._hits(res)


# --- registry factories --------------------------------------------------------------------------------------------
def build_retriever(config: Config, chunks: Sequence[Chunk], resources, *, collection: str | None = None,
                    replace: bool = False) -> MilvusRetriever:
    """Index ``chunks`` in Milvus at ``config.milvus_uri`` (reusing a complete collection with the same content)
    and return a retriever over it. Vectors come from the pipeline's embedder (through its cache) or the store."""
    uri = check_uri(config.milvus_uri)
    mode = _mode(config)
    if not chunks:
        raise ConfigError("cannot build a Milvus index over zero chunks; is the corpus empty?")
    embedder = resources.embedder() if mode != "bm25" else None
    client = connect(uri, _token(resources))
    name = collection or content_name(chunks, config, getattr(embedder, "cache_key", None))
    vectors = None
    if mode != "bm25":
        stored = getattr(resources, "stored", None)
        if stored is not None and stored.vectors is not None:
            vectors = np.asarray(stored.vectors, dtype=np.float32)
        elif replace or not client.has_collection(name):
            vectors = resources.dense(chunks).vectors
    create_index(client, name, chunks, config, vectors=vectors, replace=replace)
    r = MilvusRetriever(client, name, config, chunks=chunks, embedder=embedder, uri=uri)
    r.vectors = vectors
    if mode != "bm25" and config.milvus_index != "FLAT":  # what the approximate index costs, beside quality
        if vectors is None:
            vectors = resources.dense(chunks).vectors
        r.config.update(recall_vs_exact(r, vectors))
    return r


def recall_vs_exact(retriever: MilvusRetriever, vectors: np.ndarray, *, k: int = 10, probes: int = 200,
                    seed: int = 0) -> dict[str, Any]:
    """recall@k of the collection's vector index against exact search over ``vectors`` (its rows, in order):
    the share of the exact top k that the index returns, averaged over ``probes`` queries that are the normalised
    midpoints of two random chunk vectors (near the data, none of them a stored point)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    k = min(k, len(vectors))
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, len(vectors), size=(probes, 2))
    q = vectors[pairs[:, 0]] + vectors[pairs[:, 1]]
    q /= np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
    exact = np.argsort(-(q @ vectors.T), axis=1, kind="stable")[:, :k]
    res = retriever._call("dense search", "search", retriever.collection, data=q.tolist(), anns_field="vec",
                          limit=k, output_fields=["pk"], search_params=retriever._settings.search_params(k),
                          timeout=SEARCH_TIMEOUT_S)
    got = [{int(h["pk"] if "pk" in h else h["id"]) for h in row} for row in res]
    recall = float(np.mean([len(g & set(e.tolist())) / k for g, e in zip(got, exact)]))
    return {f"recall_vs_exact@{k}": round(recall, 4), "recall_probes": probes}


def _factory(config: Config, chunks: Sequence[Chunk], resources) -> MilvusRetriever:
    return build_retriever(config, chunks, resources)


def _load(config: Config, chunks: Sequence[Chunk], resources, folder) -> MilvusRetriever:
    """A store version's collection, reopened: the manifest's ``engine`` record (``resources.stored.engine``:
    its URI, or the one the caller reaches the same Milvus by, and the collection)."""
    engine = resources.stored.engine
    embedder = resources.embedder() if _mode(config) != "bm25" else None
    return MilvusRetriever(connect(engine["uri"], _token(resources)), engine["collection"], config, chunks=chunks,
                           embedder=embedder, uri=engine["uri"])


def _token(resources) -> str | None:
    """The server token given as a value (``Resources(credentials={"milvus": token})``); None: :func:`connect`'s
    default, the ``MILVUS_TOKEN`` environment variable."""
    credential = getattr(resources, "credential", None)
    return credential("milvus") if credential is not None else None


from ..registry import RETRIEVERS  # noqa: E402

RETRIEVERS.register("milvus-bm25", MilvusBM25Config, _factory, load=_load,
                    summary="BM25 in Milvus (Lite file or server) over ragtune's analysed tokens")
RETRIEVERS.register("milvus-dense", MilvusDenseConfig, _factory, load=_load, uses_embedder=True,
                    summary="exact inner product in Milvus (Lite file or server)")
RETRIEVERS.register("milvus-hybrid", MilvusHybridConfig, _factory, load=_load, uses_embedder=True,
                    summary="BM25 + dense in Milvus, fused by reciprocal rank fusion")
