"""What every command shares: typed flags, the pipeline flags derived from the stage registries, the output
convention (``--json`` prints machine-readable output, ``--out FILE`` writes it) and loading a pipeline."""

from __future__ import annotations

import argparse
import json
import sys
import typing
from typing import Any

from ..http import redact_text, redact_url, redact_urls  # noqa: F401  (redact_*: for the command modules too)
from ..io import write_json, write_jsonl  # noqa: F401  (re-exported for the command modules)
from .options import (K, add_chunker_flags, add_output, add_pipeline_flags, command, filters,  # noqa: F401
                       finite_float, float_in, int_in, int_list, load_pipeline, pipeline_config, pipeline_flags)


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
        print(f"error: {redact_text(message)}\nhint: {self.prog} --help", file=sys.stderr)
        raise SystemExit(2)
