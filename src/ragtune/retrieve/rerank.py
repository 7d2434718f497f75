"""Rerankers: rescore the shortlist of any retriever.

One protocol, ``rerank(query, ranking) -> Ranking``. Built-in kinds:

- ``EmbeddingReranker``: rescore with a second, different embedder (works offline; a weak fallback: it
  lowered quality on some held-out sets). Each chunk is cut to the embedder's window (one window, the
  start of the chunk), never embedded as several windows;
- ``CrossEncoderReranker``: a cross-encoder scores each (query, chunk) pair jointly, through onnxruntime
  from a folder with ``model.onnx``/``model_int8.onnx`` + ``tokenizer.json`` (:mod:`.onnx_rerank`), or through
  sentence-transformers (any model id or local folder). No trained cross-encoder ships in a package reachable
  offline; the tests build tiny random ones to check the plumbing.

Every reranker config derives from :class:`RerankerConfig`, which adds the ``mode`` of the stage:
``replace`` orders the shortlist by the reranker's scores, ``fuse`` by reciprocal rank fusion of the
reranker's rank and the first stage's rank (:func:`fuse_with_first_stage`). A reranker object carries its
``mode`` and ``fuse_k`` as attributes; :class:`RerankedRetriever` reads them (absent: ``replace``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from ..config import Config, Opt, check_choice, check_range
from ..errors import ConfigError, MissingDependencyError
from ..stages import Reranker
from ..types import Hit, Ranking
from .base import Retriever, warm_up

__all__ = ["Reranker", "RerankerConfig", "EmbeddingReranker", "EmbeddingRerankerConfig", "CrossEncoderReranker",
           "CrossEncoderConfig", "RerankedRetriever", "fuse_with_first_stage", "truncate_to_window", "MODES",
           "DEFAULT_MODE"]

MODES = ("replace", "fuse")
# fuse by default: a reranker not known to dominate the first stage should not overrule it. On SciFact a
# cross-encoder trained here scored nDCG@10 0.704 alone (replace) against 0.715 for its first stage and 0.733 fused.
DEFAULT_MODE = "fuse"
BACKENDS = ("auto", "onnx", "st")




def _reorder(query: str, ranking: Ranking, scores: Sequence[float], stage: str, seconds: float) -> Ranking:
    order = sorted(range(len(ranking.hits)), key=lambda i: -scores[i])  # stable on ties
    hits = tuple(Hit(ranking.hits[i].chunk, float(scores[i])) for i in order)
    return Ranking(query, hits, {**ranking.timings, stage: seconds})


def fuse_with_first_stage(first: Ranking, reranked: Ranking, *, k: int = 60) -> Ranking:
    r"""Reciprocal rank fusion of the reranker's order and the first stage's:
    :math:`score(c) = 1/(k + rank_{rerank}(c)) + 1/(k + rank_{first}(c))`, ranks from 1.

    Ties (a chunk the reranker moves up by as many places as another moves down) keep the reranker's order.
    Timings are the reranked ranking's (the fusion itself is microseconds)."""
    from .fusion import rrf

    fused = rrf([reranked, first], k=k)
    return Ranking(reranked.query, fused.hits, dict(reranked.timings))


def _mode_options(mode: str, fuse_k: int) -> tuple[str, int]:
    check_choice("reranker", "mode", mode, MODES)
    check_range("reranker", "fuse_k", fuse_k, lo=0, integer=True)
    return mode, fuse_k


def truncate_to_window(embedder, texts: Sequence[str]) -> list[str]:
    """Each text cut to the start that fits ``embedder``'s window (``max_tokens``, counted by its
    ``count_tokens``, prefix and special tokens included); texts that fit, or an embedder that cannot count,
    are returned unchanged. The cut falls on a character boundary found by bisection, so the kept text is
    the longest prefix that fits."""
    inner = getattr(embedder, "inner", embedder)
    count = getattr(inner, "count_tokens", None)
    limit = getattr(embedder, "max_tokens", None)
    if count is None or not limit:
        return list(texts)
    out = list(texts)
    for i, n in enumerate(count(out)):
        if n <= limit:
            continue
        text = out[i]
        lo, hi = 0, len(text)  # count(text[:lo]) <= limit < count(text[:hi])
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if count([text[:mid]])[0] <= limit:
                lo = mid
            else:
                hi = mid
        out[i] = text[:lo]
    return out


