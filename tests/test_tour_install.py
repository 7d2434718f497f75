"""The README's tour needs no install beyond the one it leads with (``make demo``).

Which extras the demo installs is read from the Makefile (``DEMO_EXTRAS``) and what they hold from pyproject.toml;
every package of another extra (and what only it pulls in) is then made to look absent, and each command of the
README's tour runs, in that order, on a small corpus holding one file of every format the tour names
(``tests/tour_probe.py``). A command that needs a package outside the demo install stops with ragtune's
``pip install 'ragtune[...]'`` line (a corpus file it skips, with a warning that says the same) and fails the
test. Servers stop where they would start listening, embeddings come from a hash once the embedder has loaded
(so e5-small still imports its extra), and ``gaps`` gets a telemetry log of turned-away questions first. The steps
that need PyTorch, Milvus or Ray sit after the tour, under an install line of their own.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.test_docs import Command, _split_pipeline, extract

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PROBE = Path(__file__).with_name("tour_probe.py")
MISSING = "pip install 'ragtune["


# ---------------------------------------------------------------- what the demo installs


def demo_extras(makefile: str | None = None) -> set[str]:
    """The extras ``make demo`` installs: ``DEMO_EXTRAS := a,b`` in the Makefile, used by the demo's install."""
    text = makefile if makefile is not None else (ROOT / "Makefile").read_text(encoding="utf-8")
    m = re.search(r"^DEMO_EXTRAS\s*:?=\s*(.*)$", text, re.M)
    assert m, "the Makefile names the demo's extras in DEMO_EXTRAS := ..."
    assert re.search(r"pip install .*-e '\.\[\$\(DEMO_EXTRAS\)\]'", text), "the demo installs -e '.[$(DEMO_EXTRAS)]'"
    return {e.strip() for e in m.group(1).split(",") if e.strip()}


@cache
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def requirements(extras: set[str]) -> list[Requirement]:
    """ragtune's own requirements plus those of ``extras`` (an extra naming ``ragtune[x]`` brings x's too)."""
    optional = pyproject()["optional-dependencies"]
    unknown = extras - set(optional)
    assert not unknown, f"extras {sorted(unknown)} are not in pyproject.toml's optional-dependencies"
    out, todo, seen = [Requirement(r) for r in pyproject()["dependencies"]], list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for r in map(Requirement, optional[extra]):
            if canonicalize_name(r.name) == "ragtune":
                todo.extend(r.extras)
            else:
                out.append(r)
    return out


def closure(reqs: list[Requirement]) -> set[str]:
    """The distributions ``reqs`` install, following each installed distribution's own requirements."""
    seen: set[str] = set()
    todo = [(r, "") for r in reqs]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # not installed here, so nothing of it could be imported either
        for want in [""] * (name not in seen) + sorted(req.extras):
            todo.extend((Requirement(r), want) for r in dist.requires or [])
        seen.add(name)
    return seen


def modules_of(dists: set[str]) -> set[str]:
    """The top-level import names of the installed distributions ``dists``."""
    return {mod for mod, owners in metadata.packages_distributions().items()
            if any(canonicalize_name(o) in dists for o in owners) and not mod.startswith("_")}


def blocked_modules(extras: set[str]) -> set[str]:
    """What a fresh ``pip install -e '.[extras]'`` would not have: every installed distribution outside the closure
    of ragtune's requirements and those of ``extras`` (the other extras', the test tools', pip's own)."""
    kept = closure(requirements(extras))
    dropped = {canonicalize_name(d.metadata["Name"]) for d in metadata.distributions()} - kept
    return {m for m in modules_of(dropped) - modules_of(kept) if not m.startswith("ragtune")}


# ---------------------------------------------------------------- the tour


