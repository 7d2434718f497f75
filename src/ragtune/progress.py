"""Progress display for long loops (rich), shown only on an interactive terminal."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sized
from typing import TypeVar

T = TypeVar("T")

__all__ = ["progress_iter"]


def progress_iter(items: Iterable[T], description: str, *, enabled: bool = True) -> Iterator[T]:
    """Iterate ``items`` with a progress bar on stderr when it is a terminal."""
    if not enabled or not sys.stderr.isatty():
        yield from items
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    total = len(items) if isinstance(items, Sized) else None
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)
