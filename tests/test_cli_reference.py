"""The CLI reference (docs/cli/*.md) checked against the parser `ragtune.cli.build_parser` builds (issue 25,
item 11): every flag of a command is documented, every documented flag exists, and every default a flag row
or a flag's definition states is the default the parser states (its argparse default or its help's
"(default ...)"), so the reference cannot drift from the code."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from ragtune.cli import build_parser
from ragtune.cli.options import add_pipeline_flags

DOCS = Path(__file__).resolve().parents[1] / "docs"
CLI = DOCS / "cli"

# Flags no page documents yet, by page: listed so that the test fails on a new gap (and on a closed one left
# here); shrink it as pages are written. The pipeline options shared by eval, search, answer, calibrate and
# index build are checked once, on eval.md.
KNOWN_GAPS = {
    "anchors.md": {"--out"},
    "answer.md": {"--k", "--out"},
    "calibrate.md": {"--json", "--k"},
    "chunk.md": {"--json"},
    "eval.md": {"--method", "--milvus-token", "--min-share", "--rerank-attempts", "--rerank-backend",
                "--rerank-base-url", "--rerank-batch-size", "--rerank-fuse-k", "--rerank-max-candidates",
                "--rerank-max-chars", "--rerank-max-length", "--rerank-max-retries", "--rerank-mode",
                "--rerank-precision", "--rerank-price-in", "--rerank-price-out", "--rerank-threads",
                "--rerank-timeout", "--engine", "--milvus-uri", "--version",
                # the Milvus server's credentials and vector index: documented in docs/scale.md
                "--milvus-user", "--milvus-password", "--milvus-index", "--hnsw-m", "--hnsw-ef-construction",
                "--hnsw-ef", "--ivf-nlist", "--ivf-nprobe"},
    "index-store.md": {"--out", "--ray", "--ray-cpus"},
    "search.md": {"--k", "--out"},
    "sweep.md": {"--ray", "--ray-cpus"},
}
_STOP = {"the", "a", "an", "of", "is", "for", "and", "or", "when", "with", "its", "it", "to", "default", "s"}


def _commands() -> dict[str, argparse.ArgumentParser]:
    out: dict[str, argparse.ArgumentParser] = {}

    def walk(parser, path):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out[" ".join(path)] = parser
            return
        for name, sp in subs[0].choices.items():
            walk(sp, [*path, name])

    walk(build_parser(), [])
    return out


def _shared_flags() -> set[str]:
    p = argparse.ArgumentParser()
    add_pipeline_flags(p)
    return {o for a in p._actions for o in a.option_strings if o != "-h"} - {"--help"}


def _pages() -> list[tuple[Path, list[argparse.ArgumentParser]]]:
    commands = _commands()
    out = []
    for page in sorted(CLI.glob("*.md")):
        m = re.match(r"# ragtune (.+)", page.read_text().splitlines()[0])
        if m:
            title = m.group(1).strip()
            out.append((page, [sp for c, sp in commands.items() if c == title or c.startswith(title + " ")]))
    return out


def _actions(parsers) -> dict[str, argparse.Action]:
    """Option string -> action, over the command's parsers (``--help`` left out)."""
    return {o: a for sp in parsers for a in sp._actions for o in a.option_strings
            if o.startswith("--") and o != "--help"}


def _mentioned(flag: str, text: str) -> bool:
    return re.search(re.escape(flag) + r"(?![\w-])", text) is not None


def _doc_rows(text: str) -> list[tuple[list[str], str | None]]:
    """(flags, stated default) of each flag-table row and each flag definition (a term line of backticked
    flags followed by ``: ...``). The default: the table's Default cell, else a "default X" phrase."""
    rows: list[tuple[list[str], str | None]] = []
    lines = text.splitlines()
    header: list[str] | None = None
    in_fence = False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            in_fence = not in_fence
        if in_fence:
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
            if header is None:
                header = [c.lower() for c in cells]
                continue
            if set(line) <= set("|-: "):
                continue
            if header and header[0] == "flag":
                flags = re.findall(r"`(--[\w-]+)", cells[0])
                default = cells[header.index("default")] if "default" in header else _default_phrase(" ".join(cells[1:]))
                rows.append((flags, default))
            continue
        header = None
        if re.match(r"`--[\w-]+", line) and i + 1 < len(lines) and lines[i + 1].startswith(": "):
            flags = re.findall(r"`(--[\w-]+)", line)
            body = []
            for nxt in lines[i + 1:]:
                if not (nxt.startswith(": ") or nxt.startswith("  ")):
                    break
                body.append(nxt[2:])
            rows.append((flags, _default_phrase(" ".join(body))))
    return rows


