"""The ``cross-encoder`` reranker: a cross-encoder scores each (query, chunk) pair jointly.

Through onnxruntime from a folder with ``model.onnx``/``model_int8.onnx`` + ``tokenizer.json`` (:mod:`.onnx`),
or through sentence-transformers (any model id or local folder). No trained cross-encoder ships in a package
reachable offline; the tests build tiny random ones to check the plumbing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from ..config import Opt, check_choice, check_range
from ..errors import ConfigError, MissingDependencyError
from ..types import Ranking
from .base import RerankerConfig, _mode_options, _reorder

__all__ = ["CrossEncoderReranker", "CrossEncoderConfig", "pick_backend", "BACKENDS"]

BACKENDS = ("auto", "onnx", "st")


def pick_backend(model: str, backend: str = "auto") -> str:
    """``onnx`` or ``st`` for ``model``: ``auto`` means ONNX for a folder holding an ONNX graph, else
    sentence-transformers."""
    from .onnx import is_onnx_folder

    from pathlib import Path

    from .onnx import ONNX_FP32, ONNX_INT8, TOKENIZER

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
    :mod:`.onnx`), ``st`` (sentence-transformers: a model id or folder) or ``auto`` (ONNX when the
    folder holds a graph). Pairs are truncated to ``max_length`` tokens.

    A sentence-transformers model that is not a local folder nor in the Hugging Face cache fails in about a
    second when the hub is unreachable (:func:`ragtune.embed.hub.require_model`), instead of a minute of
    network retries."""

    name = "cross-encoder"

    def __init__(self, model: str, *, batch_size: int = 16, max_length: int | None = None, device: str = "cpu",
                 backend: str = "auto", precision: str = "auto", threads: int = 0, mode: str = "replace",
                 fuse_k: int = 60):
        from .onnx import DEFAULT_MAX_LENGTH, trained_max_length

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
            from .onnx import OnnxCrossEncoder

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


def _cross_encoder(config: CrossEncoderConfig) -> CrossEncoderReranker:
    return CrossEncoderReranker(config.model, max_length=config.max_length, batch_size=config.batch_size,
                                backend=config.backend, precision=config.precision, threads=config.threads,
                                mode=config.mode, fuse_k=config.fuse_k)


from ..registry import RERANKERS  # noqa: E402

RERANKERS.register("cross-encoder", CrossEncoderConfig, _cross_encoder,
                   summary="a cross-encoder scores (query, chunk) pairs jointly (ONNX folder or sentence-transformers)")
