"""Checking an input path before anything opens it; the document id of a file and how a name is printed; where the
caches live; how many CPUs this process may use.

Opening a FIFO blocks until a writer comes, and reading a device such as ``/dev/zero`` never ends, so every
reader of a user-given file asks :func:`check_input_file` first: it says what the path is when it is not a
regular file ("is a FIFO (named pipe), not a regular file") rather than "does not exist", and never opens it.

A file name is bytes on Linux, and not always UTF-8: Python gives ``b"caf\\xe9.md"`` as ``"caf\\udce9.md"`` (a lone
surrogate, which no UTF-8 writer, hash or JSON file takes), and a name may hold a newline or an escape sequence.
:func:`doc_id_from_path` makes the document id of every file a loader reads (``caf%E9.md``, ``new%0Aline.md``:
stable across runs, safe to hash, store and print), and :func:`display_name` is how a path or id is printed
(``caf\\xe9.md``, ``new\\nline.md``): no raw control character ever reaches a terminal or a one-line message.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path, PurePath

from .errors import ConfigError

__all__ = ["check_input_file", "file_kind", "default_cache_dir", "doc_id_from_path", "display_name"]


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


# characters a name may not carry raw: surrogates (bytes that were not UTF-8), C0 and C1 controls, DEL, the line
# and paragraph separators, and the bidirectional embeddings, overrides and isolates that reorder a printed line
_UNSAFE_RE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028-\u202e\u2066-\u2069]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _percent(ch: str) -> str:
    if "\udc80" <= ch <= "\udcff":  # one byte that was not UTF-8, as os.fsdecode gives it
        return f"%{ord(ch) - 0xDC00:02X}"
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))


def doc_id_from_path(path: str | PurePath) -> str:
    """The document id of a file at ``path``, relative to its corpus folder: its parts joined by ``/``, each byte
    that is not UTF-8 (``b"caf\\xe9.md"``) and each control character (a newline, an escape, a bidirectional
    override) written as ``%XX`` (``caf%E9.md``, ``new%0Aline.md``). Every other character, ``%`` included, is
    kept, so the id of any name that needs no escaping is the name. The same name always gives the same id."""
    text = "/".join(path.parts) if isinstance(path, PurePath) else path
    return _UNSAFE_RE.sub(lambda m: _percent(m.group()), text) if _UNSAFE_RE.search(text) else text


def _backslash(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if "\udc80" <= ch <= "\udcff":
        return f"\\x{ord(ch) - 0xDC00:02x}"
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def display_name(name: str | os.PathLike[str] | bytes) -> str:
    """``name`` (a path, a document id, an anchor) as it is printed: a byte that is not UTF-8 as ``\\xe9``, a newline
    as ``\\n``, other control characters as ``\\x1b``, ``\\u202e``; printable text, non-ASCII
    letters included, as it is. The result is one line that any terminal and any UTF-8 file take."""
    text = os.fsdecode(name) if isinstance(name, bytes) else os.fspath(name)
    return _UNSAFE_RE.sub(lambda m: _backslash(m.group()), text) if _UNSAFE_RE.search(text) else text


def check_input_file(path: str | os.PathLike[str], what: str = "file", *, error: type[Exception] = ConfigError,
                     missing: type[Exception] | None = None) -> os.stat_result:
    """The ``os.stat`` of ``path`` when it is a regular file (a symbolic link to one counts); otherwise raise
    ``error`` (``missing`` when nothing is there, default ``error`` too) with one line that names ``what`` it
    was meant to be and what it is. Nothing is opened."""
    p = os.fspath(path)
    shown = display_name(p)
    try:
        st = os.stat(p)
    except (FileNotFoundError, NotADirectoryError):
        try:
            target = os.readlink(p) if os.path.islink(p) else None
        except OSError:
            target = None
        if target is not None:
            raise (missing or error)(f"{what} {shown} is a symbolic link to {display_name(target)}, which does "
                                     "not exist") from None
        raise (missing or error)(f"{what} {shown} does not exist") from None
    except OSError as e:
        raise error(f"cannot read {what} {shown}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{what} {shown} is {file_kind(st.st_mode)}, not a regular file; point at a regular file")
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
