"""The library takes values and names parameters; only ``cli/`` speaks flags, and nothing writes the process
environment to pass a value along. Two scans of the source (AST, so comments and docstrings do not count), each
shown failing on a planted example.

1. No ``raise`` outside ``src/ragtune/cli/`` has a ``--flag`` spelling in its message. A library error names the
   parameter (``give corpus or store``); a :class:`ragtune.errors.ParameterError` lets the command line print it
   as its flag. A whole command quoted in backticks (`` `ragtune index build --store DIR` ``, `` `qpdf --decrypt` ``)
   is an instruction to run a program, not a parameter's name, and is not counted.
2. Nothing under ``src/ragtune`` writes ``os.environ`` (item assignment or deletion, ``setdefault``, ``update``,
   ``pop``, ``clear``, ``os.putenv``, ``os.unsetenv``): credentials and settings are passed as values.

Each allowance below names the module, how many spellings or writes it has now, and why; the count may only fall
(a module that drops one must lower its count, so the list ratchets down to nothing)."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "ragtune"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")
COMMAND = re.compile(r"`[a-z][\w.-]* [^`]*`")  # `ragtune index build --store DIR`: a command to run, quoted whole

# modules whose errors still spell flags: debt from before the rule, each to be turned into parameter names
FLAG_DEBT = {
    "corpus/loaders.py": (4, "--corpus and --format in a corpus's errors: name the path and formats= instead"),
    "judgments/agreement.py": (1, "'(CLI: --corpus)' beside corpus="),
    "evaluate/evaluate.py": (1, "qrels 'score run files (eval --run, compare)': a command, not quoted as one"),
    "evaluate/gate.py": (6, "--baseline, --update-baseline, --golden, --metric in the regression gate's errors"),
    "judgments/pool.py": (1, "'eval --json results': a command's output, not quoted as one"),
    "evaluate/run.py": (2, "'(CLI: --golden FILE)', '(CLI: --corpus)' beside the parameter"),
    "golden.py": (1, "--split in the golden set's errors"),
    "judgments/draft.py": (1, "--out in a draft's error"),
    "label/app.py": (1, "--log in the workbench's error"),
    "label/candidates.py": (1, "--pool-systems in the workbench's error"),
    "rerank_export.py": (1, "--out in the export's error"),
    "retrieve/base.py": (1, "an empty query's example command, not quoted as one"),
    "rerank/llm.py": (3, "--rerank and --rerank-model in the LLM reranker's errors"),
    "serve/app.py": (7, "--host, --port, --api-key-env, --insecure-no-key and example commands in the server's "
                        "checks"),
    "serve/guard.py": (4, "--max-connections and --request-timeout in the server's checks"),
    "serve/run.py": (2, "--workers in the server's checks"),
    "serve/telemetry.py": (2, "--since and --log in the telemetry log's errors"),
    "store/build.py": (1, "--allow-mass-removal beside allow_mass_removal=True"),
    "sweep/runner.py": (1, "--out in the sweep folder's error"),
    "sweep/tracking.py": (1, "'(ragtune sweep --out ...)': a command, not quoted in backticks"),
}

# modules that write the process environment, and why nothing else can carry the value
ENV_ALLOWED = {
    "serve/run.py": (4, "serve --workers: uvicorn starts each worker process from an import string "
                        "(app_from_env), so the settings and the API key (itself read from the environment variable "
                        "--api-key-env names) reach them only as environment variables"),
    "sweep/tracking.py": (2, "MLflow reads its HTTP retry and timeout bounds only from environment variables; set "
                             "for the calls made inside one block, only where the user set none, and removed after"),
    "scale/ray.py": (1, "debt: a Ray worker points its own cache folder at the driver's through RAGTUNE_CACHE_DIR; "
                        "to be passed to the worker's Resources as a value"),
}


def _texts(node: ast.AST):
    """Each string of an expression, an f-string as one text (``{...}`` as ``{}``), with its line."""
    inside = {id(v) for n in ast.walk(node) if isinstance(n, ast.JoinedStr) for v in n.values}
    for n in ast.walk(node):
        if isinstance(n, ast.JoinedStr):
            yield n.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in n.values)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in inside:
            yield n.lineno, n.value


def flag_spellings(source: str) -> list[tuple[int, str]]:
    """(line, flag) for every ``--flag`` spelt in the message of a ``raise`` in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            for line, text in _texts(node.exc):
                out += [(line, f) for f in FLAG.findall(COMMAND.sub("", text))]
    return out


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ")


WRITES = {"setdefault", "update", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def environ_writes(source: str) -> list[int]:
    """The lines of ``source`` that write the process environment."""
    out = []
    for node in ast.walk(ast.parse(source)):
        targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete)) else
                   [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        if any(isinstance(t, ast.Subscript) and _is_environ(t.value) for t in targets):
            out.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in WRITES and _is_environ(node.func.value):
                out.append(node.lineno)
            elif node.func.attr in ("putenv", "unsetenv"):
                out.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("putenv", "unsetenv"):
            out.append(node.lineno)
    return out


def _modules(skip_cli: bool):
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if not (skip_cli and rel.startswith("cli/")):
            yield rel, path.read_text(encoding="utf-8")


def _check(found: dict[str, list], allowed: dict[str, tuple[int, str]], what: str) -> list[str]:
    problems = []
    for rel, hits in sorted(found.items()):
        limit = allowed.get(rel, (0, ""))[0]
        if len(hits) > limit:
            problems.append(f"{rel}: {len(hits)} {what} (allowed {limit}): {hits}")
    for rel, (limit, _) in sorted(allowed.items()):
        if len(found.get(rel, [])) < limit:
            problems.append(f"{rel}: {len(found.get(rel, []))} {what} now, fewer than the {limit} allowed: lower "
                            "the allowance (or drop it)")
    return problems


def test_no_library_error_spells_a_flag():
    found = {rel: hits for rel, src in _modules(skip_cli=True) if (hits := flag_spellings(src))}
    assert not _check(found, FLAG_DEBT, "flag spelling(s) in errors")


def test_nothing_writes_the_process_environment():
    found = {rel: hits for rel, src in _modules(skip_cli=False) if (hits := environ_writes(src))}
    assert not _check(found, ENV_ALLOWED, "write(s) of os.environ")


def test_the_flag_scan_finds_a_planted_flag():
    planted = textwrap.dedent('''
        def open_it(corpus, store, name):
            if corpus and store:
                raise ConfigError("give --corpus or --store, not both")
            raise ConfigError(f"{name}: build it with `ragtune index build --store DIR`, then drop --chunker-x")
        ''')
    assert sorted(flag_spellings(planted)) == [(4, "--corpus"), (4, "--store"), (5, "--chunker-x")]
    assert flag_spellings('raise ParameterError("give {} or {}, not both", "corpus", "store")') == []
    assert flag_spellings('msg = "--corpus"  # not raised') == []
    found = {"store/open.py": flag_spellings(planted)}
    assert _check(found, FLAG_DEBT, "flag spelling(s)")  # a module not allowed any


def test_the_environment_scan_finds_each_kind_of_write():
    planted = textwrap.dedent('''
        import os
        from os import environ
        os.environ["MILVUS_TOKEN"] = token
        os.environ.setdefault("A", "1")
        os.putenv("B", "2")
        environ["C"] = "3"
        del os.environ["D"]
        os.environ.update({"E": "5"})
        value = os.environ.get("F")
        ''')
    assert sorted(environ_writes(planted)) == [4, 5, 6, 7, 8, 9]
    assert _check({"cli/options.py": environ_writes(planted)}, ENV_ALLOWED, "writes")
