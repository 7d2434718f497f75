"""Options written once, next to the code that takes them, as annotated parameters.

A public function (or a dataclass) declares an option as
``max_drop: Annotated[float, Opt("tolerated drop in a metric's units", lo=0)] = 0.02``.
The command line derives one flag per such parameter (:func:`add_flags`): its
name (``--max-drop``), type, range, choices (``Literal``), default and help, and
:func:`kwargs` hands the parsed values back by parameter name. So a flag cannot
drift from the function it feeds, and the CLI stays a thin shell.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..config import NONE_FLAG, Opt, parse_list, parse_number
from ..engines import ENGINES
from ..errors import ConfigError
from ..io import write_json

__all__ = ["Opt", "flag", "add_flags", "kwargs", "typed", "add_stage_flags", "int_in", "float_in", "finite_float", "int_list",
           "K", "add_chunker_flags", "add_pipeline_flags", "pipeline_flags", "pipeline_config", "filters",
           "load_pipeline", "credentials", "add_ray_flags", "ray_options", "ray_embedders", "sweep_executor"]


# a library parameter whose flag is not ``--`` + its name with dashes
FLAG_OF = {"filters": "--filter", "headers": "--header", "ks": "--k", "metrics": "--metric",
           "store_version": "--version"}


def flag(name: str) -> str:
    """The flag of the library parameter ``name``: ``corpus`` -> ``--corpus``, ``milvus_uri`` -> ``--milvus-uri``,
    ``rerank_model`` -> ``--rerank-model``. The CLI writes a :class:`ragtune.errors.ParameterError` with it."""
    return FLAG_OF.get(name) or "--" + name.replace("_", "-")


def typed(parse: Callable[..., Any], *spec: Any) -> Callable[[str], Any]:
    """An argparse ``type`` from a library parser: its ConfigError becomes argparse's one-line error."""
    def parse_flag(text: str) -> Any:
        try:
            return parse(text, *spec)
        except ConfigError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return parse_flag


def int_in(lo: int, hi: int | None = None) -> Callable[[str], Any]:
    return typed(parse_number, int, lo, hi)


def float_in(lo: float, hi: float) -> Callable[[str], Any]:
    return typed(parse_number, float, lo, hi)


finite_float = typed(parse_number, float)
int_list = typed(parse_list, int, 1, 100_000)
K = int_in(1, 10_000)


def add_stage_flags(parser: Any, stage: str) -> None:
    """One flag per option of every registered entry of ``stage`` (chunker, retriever, reranker), from the
    entries' config classes: ``--size``, ``--rrf-k``; rerankers' as ``--rerank-<option>``. The value lands in
    ``opt_<name>`` (see :func:`ragtune.pipeline.PipelineConfig.from_flags`)."""
    from ..pipeline import ALIASES, RERANK_PREFIX, STRATEGY_PREFIX, option_owners, option_types
    from ..registry import REGISTRIES

    hints = option_types(stage)
    owners = option_owners(stage) if stage in ("chunker", "retriever") else {
        n: [e.name for e in REGISTRIES[stage] if n in e.options] for n in hints}
    prefix = {"reranker": RERANK_PREFIX, "strategy": STRATEGY_PREFIX}.get(stage, "")
    helps, plural = _stage_help(stage), {"strategy": "strategies"}.get(stage, stage + "s")
    for name, takers in owners.items():
        kind = _kind(hints.get(name), Opt(""), None)
        if _optional(hints.get(name)) and "action" not in kind:  # --stemmer none sets the option to None
            kind["type"] = _or_none(kind.get("type"))
        if kind.get("action") == "store_true":
            kind["action"] = argparse.BooleanOptionalAction
        elif kind.get("action") == "append":  # a list option of a config: comma-separated numbers
            kind = {"type": typed(parse_list, float), "metavar": "X,Y"}
        if "action" not in kind:
            kind.setdefault("metavar", name.upper())
        # an older name the docs and grid files use (--parent-chunker for parent) is a second spelling
        aliases = [a for a, target in ALIASES.items() if target == name] if stage == "chunker" else []
        parser.add_argument("--" + (prefix + name).replace("_", "-"), *("--" + a.replace("_", "-") for a in aliases),
                            dest=f"opt_{prefix}{name}", default=None,
                            help=(f"{helps[name]} ({plural} {', '.join(takers)})" if name in helps
                                  else f"{plural} {', '.join(takers)}"), **kind)


