"""ragtune index build|refresh|list|show|diff|promote|rollback|gc|migrate: one handler each."""

from __future__ import annotations

import json

from ..corpus import load_corpus
from ..golden import load_golden
from ..pipeline import PipelineConfig
from .render import render_built, render_diff, render_version_line
from .options import add_ray_flags, credentials, ray_embedders
from ._common import add_pipeline_flags, command, emit, finite_float, int_in, pipeline_flags


def _store(args):
    from ..store import IndexStore

    return IndexStore(args.store)


def cmd_build(args) -> int:
    from ..store import build_version

    # a pipeline file's reranker, candidates and filter apply at query time (eval, search, serve take the file)
    config = PipelineConfig.from_flags({**(args.config or {}), **pipeline_flags(args)}).index_config()
    store = _store(args)
    v = build_version(store, load_corpus(args.corpus), config, promote=True if args.promote else None, show_progress=True,
                      make_embedder=ray_embedders(args), credentials=credentials(args))
    return emit(args, {"id": v.id, "current": store.current_id(), **v.manifest}, render_built(v, store.current_id()))


def cmd_refresh(args) -> int:
    from ..store import refresh_version

    store = _store(args)
    v, st = refresh_version(store, load_corpus(args.corpus), promote=not args.no_promote, show_progress=True,
                            allow_mass_removal=args.allow_mass_removal, make_embedder=ray_embedders(args))
    return emit(args, {"id": v.id, "current": store.current_id(), **st}, render_built(v, store.current_id(), st))


def cmd_list(args) -> int:
    versions, cur, damaged = _store(args).status()  # a damaged CURRENT still lists: one version is the repair
    emit(args, [{"id": v.id, "current": v.id == cur, "problem": v.problem, **v.manifest} for v in versions],
         "\n".join(render_version_line(v, cur) for v in versions) or f"no versions in {args.store}")
    if damaged is not None:
        raise damaged
    return 0


def cmd_show(args) -> int:
    m = dict(_store(args).get(args.version).manifest)
    m["documents"] = f"{len(m['documents'])} documents (content hashes in manifest.json)"
    return print(json.dumps(m, indent=2, default=str)) or 0


def cmd_diff(args) -> int:
    d = _store(args).diff(args.a, args.b)
    return emit(args, d, render_diff(d))


def cmd_migrate(args) -> int:
    from ..store import migrate

    store = _store(args)
    r = migrate(store, args.embedder, load_golden(args.golden, split=args.split), max_drop=args.max_drop,
                metric=args.metric, show_progress=True)
    verdict = "promoted" if r["promoted"] else f"NOT promoted (drop larger than {args.max_drop})"
    emit(args, {k: v for k, v in r.items() if k != "text"},
         f"{r['text']}\n\ngreen {r['green']} {verdict}; blue {r['blue']} kept for rollback; current: {store.current_id()}")
    return 0 if r["promoted"] else 1


SIMPLE = {  # one line of output each
    "promote": lambda s, a: f"current: {s.promote(a.version).id}",
    "rollback": lambda s, a: f"rolled back; current: {s.rollback().id}",
    "gc": lambda s, a: (lambda removed: f"removed {len(removed)} version(s): {', '.join(removed) or '-'}")(s.gc(a.keep)),
}


def add(sub) -> None:
    ix = sub.add_parser("index", help="build and operate a versioned index store").add_subparsers(
        dest="index_command", required=True)

    def cmd(name, func, helptext, output=None, inputs=""):
        return command(ix, name, func or (lambda a: print(SIMPLE[name](_store(a), a)) or 0), helptext,
                       output=output, inputs="store " + inputs)

    p = cmd("build", cmd_build, "build a new immutable version", "the version", "corpus")
    add_pipeline_flags(p, rerank=False, store=False)
    p.add_argument("--promote", action="store_true", help="make it current (the first version always is)")
    add_ray_flags(p)
    p = cmd("refresh", cmd_refresh, "new version re-chunking and re-embedding only changed documents", "the version",
            "corpus")
    p.add_argument("--no-promote", action="store_true", dest="no_promote")
    p.add_argument("--allow-mass-removal", action="store_true", dest="allow_mass_removal",
                   help="allow a refresh that removes more than half of the documents")
    add_ray_flags(p)
    cmd("list", cmd_list, "list versions (* = current)", "the versions")
    cmd("rollback", None, "back to the previous promoted version")
    cmd("show", cmd_show, "a version's manifest").add_argument("version", nargs="?")
    p = cmd("diff", cmd_diff, "documents and configuration changed between two versions", "the differences")
    p.add_argument("a")
    p.add_argument("b")
    cmd("promote", None, "make a version current (atomically)").add_argument("version")
    cmd("gc", None, "delete old versions").add_argument("--keep", type=int_in(1), required=True)
    p = cmd("migrate", cmd_migrate, "blue/green: new embedder, evaluated, promoted only if not worse", "the verdict",
            "golden split")
    p.add_argument("--embedder", required=True)
    p.add_argument("--max-drop", type=finite_float, default=0.01, dest="max_drop")
    p.add_argument("--metric", default="recall@10")
