"""Docs that stay true: every ``ragtune`` command quoted in README.md and docs/**/*.md runs for real.

Commands are taken from fenced ``bash``/``sh``/``shell``/``console`` blocks: a line starting with ``ragtune ``
(or ``$ ragtune`` in console blocks), backslash continuations joined, trailing ``# comments`` dropped. Each one
runs in-process through ``ragtune.cli.main`` inside a workspace prepared for its page (a copy of the bundled
``docs/`` folder, also reachable as ``my-docs/``; ``golden.jsonl`` and ``my-golden.jsonl`` = docs/golden.jsonl;
``examples/``; ``grid.toml`` = examples/demo-grid.toml). Commands of one page run in page order in one
workspace, so a page can build a store and then use it. A pipe into ``grep``/``head``/``wc`` or ``> FILE`` is
honoured.

HTML comments right after a block (one per line) steer the test:

- ``<!-- docs-test: skip (reason) -->`` skips every command of the block; ``<!-- docs-test: skip "TEXT"
  (reason) -->`` only those containing TEXT, ``skip #N (reason)`` only the block's N-th command. Skipped
  commands are reported by pytest with their reason.
- ``<!-- docs-test: exit N -->`` (optionally ``exit N "TEXT"``) expects exit code N instead of 0.
- ``<!-- docs-test: file PATH -->`` after a non-shell block writes the block's text to PATH in the page's
  workspace before its commands run (the quickstart's three-question ``my-golden.jsonl``).
- ``<!-- docs-test: setup "SHELL" -->`` runs SHELL (``ragtune`` on the PATH) in the workspace before the
  block's first command: how a page's story changes the corpus between two commands.
- ``<!-- docs-test: output -->`` after a ``console`` block: each command must print exactly the lines the
  block shows after it (a deterministic example, such as a seeded comparison of small files).
- ``<!-- docs-test: expect "FIGURE" ... -->`` asserts that each FIGURE appears in the output of the block's last
  command and is quoted on the page outside the comment: this is how quoted measurements are kept current.

The embedding cache is shared by the whole module (kept across runs in pytest's cache folder), so each corpus
is embedded once.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_LANGS = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w-]*)")
DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
QUOTED = re.compile(r'"([^"]*)"')
PLACEHOLDER = re.compile(r"<[A-Za-z][\w -]*>")


@dataclass
class Command:
    page: str
    line: int
    text: str
    skip: str | None = None
    exit_code: int = 0
    expect: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    printed: list[str] = field(default_factory=list)  # console block: the lines shown after the command
    check_printed: bool = False

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _strip_comment(text: str) -> str:
    """Drop a trailing shell comment (`` # ...``) outside quotes."""
    quote = None
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and i > 0 and text[i - 1] in " \t":
            return text[:i].rstrip()
    return text


def _apply(directive: str, commands: list[Command], page: str, lineno: int, body: list[str],
           files: dict[str, dict[str, str]]) -> None:
    m = re.match(r"(skip|exit|expect|file|setup|output)\b\s*(.*)$", directive)
    if not m:
        raise ValueError(f"{page}:{lineno}: unknown docs-test directive {directive!r}; "
                         "use skip, exit, expect, file, setup or output")
    verb, rest = m.groups()
    if verb == "output":
        if not commands or not all(c.printed for c in commands):
            raise ValueError(f"{page}:{lineno}: 'output' needs a console block that shows each command's output")
        for c in commands:
            c.check_printed = True
        return
    if verb == "setup":
        if not commands or not QUOTED.fullmatch(rest):
            raise ValueError(f"{page}:{lineno}: write 'setup \"SHELL COMMAND\"' after a block with a ragtune command")
        commands[0].setup.append(QUOTED.fullmatch(rest).group(1))
        return
    if verb == "file":
        if not rest or commands:
            raise ValueError(f"{page}:{lineno}: write 'file PATH' after a block that holds the file's text")
        files.setdefault(page, {})[rest] = "\n".join(body) + "\n"
        return
    if verb == "expect":
        if not commands:
            raise ValueError(f"{page}:{lineno}: 'expect' after a block with no ragtune command")
        commands[-1].expect.extend(QUOTED.findall(rest))
        return
    if verb == "exit":
        em = re.match(r"(\d+)\s*(?:\"([^\"]*)\")?", rest)
        if not em:
            raise ValueError(f"{page}:{lineno}: write 'exit N' or 'exit N \"TEXT\"'")
        code, sel = int(em.group(1)), em.group(2)
        for c in commands:
            if sel is None or sel in c.text:
                c.exit_code = code
        return
    sm = re.match(r'(?:"([^"]*)"\s*|#(\d+)\s*)?\((.+)\)$', rest)
    if not sm:
        raise ValueError(f"{page}:{lineno}: write 'skip (reason)', 'skip \"TEXT\" (reason)' or 'skip #N (reason)'")
    sel, nth, reason = sm.groups()
    if nth is not None:
        hit = commands[int(nth) - 1:int(nth)] if int(nth) >= 1 else []
    else:
        hit = [c for c in commands if sel is None or sel in c.text]
    if not hit:
        raise ValueError(f"{page}:{lineno}: skip selector {sel!r} matches no command of the block")
    for c in hit:
        c.skip = reason


FILES: dict[str, dict[str, str]] = {}  # page -> {path in the workspace: text}, from 'file' directives


def extract(path: Path, files: dict[str, dict[str, str]] | None = None) -> list[Command]:
    files = FILES if files is None else files
    page = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Command] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.groups()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        block: list[Command] = []
        if lang in SHELL_LANGS:
            buf, start = "", 0
            for k in range(i + 1, j):
                raw = lines[k].strip()
                if not buf:
                    start = k + 1
                    if lang == "console":
                        if not raw.startswith("$ "):
                            if block:
                                block[-1].printed.append(lines[k].rstrip())
                            continue
                        raw = raw[2:].lstrip()
                buf = f"{buf} {raw}" if buf else raw
                if buf.endswith("\\"):
                    buf = buf[:-1].rstrip()
                    continue
                text = _strip_comment(buf)
                buf = ""
                if re.match(r"(?:[A-Z_][A-Z0-9_]*=\S*\s+)*ragtune(?:\s|$)", text):
                    block.append(Command(page, start, text))
        # directives: consecutive comment lines after the closing fence (blank lines allowed)
        k = j + 1
        while k < len(lines) and (not lines[k].strip() or DIRECTIVE.match(lines[k])):
            d = DIRECTIVE.match(lines[k])
            if d:
                _apply(d.group(1), block, page, k + 1, lines[i + 1:j], files)
            k += 1
        out.extend(block)
        i = j + 1
    return out


