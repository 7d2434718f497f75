"""Export a cross-encoder to an ONNX folder that the ``cross-encoder`` reranker runs without torch.

:func:`export_cross_encoder` reads a Hugging Face / sentence-transformers cross-encoder folder (or hub id)
with ``AutoModelForSequenceClassification`` + ``AutoTokenizer`` (extras ``st`` and ``onnx``: transformers, torch
and onnx, imported here only) and writes, into ``out_dir`` (see :mod:`ragtune.rerank.onnx` for the convention)::

    model.onnx        fp32
    model_int8.onnx   int8 weights by onnxruntime's dynamic quantisation (``int8=True``)
    tokenizer.json    the fast tokenizer
    ragtune.json      {"format": 1, "source": ..., "max_length": ..., "num_labels": ..., "files": {...}}
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from .errors import ConfigError, MissingDependencyError
from .config import Opt

__all__ = ["ExportOptions", "ExportResult", "export_cross_encoder"]

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass(frozen=True)
class ExportOptions:
    """``int8``: also write ``model_int8.onnx``. ``max_length``: recorded in ``ragtune.json`` as the length the
    model was meant to read (the graph itself takes any length up to the model's position embeddings); by
    default the length the source folder was trained for (``reranker train`` records it), else 256.
    ``opset``: the ONNX opset. ``overwrite``: replace the ONNX files of a folder that has them."""

    int8: Annotated[bool, Opt("also write model_int8.onnx (dynamic int8 quantisation: about half the CPU time)")] = False
    max_length: Annotated[int | None, Opt(
        "tokens per pair the model is meant to read (recorded in ragtune.json; default: the length the source was "
        "trained for, else 256)", lo=1, hi=8192)] = None
    opset: Annotated[int, Opt("ONNX opset", lo=13, hi=21)] = 17
    overwrite: Annotated[bool, Opt("replace the ONNX files of a folder that has them")] = False

    def __post_init__(self) -> None:
        if self.max_length is not None and (isinstance(self.max_length, bool) or not isinstance(self.max_length, int)
                                            or self.max_length < 1):
            raise ConfigError(f"max_length must be an integer >= 1, got {self.max_length!r}")
        if isinstance(self.opset, bool) or not isinstance(self.opset, int) or not 13 <= self.opset <= 21:
            raise ConfigError(f"opset must be an integer in 13..21, got {self.opset!r}")


@dataclass(frozen=True)
class ExportResult:
    out_dir: Path
    files: dict[str, str] = field(default_factory=dict)  # role -> file name
    num_labels: int = 1
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"out_dir": str(self.out_dir), "files": dict(self.files), "num_labels": self.num_labels,
                "seconds": round(self.seconds, 3)}


def _load(source: str):
    try:
        import onnx  # noqa: F401  (torch's exporter and the int8 quantiser write through it)
        import torch  # noqa: F401
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
    except ImportError:
        raise MissingDependencyError("exporting a cross-encoder needs transformers, torch and onnx: "
                                     "pip install 'ragtune[st,onnx]'") from None
    p = Path(source)
    if p.exists() and not (p / "config.json").is_file():
        raise ConfigError(f"{source}: no config.json there; export reads a Hugging Face / sentence-transformers "
                          "cross-encoder folder (config.json, weights and tokenizer files) or a hub id")
    local_only = p.is_dir()
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local_only)
        # eager attention traces to plain ops that every onnxruntime runs
        model = AutoModelForSequenceClassification.from_pretrained(source, local_files_only=local_only,
                                                                   attn_implementation="eager")
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot load cross-encoder {source!r}: {str(e).splitlines()[0]}") from None
    if not getattr(tokenizer, "is_fast", False):
        raise ConfigError(f"{source}: its tokenizer has no fast (tokenizer.json) form; ONNX inference reads "
                          "tokenizer.json")
    return model.eval(), tokenizer


def export_cross_encoder(source: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, int8: bool = False,
                         max_length: int | None = None, options: ExportOptions | None = None) -> ExportResult:
    """Write ``source`` (a cross-encoder folder or hub id) as an ONNX folder ``out_dir``; returns what was
    written. ``options`` overrides ``int8`` and ``max_length``."""
    import tempfile
    import time

    opts = options or ExportOptions(int8=int8, max_length=max_length)
    t0 = time.perf_counter()
    out = Path(out_dir)
    from .rerank.onnx import DEFAULT_MAX_LENGTH, MANIFEST, ONNX_FP32, ONNX_INT8, TOKENIZER, trained_max_length

    length = opts.max_length if opts.max_length is not None else (trained_max_length(source) or DEFAULT_MAX_LENGTH)

    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out}: exists and is not a folder; choose another --out")
    if not opts.overwrite and any((out / f).exists() for f in (ONNX_FP32, ONNX_INT8)):
        raise ConfigError(f"{out}: already holds an exported model; choose another folder or pass overwrite")
    model, tokenizer = _load(str(source))
    import torch

    out.mkdir(parents=True, exist_ok=True)
    # a dummy pair: two examples of different lengths, so the traced graph keeps batch and length dynamic
    enc = tokenizer(["a question", "another question here"], ["a short passage", "a longer passage to read here"],
                    padding=True, truncation=True, max_length=length, return_tensors="pt")
    names = [n for n in _INPUTS if n in enc]
    args = tuple(enc[n] for n in names)
    dynamic = {n: {0: "batch", 1: "sequence"} for n in names} | {"logits": {0: "batch"}}
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        tmp_fp32 = Path(tmp) / ONNX_FP32
        import warnings

        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer chatter about Python booleans in the masking code
            torch.onnx.export(model, args, str(tmp_fp32), input_names=names, output_names=["logits"],
                              dynamic_axes=dynamic, opset_version=opts.opset, dynamo=False)
        files = {"fp32": ONNX_FP32}
        if opts.int8:
            try:
                from onnxruntime.quantization import QuantType, quantize_dynamic
            except ImportError:
                raise MissingDependencyError("int8 quantisation needs onnxruntime: pip install onnxruntime") from None
            import logging

            logging.disable(logging.WARNING)  # its advice to pre-process goes to the root logger
            try:
                quantize_dynamic(str(tmp_fp32), str(Path(tmp) / ONNX_INT8), weight_type=QuantType.QInt8)
            finally:
                logging.disable(logging.NOTSET)
            files["int8"] = ONNX_INT8
        for name in files.values():
            os.replace(Path(tmp) / name, out / name)
    tokenizer.backend_tokenizer.save(str(out / TOKENIZER))
    files["tokenizer"] = TOKENIZER
    num_labels = int(getattr(model.config, "num_labels", 1))
    positions = getattr(model.config, "max_position_embeddings", None)  # the longest input the model can read
    manifest = {"format": 1, "kind": "cross-encoder", "source": str(source),
                "max_length": min(length, positions) if positions else length,
                "max_positions": positions, "num_labels": num_labels, "inputs": names, "files": files}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    files["manifest"] = MANIFEST
    return ExportResult(out, files, num_labels, time.perf_counter() - t0)
