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
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .config import parse_list, parse_number
from .errors import ConfigError

__all__ = ["Opt", "add_flags", "kwargs", "typed", "add_stage_flags", "int_in", "float_in", "finite_float", "int_list",
           "K"]


@dataclass(frozen=True)
class Opt:
    """How an option reads on the command line: help text, range of numbers, a short flag, a metavar,
    ``flag`` for another spelling (e.g. ``--no-fuzzy`` for ``fuzzy: bool = True``)."""

    help: str
    lo: float | None = None
    hi: float | None = None
    short: str | None = None
    metavar: str | None = None
    flag: str | None = None


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
    from .pipeline import RERANK_PREFIX, _option_types, option_owners
    from .registry import RERANKERS

    hints = _option_types(stage)
    owners = option_owners(stage) if stage != "reranker" else {
        n: [e.name for e in RERANKERS if n in e.options] for n in hints}
    prefix = RERANK_PREFIX if stage == "reranker" else ""
    for name, takers in owners.items():
        kind = _kind(hints.get(name), Opt(""), None)
        if kind.get("action") == "store_true":
            kind["action"] = argparse.BooleanOptionalAction
        elif kind.get("action") == "append":  # a list option of a config: comma-separated numbers
            kind = {"type": typed(parse_list, float), "metavar": "X,Y"}
        if "action" not in kind:
            kind.setdefault("metavar", name.upper())
        parser.add_argument("--" + (prefix + name).replace("_", "-"), dest=f"opt_{prefix}{name}", default=None,
                            help=f"{stage}s {', '.join(takers)}", **kind)


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
        return _kind(inner[0], opt, default) if len(inner) == 1 else {}
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


def _default(target: Callable[..., Any], name: str) -> Any:
    return inspect.signature(target).parameters[name].default