def tour() -> list[Command]:
    """The commands of the README's '## The 5-minute tour' section, in order."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## The 5-minute tour")) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines)) + 1
    return [c for c in extract(README, {}) if start < c.line < end]


def workspace(root: Path) -> Path:
    """A corpus with one file of each format the tour's step 1 names, a golden set for it, the demo grid."""
    import docx

    from tests.corpus.formats.test_pdf import guide

    docs = root / "docs"
    (docs / "billing").mkdir(parents=True)
    (docs / "site").mkdir()
    (docs / "index.md").write_text("# Overview\n\nOne file of each format.\n\n## Getting help\n\nAsk on the forum.\n")
    (docs / "billing" / "refunds.md").write_text(
        "# Refunds\n\n## Refund window\n\nA refund is accepted within 30 days of purchase.\n\n"
        "## Chargebacks\n\nA chargeback closes the account.\n")
    (docs / "guide.rst").write_text(
        "Guide\n=====\n\nThe reStructuredText guide.\n\n.. _sessions:\n\nSessions\n--------\n\n"
        "A session keeps cookies between requests.\n")
    (docs / "site" / "page.html").write_text(
        "<html><head><title>Install</title></head><body><h1 id='install'>Install</h1><p>Run pip install to set it "
        "up.</p><h2 id='upgrade'>Upgrade</h2><p>Upgrade with pip install -U.</p></body></html>")
    (docs / "manual.pdf").write_bytes(guide())
    d = docx.Document()
    d.add_heading("Handbook", level=1)
    d.add_paragraph("Holidays are twenty days a year.")
    d.save(docs / "handbook.docx")
    cell = {"cell_type": "markdown", "metadata": {}, "source": ["# Plotting\n", "\n", "Draw a chart with plot()."]}
    (docs / "plots.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    (docs / "notes.txt").write_text("Plain notes about the release schedule.\n")
    golden = [
        {"id": "q1", "q": "How long do I have to ask for a refund?", "relevant": ["billing/refunds.md#refund-window"]},
        {"id": "q2", "q": "What keeps cookies between requests?", "relevant": ["guide.rst#sessions"]},
        {"id": "q3", "q": "How do I upgrade?", "relevant": ["site/page.html#upgrade"]},
        {"id": "q4", "q": "How many holidays are there?", "relevant": ["handbook.docx#handbook"]},
        {"id": "q5", "q": "How do I draw a chart?", "relevant": ["plots.ipynb#plotting"]},
        {"id": "q6", "q": "Does it run on the moon?", "relevant": [], "tags": ["unanswerable"]},
    ]
    (root / "golden.jsonl").write_text("".join(json.dumps(g) + "\n" for g in golden))
    (root / "examples").mkdir()
    for grid in (ROOT / "examples").glob("*.toml"):
        (root / "examples" / grid.name).write_text(grid.read_text(encoding="utf-8"), encoding="utf-8")
    (root / "my-system.trec").write_text("q1 Q0 billing/refunds.md 1 1.0 mine\nq2 Q0 guide.rst 1 1.0 mine\n")
    return root


def probe(root: Path, commands: list[list[str]], extras: set[str]) -> list[dict]:
    spec = root / "probe.json"
    spec.write_text(json.dumps({"blocked": sorted(blocked_modules(extras)), "workspace": str(root),
                                "commands": commands}))
    res = subprocess.run([sys.executable, str(PROBE), str(spec)], capture_output=True, text=True, cwd=ROOT,
                         env={**__import__("os").environ, "RAGTUNE_PROGRESS": "0",
                              "RAGTUNE_CACHE_DIR": str(root / ".cache")})
    assert res.returncode == 0, res.stderr[-3000:]
    return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]


def argv(cmd: Command) -> list[str]:
    words, _ = _split_pipeline(cmd.text)
    return words[1:]


def leaf_extras(extras: set[str]) -> set[str]:
    """``extras`` with each extra that only names others (``tour = ["ragtune[a,b]"]``) replaced by those."""
    optional, out, todo = pyproject()["optional-dependencies"], set(), list(extras)
    while todo:
        extra = todo.pop()
        own = [Requirement(r) for r in optional[extra]]
        refs = [r for r in own if canonicalize_name(r.name) == "ragtune"]
        if own and len(refs) == len(own):
            todo.extend(e for r in refs for e in r.extras)
        else:
            out.add(extra)
    return out