def _optional(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)


def _or_none(parse: Callable[[str], Any] | None) -> Callable[[str], Any]:
    def parse_flag(text: str) -> Any:
        if text.strip().lower() in ("none", "null"):
            return NONE_FLAG
        return parse(text) if parse is not None else text
    return parse_flag


def _stage_help(stage: str) -> dict[str, str]:
    """Option name -> the help its config field declares (``Annotated[int, Opt("...")]``), first entry wins."""
    from ..registry import REGISTRIES

    out: dict[str, str] = {}
    for entry in REGISTRIES[stage]:
        if entry.config is None:
            continue
        try:
            hints = typing.get_type_hints(entry.config, include_extras=True)
        except Exception:  # a plugin's unresolvable annotations: no help, the flag still works
            continue
        for name, hint in hints.items():
            opt = next((m for m in typing.get_args(hint)[1:] if isinstance(m, Opt)), None) \
                if typing.get_origin(hint) is typing.Annotated else None
            if opt is not None:
                out.setdefault(name, opt.help)
    return out


def _options(target: Callable[..., Any]) -> list[tuple[inspect.Parameter, Any, Opt]]:
    hints = typing.get_type_hints(target, include_extras=True)
    out = []
    for p in inspect.signature(target).parameters.values():
        hint = hints.get(p.name)
        if typing.get_origin(hint) is typing.Annotated:
            base, *meta = typing.get_args(hint)
            opt = next((m for m in meta if isinstance(m, Opt)), None)
            if opt is not None:
                out.append((p, base, opt))
    return out


def _kind(base: Any, opt: Opt, default: Any) -> dict[str, Any]:
    origin, args = typing.get_origin(base), typing.get_args(base)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _kind(bool if bool in inner else inner[0], opt, default) if len(inner) == 1 or bool in inner else {}
    if origin is typing.Literal:
        return {"choices": list(args)}
    if origin in (tuple, list):
        item = args[0] if args else str
        if item in (int, float):
            return {"type": typed(parse_list, item, opt.lo, opt.hi), "metavar": opt.metavar or "X,Y"}
        return {"action": "append", "metavar": opt.metavar or "VALUE"}
    if base is bool:
        return {"action": "store_false" if default is True else "store_true"}
    if base in (int, float):
        return {"type": typed(parse_number, base, opt.lo, opt.hi), **({"metavar": opt.metavar} if opt.metavar else {})}
    return {"metavar": opt.metavar} if opt.metavar else {}


def add_flags(parser: Any, target: Callable[..., Any], *, only: Iterable[str] | None = None,
              skip: Iterable[str] = (), defaults: dict[str, Any] | None = None) -> None:
    """One flag per annotated parameter of ``target`` (a function or a dataclass), ``only`` / ``skip`` by name.
    ``defaults`` overrides a parameter's default for this command."""
    wanted, skipped = (set(only) if only is not None else None), set(skip)
    for p, base, opt in _options(target):
        if (wanted is not None and p.name not in wanted) or p.name in skipped:
            continue
        default = (defaults or {}).get(p.name, p.default)
        kind = _kind(base, opt, default)
        flag = opt.flag or "--" + ("no-" if kind.get("action") == "store_false" else "") + p.name.replace("_", "-")
        help_ = opt.help
        shown_default = not any(default is v for v in (inspect.Parameter.empty, None, False, True)) and default not in ((), "")
        if shown_default and "default" not in help_:
            shown = ",".join(map(str, default)) if isinstance(default, (tuple, list)) else default
            help_ += f" (default {shown})"
        if default is inspect.Parameter.empty:
            kind["required"] = True
        elif kind.get("action") not in ("store_true", "store_false"):
            # not given: kwargs() leaves it out and the parameter's own default applies
            kind["default"] = default if p.name in (defaults or {}) else None
        if opt.flag and not opt.flag.startswith("-"):  # Opt(flag="SOURCES"): a positional argument
            many = typing.get_origin(base) in (tuple, list, Sequence)
            parser.add_argument(p.name, metavar=opt.flag, nargs="+" if many else None, help=help_)
            continue
        names = [opt.short, flag] if opt.short else [flag]
        parser.add_argument(*names, dest=p.name, help=help_, **kind)


