"""What a checker returns, how it fails, and what a version is."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_VERSION = re.compile(r"^[vV]?(\d{1,9})(?:\.\d{1,9}){0,5}(?:[-+._]?[0-9A-Za-z]{1,20}){0,6}$")


class LookupFailed(Exception):
    """A check that could not observe its source; the message says why (it is recorded)."""


@dataclass(frozen=True)
class Observation:
    """What one check saw: ``value`` is compared between checks; ``version`` is set when
    the value is a version (a major bump is a breaking change)."""

    value: str
    version: str | None = None
    shown: str = ""  # how the value reads in a diff's detail (a short hash, a tag)

    @property
    def label(self) -> str:
        return self.shown or self.value


@dataclass(frozen=True)
class Context:
    """What a checker may use: the vault root (files, the cwd of commands), the
    look-up timeout, and whether this clone allows ``command`` sources."""

    root: Path
    timeout: float
    allow_commands: bool = False


def is_version(text: str) -> bool:
    return len(text) <= 64 and _VERSION.match(text) is not None


def major(version: str) -> int | None:
    """The major number of a version (``v3.1.0`` -> 3), None if it is not a version."""
    found = _VERSION.match(version) if len(version) <= 64 else None
    return int(found.group(1)) if found else None


def checked_version(text: object, where: str) -> str:
    """``text`` if it is a version string, else LookupFailed naming ``where``."""
    if not isinstance(text, str) or not is_version(text.strip()):
        shown = repr(text)
        raise LookupFailed(f"{where}: {shown[:60]} is not a version")
    return text.strip()
