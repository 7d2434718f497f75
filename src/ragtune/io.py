"""Writing results: JSON and JSON Lines files, with errors that say what to fix."""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import IO, Any, Literal

from .errors import ConfigError

__all__ = ["write_atomic", "check_writable", "fsync_dir", "write_text", "write_json", "write_jsonl", "check_regular_file",
           "json_finite", "some", "InputFormat", "Sample", "sniff_format", "describe_formats"]

Content = str | bytes | Callable[[IO[Any]], None]


def _target(path: str | os.PathLike[str]) -> str:
    """The file a write to ``path`` must change: a symlink's target (followed to the end), else ``path`` itself."""
    p = os.fspath(path)
    return os.path.realpath(p) if os.path.islink(p) else p


def check_writable(path: str | os.PathLike[str]) -> None:
    """Refuse, before any work, a file that exists and is read-only: no write bit, or not writable by this process
    (a rename replaces a read-only file silently: it needs only the folder's permission). Raises PermissionError
    naming the file, its mode and the fix; a file that does not exist yet passes."""
    target = _target(path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return
    # a file with no write bit was made read-only on purpose: refused even where the process could write it (root)
    if stat.S_ISREG(st.st_mode) and (not st.st_mode & 0o222 or not os.access(target, os.W_OK)):
        raise PermissionError(errno.EACCES, f"the file is read-only (mode {stat.S_IMODE(st.st_mode):04o}): make it "
                                            "writable (chmod u+w) or give another path", os.fspath(path))


def write_atomic(path: str | os.PathLike[str], content: Content, *, durable: bool = True) -> None:
    """Replace the file at ``path`` all at once: a reader sees the old content or the new, never a torn one, and a
    crash mid-write leaves the old file. The one atomic write of the package.

    ``content`` is a str (written as UTF-8), bytes, or a function that writes to the open text file (for rows
    streamed without building one string). The new content goes to a temporary file beside the target, is flushed
    and fsynced (``durable``; caches that only cost a recomputation pass False), then renamed over the target, and the
    folder is fsynced so the rename itself survives a crash.

    - A symlink is written through: its target is replaced and the link stays a link.
    - The target's permission bits are kept (a 0600 file stays 0600); a new file gets the umask's default (0644
      under the usual 022), not mkstemp's 0600.
    - A target this process may not write is refused (PermissionError, see :func:`check_writable`), not replaced.
    - The folder is created if missing. On any failure the temporary file is removed and the error propagates.
    """
    check_writable(path)
    target = _target(path)
    folder = os.path.dirname(target) or "."
    os.makedirs(folder, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.tmp-", dir=folder)
    try:
        binary = isinstance(content, bytes)
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
            if callable(content):
                content(f)
            else:
                f.write(content)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        fsync_dir(folder)


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (a rename, a new file) to disk. A folder that cannot be opened, or a filesystem that
    does not sync folders (EINVAL, ENOTSUP), is passed over; a failing disk (EIO, ENOSPC) raises."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically (:func:`write_atomic`), creating its folder; an OSError becomes one
    ConfigError line."""
    try:
        write_atomic(path, text)
    except OSError as e:
        raise ConfigError(f"cannot write {os.fspath(path)}: {e.strerror or e}") from None


def write_json(path: str | os.PathLike[str], data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def write_jsonl(path: str | os.PathLike[str], rows: list[Any]) -> None:
    write_text(path, "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows))


def check_regular_file(path: str | os.PathLike[str], what: str = "file") -> None:
    """Refuse a path that is not a regular file before anything reads it (reading a FIFO or a device would block
    forever or never end): :func:`ragtune.paths.check_input_file`, the one check."""
    from .paths import check_input_file

    check_input_file(path, what)


def json_finite(o: Any) -> Any:
    """``o`` with NaN and infinities made None (in dicts, lists and tuples, recursively), so the JSON is standard."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: json_finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [json_finite(v) for v in o]
    return o


def some(items: Any, n: int = 5, *, quote: bool = False) -> str:
    """The first ``n`` of ``items`` in sorted order, comma-separated, and how many more: for error messages."""
    items = sorted(items)
    shown = ", ".join(map(repr if quote else str, items[:n]))
    return shown + (f" and {len(items) - n} more" if len(items) > n else "")


# -- input formats: the row type of the one table (ragtune.evaluate.formats.FORMATS) ----------------------------------

class Sample:
    """What the rows of the format table look at to recognise a path, read at most once: whether it is a folder,
    its suffix, the first bytes (``head``, leading blanks stripped) and, when the file starts like JSON, the whole
    file parsed (``json``; None when it does not parse, ``json_error`` then says why)."""

    def __init__(self, path: str | os.PathLike[str], what: str = "file"):
        self.path = Path(path)
        self.is_dir = self.path.is_dir()
        self.suffix = self.path.suffix.lower()
        self.head = b""
        if not self.is_dir:
            check_regular_file(self.path, what)
            with open(self.path, "rb") as f:
                self.head = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
        self.json_error: str | None = None

    @property
    def starts_json(self) -> bool:
        return self.head[:1] in (b"{", b"[")

    @cached_property
    def json(self) -> Any:
        if self.is_dir or not self.starts_json:
            return None
        try:
            return json.loads(self.path.read_text(encoding="utf-8-sig"))
        except (UnicodeDecodeError, ValueError) as e:
            self.json_error = str(e)
            return None

    def first_line(self) -> list[str]:
        """The first non-blank line of the head, split on white space."""
        for line in self.head.decode("utf-8", "replace").splitlines():
            if line.strip():
                return line.split()
        return []


@dataclass(frozen=True)
class InputFormat:
    """One row of the table of input formats: a format ragtune reads (and, where ``write`` is set, writes).

    ``kind`` is ``judgments`` (a golden set: ``read(sample, split) -> GoldenSet``, ``write(golden, path)``) or
    ``run`` (rankings: ``read(sample, field) -> RunFile``, ``write(rankings, path)`` with rankings
    ``{question id: [(doc id, score), ...]}`` best first). ``sniff`` says whether a :class:`Sample` is in this
    format; the first row of a kind whose ``sniff`` answers yes reads it (``read`` gets the same sample, so a
    JSON file is parsed once). ``looks`` is how a person
    recognises the format, for the error that lists the formats; ``questions`` is false for judgments that carry
    no question text (qrels), which then score run files only."""

    name: str
    kind: Literal["judgments", "run"]
    looks: str
    sniff: Callable[[Sample], bool]
    read: Callable[..., Any]
    write: Callable[[Any, Path], Any] | None = None
    questions: bool = True


def describe_formats(rows: Sequence[InputFormat]) -> str:
    """The formats of ``rows`` as one line, for the error that says a file is in none of them."""
    return "; ".join(f"{r.name} ({r.looks})" for r in rows)


def sniff_format(sample: Sample, rows: Sequence[InputFormat]) -> InputFormat | None:
    """The first of ``rows`` that recognises ``sample``, or None."""
    return next((r for r in rows if r.sniff(sample)), None)
