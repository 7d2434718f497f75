"""The ragtune exception tree.

Every error ragtune raises on purpose derives from :class:`RagtuneError`, and
also from the built-in exception a caller would naturally catch::

    RagtuneError
     +-- ConfigError          (ValueError)    an option or configuration is invalid
     +-- CorpusError          (ValueError)    a corpus file is malformed or empty
     +-- CorpusNotFoundError  (FileNotFoundError)  a corpus path does not exist
     +-- GoldenSetError       (ValueError)    a golden set file is malformed
     +-- UnknownAnchorError   (KeyError)      an anchor names nothing in the corpus
     +-- MissingDependencyError (ImportError) an optional extra is not installed

Messages say what was received, what was expected, and how to fix it.
"""

from __future__ import annotations

__all__ = [
    "RagtuneError",
    "ConfigError",
    "CorpusError",
    "CorpusNotFoundError",
    "GoldenSetError",
    "UnknownAnchorError",
    "MissingDependencyError",
]


class RagtuneError(Exception):
    """Root of every error ragtune raises on purpose."""


class ConfigError(RagtuneError, ValueError):
    """An option or configuration value is invalid."""


class CorpusError(RagtuneError, ValueError):
    """A corpus could not be loaded: unreadable, malformed or empty."""


class CorpusNotFoundError(RagtuneError, FileNotFoundError):
    """A corpus or golden-set path does not exist."""


class GoldenSetError(RagtuneError, ValueError):
    """A golden set file is malformed."""


class UnknownAnchorError(RagtuneError, KeyError):
    """An anchor names no document or section of the corpus."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class MissingDependencyError(RagtuneError, ImportError):
    """An optional dependency is missing; the message names the pip command."""
