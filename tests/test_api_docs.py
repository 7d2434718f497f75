"""The Python API reference (docs/reference/python-api.md) stays in step with ``import ragtune as rt``.

- its python examples import nothing from deep modules (``from ragtune.x import``, ``import ragtune.x``): the
  public API is the top-level package;
- every ``rt.NAME`` / ``ragtune.NAME`` it writes exists on the package (in code, a name of ``ragtune.__all__``; in
  prose, that or a module, as in "``parse_filter`` in ``ragtune.retrieve.filters``");
- every public name of ``ragtune.__all__`` is written on the page as ``rt.NAME`` or ``ragtune.NAME``.

Reads the page and the package's name table only: no model, no corpus, nothing imported lazily.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import ragtune

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "python-api.md"
FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
DEEP_IMPORT = re.compile(r"^\s*(?:from\s+ragtune\.[\w.]+\s+import|import\s+ragtune\.\w)", re.M)
# rt.NAME or ragtune.NAME, not inside a longer name or a path (my_rt.x, docs/ragtune.md)
USE = re.compile(r"(?<![\w./-])(?:rt|ragtune)\.([A-Za-z_]\w*)")
PUBLIC = sorted(n for n in ragtune.__all__ if not n.startswith("__"))


def _page() -> str:
    return PAGE.read_text(encoding="utf-8")


def _python_blocks(text: str) -> list[str]:
    return [body for lang, body in FENCE.findall(text) if lang in ("python", "py", "pycon")]


def _prose(text: str) -> str:
    return FENCE.sub("", text)


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(f"ragtune.{name}") is not None
    except (ImportError, ValueError):
        return False


def test_the_page_has_python_examples():
    assert len(_python_blocks(_page())) >= 20


def test_no_deep_imports_anywhere_on_the_page():
    text = _page()
    deep = [m.group(0).strip() for block in _python_blocks(text) for m in DEEP_IMPORT.finditer(block)]
    assert not deep, f"python-api.md imports from deep modules; use `import ragtune as rt` and rt.NAME: {deep}"
    # nor in prose ("from ragtune.store import IndexStore" written in a sentence)
    assert not re.search(r"from\s+ragtune\.\w[\w.]*\s+import", _prose(text)), \
        "python-api.md tells readers to import from a deep module; name the top-level rt.NAME instead"


def test_every_name_used_in_code_is_exported():
    used = {name for block in _python_blocks(_page()) for name in USE.findall(block)}
    missing = sorted(used - set(ragtune.__all__))
    assert not missing, f"python-api.md code uses names ragtune does not export: {missing}"


def test_every_name_used_in_prose_exists():
    used = set(USE.findall(_prose(_page())))
    missing = sorted(n for n in used if n not in ragtune.__all__ and not _is_module(n)
                     and not (n.startswith("__") and hasattr(ragtune, n)))
    assert not missing, f"python-api.md names rt.X / ragtune.X that are neither exported nor a module: {missing}"


def test_every_public_name_is_on_the_page():
    used = set(USE.findall(_page()))
    absent = [n for n in PUBLIC if n not in used]
    assert not absent, (f"ragtune.__all__ names missing from docs/reference/python-api.md (write each at least once "
                        f"as rt.NAME): {absent}")


@pytest.mark.parametrize("text, found", [
    ("x = rt.load_corpus('docs')", ["load_corpus"]),
    ("see ragtune.store and my_rt.x or docs/ragtune.md", ["store"]),
    ("rt.Pipeline.build(corpus)", ["Pipeline"]),
])
def test_the_name_pattern(text, found):
    assert USE.findall(text) == found


def test_the_deep_import_pattern():
    assert DEEP_IMPORT.search("from ragtune.store import IndexStore")
    assert DEEP_IMPORT.search("    import ragtune.sweep as s")
    assert not DEEP_IMPORT.search("import ragtune as rt")
    assert not DEEP_IMPORT.search("from ragtune import load_corpus")


def test_no_public_name_shadows_a_subpackage():
    """A top-level function named like a subpackage (``sweep``) breaks ``import ragtune.sweep.runner as r``."""
    import pkgutil
    import subprocess
    import sys

    subpackages = {m.name for m in pkgutil.iter_modules(ragtune.__path__)}
    # rt.evaluate (the verb, since the first release) is the one exception: `from ragtune.evaluate import X`
    # works, `import ragtune.evaluate.X as m` does not; no other name may join it
    assert subpackages & set(ragtune.__all__) == {"evaluate"}
    code = ("import ragtune as rt; rt.run_grid; import ragtune.sweep.runner as r; from ragtune.sweep import run_grid, "
            "sweep; print(r.__name__, callable(rt.run_grid) and rt.run_grid is run_grid and callable(sweep))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["ragtune.sweep.runner", "True"], out.stderr


def test_every_lazily_imported_name_is_public():
    assert set(ragtune._LAZY) <= set(ragtune.__all__)
    assert ragtune.__all__ == sorted(set(ragtune.__all__))
