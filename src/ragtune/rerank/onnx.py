"""A cross-encoder run by onnxruntime from a folder of plain files (no torch).

The folder convention (what :func:`ragtune.rerank_export.export_cross_encoder` writes)::

    model.onnx        fp32 graph: inputs input_ids, attention_mask[, token_type_ids] (int64), output logits
    model_int8.onnx   the same graph with int8 weights (dynamic quantisation), optional
    tokenizer.json    a Hugging Face ``tokenizers`` file that encodes (query, passage) pairs
    ragtune.json      optional: {"max_length": ..., "source": ..., "files": {...}}

``precision="auto"`` runs ``model_int8.onnx`` when the folder has it (it was exported on purpose, for speed),
else ``model.onnx``; ``fp32`` and ``int8`` ask for one file. The output is one logit per pair, or one per
class, of which the last (the positive class of a 2-class head) is the score.

Pairs are truncated to ``max_length`` tokens (longest sequence first, as transformers does), sorted by token
length, scored in batches padded to the longest pair of the batch, and returned in the input order.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ConfigError, MissingDependencyError, ParameterError

__all__ = ["OnnxCrossEncoder", "ONNX_FP32", "ONNX_INT8", "TOKENIZER", "MANIFEST", "onnx_file", "is_onnx_folder",
           "DEFAULT_MAX_LENGTH", "TRAINED_LENGTH_KEY", "trained_max_length"]

ONNX_FP32 = "model.onnx"
ONNX_INT8 = "model_int8.onnx"
TOKENIZER = "tokenizer.json"
MANIFEST = "ragtune.json"
PRECISIONS = ("auto", "fp32", "int8")
_INSTALL = "pip install onnxruntime tokenizers (dependencies of ragtune itself)"
DEFAULT_MAX_LENGTH = 256  # tokens per pair for a model that records no length of its own
TRAINED_LENGTH_KEY = "ragtune_max_length"  # config.json of a folder `reranker train` wrote: its training length


def trained_max_length(model: str | os.PathLike[str]) -> int | None:
    """The tokens per pair a model folder was trained or exported for: ``ragtune.json``'s ``max_length`` (an
    ONNX export), else ``config.json``'s ``ragtune_max_length`` (a folder ``reranker train`` wrote); None for
    a hub id or a folder that records neither. A model scores best on pairs as long as those it learned on."""
    p = Path(model).expanduser()
    if not p.is_dir():
        return None
    for name, key in ((MANIFEST, "max_length"), ("config.json", TRAINED_LENGTH_KEY)):
        try:
            value = json.loads((p / name).read_text(encoding="utf-8")).get(key) if (p / name).is_file() else None
        except (OSError, ValueError, AttributeError):
            value = None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def is_onnx_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder holding an ONNX cross-encoder (either graph)."""
    p = Path(path)
    return p.is_dir() and ((p / ONNX_FP32).is_file() or (p / ONNX_INT8).is_file())


def onnx_file(folder: str | os.PathLike[str], precision: str = "auto") -> Path:
    """The graph ``precision`` selects in ``folder``; a ConfigError names what is missing."""
    if precision not in PRECISIONS:
        raise ConfigError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    p = Path(folder)
    if not p.is_dir():
        raise ConfigError(f"{p}: not a folder; an ONNX cross-encoder is a folder with {ONNX_FP32} (or {ONNX_INT8}) "
                          f"and {TOKENIZER} (make one with export_cross_encoder / `ragtune reranker export`)")
    wanted = {"auto": (ONNX_INT8, ONNX_FP32), "fp32": (ONNX_FP32,), "int8": (ONNX_INT8,)}[precision]
    found = next((p / name for name in wanted if (p / name).is_file()), None)
    missing = [] if found else [" or ".join(wanted)]
    if not (p / TOKENIZER).is_file():
        missing.append(TOKENIZER)
    if missing:
        hint = " (export with int8=True / --int8 to make it)" if precision == "int8" else ""
        raise ConfigError(f"{p}: missing {' and '.join(missing)}; an ONNX cross-encoder folder holds {ONNX_FP32} "
                          f"(fp32) and/or {ONNX_INT8} (int8) and {TOKENIZER}{hint}")
    return found  # type: ignore[return-value]


