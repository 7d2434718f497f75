"""Fixtures shared by the whole suite. Plain helpers and fixture data live in ``tests/helpers.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import CHROMIUM, CHROMIUM_ARGS, FAQ, GUIDE, write_files


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """``make test`` runs with ``--dist loadgroup``: a test marked ``xdist_group`` runs with its group on one worker
    (each page of tests/test_docs.py is one: its commands build on each other in one workspace), and every other
    test with its file's tests, as ``--dist loadfile`` would (module fixtures, one Milvus server). One file of ~200
    documented commands on one worker was the run's tail; its pages now spread over the workers."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    # the workers take groups in collection order (--no-loadscope-reorder; xdist would put the groups of most tests
    # first): the longest first, so none of them is left to run alone at the end
    items.sort(key=lambda item: next((n for n, f in enumerate(LONGEST_FIRST) if item.nodeid.startswith(f)),
                                     len(LONGEST_FIRST)))


_DOCS = "tests/test_docs.py::test_documented_command_runs["
LONGEST_FIRST = (
    _DOCS + "README.md:",  # its first command waits for the docs folder's embeddings (tests/test_docs.py _warm) ...
    "tests/store/test_milvus_server.py", "tests/store/test_store_faults.py", "tests/test_packaging.py",
    "tests/scale/test_ray_local.py", "tests/test_tour_install.py",  # ... while the other worker runs these
    _DOCS + "docs/cli/eval.md:", _DOCS + "docs/quickstart.md:", _DOCS + "docs/cli/chunk.md:", "tests/test_docs.py")
"""Files (and documented pages) whose tests take longest (``make test`` prints the slowest 25), in the order to
start them: a page whose commands embed the docs folder in a new chunking takes minutes on 2 cores."""


@pytest.fixture
def md_corpus(tmp_path: Path) -> Path:
    return write_files(tmp_path / "corpus", {"guide/billing.md": GUIDE, "faq.md": FAQ, "notes.txt": "plain text notes about shipping"})


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Tests never write the embedding cache into the working tree."""
    monkeypatch.setenv("RAGTUNE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))



@pytest.fixture(scope="module")
def browser():
    """Headless Debian chromium driven by Playwright (the browser tests: the sweep report, the workbench)."""
    playwright = pytest.importorskip("playwright.sync_api")
    if CHROMIUM is None:
        pytest.skip("needs a chromium binary (apt-get install chromium)")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory):
    """One real Milvus standalone server for the run (``tests/milvus_server.py``): started on first use on a free
    loopback port, its data in a temporary folder, stopped at the end. Skips when the package is absent."""
    from tests.milvus_server import start_server

    handle = start_server(tmp_path_factory.mktemp("milvus-server"))
    try:
        yield handle
    finally:
        handle.stop()