# a telemetry log for `gaps` to cluster: questions the gate turns away, asked through the store the tour built
GAPS_SETUP = [["answer", "--store", "idx/", "--gate", "0.99", q]
              for q in ("Does it run on the moon?", "Can it run on the moon?", "Is there a moon version?")]


def runnable(commands: list[Command]) -> list[list[str]]:
    out = []
    for cmd in commands:
        if cmd.text.split()[1:2] == ["gaps"]:
            out.extend(GAPS_SETUP)
        out.append(argv(cmd))
    return out


def table_names(text: str) -> set[str]:
    """The names in backquotes in the first column of a markdown table's rows."""
    return {n for line in text.splitlines() if line.startswith("| ")
            for n in re.findall(r"`([\w-]+)`", line.split("|")[1])}


# ---------------------------------------------------------------- the tests


def test_every_tour_command_runs_on_the_demo_install_alone(tmp_path):
    commands = tour()
    assert len(commands) >= 15, "the README's tour was not found"
    results = probe(workspace(tmp_path), runnable(commands), demo_extras())
    assert [r["argv"][0] for r in results] == [a[0] for a in runnable(commands)], results[-1:]
    problems = [f"`ragtune {shlex.join(r['argv'])}` exited {r['rc']}:\n{r['output'][-800:]}"
                for r in results if r["rc"] != 0 or MISSING in r["output"]]
    assert not problems, ("the README's tour needs more than `make demo` installs (DEMO_EXTRAS in the Makefile):\n"
                          + "\n".join(problems))


def test_a_command_outside_the_demo_install_is_caught(tmp_path):
    """The check itself: without `formats` the RST file is skipped with a warning, without `serve` the workbench
    and without `search` a search stop; each says which extra it needs, in one line (exit 2, not a traceback)."""
    extras = leaf_extras(demo_extras()) - {"formats", "serve", "search"}
    search = next(argv(c) for c in tour() if "--search" in c.text)
    results = probe(workspace(tmp_path), [["anchors", "--corpus", "docs/"],
                                          ["label", "--corpus", "docs/", "--golden", "golden.jsonl"], search], extras)
    assert [r["rc"] for r in results][1:] == [2, 2], results
    # a corpus loads what it can read: the other files are skipped, each with a warning that names the extra
    assert re.search(r"skipped docs/guide.rst: .*pip install 'ragtune\[rst\]'", results[0]["output"])
    assert "pip install 'ragtune[serve]'" in results[1]["output"]
    assert "pip install 'ragtune[search]'" in results[2]["output"]


def test_the_demo_installs_a_named_extra_without_torch_and_install_all_covers_it():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    extras = demo_extras(makefile)
    assert extras == {"tour"}, "the README and docs/installation.md name the demo's install: ragtune[tour]"
    assert "torch" not in closure(requirements(extras)), "torch belongs to the heavy extras (st, train) only"
    every = re.search(r"-e '\.\[([\w,-]+)\]'\n\t\$\(PY\) -m pip install -q -c constraints.txt \./examples/plugin",
                      makefile)
    assert every and leaf_extras(extras) <= leaf_extras(set(every.group(1).split(","))), \
        "make install-all installs every extra the demo does"


def test_the_readme_leads_with_the_demo_install_and_lists_every_extra():
    text = README.read_text(encoding="utf-8")
    head = text[:text.index("## The 5-minute tour")]
    assert "pip install -c constraints.txt -e '.[tour]'" in head
    for page, text in (("README.md", head), ("docs/installation.md", (ROOT / "docs" / "installation.md").read_text())):
        missing = set(pyproject()["optional-dependencies"]) - {"test"} - table_names(text)
        assert not missing, f"{page}'s table of extras leaves out {sorted(missing)}"


def test_demo_extras_are_read_from_the_makefile():
    assert demo_extras("DEMO_EXTRAS := a, b\n\t$(PY) -m pip install -q -c constraints.txt -e '.[$(DEMO_EXTRAS)]'\n") \
        == {"a", "b"}
    with pytest.raises(AssertionError, match="DEMO_EXTRAS"):
        demo_extras("demo:\n\tpip install -e .\n")