ALL = [c for p in PAGES for c in extract(p)]


# ---------------------------------------------------------------- workspace


@pytest.fixture(scope="module")
def docs_env(tmp_path_factory, request):
    cache = os.environ.get("RAGTUNE_DOCS_TEST_CACHE")
    if cache:
        cache_dir = Path(cache)
    elif getattr(request.config, "cache", None) is not None:  # kept between runs: only changed chunks re-embed
        cache_dir = Path(request.config.cache.mkdir("ragtune-docs-test-cache"))
    else:  # -p no:cacheprovider
        cache_dir = tmp_path_factory.mktemp("ragtune-cache")
    base = tmp_path_factory.mktemp("docs-base")
    shutil.copytree(ROOT / "docs", base / "docs")
    shutil.copytree(ROOT / "docs", base / "my-docs")
    shutil.copytree(ROOT / "examples", base / "examples")
    for name in ("golden.jsonl", "my-golden.jsonl"):
        shutil.copy(ROOT / "docs" / "golden.jsonl", base / name)
    shutil.copy(ROOT / "examples" / "demo-grid.toml", base / "grid.toml")
    _warm(cache_dir, base)
    return {"base": base, "cache": cache_dir, "root": tmp_path_factory.mktemp("docs-pages"), "pages": {}}


