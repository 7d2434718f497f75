"""What every command shares: typed flags, the pipeline flags derived from the stage registries, the output
convention (``--json`` prints machine-readable output, ``--out FILE`` writes it) and loading a pipeline."""

from __future__ import annotations

import argparse
import json
import sys
import typing
from typing import Any

from ..http import redact_urls
from ..io import write_json, write_jsonl  # noqa: F401  (re-exported for the command modules)
from .options import (CORPUS_HELP, K, add_chunker_flags, add_corpus_flags, add_pipeline_flags,  # noqa: F401
                       filters, finite_float, float_in, int_in, int_list, load_pipeline, pipeline_config, pipeline_flags)


def add_output(p: argparse.ArgumentParser, what: str = "the result") -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON on standard output")
    p.add_argument("--out", metavar="FILE", help=f"write {what} as JSON to FILE")


def command(sub, name: str, func, help: str, *, output: str | None = None, inputs: str = "") -> argparse.ArgumentParser:
    """A subcommand running ``func``; ``inputs`` names the usual input flags it takes (``corpus golden split``,
    ``corpus`` required unless ``corpus?``), ``output`` what ``--json``/``--out`` carry."""
    p = sub.add_parser(name, help=help)
    for flag in inputs.split():
        spec = INPUTS[flag.rstrip("?")]
        if flag.rstrip("?") == "corpus":
            add_corpus_flags(p, required=not flag.endswith("?"))
            continue
        p.add_argument(f"--{flag.rstrip('?')}", required=spec[0] and not flag.endswith("?"), help=spec[1])
    if output:
        add_output(p, output)
    p.set_defaults(func=func)
    return p


INPUTS = {"corpus": (True, CORPUS_HELP),
          "golden": (True, "golden set (.jsonl, .yaml) or a BEIR folder with --split"),
          "split": (False, "BEIR qrels split (e.g. test)"), "store": (True, "the index store folder")}


def emit(args: argparse.Namespace, data: Any, text: str | None) -> int:
    """``--out FILE`` writes ``data``; ``--json`` prints it; otherwise ``text`` is printed. Returns 0. A URL in
    ``data`` (a Milvus server, an endpoint) is written and printed with its credentials redacted."""
    data = redact_urls(data)
    if getattr(args, "out", None):
        write_json(args.out, data)
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    elif text is not None:
        print(text)
        if getattr(args, "out", None):
            print(f"\nwrote {args.out}")
    return 0


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and a hint."""

    def error(self, message: str) -> typing.NoReturn:  # type: ignore[override]
        print(f"error: {message}\nhint: {self.prog} --help", file=sys.stderr)
        raise SystemExit(2)