class EmbeddingReranker:
    """Rescores the shortlist by the cosine of a second embedder's vectors. A weak offline fallback: a second
    bi-encoder reads query and chunk apart, as the first stage already did, so it often does not help."""

    name = "embedding"

    def __init__(self, embedder, *, mode: str = "replace", fuse_k: int = 60):
        self.embedder = embedder
        self.mode, self.fuse_k = _mode_options(mode, fuse_k)
        self.config = {"embedder": embedder.model_id, "mode": self.mode, "fuse_k": self.fuse_k}

    def warm_up(self) -> None:
        warm_up(self.embedder)

    def rerank(self, query: str, ranking: Ranking) -> Ranking:
        t0 = time.perf_counter()
        if not ranking.hits:
            return Ranking(query, (), {**ranking.timings, "rerank": 0.0})
        q = self.embedder.embed_queries([query])[0]
        p = self.embedder.embed(truncate_to_window(self.embedder, [h.chunk.embed_text for h in ranking.hits]))
        return _reorder(query, ranking, (p @ q).tolist(), "rerank", time.perf_counter() - t0)


def pick_backend(model: str, backend: str = "auto") -> str:
    """``onnx`` or ``st`` for ``model``: ``auto`` means ONNX for a folder holding an ONNX graph, else
    sentence-transformers."""
    from .onnx_rerank import is_onnx_folder

    from pathlib import Path

    from .onnx_rerank import ONNX_FP32, ONNX_INT8, TOKENIZER

    check_choice("CrossEncoderConfig", "backend", backend, BACKENDS)
    if backend != "auto":
        return backend
    if is_onnx_folder(model):
        return "onnx"
    if Path(model).is_dir() and not (Path(model) / "config.json").is_file():
        raise ConfigError(f"{model}: this folder holds no cross-encoder: expected {ONNX_FP32} (or {ONNX_INT8}) and "
                          f"{TOKENIZER} (ONNX), or config.json and weights (sentence-transformers / Hugging Face)")
    return "st"


