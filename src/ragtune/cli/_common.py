"""What every command shares: typed flags, the pipeline flags derived from the stage registries, the output
convention (``--json`` prints machine-readable output, ``--out FILE`` writes it) and loading a pipeline."""

from __future__ import annotations

import argparse
import json
import sys
import typing
from typing import Any

from ..errors import ConfigError
from ..io import write_json, write_jsonl  # noqa: F401  (re-exported for the command modules)
from ..options import K, add_stage_flags, finite_float, float_in, int_in, int_list  # noqa: F401  (re-exported)
from ..pipeline import PIPELINE_KEYS
from ..registry import CHUNKERS, EMBEDDERS, RERANKERS, RETRIEVERS


def add_output(p: argparse.ArgumentParser, what: str = "the result") -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON on standard output")
    p.add_argument("--out", metavar="FILE", help=f"write {what} as JSON to FILE")


def command(sub, name: str, func, help: str, *, output: str | None = None, inputs: str = "") -> argparse.ArgumentParser:
    """A subcommand running ``func``; ``inputs`` names the usual input flags it takes (``corpus golden split``,
    ``corpus`` required unless ``corpus?``), ``output`` what ``--json``/``--out`` carry."""
    p = sub.add_parser(name, help=help)
    for flag in inputs.split():
        spec = INPUTS[flag.rstrip("?")]
        p.add_argument(f"--{flag.rstrip('?')}", required=spec[0] and not flag.endswith("?"), help=spec[1])
    if output:
        add_output(p, output)
    p.set_defaults(func=func)
    return p


INPUTS = {"corpus": (True, "markdown/text folder, BEIR folder or corpus.jsonl"),
          "golden": (True, "golden set (.jsonl, .yaml) or a BEIR folder with --split"),
          "split": (False, "BEIR qrels split (e.g. test)"),
          "store": (True, "the index store folder")}


def emit(args: argparse.Namespace, data: Any, text: str | None) -> int:
    """``--out FILE`` writes ``data``; ``--json`` prints it; otherwise ``text`` is printed. Returns 0."""
    if getattr(args, "out", None):
        write_json(args.out, data)
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    elif text is not None:
        print(text)
        if getattr(args, "out", None):
            print(f"\nwrote {args.out}")
    return 0


def add_chunker_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chunker", default=None,
                   help=f"auto (default: section for markdown, document otherwise) or one of: {CHUNKERS.spell()}")
    p.add_argument("--prefix", action=argparse.BooleanOptionalAction, default=None,
                   help="index 'Title > Heading path' before each chunk (default: on)")
    p.add_argument("--embedder", default=None, help=f"embedding model: {EMBEDDERS.spell()}, or a Hugging Face id "
                   "such as BAAI/bge-small-en-v1.5 (= st:<id>) (default minilm)")
    p.add_argument("--query-prefix", dest="query_prefix", metavar="TEXT",
                   help="text the embedder puts before each question, e.g. 'query: ' (st:, onnx: and Hugging Face ids)")
    p.add_argument("--passage-prefix", dest="passage_prefix", metavar="TEXT",
                   help="text the embedder puts before each chunk, e.g. 'passage: '")
    add_stage_flags(p.add_argument_group("chunking options (each chunker takes its own)"), "chunker")


def add_pipeline_flags(p: argparse.ArgumentParser, *, rerank: bool = True, store: bool = True) -> None:
    if store:
        p.add_argument("--corpus", help="markdown/text folder, BEIR folder or corpus.jsonl")
        p.add_argument("--store", help="an index store: its current version (or --version) instead of --corpus")
        p.add_argument("--version", dest="store_version", help="with --store: this version instead of the current one")
    add_chunker_flags(p)
    r = p.add_argument_group("retrieval")
    r.add_argument("--retriever", default=None, help=f"first stage: {RETRIEVERS.spell()} (default hybrid)")
    add_stage_flags(r, "retriever")
    if rerank:
        r.add_argument("--rerank", default=None, help=f"rerank the shortlist: {RERANKERS.spell()}")
        add_stage_flags(r, "reranker")
        r.add_argument("--candidates", type=int_list, help="shortlist size to rerank (default 50); eval compares "
                       "several, e.g. 20,50,100")
        r.add_argument("--filter", action="append", default=[], metavar="EXPR",
                       help="metadata filter, e.g. 'dir=tutorial' or 'year>=2020 and lang in [en, de]' (repeat to AND)")


def pipeline_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The pipeline flags that were given, by their config names."""
    flags = {k: getattr(args, k) for k in PIPELINE_KEYS if k not in ("candidates", "filter")
             and getattr(args, k, None) is not None}
    flags.update({k[4:]: v for k, v in vars(args).items() if k.startswith("opt_") and v is not None})
    if getattr(args, "query_prefix", None) is not None or getattr(args, "passage_prefix", None) is not None:
        from ..embed import with_prefixes  # the prefixes become part of the embedder's name

        flags["embedder"] = with_prefixes(flags.get("embedder") or "minilm", args.query_prefix, args.passage_prefix)
    return flags


def pipeline_config(args: argparse.Namespace, **extra: Any):
    from ..pipeline import PipelineConfig

    return PipelineConfig.from_flags({**pipeline_flags(args), **extra})


def filters(args: argparse.Namespace) -> str | None:
    """The --filter expressions as one expression (each flag ANDed), validated now."""
    if not getattr(args, "filter", None):
        return None
    from ..retrieve.filters import combine_filters

    combine_filters(args.filter)  # a syntax error fails before anything is built
    return args.filter[0] if len(args.filter) == 1 else " and ".join(f"({f})" for f in args.filter)


def load_pipeline(args: argparse.Namespace):
    """The pipeline the flags describe, over --corpus or from --store (see :func:`ragtune.pipeline.open_pipeline`)."""
    from ..pipeline import open_pipeline

    if getattr(args, "candidates", None) and not args.rerank:
        raise ConfigError("--candidates needs --rerank (" + ", ".join(RERANKERS.names()) + ")")
    return open_pipeline(corpus=args.corpus, store=args.store, version=args.store_version, flags=pipeline_flags(args),
                         candidates=(args.candidates or [50])[0], show_progress=True)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and a hint."""

    def error(self, message: str) -> typing.NoReturn:  # type: ignore[override]
        print(f"error: {message}\nhint: {self.prog} --help", file=sys.stderr)
        raise SystemExit(2)