def _warm(cache_dir: Path, base: Path) -> None:
    """Embed the docs folder with the default pipeline once, into the shared cache, before any page runs: the pages
    run on several workers (tests/conftest.py), and each worker's first default eval would embed the same chunks at
    the same time. The first worker embeds under a lock; the others wait, then find every chunk cached."""
    import fcntl
    import hashlib

    from ragtune.cli import main

    digest = hashlib.sha1(b"".join(p.read_bytes() for p in sorted((base / "docs").rglob("*")) if p.is_file()))
    done = cache_dir / f".warm-{digest.hexdigest()[:16]}"
    with open(cache_dir / ".warm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return
        saved = {k: os.environ.get(k) for k in ("RAGTUNE_CACHE_DIR", "RAGTUNE_PROGRESS")}
        os.environ.update(RAGTUNE_CACHE_DIR=str(cache_dir), RAGTUNE_PROGRESS="0")
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                rc = main(["eval", "--corpus", str(base / "docs"), "--golden", str(base / "docs" / "golden.jsonl")])
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        if rc == 0:
            done.touch()


def _workspace(env: dict, page: str) -> Path:
    ws = env["pages"].get(page)
    if ws is None:
        ws = env["root"] / re.sub(r"\W+", "_", page)
        shutil.copytree(env["base"], ws)
        for rel, text in FILES.get(page, {}).items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text, encoding="utf-8")
        env["pages"][page] = ws
    return ws


def _split_pipeline(text: str) -> tuple[list[str], list[str]]:
    lex = shlex.shlex(text, posix=True, punctuation_chars="|>")
    lex.whitespace_split = True
    lex.commenters = ""
    tokens = list(lex)
    for n, tok in enumerate(tokens):
        if tok in ("|", ">"):
            return tokens[:n], tokens[n:]
    return tokens, []


def run_command(cmd: Command, ws: Path) -> tuple[int, str]:
    from ragtune.cli import main

    argv, tail = _split_pipeline(cmd.text)
    while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):  # VAR=value ragtune ...
        name, _, value = argv.pop(0).partition("=")
        os.environ[name] = value  # the test's monkeypatch restores the environment
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(ws)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv[1:])
            except SystemExit as e:  # argparse: --help, unknown flags
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    finally:
        os.chdir(cwd)
    stdout = out.getvalue()
    if cmd.check_printed:
        return rc, stdout
    if tail and tail[0] == ">":
        (ws / tail[1]).write_text(stdout, encoding="utf-8")
    elif tail:
        res = subprocess.run(shlex.join(tail[1:]), shell=True, cwd=ws, input=stdout, capture_output=True, text=True)
        stdout = res.stdout
        if rc == 0 and res.returncode != 0:  # a documented `| grep X` that no longer matches is stale too
            rc = res.returncode
    return rc, stdout + err.getvalue()


@pytest.mark.parametrize("cmd", [pytest.param(c, id=c.id, marks=pytest.mark.xdist_group(c.page)) for c in ALL])
def test_documented_command_runs(cmd: Command, docs_env, monkeypatch):
    if cmd.skip:
        pytest.skip(cmd.skip)
    placeholder = PLACEHOLDER.search(cmd.text)
    assert not placeholder, (f"{cmd.id}: {cmd.text!r} has the placeholder {placeholder.group(0)}; add "
                             f"<!-- docs-test: skip (placeholder) --> after the block or use a real value")
    monkeypatch.setenv("RAGTUNE_CACHE_DIR", str(docs_env["cache"]))
    monkeypatch.setenv("RAGTUNE_PROGRESS", "0")
    ws = _workspace(docs_env, cmd.page)
    for line in cmd.setup:
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        res = subprocess.run(line, shell=True, cwd=ws, capture_output=True, text=True, env={**os.environ, "PATH": path})
        assert res.returncode == 0, f"{cmd.id}: setup `{line}` failed:\n{res.stdout}{res.stderr}"
    for name in re.findall(r"(?:^|\s)([A-Z_][A-Z0-9_]*)=", cmd.text.split("ragtune", 1)[0]):
        monkeypatch.setenv(name, os.environ.get(name, ""))  # so the value run_command sets is undone
    rc, output = run_command(cmd, ws)
    page_text = (ROOT / cmd.page).read_text(encoding="utf-8")
    problems = judge(cmd, rc, output, page_text)
    assert not problems, "\n".join(problems)