class OnnxCrossEncoder:
    """Scores (query, passage) pairs with an ONNX cross-encoder. The constructor checks the files (cheap); the
    session and tokenizer load on first use.

    ``threads``: onnxruntime intra-op threads (0: up to 4, the cores available). ``batch_size``: pairs per run."""

    def __init__(self, folder: str | os.PathLike[str], *, precision: str = "auto", max_length: int | None = None,
                 batch_size: int = 16, threads: int = 0):
        self.folder = Path(folder)
        self.model_path = onnx_file(self.folder, precision)
        self.precision = "int8" if self.model_path.name == ONNX_INT8 else "fp32"
        # None: the length the folder records (its training length, carried by the export), else 256
        self.max_length = max_length if max_length is not None else (trained_max_length(self.folder)
                                                                     or DEFAULT_MAX_LENGTH)
        self.batch_size = batch_size
        self.threads = threads
        self._session = None
        self._tokenizer = None
        self._inputs: set[str] = set()

    @property
    def manifest(self) -> dict:
        """The folder's ``ragtune.json`` (empty when there is none)."""
        path = self.folder / MANIFEST
        if not path.is_file():
            return {}
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ConfigError(f"{path}: not readable JSON ({e}); re-export the model or delete the file") from None

    def warm_up(self) -> None:
        if self._session is not None:
            return
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError:
            raise MissingDependencyError(f"the ONNX cross-encoder needs: {_INSTALL}") from None
        try:
            tok = Tokenizer.from_file(str(self.folder / TOKENIZER))
        except Exception as e:
            raise ConfigError(f"{self.folder / TOKENIZER}: not a tokenizers file ({e})") from None
        tok.no_padding()
        limit = self.manifest.get("max_positions")  # never feed the model more positions than it has
        if isinstance(limit, int) and 0 < limit < self.max_length:
            self.max_length = limit
        tok.enable_truncation(max_length=self.max_length, strategy="longest_first")
        from ..embed.onnx import cpu_session

        try:
            session = cpu_session(ort, self.model_path, self.threads, inter_op_threads=1)
        except Exception as e:
            raise ConfigError(f"{self.model_path}: onnxruntime cannot load it ({str(e).splitlines()[0]})") from None
        self._inputs = {i.name for i in session.get_inputs()}
        if "input_ids" not in self._inputs:
            raise ConfigError(f"{self.model_path}: expected an input named input_ids, found {sorted(self._inputs)}")
        self._tokenizer, self._session = tok, session

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """One score per text (float64), in the order of ``texts``."""
        self.warm_up()
        assert self._tokenizer is not None and self._session is not None
        if not texts:
            return np.zeros(0, dtype=np.float64)
        encs = self._tokenizer.encode_batch([(query, t) for t in texts])
        order = sorted(range(len(encs)), key=lambda i: len(encs[i].ids))  # similar lengths pad less
        out = np.empty(len(encs), dtype=np.float64)
        for b in range(0, len(order), self.batch_size):
            idx = order[b:b + self.batch_size]
            width = max(len(encs[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for row, i in enumerate(idx):
                e = encs[i]
                n = len(e.ids)
                ids[row, :n], mask[row, :n], types[row, :n] = e.ids, e.attention_mask, e.type_ids
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = types
            try:
                raw = self._session.run(None, feeds)[0]
            except Exception as e:  # e.g. inputs longer than the model's position embeddings
                raise ParameterError("; if the model reads fewer tokens, lower {}", "rerank_max_length",
                                     prefix=f"{self.model_path}: onnxruntime failed on a batch of {len(idx)} pairs "
                                            f"of up to {width} tokens ({str(e).splitlines()[0][:200]})") from None
            logits = np.asarray(raw, dtype=np.float64).reshape(len(idx), -1)
            out[idx] = logits[:, -1]
        return out