def _default_phrase(text: str) -> str | None:
    m = (re.search(r"\b[Dd]efault:?\s+((?:[^.;()]|\.(?=\w)|\([^()]*\))+)", text)
         or re.search(r"`([^`]+)` \(the default\)|`([^`]+)` \(default\)", text))
    if m is None:
        return None
    return next(g for g in m.groups() if g is not None).strip()


def _parser_default(action: argparse.Action) -> str | None:
    d = action.default
    if isinstance(d, (int, float, str)) and not isinstance(d, bool) and d != argparse.SUPPRESS:
        return str(d)
    if isinstance(d, list) and d:
        return ",".join(map(str, d))
    return _default_phrase(action.help or "")


def _tokens(text: str) -> set[str]:
    words = re.split(r"[\s,/]+", text.lower().replace("`", "").replace("--", ""))
    out = set()
    for w in words:
        w = w.strip(".:;'\"()")
        if re.fullmatch(r"\d+\.0", w):
            w = w[:-2]
        if w and w not in _STOP:
            out.add(w)
    return out


def _numbers(text: str) -> set[str]:
    return {t for t in _tokens(text) if re.search(r"\d", t)}


def _agrees(parser_default: str, doc_default: str) -> bool:
    """The page's default says what the parser's does: they share a word, the page gives every number the
    parser gives, and no number outside parentheses that the parser does not."""
    doc_main = re.sub(r"\([^()]*\)", "", doc_default)
    return (bool(_tokens(parser_default) & _tokens(doc_default))
            and _numbers(parser_default) <= _numbers(doc_default)
            and _numbers(doc_main) <= _numbers(parser_default))


PAGES = _pages()


@pytest.mark.parametrize("page, parsers", PAGES, ids=[p.name for p, _ in PAGES])
def test_every_flag_of_the_command_is_documented(page, parsers):
    text = page.read_text()
    shared = _shared_flags()
    missing = set()
    for action in {id(a): a for a in _actions(parsers).values()}.values():
        names = [o for o in action.option_strings if o.startswith("--")]
        if page.name != "eval.md" and set(names) & shared:
            continue  # a pipeline option: checked on eval.md
        if not any(_mentioned(o, text) for o in names):
            missing.add(names[0])
    known = KNOWN_GAPS.get(page.name, set())
    assert missing - known == set(), f"{page.name} does not document {sorted(missing - known)}"
    assert known - missing == set(), f"{page.name} now documents {sorted(known - missing)}: drop them from KNOWN_GAPS"


@pytest.mark.parametrize("page, parsers", PAGES, ids=[p.name for p, _ in PAGES])
def test_every_documented_flag_exists_and_its_default_is_the_parsers(page, parsers):
    actions = _actions(parsers)
    wrong = []
    for flags, doc_default in _doc_rows(page.read_text()):
        for flag in flags:
            if flag not in actions:
                wrong.append(f"{flag}: documented, but `ragtune {page.stem}` has no such flag")
        if len(set(id(actions[f]) for f in flags if f in actions)) != 1 or doc_default is None:
            continue  # a row of several flags, or no default stated: nothing to compare
        action = actions[flags[0]]
        parser_default = _parser_default(action)
        if parser_default is None:
            continue
        if not _agrees(parser_default, doc_default):
            wrong.append(f"{flags[0]}: the page says default {doc_default!r}, the parser {parser_default!r}")
    assert not wrong, "\n".join(wrong)


def test_a_drifted_default_is_caught():
    """The check itself: a row stating another default than the parser's fails."""
    rows = _doc_rows("| Flag | Meaning |\n|---|---|\n| `--depth N` | chunks retrieved (default 50) |\n\n"
                     "`--overlap N`\n: Tokens shared. Default 32 for `fixed`.\n")
    eval_actions = _actions([_commands()["eval"]])
    assert rows == [(["--depth"], "50"), (["--overlap"], "32 for `fixed`")]
    assert not _agrees(_parser_default(eval_actions["--depth"]), "50")
    assert not _agrees(_parser_default(eval_actions["--overlap"]), "32 for `fixed`")
    assert _agrees(_parser_default(eval_actions["--depth"]), "100 chunks")


def test_roadmap_lists_the_built_distributed_engine_as_available():
    """docs/roadmap.md listed a distributed engine as missing though Milvus and Ray are built (issue 25)."""
    from ragtune.engines import ENGINES

    text = (DOCS / "roadmap.md").read_text()
    done, missing = text.split("## Next", 1)
    assert "milvus" in ENGINES
    assert "(scale.md)" in done and "(ray.md)" in done
    assert "a distributed engine" not in missing.lower()
