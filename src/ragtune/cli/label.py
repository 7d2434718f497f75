"""ragtune label: the judging workbench."""

from __future__ import annotations

from ..label.app import run_workbench
from .options import add_flags, command, kwargs


def add(sub) -> None:
    add_flags(command(sub, "label", lambda a: run_workbench(a.corpus, a.golden, **kwargs(run_workbench, a)) or 0,
                      "judge and grow a golden set in the browser (a local web app)", inputs="corpus golden"),
              run_workbench)