def kwargs(target: Callable[..., Any], args: argparse.Namespace, **override: Any) -> dict[str, Any]:
    """The parsed flags of ``target``'s annotated parameters, by name (flags not given: omitted, so the
    function's own defaults apply), plus ``override``."""
    out = {p.name: getattr(args, p.name) for p, _, _ in _options(target)
           if getattr(args, p.name, None) is not None}
    for name, value in list(out.items()):
        if isinstance(value, list) and isinstance(_default(target, name), tuple):
            out[name] = tuple(value)
    return {**out, **override}


def call(target: Callable[..., Any]) -> Callable[[argparse.Namespace], int]:
    """A command handler derived from ``target``: called with its flags (:func:`kwargs`), its result printed
    (``str(result)``, the result's own summary); exit status 0. On a command made with ``output=`` (:func:`command`),
    ``--json`` prints the result's ``to_dict()`` instead and ``--out FILE`` writes it."""
    def run(args: argparse.Namespace) -> int:
        result = target(**kwargs(target, args))
        if getattr(args, "out", None) and "out" not in inspect.signature(target).parameters:
            write_json(args.out, result.to_dict())
        return print(json.dumps(result.to_dict(), indent=2, default=str) if getattr(args, "json", False) else result) or 0
    return run


def _default(target: Callable[..., Any], name: str) -> Any:
    return inspect.signature(target).parameters[name].default


# -- the pipeline's flags, derived from the stage registries ---------------------------------------------------------

CORPUS_HELP = ("a folder of documents (markdown, HTML, PDF, DOCX, reStructuredText, notebooks, text), a single "
               "document, a BEIR folder or corpus.jsonl")


def _format_flag(text: str) -> tuple[str, str]:
    suffix, sep, name = text.partition("=")
    if not sep or not suffix.strip() or not name.strip():
        raise argparse.ArgumentTypeError(f"expected .SUFFIX=FORMAT (e.g. .htm=html, .txt=markdown, .bak=none), "
                                         f"got {text!r}")
    return suffix.strip(), name.strip()


def _loader_option(text: str) -> tuple[str, str, Any]:
    key, sep, value = text.partition("=")
    fmt, dot, name = key.partition(".")
    if not sep or not dot or not fmt.strip() or not name.strip():
        raise argparse.ArgumentTypeError(f"expected FORMAT.OPTION=VALUE (e.g. pdf.password=secret, ipynb.outputs=true), "
                                         f"got {text!r}")
    low = value.strip().lower()
    parsed: Any = True if low == "true" else False if low == "false" else value
    if parsed is value:
        for kind in (int, float):
            try:
                parsed = kind(value)
                break
            except ValueError:
                continue
    return fmt.strip(), name.strip(), parsed


def add_corpus_flags(p: Any, *, required: bool) -> None:
    """--corpus, and how its files are read: --format (a suffix's loader) and --loader-option (a loader's option)."""
    from ..registry import LOADERS

    p.add_argument("--corpus", required=required, help=CORPUS_HELP)
    p.add_argument("--format", dest="formats", action="append", type=_format_flag, default=[], metavar=".SUFFIX=FORMAT",
                   help=f"read files ending in SUFFIX as FORMAT ({', '.join(LOADERS.names())}, or none to leave them "
                        "out); repeat for more")
    p.add_argument("--loader-option", dest="loader_options", action="append", type=_loader_option, default=[],
                   metavar="FORMAT.OPTION=VALUE", help="an option of one format's loader, e.g. pdf.password=secret; "
                                                       "repeat for more")


def corpus_input(args: Any) -> Any:
    """``args.corpus`` as given (a path), or loaded with the --format and --loader-option it came with."""
    formats, options = getattr(args, "formats", None), getattr(args, "loader_options", None)
    if not getattr(args, "corpus", None) or not (formats or options):
        return getattr(args, "corpus", None)
    from ..corpus import load_corpus

    by_format: dict[str, dict[str, Any]] = {}
    for fmt, name, value in options:
        by_format.setdefault(fmt, {})[name] = value
    return load_corpus(args.corpus, formats=dict(formats), loader_options=by_format)


def read_config_input(args: Any) -> None:
    """``args.config`` (a pipeline file's path) made its flags, after parsing: a bad file is one error line."""
    if isinstance(getattr(args, "config", None), str):
        from ..pipeline import read_pipeline_flags

        args.config = read_pipeline_flags(args.config)


