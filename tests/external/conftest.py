import pytest

from ragtune import GoldenSet, load_corpus
from ragtune.golden import GoldenItem
from tests.helpers import DOCS, QUESTIONS, write_files


@pytest.fixture
def corpus(tmp_path):
    return load_corpus(write_files(tmp_path / "docs", DOCS))


@pytest.fixture
def golden():
    return GoldenSet([GoldenItem(i, q, {a: 1.0 for a in rel}) for i, q, rel in QUESTIONS], source="questions")
