"""What the skill folders look like now, for the price of one ``stat`` per skill.

Only ``skills/<name>/`` folders holding a SKILL.md are skills to search:
``skills/.archive/`` and ``skills/.rejected/`` (dot folders) never are. A code
skill's ``skill.py`` is part of its signature too.

A listing packs every folder name and its stat numbers (size, mtime, inode,
ctime of SKILL.md and of a code skill's skill.py) into a :class:`Snapshot`: two
equal snapshots mean no file changed, and two different ones name exactly the
folders that did.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter
from pathlib import Path

from gitvault.retrieval.documents import CODE_FILE, stat_signature
from gitvault.skills.model import SKILL_FILE

_STAT = attrgetter("st_size", "st_mtime_ns", "st_ino", "st_ctime_ns")
_NOT_CODE = (0, 0, 0, 0)
_MISSING = (-1, -1, -1, -1)


def list_folders(skills_dir: Path) -> dict[str, os.stat_result]:
    """``{folder name: stat of its SKILL.md}`` for every skill folder. Symlinks are
    never followed (SPEC §1): a folder or a SKILL.md that is one is listed with the
    link's own stat, so that reading it reports it (``documents.load``); a ``skills/``
    that is one lists nothing."""
    found: dict[str, os.stat_result] = {}
    if os.path.islink(skills_dir):
        return found
    try:
        entries = os.scandir(skills_dir)
    except (FileNotFoundError, NotADirectoryError):
        return found
    with entries:
        names = [(e.name, e.is_symlink()) for e in entries
                 if e.name[0] != "." and (e.is_symlink() or e.is_dir(follow_symlinks=False))]
    with _folder_fd(skills_dir) as fd:
        stat = os.stat
        for name, link in names:
            if "\n" in name:
                continue  # never a skill name, and the snapshot separates names by lines
            rel = name if link else f"{name}/{SKILL_FILE}"
            try:
                found[name] = stat(rel, dir_fd=fd, follow_symlinks=False) if fd is not None \
                    else stat(f"{skills_dir}/{rel}", follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError, UnicodeEncodeError):
                continue
    return found


@contextmanager
def _folder_fd(folder: Path) -> Iterator[int | None]:
    """A descriptor of ``folder`` for stats relative to it (shorter path walks), or
    None where the platform has no ``dir_fd``."""
    if os.stat not in os.supports_dir_fd:
        yield None
        return
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        yield fd
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Snapshot:
    """Folder names (one per line) and their stat numbers, as stored in the index: four
    numbers (size, mtime, inode, ctime) of each SKILL.md in name order, then four of
    each skill.py (zeros for a skill that is not code, -1 for a missing file)."""

    names: str
    numbers: bytes

    def entries(self) -> dict[str, tuple[int, ...]]:
        """``{folder: its eight numbers}`` (empty for an unreadable snapshot)."""
        values = array("q")
        try:
            values.frombytes(self.numbers)
        except ValueError:
            return {}
        names = self.names.split("\n") if self.names else []
        half = 4 * len(names)
        if len(values) != 2 * half:
            return {}
        return {name: (*values[4 * i:4 * i + 4], *values[half + 4 * i:half + 4 * i + 4])
                for i, name in enumerate(names)}


@dataclass
class Listing:
    """The skill folders now: SKILL.md stats, and skill.py stats of ``code`` folders."""

    skills_dir: Path
    stats: dict[str, os.stat_result]
    code: dict[str, os.stat_result | None]
    _snapshot: Snapshot | bool | None = field(default=None, repr=False, compare=False)

    @classmethod
    def take(cls, skills_dir: Path, code_folders: set[str]) -> Listing:
        stats = list_folders(skills_dir)
        code: dict[str, os.stat_result | None] = {}
        for folder in code_folders & stats.keys():
            try:
                code[folder] = os.stat(f"{skills_dir}/{folder}/{CODE_FILE}",
                                       follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                code[folder] = None
        return cls(skills_dir, stats, code)

    def signature(self, folder: str) -> str:
        """The signature ``documents.load`` records for the folder's files as they are."""
        signature = stat_signature(self.stats[folder])
        if folder in self.code:
            code = self.code[folder]
            signature += "+" + (stat_signature(code) if code is not None else "-")
        return signature

    def snapshot(self) -> Snapshot | None:
        """Every name and its numbers (None if a number does not fit: never stored)."""
        if self._snapshot is None:
            self._snapshot = self._pack()
        return self._snapshot if isinstance(self._snapshot, Snapshot) else None

    def _pack(self) -> Snapshot | bool:
        code = self.code
        try:
            numbers = array("q", chain.from_iterable(map(_STAT, self.stats.values())))
            numbers.extend(chain.from_iterable(
                (_STAT(code[name]) if code[name] is not None else _MISSING) if name in code
                else _NOT_CODE for name in self.stats))
        except OverflowError:
            return False
        return Snapshot("\n".join(self.stats), numbers.tobytes())

    def newest(self) -> int:
        """The newest modification time of any file listed (0 if none)."""
        times = [st.st_mtime_ns for st in self.stats.values()]
        times += [st.st_mtime_ns for st in self.code.values() if st is not None]
        return max(times, default=0)

    def changed_since(self, before: Snapshot, racy_after: int) -> set[str]:
        """Folders whose files differ from ``before`` (added and removed ones too), and
        those modified after ``racy_after`` (too recent for timestamps to tell)."""
        now = self.snapshot()
        names = list(self.stats)
        if now is None:
            return set(names) | set(before.names.split("\n"))
        if before.names == now.names and len(before.numbers) == len(now.numbers):
            old, new = before.numbers, now.numbers  # the same folders: compare slot by slot
            half = 32 * len(names)  # bytes of the SKILL.md part
            changed = {names[i] for i in range(len(names))
                       if old[32 * i:32 * i + 32] != new[32 * i:32 * i + 32]
                       or old[half + 32 * i:half + 32 * i + 32]
                       != new[half + 32 * i:half + 32 * i + 32]}
        else:
            previous, current = before.entries(), now.entries()
            if not previous and before.names:  # unreadable: everything is a suspect
                return set(names) | set(before.names.split("\n"))
            changed = {name for name, numbers in current.items()
                       if previous.get(name) != numbers}
            changed |= previous.keys() - current.keys()
        changed |= {name for name, st in self.stats.items() if st.st_mtime_ns >= racy_after}
        changed |= {name for name, st in self.code.items()
                    if st is not None and st.st_mtime_ns >= racy_after}
        return changed
