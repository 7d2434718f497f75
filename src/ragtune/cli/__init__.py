"""The ``ragtune`` command line: a thin shell over the public API, one module per command group; each handler
turns flags into a config and calls the library. ``--json`` prints machine-readable output, ``--out FILE`` writes
it. Exit codes: 0 success, 1 a check failed (golden check, a refused migration), 2 bad input, 3 the work finished and
was written but recording it elsewhere failed (``sweep --mlflow``: the tracker), 130 interrupted. Error lines go
through :func:`ragtune.http.redact_text`: no credential in a URL is printed, whoever wrote the message."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .._version import __version__
from ..errors import ParameterError, RagtuneError
from . import corpus, eval, export, index, label, reranker, search, serve, sweep
from ._common import Parser, redact_text
from .options import corpus_input, flag, read_config_input

__all__ = ["build_parser", "main"]


def build_parser() -> Parser:
    parser = Parser(prog="ragtune", description="Measure and tune RAG retrieval.")
    parser.add_argument("--version", action="version", version=f"ragtune {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in (eval, corpus, search, serve, label, index, sweep, export, reranker):
        module.add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.corpus = corpus_input(args)  # with --format/--loader-option, loaded here: commands take a Corpus too
        read_config_input(args)
        return int(args.func(args))
    except RagtuneError as e:
        # a library error names parameters (give corpus or store); here they are spelt as flags (--corpus)
        print(f"error: {redact_text(e.respell(flag) if isinstance(e, ParameterError) else e)}", file=sys.stderr)
        return getattr(e, "exit_status", 2)  # 3: TrackingError, the work done and kept, its tracker failed
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into head and closed early
        sys.stderr.close()
        return 0
