"""ragtune installs beside a user's own (different, compatible) numpy and FastAPI, and works there."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
THEIRS = {"numpy": "2.2.6", "fastapi": "0.115.14"}  # older than constraints.txt, inside pyproject's ranges


def _run(*cmd: str, cwd: Path | None = None) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=900)
    assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def test_install_next_to_a_users_numpy_and_fastapi(tmp_path):
    constraints = (ROOT / "constraints.txt").read_text()
    for name, theirs in THEIRS.items():
        assert f"{name}=={theirs}" not in constraints  # the test means something only if the versions differ
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    py = str(env / "bin" / "python")
    _run(py, "-m", "pip", "install", "-q", *(f"{n}=={v}" for n, v in THEIRS.items()))
    # no constraints file: a user's resolver sees only pyproject's ranges
    _run(py, "-m", "pip", "install", "-q", str(ROOT))
    versions = _run(py, "-c", "import numpy, fastapi; print(numpy.__version__, fastapi.__version__)").split()
    assert versions == [THEIRS["numpy"], THEIRS["fastapi"]], "installing ragtune replaced the user's packages"
    # smoke: the core works against their numpy: BM25 (bm25s, scipy) on the bundled docs and golden set, dense
    # retrieval (onnxruntime, tokenizers, the bundled model) on a small folder; the server module imports against
    # their FastAPI. (The default hybrid eval of the docs folder is the same code, embedding 1,800 chunks afresh.)
    out = _run(py, "-m", "ragtune", "eval", "--corpus", str(ROOT / "docs"), "--golden", str(ROOT / "docs" / "golden.jsonl"),
               "--retriever", "bm25", "--json", cwd=tmp_path)
    assert '"recall@5"' in out
    small = tmp_path / "small"
    small.mkdir()
    (small / "billing.md").write_text("# Billing\n\n## Refunds\n\nRefunds are paid within 14 days of a request.\n")
    (small / "rivers.md").write_text("# Rivers\n\nThe Danube flows through ten countries into the Black Sea.\n")
    hits = _run(py, "-m", "ragtune", "search", "--corpus", str(small), "--retriever", "dense", "how long do refunds take",
                cwd=tmp_path)
    assert hits.index("billing.md#refunds") < hits.index("rivers.md"), hits
    _run(py, "-c", "import ragtune, ragtune.serve.app; assert 'torch' not in __import__('sys').modules")