class CrossEncoderReranker:
    """Scores (query, chunk) pairs jointly. The model loads on first use, under a spinner on a terminal.

    ``backend``: ``onnx`` (a folder with ``model.onnx``/``model_int8.onnx`` + ``tokenizer.json``, see
    :mod:`.onnx_rerank`), ``st`` (sentence-transformers: a model id or folder) or ``auto`` (ONNX when the
    folder holds a graph). Pairs are truncated to ``max_length`` tokens.

    A sentence-transformers model that is not a local folder nor in the Hugging Face cache fails in about a
    second when the hub is unreachable (:func:`ragtune.embed.hub.require_model`), instead of a minute of
    network retries."""

    name = "cross-encoder"

    def __init__(self, model: str, *, batch_size: int = 16, max_length: int | None = None, device: str = "cpu",
                 backend: str = "auto", precision: str = "auto", threads: int = 0, mode: str = "replace",
                 fuse_k: int = 60):
        from .onnx_rerank import DEFAULT_MAX_LENGTH, trained_max_length

        self.model_name = model
        self.batch_size = batch_size
        # None: the length the model folder was trained (or exported) for, else 256; an explicit value wins
        max_length = max_length if max_length is not None else (trained_max_length(model) or DEFAULT_MAX_LENGTH)
        self.max_length = max_length
        self.device = device
        self.backend = pick_backend(model, backend)
        self.precision = precision
        self.threads = threads
        self.mode, self.fuse_k = _mode_options(mode, fuse_k)
        self._model = None
        self._onnx = None
        if self.backend == "onnx":
            from .onnx_rerank import OnnxCrossEncoder

            self._onnx = OnnxCrossEncoder(model, precision=precision, max_length=max_length, batch_size=batch_size,
                                          threads=threads)  # checks the files now; loads on first use
            self.precision = self._onnx.precision
        elif precision != "auto":
            raise ConfigError(f"precision={precision!r} applies to the ONNX backend; {model!r} runs through "
                              "sentence-transformers (export it to ONNX, or leave precision at auto)")
        self.config = {"model": model, "backend": self.backend, "max_length": max_length, "mode": self.mode,
                       "fuse_k": self.fuse_k, **({"precision": self.precision} if self.backend == "onnx" else {})}

    def warm_up(self) -> None:
        if self._onnx is not None:
            self._onnx.warm_up()
            return
        if self._model is not None:
            return
        import importlib.util

        from ..embed.hub import require_model
        from ..progress import status

        if importlib.util.find_spec("sentence_transformers") is None:
            raise MissingDependencyError("the cross-encoder reranker needs: pip install 'ragtune[st]' "
                                         "(an exported ONNX folder needs no extra)")
        local_only = require_model(self.model_name, what="cross-encoder", flag="--rerank-model ")
        try:
            with status(f"loading {self.model_name}"):
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(self.model_name, max_length=self.max_length, device=self.device,
                                           local_files_only=local_only)
        except OSError as e:
            raise ConfigError(f"cannot load cross-encoder {self.model_name!r}: {e}") from None

    def rerank(self, query: str, ranking: Ranking) -> Ranking:
        self.warm_up()
        t0 = time.perf_counter()
        if not ranking.hits:
            return Ranking(query, (), {**ranking.timings, "rerank": 0.0})
        texts = [h.chunk.embed_text for h in ranking.hits]
        if self._onnx is not None:
            col = self._onnx.score(query, texts)
        else:
            pairs = [(query, t) for t in texts]
            scores = np.asarray(self._model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False),  # type: ignore[union-attr]
                                dtype=np.float64).reshape(len(pairs), -1)
            col = scores[:, -1]
        return _reorder(query, ranking, col.tolist(), "rerank", time.perf_counter() - t0)


class RerankedRetriever:
    """``base`` retrieves ``candidates`` chunks; ``reranker`` reorders them.

    ``mode`` (default: the reranker's ``mode`` attribute, else ``replace``): ``replace`` keeps the reranker's
    order; ``fuse`` fuses it with the first stage's by RRF (``fuse_k``, default the reranker's or 60). Below
    the reranked shortlist, the rest of the base ranking follows in its own order (so metrics deeper than
    ``candidates`` still see it).
    """

    def __init__(self, base: Retriever, reranker: Reranker, *, candidates: int = 50, mode: str | None = None,
                 fuse_k: int | None = None):
        if candidates < 1:
            raise ConfigError(f"candidates must be >= 1, got {candidates}")
        self.base = base
        self.reranker = reranker
        self.candidates = candidates
        self.mode, self.fuse_k = _mode_options(mode or getattr(reranker, "mode", "replace"),
                                               fuse_k if fuse_k is not None else getattr(reranker, "fuse_k", 60))
        self.name = f"{base.name}+{reranker.name}"
        self.config = {"base": getattr(base, "config", None), "reranker": getattr(reranker, "config", None),
                       "candidates": candidates}

    def warm_up(self) -> None:
        warm_up(self.base)
        warm_up(self.reranker)

    def search(self, query: str, k: int = 10, filters=None) -> Ranking:
        base = self.base.search(query, k=max(k, self.candidates), filters=filters)
        head = Ranking(query, base.hits[: self.candidates], base.timings)
        reranked = self.reranker.rerank(query, head)
        if self.mode == "fuse":
            reranked = fuse_with_first_stage(head, reranked, k=self.fuse_k)
        return Ranking(query, (reranked.hits + base.hits[self.candidates:])[:k], reranked.timings)


