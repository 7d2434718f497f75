"""How work grows with the input, measured in one run: the guard against quadratic blow-ups.

No test asserts how many seconds something takes (a busy machine makes any such bound flaky). A quadratic
regression is caught instead by the ratio between two sizes of the same input, timed in the same run on
this thread's CPU clock (``time.thread_time``: time spent waiting for a busy CPU is not counted):
quadrupling the input (doubling it twice) costs about 4x when the work is linear and 16x when it is
quadratic, so :func:`assert_linear` fails at 8x.
"""

from __future__ import annotations

import time
from typing import Any, Callable


def cpu_seconds(fn: Callable[[Any], Any], arg: Any) -> tuple[float, Any]:
    """``fn(arg)``'s result and the CPU seconds this thread spent on it."""
    t0 = time.thread_time()
    out = fn(arg)
    return time.thread_time() - t0, out


def assert_linear(fn: Callable[[Any], Any], make: Callable[[int], Any], n: int, what: str, *,
                  factor: int = 4, limit: float = 8.0) -> Any:
    """Fail when ``fn(make(factor * n))`` costs ``limit`` times ``fn(make(n))`` or more; return the large
    run's result for the caller's own checks. Each size is measured again (the least kept) before a ratio
    over the limit is judged, so one noisy measurement does not fail the test."""
    small_input, large_input = make(n), make(factor * n)
    small = min(cpu_seconds(fn, small_input)[0] for _ in range(2))
    large, out = cpu_seconds(fn, large_input)
    floor = 1e-3  # below a millisecond, timer granularity dominates: never divide by it
    for _ in range(2):
        if large < limit * max(small, floor):
            break
        small = min(small, cpu_seconds(fn, small_input)[0])
        again, out = cpu_seconds(fn, large_input)
        large = min(large, again)
    ratio = large / max(small, floor)
    assert ratio < limit, f"{what}: {factor}x the input cost {ratio:.1f}x ({small:.4f} s -> {large:.4f} s of CPU)"
    return out