def add_chunker_flags(p: Any) -> None:
    """--chunker, --prefix, --embedder (+ its prefixes) and every registered chunker's options."""
    from ..registry import CHUNKERS, EMBEDDERS

    p.add_argument("--chunker", default=None,
                   help=f"auto (default: window-sized section pieces returned as sections under dense and hybrid, "
                        f"section under bm25, document for BEIR and text) or one of: {CHUNKERS.spell()}")
    p.add_argument("--prefix", action=argparse.BooleanOptionalAction, default=None,
                   help="index 'Title > Heading path' before each chunk (default: on)")
    p.add_argument("--embedder", default=None, help=f"embedding model: {EMBEDDERS.spell()}, or a Hugging Face id "
                   "such as BAAI/bge-small-en-v1.5 (= st:<id>) (default minilm)")
    p.add_argument("--query-prefix", dest="opt_query_prefix", metavar="TEXT",
                   help="text the embedder puts before each question, e.g. 'query: ' (st:, onnx: and Hugging Face ids)")
    p.add_argument("--passage-prefix", dest="opt_passage_prefix", metavar="TEXT",
                   help="text the embedder puts before each chunk, e.g. 'passage: '")
    add_stage_flags(p.add_argument_group("chunking options (each chunker takes its own)"), "chunker")


def add_pipeline_flags(p: Any, *, rerank: bool = True, store: bool = True) -> None:
    """The inputs (--corpus or --store/--version), the chunker flags, the first stage and its options, and (with
    ``rerank``) the reranker, its options, --candidates and --filter."""
    from ..registry import RERANKERS, RETRIEVERS, STRATEGIES

    if store:
        add_corpus_flags(p, required=False)
        p.add_argument("--store", help="an index store: its current version (or --version) instead of --corpus")
        p.add_argument("--version", dest="store_version", help="with --store: this version instead of the current one")
    p.add_argument("--config", metavar="FILE", help="a pipeline file (TOML/YAML "
                   "of the flag names below, as a sweep writes recommended.toml); flags given override it")
    add_chunker_flags(p)
    r = p.add_argument_group("retrieval")
    r.add_argument("--retriever", default=None, help=f"first stage: {RETRIEVERS.spell()} (default hybrid)")
    r.add_argument("--engine", choices=ENGINES, default=None, help="who runs bm25/dense/hybrid: embedded (default: "
                   "numpy and bm25s in this process) or milvus (with --milvus-uri FILE.db or URL; docs/scale.md)")
    r.add_argument("--milvus-token", dest="milvus_token", metavar="TOKEN",
                   help="a Milvus server's token (or set MILVUS_TOKEN); never written to a manifest")
    r.add_argument("--milvus-user", dest="milvus_user", metavar="USER",
                   help="a Milvus server's user, with --milvus-password (instead of --milvus-token)")
    r.add_argument("--milvus-password", dest="milvus_password", metavar="PASSWORD",
                   help="the password of --milvus-user (or set MILVUS_PASSWORD); never printed or recorded")
    add_stage_flags(r, "retriever")
    if rerank:
        r.add_argument("--rerank", default=None, help=f"rerank the shortlist: {RERANKERS.spell()}")
        add_stage_flags(r, "reranker")
        r.add_argument("--candidates", type=int_list, help="shortlist size to rerank (default 50); eval compares "
                       "several, e.g. 20,50,100")
        r.add_argument("--filter", action="append", default=[], metavar="EXPR",
                       help="metadata filter, e.g. 'dir=tutorial' or 'year>=2020 and lang in [en, de]' (repeat to AND)")
        r.add_argument("--strategy", default=None, help=f"how a question becomes searches: {STRATEGIES.spell()} "
                       "(default single: one search)")
        add_stage_flags(r, "strategy")