@dataclass(frozen=True)
class RerankerConfig(Config):
    """Options every reranker takes (flags ``--rerank-mode``, ``--rerank-fuse-k``; grid keys ``rerank_mode``,
    ``rerank_fuse_k``). Subclass it for a new reranker and give the built object ``mode``/``fuse_k``."""

    mode: Annotated[str, Opt(
        "fuse: RRF of the reranker's and the first stage's ranks (default); replace: order by reranker "
        "score")] = DEFAULT_MODE
    fuse_k: Annotated[int, Opt("RRF constant of --rerank-mode fuse")] = 60

    def __post_init__(self) -> None:
        check_choice(type(self).__name__, "mode", self.mode, MODES)
        check_range(type(self).__name__, "fuse_k", self.fuse_k, lo=0, integer=True)


@dataclass(frozen=True)
class EmbeddingRerankerConfig(RerankerConfig):
    """Rescore the shortlist with a second embedder (offline default: e5-small). A weak offline fallback."""

    model: Annotated[str, Opt(
        "reranker model: a folder (ONNX or sentence-transformers), a Hugging Face id, or an embedder "
        "name")] = "e5-small"

    def __post_init__(self) -> None:
        super().__post_init__()
        from ..registry import EMBEDDERS

        EMBEDDERS.get(self.model)


@dataclass(frozen=True)
class CrossEncoderConfig(RerankerConfig):
    """A cross-encoder: an ONNX folder (``model.onnx``/``model_int8.onnx`` + ``tokenizer.json``), a
    sentence-transformers folder or a Hugging Face id.

    ``max_length``: by default the length the model folder records (a folder from ``reranker train`` or its
    ONNX export: the training length, so inference reads pairs as long as those the model learned on), else 256.
    A cross-encoder's cost grows with the tokens of every pair (attention
    quadratically), and on a CPU 50 pairs of 512 tokens take about twice as long as 256 for little gain on
    passages that mostly fit in 256 tokens. ``threads`` 0: onnxruntime uses up to 4 cores."""

    model: Annotated[str, Opt(
        "reranker model: a folder (ONNX or sentence-transformers), a Hugging Face id, or an embedder "
        "name")] = "cross-encoder/ms-marco-MiniLM-L-6-v2"
    backend: Annotated[str, Opt("cross-encoder runtime: auto, onnx or st (sentence-transformers)")] = "auto"
    precision: Annotated[str, Opt("ONNX weights: auto (int8 when the folder has them), fp32, int8")] = "auto"
    max_length: Annotated[int | None, Opt("tokens per (question, passage) pair; fewer is faster (default: the "
                                          "length the model was trained for, when its folder records it; "
                                          "else 256)")] = None
    batch_size: Annotated[int, Opt("pairs scored per batch")] = 16
    threads: Annotated[int, Opt("CPU threads for scoring (0: up to 4)")] = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError(f"CrossEncoderConfig: model must be a model id or folder, got {self.model!r}")
        check_choice("CrossEncoderConfig", "backend", self.backend, BACKENDS)
        check_choice("CrossEncoderConfig", "precision", self.precision, ("auto", "fp32", "int8"))
        if self.max_length is not None:
            check_range("CrossEncoderConfig", "max_length", self.max_length, lo=1, integer=True)
        check_range("CrossEncoderConfig", "batch_size", self.batch_size, lo=1, integer=True)
        check_range("CrossEncoderConfig", "threads", self.threads, lo=0, integer=True)


def _embedding(config: EmbeddingRerankerConfig) -> EmbeddingReranker:
    from ..embed import CachedEmbedder, get_embedder

    return EmbeddingReranker(CachedEmbedder(get_embedder(config.model)), mode=config.mode, fuse_k=config.fuse_k)


def _cross_encoder(config: CrossEncoderConfig) -> CrossEncoderReranker:
    return CrossEncoderReranker(config.model, max_length=config.max_length, batch_size=config.batch_size,
                                backend=config.backend, precision=config.precision, threads=config.threads,
                                mode=config.mode, fuse_k=config.fuse_k)


from ..registry import RERANKERS  # noqa: E402

RERANKERS.register("embedding", EmbeddingRerankerConfig, _embedding,
                   summary="a second embedder rescores the shortlist (weak offline fallback)")
RERANKERS.register("cross-encoder", CrossEncoderConfig, _cross_encoder,
                   summary="a cross-encoder scores (query, chunk) pairs jointly (ONNX folder or sentence-transformers)")
