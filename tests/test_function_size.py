"""No function in src/ragtune grows past a size budget, so a long function gets cut into named steps.

A function's size is its lines from ``def`` to its last line, decorators excluded, docstring and nested
functions included (a route handler defined inside ``create_app`` counts towards ``create_app``).
"""

import ast
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "ragtune"

BUDGET = 120  # lines; the largest function now is label/app.py's create_app (113)
# cut into named steps (issue 38): each stays within this many lines, not counting its docstring
STEPPED = {("serve/app.py", "create_app"), ("corpus/blocks.py", "scan_blocks"), ("train/trainer.py", "_train"),
           ("evaluate/compare.py", "compare")}
STEPPED_BUDGET = 60


def _functions(root: Path):
    """(path relative to ``root``, function name, lines, docstring lines) of every function under ``root``."""
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = node.body[0]
                doc = (first.end_lineno - first.lineno + 1 if isinstance(first, ast.Expr)
                       and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str) else 0)
                yield path.relative_to(root).as_posix(), node.name, node.end_lineno - node.lineno + 1, doc


def long_functions(root: Path, budget: int) -> list[str]:
    """``path:name (N lines)`` for each function under ``root`` longer than ``budget`` lines."""
    return [f"{p}:{name} ({n} lines)" for p, name, n, _ in _functions(root) if n > budget]


def test_no_function_in_ragtune_is_over_the_budget():
    over = long_functions(SRC, BUDGET)
    assert not over, (f"functions over {BUDGET} lines: {', '.join(over)}; cut them into named steps "
                      "(helper functions or a small class with a docstring per step)")


def test_the_functions_cut_into_steps_stay_short():
    sizes = {(p, name): n - doc for p, name, n, doc in _functions(SRC) if (p, name) in STEPPED}
    assert set(sizes) == STEPPED, f"not found: {sorted(STEPPED - set(sizes))}"
    over = {k: n for k, n in sizes.items() if n > STEPPED_BUDGET}
    assert not over, f"over {STEPPED_BUDGET} lines (docstring aside): {over}"


def test_a_planted_long_function_fails_the_check(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(BUDGET))  # def line + BUDGET lines: one over
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(
        textwrap.dedent("""\
            def short():
                return 1


            class Holder:
                def method(self):
            """) + textwrap.indent(body, "    ") + "\n", encoding="utf-8")
    assert long_functions(tmp_path, BUDGET) == [f"pkg/mod.py:method ({BUDGET + 1} lines)"]
    assert long_functions(tmp_path, BUDGET + 1) == []
