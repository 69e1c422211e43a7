"""Reading and replacing text files: UTF-8 or a named error, atomic writes, and the
file, line and column of a parse error (YAML's marks; yaml itself is not imported here,
its owners are ``core/config.py`` and ``skills/model.py``)."""

from __future__ import annotations

import os
from pathlib import Path

from gitvault.errors import GitvaultError, InvalidInput


def decode_text(data: bytes, source: str, error: type[GitvaultError] = InvalidInput) -> str:
    """``data`` as UTF-8 text; other bytes are an ``error`` (InvalidInput) naming
    ``source`` and the offset of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{source}: not UTF-8 text (bad byte at offset {exc.start})") from None


def read_bytes(path: Path, what: str = "file", error: type[GitvaultError] = InvalidInput) -> bytes:
    """A file's bytes; a missing file (``no such WHAT``), a folder or an unreadable file
    is an ``error`` (InvalidInput) naming it."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None


def read_text(path: Path) -> str:
    """A text file's content; a missing file, a folder, an unreadable file or non-UTF-8
    bytes are an InvalidInput naming the file."""
    return decode_text(read_bytes(path), str(path))


def write_atomic(path: Path, text: str, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``text`` (and permission bits ``mode``, if given): temp
    file, fsync, rename, fsync of the folder. A reader sees the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
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
