"""No test asserts how long something took: a busy machine turns every such bound into a random failure.

What a timed assert meant to guard is checked another way: concurrency by what ran at once (an event that
only releases when N calls are in flight, a peak counter), "does not stall" by ordering (the answer came
back while the lock was still held), quadratic work by the growth ratio of two input sizes measured in
one run (tests/growth.py), retries and backoff by the waits asked for or a clock the test moves. A timeout
far above normal that fails only on a true hang (a join, a socket timeout, an alarm) is no assert on time.

This test reads every test module and fails on an ``assert`` that compares a wall-clock or CPU-clock
difference: a value computed in the test from ``time.time()``, ``perf_counter()``, ``monotonic()``,
``process_time()`` or ``thread_time()`` (directly, through a local variable, a list it was appended to,
or a helper in the module that returns it). A ratio of two such durations has no unit and is allowed;
latency figures a library reports (``result.latency_ms``) are values under test, not the test's clock.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
CLOCKS = {"time", "perf_counter", "monotonic", "process_time", "thread_time", "time_ns", "perf_counter_ns",
          "monotonic_ns", "process_time_ns", "thread_time_ns"}
PASS_THROUGH = {"min", "max", "sum", "abs", "float", "round", "sorted", "median", "mean", "fsum"}
APPENDERS = {"append", "extend", "add", "insert"}


def _is_clock(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return ((isinstance(f, ast.Attribute) and f.attr in CLOCKS and isinstance(f.value, ast.Name)
             and f.value.id == "time") or (isinstance(f, ast.Name) and f.id in CLOCKS - {"time"}))


class _Scope:
    """Which names in one function hold times: a clock reading or a duration (``names``), or tuples of which
    some positions do, alone or as the items of a list (``shapes``: name -> those positions)."""

    def __init__(self, functions: dict[str, frozenset[int] | None]):
        self.names: set[str] = set()
        self.shapes: dict[str, frozenset[int]] = {}
        self.functions = functions  # helpers returning a time (None) or a tuple holding times (the positions)

    def shape(self, node: ast.AST) -> frozenset[int] | None:
        """The positions holding times when ``node`` is a tuple (or a list of tuples) holding some."""
        if isinstance(node, ast.Tuple):
            found = frozenset(i for i, e in enumerate(node.elts) if self.timed(e))
            return found if found and len(found) < len(node.elts) else None
        if isinstance(node, ast.Name):
            return self.shapes.get(node.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return self.functions.get(node.func.id)
        return None

    def timed(self, node: ast.AST | None) -> bool:
        if node is None:
            return False
        if _is_clock(node):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.BinOp):
            left, right = self.timed(node.left), self.timed(node.right)
            if isinstance(node.op, ast.Div) and left and right:
                return False  # a ratio of two durations: no unit
            return left or (right and not isinstance(node.op, ast.Div))
        if isinstance(node, ast.UnaryOp):
            return self.timed(node.operand)
        if isinstance(node, ast.Subscript):
            shape = self.shape(node.value)
            if shape is not None:
                index = node.slice
                return not (isinstance(index, ast.Constant) and isinstance(index.value, int)
                            and index.value not in shape)
            return self.timed(node.value)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(self.timed(e) for e in node.elts)
        if isinstance(node, ast.IfExp):
            return self.timed(node.body) or self.timed(node.orelse)
        if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            self._bind_comprehensions(node)
            return self.timed(node.elt)
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if isinstance(f, ast.Name) and name in self.functions:
                return self.functions[name] is None
            return name in PASS_THROUGH and any(self.timed(a) for a in node.args)
        return False

    def _bind(self, target: ast.AST, shape: frozenset[int] | None = None) -> bool:
        """Mark the names in ``target``; with a ``shape``, only those at its positions of a tuple target."""
        if shape is not None and isinstance(target, (ast.Tuple, ast.List)) \
                and not any(isinstance(e, ast.Starred) for e in target.elts):
            return any([self._bind(e) for i, e in enumerate(target.elts) if i in shape])
        if shape is not None and isinstance(target, ast.Name):
            merged = self.shapes.get(target.id, frozenset()) | shape
            if self.shapes.get(target.id) == merged:
                return False
            self.shapes[target.id] = merged
            return True
        new = False
        for n in ast.walk(target):
            if isinstance(n, ast.Name) and n.id not in self.names:
                self.names.add(n.id)
                new = True
        return new

    def _bind_from(self, target: ast.AST, value: ast.AST, *, items: bool = False) -> bool:
        """Bind ``target`` to ``value`` (``items``: to one item of it, as a loop does)."""
        shape = self.shape(value)
        if shape is not None:
            return self._bind(target, shape)
        if items and isinstance(value, ast.Name) and value.id not in self.names:
            return False
        return self._bind(target) if self.timed(value) else False

    def _bind_comprehensions(self, node: ast.AST) -> bool:
        return any([self._bind_from(gen.target, gen.iter, items=True) for gen in getattr(node, "generators", [])])

    def learn(self, body: ast.AST) -> None:
        """Mark every name that gets a time in ``body``, until nothing changes (assignments in any order)."""
        changed = True
        while changed:
            changed = False
            for node in ast.walk(body):
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if (isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple)
                                and len(t.elts) == len(node.value.elts)):  # a, b = x, y: pair by pair
                            changed |= any([self._bind_from(te, ve) for te, ve in zip(t.elts, node.value.elts)])
                        else:
                            changed |= self._bind_from(t, node.value)
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                    changed |= self._bind_from(node.target, node.value)
                elif isinstance(node, (ast.For, ast.AsyncFor)):
                    changed |= self._bind_from(node.target, node.iter, items=True)
                elif isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)):
                    changed |= self._bind_comprehensions(node)
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr in APPENDERS and isinstance(node.func.value, ast.Name)):
                    for a in node.args:
                        changed |= self._bind_from(node.func.value, a)

    def timed_asserts(self, body: ast.AST) -> list[ast.Assert]:
        found = []
        for node in ast.walk(body):
            if isinstance(node, ast.Assert):
                for sub in ast.walk(node.test):  # names bound by the assert's own comprehensions first
                    self._bind_comprehensions(sub)
                if any(isinstance(c, ast.Compare) and any(self.timed(x) for x in (c.left, *c.comparators))
                       for c in ast.walk(node.test)):
                    found.append(node)
        return found


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(node)
        elif isinstance(node, ast.ClassDef):
            out += [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return out


def timed_asserts(source: str) -> list[int]:
    """The line numbers of the asserts in ``source`` that compare a time the test measured."""
    tree = ast.parse(source)
    functions = _functions(tree)
    timed_functions: dict[str, frozenset[int] | None] = {}
    for _ in range(2):  # a helper returning a helper's duration
        for fn in functions:
            scope = _Scope(timed_functions)
            scope.learn(fn)
            for n in ast.walk(fn):
                if isinstance(n, ast.Return) and n.value is not None and fn.name not in timed_functions:
                    shape = scope.shape(n.value) if isinstance(n.value, ast.Tuple) else None
                    if shape is not None or scope.timed(n.value):
                        timed_functions[fn.name] = shape
    lines = []
    for fn in functions:
        scope = _Scope(timed_functions)
        scope.learn(fn)
        lines += [a.lineno for a in scope.timed_asserts(fn)]
    return sorted(set(lines))


def test_no_test_asserts_elapsed_time():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if "time" not in source:
            continue
        lines = source.splitlines()
        found += [f"{path.relative_to(TESTS.parent)}:{n}: {lines[n - 1].strip()}" for n in timed_asserts(source)]
    assert not found, ("these asserts compare elapsed time, which fails on a busy machine; check what ran at "
                       "once, the order of events, or the growth ratio instead (tests/growth.py):\n"
                       + "\n".join(found))


CAUGHT = {
    "a bound on a duration": """
