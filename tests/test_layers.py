"""The layer contract in pyproject.toml (import-linter) holds, and it would catch a back-pointing import."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports() -> list[str]:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "lint-imports is not installed: pip install -c constraints.txt -e '.[test]'"
    return [exe]


def test_the_layers_hold():
    proc = subprocess.run([*_lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Contracts: 2 kept, 0 broken" in proc.stdout


def test_a_back_pointing_import_breaks_the_contract(tmp_path):
    """A copy of the package where the ground floor imports the pipeline: the contract must fail, naming it."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "ragtune", src / "ragtune", ignore=shutil.ignore_patterns("__pycache__"))
    types_py = src / "ragtune" / "types.py"
    types_py.write_text(types_py.read_text() + "\n\ndef _back():\n    from .pipeline import PipelineConfig\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    import os

    proc = subprocess.run([*_lint_imports(), "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(src)})
    assert proc.returncode != 0
    assert "ragtune.types is not allowed to import ragtune.pipeline" in proc.stdout, proc.stdout


def test_an_import_cycle_inside_a_function_breaks_the_contract(tmp_path):
    """A copy of the package where bm25 imports fusion inside a function, and fusion imports bm25 at the top: a
    cycle between sibling modules, though no import runs at load time. The second contract must fail on it."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "ragtune", src / "ragtune", ignore=shutil.ignore_patterns("__pycache__"))
    bm25 = src / "ragtune" / "retrieve" / "bm25.py"
    assert "from .bm25 import" in (src / "ragtune" / "retrieve" / "fusion.py").read_text()
    bm25.write_text(bm25.read_text() + "\n\ndef _later():\n    from .fusion import HybridRetriever\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    import os

    proc = subprocess.run([*_lint_imports(), "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(src)})
    assert proc.returncode != 0
    assert "no import cycles between sibling modules BROKEN" in proc.stdout, proc.stdout
    assert "No cycles are allowed in ragtune.retrieve." in proc.stdout and ".fusion -> .bm25" in proc.stdout, proc.stdout


@pytest.mark.parametrize("module", ["ragtune", "ragtune.pipeline", "ragtune.store", "ragtune.sweep"])
def test_library_modules_never_import_the_cli(module):
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.startswith('ragtune.cli')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
