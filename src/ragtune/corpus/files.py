"""Reading files safely: regular files only, bounded size, UTF-8 with errors that name the file and position."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import CorpusError, CorpusNotFoundError
from ..paths import check_input_file, display_name, file_kind

__all__ = ["MAX_FILE_BYTES", "read_text_file", "read_bytes_file", "decode_text", "iter_jsonl"]

#: the largest file (markdown, text, a golden set) or ``corpus.jsonl`` line read, in bytes
MAX_FILE_BYTES = 64 * 1024 * 1024


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n:,} bytes"


def _too_big(path: Path | str, size: int, limit: int, what: str = "file") -> CorpusError:
    return CorpusError(f"{display_name(path)}: {what} of {_mib(size)} or more, larger than the {_mib(limit)} "
                       "allowed; split it, move it out of the corpus, or pass a larger max_file_bytes to load_corpus")


def _open_regular(path: Path, what: str) -> int:
    """A read-only descriptor of ``path``, which must be a regular file: checked by name first (for the message),
    then on the open descriptor (opened non-blocking, so a FIFO put there meanwhile cannot hang the open)."""
    check_input_file(path, what, error=CorpusError, missing=CorpusNotFoundError)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as e:
        raise CorpusError(f"{display_name(path)}: cannot read {what}: {e.strerror or e}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise CorpusError(f"{what} {display_name(path)} is {file_kind(mode)}, not a regular file; point at a "
                          "regular file")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return fd


def _decode(data: bytes, path: Path | str, line_base: int = 1) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + line_base
        raise CorpusError(
            f"{display_name(path)}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}); "
            "re-save the file as UTF-8"
        ) from None
    return text


def read_bytes_file(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path``. Anything but a regular file (a FIFO would block forever) is refused before it is
    opened, and a file over ``max_bytes`` before it is read (and again if it grows while it is read)."""
    path = Path(path)
    fd = _open_regular(path, "file")
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise _too_big(path, size, max_bytes)
        try:
            data = f.read(size + 1)  # the size it says (a buffer of max_bytes would be allocated up front)
            if len(data) > size:  # it grew, or its size said nothing (/proc): read on, still bounded
                parts = [data]
                total = len(data)
                while total <= max_bytes:
                    more = f.read(min(1 << 20, max_bytes + 1 - total))
                    if not more:
                        break
                    parts.append(more)
                    total += len(more)
                data = b"".join(parts)
                del parts
        except OSError as e:
            raise CorpusError(f"{display_name(path)}: cannot read file: {e.strerror or e}") from None
    if len(data) > max_bytes:
        raise _too_big(path, len(data), max_bytes)
    return data


def decode_text(data: bytes, path: Path | str) -> str:
    """``data`` decoded as UTF-8, a leading byte-order mark dropped; an error names the line and byte."""
    text = _decode(data, path)
    return text[1:] if text.startswith("\ufeff") else text


def read_text_file(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> str:
    """Read a UTF-8 file (a leading BOM is dropped); errors name the file and position. Anything but a regular
    file (a FIFO would block forever) is refused before it is opened, and a file over ``max_bytes`` before it
    is read."""
    data = read_bytes_file(path, max_bytes=max_bytes)
    return decode_text(data, path)


def _too_long(path: Path, lineno: int, size: int, limit: int) -> CorpusError:
    return CorpusError(f"{display_name(path)}:{lineno}: line of {_mib(size)} or more, larger than the "
                       f"{_mib(limit)} allowed for one document; split the document, or pass a larger max_file_bytes "
                       "to load_corpus")


def _lines(path: Path, fd: int, limit: int) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line, decoded straight from a memory map of the file: no bytes copy of a
    line is made, so a large document costs its text, not three copies of it. A line over ``limit`` bytes
    (its line ending aside) is refused before it is decoded."""
    import mmap

    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return
        try:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # a file system without mmap: a line at a time
            lineno = 0
            for raw in iter(lambda: f.readline(limit + 2), b""):
                lineno += 1
                if len(raw.rstrip(b"\r\n")) > limit:
                    raise _too_long(path, lineno, len(raw), limit) from None
                yield lineno, _decode(raw, path, lineno)
            return
        try:
            with memoryview(mm) as view:
                pos = 3 if mm[:3] == b"\xef\xbb\xbf" else 0
                lineno = 0
                while pos < size:
                    end = mm.find(b"\n", pos)
                    end = size if end == -1 else end + 1
                    lineno += 1
                    stop = end - (mm[end - 1] == 0x0A)
                    stop -= stop > pos and mm[stop - 1] == 0x0D
                    if stop - pos > limit:
                        raise _too_long(path, lineno, stop - pos, limit)
                    yield lineno, _decode_view(view, pos, end, path, lineno)
                    pos = end
        finally:
            mm.close()


def _decode_view(view: memoryview, start: int, end: int, path: Path, lineno: int) -> str:
    try:
        with view[start:end] as part:
            return str(part, "utf-8")
    except UnicodeDecodeError as e:
        raise CorpusError(f"{display_name(path)}:{lineno}: not valid UTF-8 (byte 0x{view[start + e.start]:02x} "
                          f"at offset {start + e.start}); re-save the file as UTF-8") from None


def iter_jsonl(path: Path, *, max_line_bytes: int = MAX_FILE_BYTES) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; malformed lines raise. The file is never read
    whole, and a line over ``max_line_bytes`` is refused before it is decoded."""
    path = Path(path)
    fd = _open_regular(path, "file")
    for lineno, line in _lines(path, fd, max_line_bytes):
        if not line or line.isspace():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise CorpusError(f"{display_name(path)}:{lineno}: malformed JSON ({e.msg} at column {e.colno})") from None
        except RecursionError:
            raise CorpusError(f"{display_name(path)}:{lineno}: JSON nested too deeply to read") from None
        del line
        if not isinstance(obj, dict):
            raise CorpusError(f"{display_name(path)}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _no_surrogates(text: str) -> str:
    """``text`` with lone surrogates (JSON may escape them: ``"\\ud800"``) replaced by U+FFFD: they cannot be
    written as UTF-8, so hashing, storing or serving the text would fail later."""
    return _SURROGATE_RE.sub("\ufffd", text) if _SURROGATE_RE.search(text) else text