def test_x():
    t0 = time.perf_counter()
    go()
    elapsed = time.perf_counter() - t0
    assert len(out) > 1 and elapsed < 10
""",
    "inline": """
def test_x():
    t0 = time.monotonic()
    go()
    assert 0.6 <= time.monotonic() - t0 < 5
""",
    "a duration in a list, compared in a generator": """
def test_x():
    probes = []
    def probe():
        t0 = time.perf_counter()
        code = call()
        probes.append((code, time.perf_counter() - t0))
    probe()
    assert max(t for _, t in probes) < 1.5, probes
""",
    "a p95 of measured times": """
def test_x():
    took = []
    for _ in range(20):
        t0 = time.perf_counter()
        call()
        took.append(time.perf_counter() - t0)
    took.sort()
    assert took[int(len(took) * 0.95) - 1] < 1.0
""",
    "a helper returning a duration": """
def _seconds(fn, arg):
    t0 = time.perf_counter()
    fn(arg)
    return time.perf_counter() - t0

def test_x():
    small = min(_seconds(f, 1), _seconds(f, 1))
    assert small < 0.5
""",
    "a returned tuple": """
def test_x():
    code, data, took = raw(1)
    assert code == 413 and took < 3

def raw(port):
    t0 = time.perf_counter()
    return 1, b"", time.perf_counter() - t0
""",
    "timestamps in a list": """
def test_x():
    attempts = []
    def loader():
        attempts.append(time.monotonic())
    assert attempts[2] - attempts[1] >= 0.2
""",
    "CPU time": """
def test_x():
    start = time.process_time()
    load()
    elapsed = time.process_time() - start
    assert elapsed < 8, f"took {elapsed:.1f} s"
""",
}

ALLOWED = {
    "a hang guard that is a deadline, not an assert": """
def test_x():
    deadline = time.monotonic() + 60
    while not done() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert done()
""",
    "a deadline beside another value": """
def test_x():
    deadline, body = time.time() + 90, None
    while time.time() < deadline and body is None:
        body = get()
    assert body is not None
""",
    "the other fields of tuples that hold a duration": """
def test_x():
    probes = []
    t0 = time.perf_counter()
    probes.append((200, time.perf_counter() - t0, False))
    assert all(code == 200 and not late for code, _, late in probes)
""",
    "a growth ratio of two durations": """
def test_x():
    small, large = cpu(f, 1), cpu(f, 4)
    ratio = large / small
    assert ratio < 8

def cpu(fn, n):
    t0 = time.thread_time()
    fn(n)
    return time.thread_time() - t0
""",
    "latency a library reports": """
def test_x():
    got = evaluate()
    assert all(q.latency_s >= 0.045 for q in got.questions)
    assert got.latency_ms["p95"] >= got.latency_ms["p50"] >= 0
""",
}


@pytest.mark.parametrize("what", sorted(CAUGHT))
def test_the_scan_finds_timed_asserts(what):
    source = CAUGHT[what]
    assert timed_asserts(source) == [n + 1 for n, line in enumerate(source.splitlines())
                                     if line.strip().startswith("assert") and ("<" in line or ">" in line)]


@pytest.mark.parametrize("what", sorted(ALLOWED))
def test_the_scan_leaves_other_uses_of_the_clock_alone(what):
    assert timed_asserts(ALLOWED[what]) == []