def judge(cmd: Command, rc: int, output: str, page_text: str) -> list[str]:
    """What is wrong with a command's run, compared with what its page says."""
    if rc != cmd.exit_code:
        tail = "\n".join(output.strip().splitlines()[-8:])
        return [f"{cmd.id}: `{cmd.text}` exited {rc}, the page says {cmd.exit_code}:\n{tail}"]
    problems = []
    if cmd.check_printed and output.rstrip() != "\n".join(cmd.printed).rstrip():
        problems.append(f"{cmd.id}: `{cmd.text}` no longer prints what the page shows:\n{output}")
    shown = re.sub(r"<!--.*?-->", "", page_text, flags=re.S)
    for figure in cmd.expect:
        if figure not in shown:
            problems.append(f"{cmd.id}: expected figure {figure!r} is not quoted on the page")
        elif figure not in output:
            problems.append(f"{cmd.id}: the page quotes {figure!r} but `{cmd.text}` printed:\n{output[-2000:]}")
    return problems


# ---------------------------------------------------------------- the extractor itself


def test_extractor_joins_continuations_and_reads_directives(tmp_path, monkeypatch):
    page = tmp_path / "p.md"
    page.write_text(
        "```bash\nragtune eval --corpus docs \\\n  --golden g.jsonl   # a comment\nmake demo\n```\n"
        "<!-- docs-test: exit 1 -->\n\n"
        "```console\n$ RAGTUNE_X=1 ragtune anchors --corpus docs\nout put\n"
        "$ ragtune search --corpus docs 'x # y'\n```\n"
        '<!-- docs-test: skip "search" (needs a server) -->\n<!-- docs-test: expect "out put" -->\n'
        "<!-- docs-test: skip #1 (first) -->\n"
        "```text\nragtune not a command\n```\n"
        '```json\n{"id": "t1"}\n```\n<!-- docs-test: file my-golden.jsonl -->\n',
        encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    files: dict[str, dict[str, str]] = {}
    got = extract(page, files)
    assert files == {"p.md": {"my-golden.jsonl": '{"id": "t1"}\n'}}
    assert [(c.line, c.text) for c in got] == [
        (2, "ragtune eval --corpus docs --golden g.jsonl"),
        (9, "RAGTUNE_X=1 ragtune anchors --corpus docs"),
        (11, "ragtune search --corpus docs 'x # y'"),
    ]
    assert [c.exit_code for c in got] == [1, 0, 0]
    assert [c.skip for c in got] == [None, "first", "needs a server"]
    assert got[2].expect == ["out put"] and got[1].expect == []
    assert got[1].printed == ["out put"] and not got[1].check_printed


def test_a_bad_directive_is_refused(tmp_path, monkeypatch):
    page = tmp_path / "p.md"
    page.write_text("```bash\nragtune anchors --corpus docs\n```\n<!-- docs-test: skipp (x) -->\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    with pytest.raises(ValueError, match="unknown docs-test directive"):
        extract(page, {})


def test_pipeline_split():
    assert _split_pipeline("ragtune anchors --corpus docs | grep -c '#'") == (
        ["ragtune", "anchors", "--corpus", "docs"], ["|", "grep", "-c", "#"])
    assert _split_pipeline("ragtune search --corpus d 'a|b' --json > r.json") == (
        ["ragtune", "search", "--corpus", "d", "a|b", "--json"], [">", "r.json"])


def test_judge_catches_stale_figures_and_exit_codes():
    cmd = Command("p.md", 3, "ragtune golden check", expect=["57 answerable"])
    page = "```bash\nragtune golden check\n```\n<!-- docs-test: expect \"57 answerable\" -->\nprints 57 answerable\n"
    assert judge(cmd, 0, "ok: 62 questions (57 answerable, 5 unanswerable)", page) == []
    assert "the page quotes '57 answerable'" in judge(cmd, 0, "ok: 62 questions (55 answerable)", page)[0]
    assert "not quoted on the page" in judge(cmd, 0, "57 answerable", page.replace("prints 57", "prints 55"))[0]
    assert "exited 2, the page says 0" in judge(cmd, 2, "error: no such file", page)[0]
    shown = Command("p.md", 3, "ragtune compare a b", printed=["n=3", "mrr"], check_printed=True)
    assert judge(shown, 0, "n=3\nmrr\n", "") == []
    assert "no longer prints" in judge(shown, 0, "n=3\nrecall\n", "")[0]