def pipeline_flags(args: Any) -> dict[str, Any]:
    """The pipeline flags that were given, by their config names, over those of ``--config FILE`` (its flags, read
    when parsed; its ``candidates`` and ``filter`` are read by :func:`load_pipeline` and :func:`filters`)."""
    from ..pipeline import PIPELINE_KEYS

    flags = {k: v for k, v in (getattr(args, "config", None) or {}).items() if k not in ("candidates", "filter")}
    flags.update({k: getattr(args, k) for k in PIPELINE_KEYS if k not in ("candidates", "filter")
                  and getattr(args, k, None) is not None})
    # an option set to none (NONE_FLAG) stays in: PipelineConfig.from_flags makes it None; --query-prefix and
    # --passage-prefix land in opt_ too (the embedder's typed options)
    flags.update({k[4:]: v for k, v in vars(args).items() if k.startswith("opt_") and v is not None})
    return flags


def credentials(args: Any) -> dict[str, str] | None:
    """The secrets the flags gave, by engine (``--milvus-token`` -> ``{"milvus": token}``), handed to the library
    as values; None without: the engine then reads its documented variable (``MILVUS_TOKEN``)."""
    token = getattr(args, "milvus_token", None)
    user = getattr(args, "milvus_user", None)
    if user:  # Milvus takes a user and password as the token "user:password"
        if token:
            raise ConfigError("give either --milvus-token or --milvus-user with a password, not both")
        password = getattr(args, "milvus_password", None) or os.environ.get("MILVUS_PASSWORD") or ""
        if not password:
            raise ConfigError("--milvus-user needs a password: --milvus-password or the MILVUS_PASSWORD variable")
        token = f"{user}:{password}"
    elif getattr(args, "milvus_password", None):
        raise ConfigError("--milvus-password needs its user: --milvus-user")
    return {"milvus": token} if token else None


def add_ray_flags(p: Any) -> None:
    """--ray [ADDRESS] and --ray-cpus N (docs/ray.md)."""
    p.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="run on Ray: a local instance (no ADDRESS), auto, HOST:PORT or ray://HOST:PORT (docs/ray.md)")
    p.add_argument("--ray-cpus", type=int_in(1, 100_000), dest="ray_cpus", help="CPUs of a local Ray instance")


def ray_options(args: Any) -> Any:
    """The :class:`ragtune.scale.RayOptions` of --ray/--ray-cpus, or None without --ray."""
    if getattr(args, "ray", None) is None:
        if getattr(args, "ray_cpus", None):
            raise ConfigError("--ray-cpus sizes a local Ray instance; add --ray")
        return None
    from ..scale import RayOptions

    return RayOptions(address=args.ray, num_cpus=args.ray_cpus)


def ray_embedders(args: Any) -> Any:
    """``make_embedder`` for index builds and refreshes with --ray (None without it)."""
    options = ray_options(args)
    if options is None:
        return None
    from ..scale import ray_embedders as make

    return make(options)


def sweep_executor(args: Any) -> Any:
    """The sweep executor of --ray (None without it: the sweep runs locally)."""
    options = ray_options(args)
    if options is None:
        return None
    from ..scale import RaySweepExecutor

    return RaySweepExecutor(options)


def pipeline_config(args: Any, **extra: Any):
    from ..pipeline import PipelineConfig

    return PipelineConfig.from_flags({**pipeline_flags(args), **extra})


def filters(args: Any) -> str | None:
    """The --filter expressions as one expression (each flag ANDed), validated now; without --filter, the
    ``filter`` of the --config file."""
    if not (exprs := getattr(args, "filter", None) or [f for f in [(args.config or {}).get("filter")] if f]):
        return None
    from ..retrieve.filters import combine_filters

    combine_filters(exprs)  # a syntax error fails before anything is built
    return exprs[0] if len(exprs) == 1 else " and ".join(f"({f})" for f in exprs)


def load_pipeline(args: Any):
    """The pipeline the flags describe, over --corpus or from --store (see :func:`ragtune.store.open_pipeline`,
    whose errors name its parameters: :func:`ragtune.cli.main` prints them as these flags)."""
    from ..registry import RERANKERS
    from ..store import open_pipeline

    if getattr(args, "candidates", None) and not (args.rerank or (args.config or {}).get("rerank")):
        raise ConfigError("--candidates needs --rerank (" + ", ".join(RERANKERS.names()) + ")")
    return open_pipeline(corpus=args.corpus, store=args.store, version=args.store_version, flags=pipeline_flags(args),
                         candidates=(args.candidates or [(args.config or {}).get("candidates", 50)])[0],
                         show_progress=True, credentials=credentials(args))


# -- subcommands with the usual inputs ---------------------------------------------------------------------------
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
