"""The history of a skill, read from git: log, ``name@vN``, diff, URNs.

A version is immutable: version N is the SKILL.md of the newest commit whose
``Gitvault-Version`` trailer (or, for a hand edit without trailers, whose file's
``metadata.version``) is N; where two nodes both wrote an N before a sync, the one on
HEAD's first-parent line.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gitvault.core import git
from gitvault.core.clock import parse_iso
from gitvault.core.paths import VaultLayout
from gitvault.errors import InvalidInput, NotFound
from gitvault.skills.model import SKILL_FILE, Skill, normalize_name, parse_skill_bytes

REF_RE = re.compile(r"^(?P<name>[^@]+)(?:@[vV]?(?P<version>[^@]+))?$")


@dataclass(frozen=True)
class Version:
    """One commit of a skill's history."""

    version: int
    sha: str
    date: str
    op: str
    node: str
    subject: str

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "commit": self.sha, "date": self.date,
                "op": self.op, "node": self.node, "subject": self.subject}


def parse_version(text: str | int) -> int:
    """``vN`` or ``N`` → N (a positive integer)."""
    raw = str(text).strip().lower().removeprefix("v")
    # ASCII digits only: str.isdigit() takes "１" (full width) and int() reads it.
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise InvalidInput(f"invalid version {text!r}: use vN or N, e.g. v2")
    return int(raw)


def parse_ref(ref: str) -> tuple[str, int | None]:
    """``name`` or ``name@vN`` → (canonical name, N or None)."""
    match = REF_RE.match(ref.strip()) if isinstance(ref, str) else None
    if not match:
        raise InvalidInput(f"invalid skill reference {ref!r}: use NAME or NAME@vN")
    version = match.group("version")
    if version is not None and version != version.strip():  # name@v 1
        raise InvalidInput(f"invalid version {version!r}: use vN or N, e.g. v2")
    return normalize_name(match.group("name")), parse_version(version) if version else None


def skill_paths(vault_rel: str, name: str) -> list[str]:
    """The SKILL.md paths a skill can have, relative to the work tree: active, archived."""
    return [f"{VaultLayout.skill_git_dir(vault_rel, name, archived=archived)}/{SKILL_FILE}"
            for archived in (False, True)]


def _file_at(top: Path, sha: str, paths: list[str]) -> tuple[str, bytes] | None:
    for path in paths:
        data = git.show_file(top, sha, path)
        if data is not None:
            return path, data
    return None


def history(top: Path, vault_rel: str, name: str) -> list[Version]:
    """Every committed version of ``name``, newest first (one entry per commit)."""
    paths = skill_paths(vault_rel, name)
    versions: list[Version] = []
    for commit in git.log(top, paths):
        version = commit.version if commit.trailers.get("Gitvault-Skill") == name else None
        if version is None:  # a hand edit: the file says which version it is
            found = _file_at(top, commit.sha, paths)
            if found is None:
                continue
            try:
                version = parse_skill_bytes(found[1], found[0]).version
            except InvalidInput:
                continue
        versions.append(Version(version, commit.sha, commit.date, commit.op or "edit",
                                commit.trailers.get("Gitvault-Node", ""), commit.subject))
    return _linear(top, paths, versions)


def _linear(top: Path, paths: list[str], versions: list[Version]) -> list[Version]:
    """One entry per version number, highest first. Two nodes that changed a skill at
    once both wrote a version N (both stay in git history; sync resolved them as a
    later version): the one on HEAD's first-parent line is shown (else the newest), so
    every clone at the same HEAD lists the same versions."""
    if len({v.version for v in versions}) == len(versions):
        return versions
    first = set(git.out(top, "rev-list", "--first-parent", "HEAD", "--", *paths).split())
    best: dict[int, Version] = {}
    for entry in versions:  # newest first
        held = best.get(entry.version)
        if held is None or (entry.sha in first and held.sha not in first):
            best[entry.version] = entry
    return sorted(best.values(), key=lambda v: v.version, reverse=True)


def read_version(top: Path, vault_rel: str, name: str, version: int) -> Skill:
    """The skill as it was at version ``version`` (NotFound if it never existed)."""
    paths = skill_paths(vault_rel, name)
    for entry in history(top, vault_rel, name):
        if entry.version != version:
            continue
        found = _file_at(top, entry.sha, paths)
        if found is not None:
            return parse_skill_bytes(found[1], f"{name}@v{version}")
    raise NotFound(f"skill {name!r} has no version {version} in history")


def diff_text(old: str, new: str, old_label: str, new_label: str) -> str:
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=old_label, tofile=new_label)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def urn(scope: str, name: str, version: int, superseded_at: str | None = None,
        now: datetime | None = None, archive_after_days: int = 30) -> str:
    """``urn:gitvault:skill:<scope>:<name>:v<n>``, with ``:archived`` when a later
    version superseded it more than ``archive_after_days`` ago."""
    base = f"urn:gitvault:skill:{scope}:{name}:v{version}"
    if superseded_at and now is not None and \
            (now - parse_iso(superseded_at)).total_seconds() > archive_after_days * 86400:
        return base + ":archived"
    return base


def superseded_at(entries: list[Version], version: int) -> str | None:
    """When a version above ``version`` was first committed (entries newest first)."""
    later = [e for e in entries if e.version > version]
    return later[-1].date if later else None
