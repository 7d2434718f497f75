"""The ragtune exception tree.

Every error ragtune raises on purpose is defined here, derives from
:class:`RagtuneError`, and also from the built-in exception a caller would
naturally catch::

    RagtuneError
     +-- ConfigError            (ValueError)         an option or configuration is invalid
          +-- EmptyIndexError                        a chunker produced no chunks: there is nothing to index
          +-- ParameterError                         parameters that do not go together, or one missing
          +-- StageContractError (TypeError)         a registered stage lacks a method of its protocol (stages.py)
     +-- CorpusError            (ValueError)         a corpus file is malformed or empty
     +-- CorpusNotFoundError    (FileNotFoundError)  a corpus or golden-set path does not exist
     +-- GoldenSetError         (ValueError)         a golden set file is malformed
          +-- GoldenConflictError                    a question changed since the revision a change was made on
     +-- UnknownAnchorError     (KeyError)           an anchor names nothing in the corpus
     +-- InputTooLargeError     (ValueError)         an input is over a size the receiver states (a server answers 422)
     +-- MissingDependencyError (ImportError)        an optional extra is not installed
     +-- GridError              (ValueError)         a sweep grid file is invalid
     +-- SweepStateError        (ValueError)         a sweep folder holds another corpus's or golden set's results
     +-- StoreError             (ValueError)         an index store or version is missing, damaged or incompatible
          +-- DamagedStoreError                      CURRENT, history.json or a version's files are damaged
          +-- StoreLockedError                       another process held the store lock past the timeout
          +-- CurrentMovedError                      CURRENT moved while a refresh, build or migrate ran
     +-- APIError               (ConnectionError)    a remote API failed after retries or answered nonsense
          +-- TrackingError                          a finished sweep could not be logged to its tracker (MLflow)
     +-- EngineError            (RuntimeError)       an outside search engine (Milvus) refused or failed an operation
     +-- TelemetryError         (OSError)            the telemetry log cannot be opened or written
          +-- TelemetryBusyError                     another connection holds the log's lock too long

Messages say what was received, what was expected, and how to fix it.
"""

from __future__ import annotations

__all__ = [
    "RagtuneError",
    "ConfigError",
    "EmptyIndexError",
    "ParameterError",
    "StageContractError",
    "CorpusError",
    "CorpusNotFoundError",
    "GoldenSetError",
    "GoldenConflictError",
    "UnknownAnchorError",
    "InputTooLargeError",
    "MissingDependencyError",
    "GridError",
    "SweepStateError",
    "StoreError",
    "DamagedStoreError",
    "StoreLockedError",
    "CurrentMovedError",
    "APIError",
    "TrackingError",
    "EngineError",
    "TelemetryError",
    "TelemetryBusyError",
]


class RagtuneError(Exception):
    """Root of every error ragtune raises on purpose."""


class ConfigError(RagtuneError, ValueError):
    """An option or configuration value is invalid."""


class EmptyIndexError(ConfigError):
    """The chunker produced no chunks (every document is empty): there is nothing to index."""


class StageContractError(ConfigError, TypeError):
    """A class or built object registered as a pipeline stage lacks a member of the stage's protocol
    (:mod:`ragtune.stages`)."""


class ParameterError(ConfigError):
    """Parameters given together that do not go together, or one that is missing. The message names them as
    parameters (``give corpus or store, not both``); ``params`` holds those names, in the order of the message's
    ``{}`` fields (a sequence of names fills one field, joined by commas), and :meth:`respell` writes the message
    with each name spelt another way: the command line spells them as its flags (``--corpus``). ``prefix`` is
    text put before the message as it is (a URL, a file name: braces in it are no fields)."""

    def __init__(self, template: str, *params: str | tuple[str, ...] | list[str], prefix: str = ""):
        self.template, self.params = template, tuple(p if isinstance(p, str) else tuple(p) for p in params)
        self.prefix = prefix
        super().__init__(self.respell(str))

    def __reduce__(self):  # pickled (a Ray worker's error) with its parameters, not only its text
        return type(self), (self.template, *self.params), {"prefix": self.prefix}

    def __str__(self) -> str:
        return self.respell(str)

    def respell(self, spell) -> str:
        """The message with each parameter name written as ``spell(name)``."""
        if not self.params:
            return self.prefix + self.template
        return self.prefix + self.template.format(*(spell(p) if isinstance(p, str) else ", ".join(map(spell, p))
                                      for p in self.params))


class CorpusError(RagtuneError, ValueError):
    """A corpus could not be loaded: unreadable, malformed or empty."""


class CorpusNotFoundError(RagtuneError, FileNotFoundError):
    """A corpus or golden-set path does not exist."""


class GoldenSetError(RagtuneError, ValueError):
    """A golden set file is malformed."""


class GoldenConflictError(GoldenSetError):
    """A question of a golden set changed (another tab, another person) since the revision a change to it was
    made on; nothing was written. ``qid`` names it, ``current`` is the question as it now is (None: deleted)."""

    def __init__(self, message: str, *, qid: str | None = None, current: object = None):
        super().__init__(message)
        self.qid, self.current = qid, current


class UnknownAnchorError(RagtuneError, KeyError):
    """An anchor names no document or section of the corpus."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class InputTooLargeError(RagtuneError, ValueError):
    """An input (a field of a request, a question's text) is over the size its receiver states; the message names
    the field, its size and the limit."""


class MissingDependencyError(RagtuneError, ImportError):
    """An optional dependency is missing; the message names the pip command."""


class GridError(RagtuneError, ValueError):
    """A grid file is invalid; the message lists every problem found."""


class SweepStateError(RagtuneError, ValueError):
    """The output folder holds results of a different corpus or golden set."""


class StoreError(RagtuneError, ValueError):
    """The store is missing, a version is unknown or damaged, or an operation would mix incompatible indexes."""


class DamagedStoreError(StoreError):
    """A pointer file (``CURRENT``, ``history.json``) or a version's files are damaged; the message names the file
    and the repair."""


class StoreLockedError(StoreError):
    """Another process held the store lock (``building/.lock``) past the timeout; the message names it."""


class CurrentMovedError(StoreError):
    """``CURRENT`` moved while a refresh, build or migrate ran: promoting would undo that change, so it was refused."""


class APIError(RagtuneError, ConnectionError):
    """A remote API failed after retries, or answered something unusable: the upstream failure of an outside
    search endpoint, an LLM or an embeddings server (a server maps it to 502). ``status``: the HTTP status the
    server answered (401, 404...), None when there was none (timeout, refused redirect, unreadable answer)."""

    status: int | None = None


class TrackingError(APIError):
    """A finished sweep could not be logged to its experiment tracker (MLflow refused, or could not be reached in
    the bounded time): the sweep's results are complete and kept in its folder; log them again later. The command
    line exits with ``exit_status`` (3), not 2, so a script can tell a failed tracker from a failed sweep."""

    exit_status = 3


class EngineError(RagtuneError, RuntimeError):
    """An outside search engine (Milvus) refused or failed an operation; the message names the operation, the
    collection and what to check."""


class TelemetryError(RagtuneError, OSError):
    """The telemetry log could not be opened or written (the answer itself is unaffected)."""


class TelemetryBusyError(TelemetryError):
    """Another connection holds a lock on the log beyond the busy timeout (try again later)."""
