"""Fixtures shared by the whole suite. Plain helpers and fixture data live in ``tests/helpers.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import FAQ, GUIDE, write_files


@pytest.fixture
def md_corpus(tmp_path: Path) -> Path:
    return write_files(tmp_path / "corpus", {"guide/billing.md": GUIDE, "faq.md": FAQ, "notes.txt": "plain text notes about shipping"})


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Tests never write the embedding cache into the working tree."""
    monkeypatch.setenv("RAGTUNE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
