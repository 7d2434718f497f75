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
    # smoke: the core works on the bundled docs, and the server module imports against their FastAPI
    out = _run(py, "-m", "ragtune", "eval", "--corpus", str(ROOT / "docs"), "--golden", str(ROOT / "docs" / "golden.jsonl"),
               "--json", cwd=tmp_path)
    assert '"recall@5"' in out
    _run(py, "-c", "import ragtune, ragtune.serve.app; assert 'torch' not in __import__('sys').modules")
