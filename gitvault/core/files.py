"""Reading and replacing text files: UTF-8 or a named error, atomic writes, and the
file, line and column of a parse error (YAML's marks; yaml itself is not imported here,
its owners are ``core/config.py`` and ``skills/model.py``)."""

from __future__ import annotations

import os
from pathlib import Path

from gitvault.core.paths import open_below
from gitvault.errors import GitvaultError, InvalidInput

TYPE_CHECKING = False  # typing is not imported at run time (config, on the hot path, uses this)
if TYPE_CHECKING:
    from typing import BinaryIO


def decode_text(data: bytes, source: str, error: type[GitvaultError] = InvalidInput) -> str:
    """``data`` as UTF-8 text; other bytes are an ``error`` (InvalidInput) naming
    ``source`` and the offset of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{source}: not UTF-8 text (bad byte at offset {exc.start})") from None


INPUT_LIMIT = 1 << 20  # bytes of one input: a skill's content, a code file, a config, a DAG
FILE_LIMIT = 4 << 20  # bytes of one file gitvault reads from a vault (a SKILL.md with its head)


def _size_error(source: str, limit: int, error: type[GitvaultError]) -> GitvaultError:
    return error(f"{source}: more than {_size_text(limit)}, the limit for one input")


def _size_text(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit % (1 << 20) == 0 else f"{limit} bytes"


def read_stream(stream: BinaryIO, source: str, limit: int = INPUT_LIMIT,
                error: type[GitvaultError] = InvalidInput) -> bytes:
    """At most ``limit`` bytes of ``stream`` (stdin, a device, a pipe); more is an
    ``error`` naming ``source`` and the limit, read no further than one byte past it."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = stream.read(min(1 << 16, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > limit:
        raise _size_error(source, limit, error)
    return b"".join(chunks)


def read_bytes(path: Path, what: str = "file", error: type[GitvaultError] = InvalidInput,
               limit: int = INPUT_LIMIT, below: Path | None = None) -> bytes:
    """A file's bytes, at most ``limit`` of them; a missing file (``no such WHAT``), a
    folder, an unreadable file or a larger one (``/dev/zero`` included) is an ``error``
    (InvalidInput) naming it. With ``below`` (a vault root), no symlink below it is
    followed: one is a SymlinkRefused (an InvalidInput) naming it."""
    try:
        fd = open_below(below, path, os.O_RDONLY) if below is not None else \
            os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            return read_stream(handle, str(path), limit, error)
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None


def read_text(path: Path, limit: int = INPUT_LIMIT, below: Path | None = None) -> str:
    """A text file's content; a missing file, a folder, an unreadable file, one of more
    than ``limit`` bytes, a symlink below ``below`` or non-UTF-8 bytes are an
    InvalidInput naming the file."""
    return decode_text(read_bytes(path, limit=limit, below=below), str(path))


def write_atomic(path: Path, text: str | bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``text`` (UTF-8, or any bytes) and permission bits ``mode``,
    if given: temp file, fsync, rename, fsync of the folder. A reader sees the old or
    the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(text.encode("utf-8") if isinstance(text, str) else text)
            fh.flush()
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def parse_error(exc: Exception, source: str, what: str,
                error: type[GitvaultError] = InvalidInput) -> GitvaultError:
    """``SOURCE: invalid WHAT at line L, column C: PROBLEM`` for a parser's exception
    (a ``yaml.YAMLError`` carries ``problem_mark`` and ``problem``; the marks count
    from 0)."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
    return error(f"{source}: invalid {what}{where}: {problem}")
