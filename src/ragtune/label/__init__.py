"""The judging workbench (``ragtune label``): build and grow a golden set in the browser.

- :mod:`.golden_file`: the golden set file, changed one question at a time, each change written at once and
  atomically, with a revision per question so that two tabs or two people never overwrite each other silently.
- :mod:`.candidates`: what to judge for a question: its pool (a pool file, or BM25, dense and hybrid top-k built
  on the spot), in an order that does not reveal which system found what, and a search for what the pool missed.
- :mod:`.traffic`: the questions of a telemetry log, grouped the way ``gaps`` clusters them.
- :mod:`.app`: the local web app (FastAPI; every asset bundled).
"""

from .golden_file import Conflict, GoldenFile

__all__ = ["GoldenFile", "Conflict"]
