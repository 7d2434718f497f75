"""What every command shares: typed flags, the pipeline flags derived from the stage registries, the output
convention (``--json`` prints machine-readable output, ``--out FILE`` writes it) and loading a pipeline."""

from __future__ import annotations

import argparse
import json
import math
import sys
import types
import typing
from typing import Any

from ..errors import ConfigError
from ..pipeline import PIPELINE_KEYS, RERANK_PREFIX, _option_types, option_owners
from ..registry import CHUNKERS, EMBEDDERS, RERANKERS, RETRIEVERS


def int_in(lo: int, hi: int | None = None):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if v < lo or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"{v} is out of range: expected {lo}..{hi}" if hi is not None
                                             else f"{v} is out of range: expected an integer >= {lo}")
        return v
    return parse


def finite_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return v


def float_in(lo: float, hi: float):
    def parse(text: str) -> float:
        v = finite_float(text)
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{v} is out of range: expected {lo}..{hi}")
        return v
    return parse


def int_list(text: str) -> list[int]:
    parse = int_in(1, 100_000)
    values = [parse(x.strip()) for x in text.split(",") if x.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers like 5,10,20, got {text!r}")
    return values


def float_list(text: str) -> list[float]:
    values = [finite_float(x.strip()) for x in text.split(",") if x.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers like 1,0.5, got {text!r}")
    return values


K = int_in(1, 10_000)


def add_output(p: argparse.ArgumentParser, what: str = "the result") -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON on standard output")
    p.add_argument("--out", metavar="FILE", help=f"write {what} as JSON to FILE")


def write_json(path: str, data: Any) -> None:
    import os

    try:
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False, default=str)
            f.write("\n")
    except OSError as e:
        raise ConfigError(f"cannot write {path}: {e.strerror or e}") from None


def emit(args: argparse.Namespace, data: Any, text: str | None) -> None:
    """``--out FILE`` writes ``data``; ``--json`` prints it; otherwise ``text`` is printed."""
    if getattr(args, "out", None):
        write_json(args.out, data)
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    elif text is not None:
        print(text)
        if getattr(args, "out", None):
            print(f"\nwrote {args.out}")


# -- pipeline flags, derived from the registries ------------------------------------------------------------------

def _flag_type(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _flag_type(inner[0]) if len(inner) == 1 else {}
    if origin in (tuple, list):
        return {"type": float_list, "metavar": "X,Y"}
    if hint is bool:
        return {"action": argparse.BooleanOptionalAction}
    return {"type": {int: int, float: finite_float}.get(hint, str)}


def _option_flags(group: argparse._ArgumentGroup, stage: str, owners: dict[str, list[str]], prefix: str = "") -> None:
    hints = _option_types(stage)
    for name, takers in owners.items():
        flag = "--" + (prefix + name).replace("_", "-")
        kind = _flag_type(hints.get(name))
        if "action" not in kind:
            kind.setdefault("metavar", name.upper())
        group.add_argument(flag, dest=f"opt_{prefix}{name}", default=None, **kind,
                           help=f"{stage}s {', '.join(takers)}")


def add_chunker_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chunker", default=None,
                   help=f"auto (default: section for markdown, document otherwise) or one of: {CHUNKERS.spell()}")
    p.add_argument("--prefix", action=argparse.BooleanOptionalAction, default=None,
                   help="index 'Title > Heading path' before each chunk (default: on for BEIR, off otherwise)")
    p.add_argument("--embedder", default=None, help=f"embedding model: {EMBEDDERS.spell()} (default minilm)")
    _option_flags(p.add_argument_group("chunking options (each chunker takes its own)"), "chunker",
                  option_owners("chunker"))


def add_pipeline_flags(p: argparse.ArgumentParser, *, rerank: bool = True, store: bool = True) -> None:
    if store:
        p.add_argument("--corpus", help="markdown/text folder, BEIR folder or corpus.jsonl")
        p.add_argument("--store", help="an index store: its current version (or --version) instead of --corpus")
        p.add_argument("--version", dest="store_version", help="with --store: this version instead of the current one")
    add_chunker_flags(p)
    r = p.add_argument_group("retrieval")
    r.add_argument("--retriever", default=None, help=f"first stage: {RETRIEVERS.spell()} (default bm25)")
    _option_flags(r, "retriever", option_owners("retriever"))
    if rerank:
        r.add_argument("--rerank", default=None, help=f"rerank the shortlist: {RERANKERS.spell()}")
        _option_flags(r, "reranker", {n: [e.name for e in RERANKERS if n in e.options]
                                      for n in _option_types("reranker")}, prefix=RERANK_PREFIX)
        r.add_argument("--filter", action="append", default=[], metavar="EXPR",
                       help="metadata filter, e.g. 'dir=tutorial' or 'year>=2020 and lang in [en, de]' (repeat to AND)")


def pipeline_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The pipeline flags that were given, by their config names."""
    flags = {k: getattr(args, k) for k in PIPELINE_KEYS if k not in ("candidates", "filter")
             and getattr(args, k, None) is not None}
    flags.update({k[4:]: v for k, v in vars(args).items() if k.startswith("opt_") and v is not None})
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


def load_pipeline(args: argparse.Namespace, candidates: int | None = None):
    """The pipeline the flags describe: built from --corpus, or loaded from --store (whose version fixes
    chunking, retrieval and the embedder: contradicting flags are refused)."""
    from ..corpus import load_corpus
    from ..pipeline import Resources, build_pipeline

    given = getattr(args, "candidates", None)
    if given and not args.rerank:
        raise ConfigError("--candidates needs --rerank (" + ", ".join(RERANKERS.names()) + ")")
    candidates = candidates or (given[0] if given else 50)
    if args.store_version and not args.store:
        raise ConfigError("--version selects a version of --store; give --store too")
    if args.store:
        if args.corpus:
            raise ConfigError("give --corpus or --store, not both")
        bad = ["--" + k.replace("_", "-") for k in pipeline_flags(args) if k not in ("rerank",)
               and not k.startswith(RERANK_PREFIX)]
        if bad:
            raise ConfigError(f"with --store, chunking, retrieval and the embedder come from the stored version; drop "
                              f"{', '.join(bad)} (or build a new version with `ragtune index build`)")
        from ..store import IndexStore, load_pipeline as load

        p = load(IndexStore(args.store), args.store_version, show_progress=True)
        if args.rerank:
            from ..pipeline import PipelineConfig
            from ..registry import RERANKERS as R

            cfg = PipelineConfig.from_flags({**p.config.to_dict(), **pipeline_flags(args), "candidates": candidates})
            p = p.with_reranker(R.build(cfg.rerank, options=cfg.reranker_config()), candidates)
        return p
    if not args.corpus:
        raise ConfigError("--corpus is required (or --store for a built index)")
    corpus = load_corpus(args.corpus)
    config = pipeline_config(args, candidates=candidates)
    return build_pipeline(corpus, config, resources=Resources(config.embedder, show_progress=True))


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and a hint."""

    def error(self, message: str) -> typing.NoReturn:  # type: ignore[override]
        print(f"error: {message}\nhint: {self.prog} --help", file=sys.stderr)
        raise SystemExit(2)
