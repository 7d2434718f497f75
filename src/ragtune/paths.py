"""Checking an input path before anything opens it; where the caches live; how many CPUs this process may use.

Opening a FIFO blocks until a writer comes, and reading a device such as ``/dev/zero`` never ends, so every
reader of a user-given file asks :func:`check_input_file` first: it says what the path is when it is not a
regular file ("is a FIFO (named pipe), not a regular file") rather than "does not exist", and never opens it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import ConfigError

__all__ = ["check_input_file", "file_kind", "default_cache_dir"]


def file_kind(mode: int) -> str:
    """What a ``st_mode`` is, as a phrase: "a regular file", "a folder", "a FIFO (named pipe)", ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def check_input_file(path: str | os.PathLike[str], what: str = "file", *, error: type[Exception] = ConfigError,
                     missing: type[Exception] | None = None) -> os.stat_result:
    """The ``os.stat`` of ``path`` when it is a regular file (a symbolic link to one counts); otherwise raise
    ``error`` (``missing`` when nothing is there, default ``error`` too) with one line that names ``what`` it
    was meant to be and what it is. Nothing is opened."""
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except (FileNotFoundError, NotADirectoryError):
        try:
            target = os.readlink(p) if os.path.islink(p) else None
        except OSError:
            target = None
        if target is not None:
            raise (missing or error)(f"{what} {p} is a symbolic link to {target}, which does not exist") from None
        raise (missing or error)(f"{what} {p} does not exist") from None
    except OSError as e:
        raise error(f"cannot read {what} {p}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{what} {p} is {file_kind(st.st_mode)}, not a regular file; point at a regular file")
    return st


def default_cache_dir() -> Path:
    """Where ragtune caches embeddings, chunkings and BM25 indexes: ``RAGTUNE_CACHE_DIR`` when set, else a per-user
    cache folder, the same from any working directory: ``$XDG_CACHE_HOME/ragtune`` (``~/.cache/ragtune`` when
    ``XDG_CACHE_HOME`` is unset or relative; ``%LOCALAPPDATA%\\ragtune\\cache`` on Windows)."""
    given = os.environ.get("RAGTUNE_CACHE_DIR")
    if given:
        return Path(given)
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "ragtune" / "cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):  # the XDG spec: a relative value is invalid and ignored
        return Path(xdg) / "ragtune"
    try:
        return Path.home() / ".cache" / "ragtune"
    except RuntimeError:  # no home directory can be determined (a bare container user)
        import tempfile

        return Path(tempfile.gettempdir()) / "ragtune-cache"


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask where the system has one (``taskset``, a container's
    cpuset, a batch scheduler's allocation), else all of the machine's. ``os.cpu_count()`` counts the machine's
    even when the process is held to one core, and threads sized by it then queue on that core."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity call on this system (macOS, Windows)
        return os.cpu_count() or 1
