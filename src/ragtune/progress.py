"""Progress for slow steps, always on stderr (stdout carries ``--json`` output).

- :func:`progress_iter`: a bar with an ETA around a loop;
- :func:`status`: a spinner with the elapsed time around one slow call (a model loading);
- :func:`note`: one line announcing expensive work before it starts;
- :func:`format_duration`: ``about 2 min``.

Bars and spinners are drawn only when stderr is a terminal, or when
``RAGTUNE_PROGRESS=always`` (logs, tests); ``RAGTUNE_PROGRESS=never`` turns
them and the notes off.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator, Sized
from typing import TypeVar

T = TypeVar("T")

__all__ = ["progress_iter", "status", "note", "format_duration", "interactive"]


def _mode() -> str:
    return os.environ.get("RAGTUNE_PROGRESS", "auto").strip().lower()


def interactive() -> bool:
    """Whether bars and spinners are drawn: stderr is a terminal (or ``RAGTUNE_PROGRESS=always``)."""
    mode = _mode()
    if mode == "never":
        return False
    return mode == "always" or sys.stderr.isatty()


def _console():
    from rich.console import Console

    return Console(stderr=True, force_terminal=True if _mode() == "always" else None)


def format_duration(seconds: float) -> str:
    """A rough human duration: ``under a second``, ``about 40 s``, ``about 2 min``, ``about 1.5 h``."""
    if not seconds or seconds < 1:
        return "under a second"
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


def note(message: str, *, enabled: bool = True) -> None:
    """One line on stderr (not drawn over by bars), unless disabled or ``RAGTUNE_PROGRESS=never``."""
    if enabled and _mode() != "never":
        print(message, file=sys.stderr, flush=True)


def progress_iter(items: Iterable[T], description: str, *, enabled: bool = True, total: int | None = None,
                  weights: Iterable[int] | None = None) -> Iterator[T]:
    """Iterate ``items`` with a progress bar and ETA on stderr (see :func:`interactive`).

    ``weights`` (one per item) advance the bar by that much instead of 1, with ``total`` their sum:
    a loop over batches can count texts."""
    if not enabled or not interactive():
        yield from items
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    if total is None:
        total = len(items) if isinstance(items, Sized) else None
    steps = iter(weights) if weights is not None else None
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        transient=True, console=_console(),
    ) as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task, next(steps, 1) if steps is not None else 1)


@contextlib.contextmanager
def status(description: str, *, enabled: bool = True) -> Iterator[None]:
    """A spinner with the elapsed time on stderr while the block runs (see :func:`interactive`)."""
    if not enabled or not interactive():
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), transient=True,
                  console=_console()) as bar:
        bar.add_task(description, total=None)
        yield
