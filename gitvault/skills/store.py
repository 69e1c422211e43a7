"""Skill writes and reads in a vault: create, patch, rollback, archive, restore, each
one version and one git commit with trailers (SPEC §2.3), code skills through the
verification gate first (SPEC §5).

:class:`SkillStore` takes the parts of a vault it needs (layout, work tree, node,
config, and the record-append and hook-install steps of the facade), never the facade.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitvault.core import git, gitlock, records
from gitvault.core.clock import now, now_seconds
from gitvault.core.files import write_atomic
from gitvault.core.paths import VaultLayout, refuse_symlinks, symlink_below
from gitvault.errors import Conflict, GitError, InvalidInput, NotFound
from gitvault.skills import codegate, recovery, usage, versions
from gitvault.skills.model import (
    KINDS,
    METADATA_ORDER,
    PROVENANCES,
    SKILL_FILE,
    Skill,
    check_description,
    check_identity,
    choice,
    normalize_name,
    read_skill,
    render_skill,
)

Append = Callable[[str, dict[str, Any]], dict[str, Any]]


@dataclass
class SkillEdit:
    """Fields a create or patch may set; None leaves the field as it is."""

    content: str | None = None
    description: str | None = None
    trigger: str | None = None
    kind: str | None = None
    provenance: str | None = None
    tags: str | None = None
    sensitive: bool | None = None
    code: str | None = None  # code skills: skill.py, test_skill.py, example.py
    tests: str | None = None
    example: str | None = None
    unsafe_no_sandbox: bool = False
    metadata: dict[str, str] | None = None  # further metadata keys (curate: ``merged``)

    def code_files(self) -> dict[str, str]:
        """The code files this edit sets (by file name)."""
        given = {"skill.py": self.code, "test_skill.py": self.tests, "example.py": self.example}
        return {name: text for name, text in given.items() if text is not None}

    def check(self) -> None:
        if self.description is not None:
            self.description = check_description(self.description)
        if self.kind is not None:
            choice(self.kind, KINDS, "kind")
        if self.code_files() and self.kind not in (None, "code"):
            raise InvalidInput("--code, --tests and --example are for code skills (--kind code)")
        if self.provenance is not None:
            choice(self.provenance, PROVENANCES, "provenance")
        if self.trigger is not None:
            self.trigger = " ".join(self.trigger.split())
        if self.tags is not None:
            self.tags = ",".join(t.strip() for t in self.tags.split(",") if t.strip())
        for key in self.metadata or {}:
            if key in METADATA_ORDER:
                raise InvalidInput(f"metadata.{key} is gitvault's own field; it is not set this way")

    def apply(self, skill: Skill) -> None:
        if self.content is not None:
            skill.body = self.content if self.content.endswith("\n") else self.content + "\n"
        if self.description is not None:
            skill.description = self.description
        for key in ("trigger", "kind", "provenance", "tags"):
            value = getattr(self, key)
            if value is not None:
                skill.metadata[key] = value
        if self.sensitive is not None:
            skill.metadata["sensitive"] = "true" if self.sensitive else "false"
        skill.metadata.update(self.metadata or {})



class SkillStore:
    """The skills of one vault. ``append`` writes a record (the facade's, so autocommit
    applies); ``before_commit`` runs before each commit (the facade installs missing
    hooks there)."""

    def __init__(self, layout: VaultLayout, top: Path, node: str, config: Any, scope: str,
                 append: Append, before_commit: Callable[[], None]) -> None:
        self.layout, self.top, self.node, self.config, self.scope = layout, top, node, config, scope
        self.append, self.before_commit = append, before_commit
        self.notices: list[str] = []  # what a command should tell its user
        rel = layout.root.relative_to(top).as_posix()
        self.vault_rel = "" if rel == "." else rel

    def git_path(self, path: Path) -> str:
        return path.relative_to(self.top).as_posix()

    # -- reading -------------------------------------------------------------------
    def find(self, name: str) -> tuple[Path, bool] | None:
        """(folder, archived) of an existing skill, or None."""
        for archived in (False, True):
            folder = self.layout.skill_dir(name, archived=archived)
            if (folder / SKILL_FILE).is_file():
                return folder, archived
        return None

    def get(self, name: str) -> Skill:
        """The skill in folder ``name``. The folder is its identity: a SKILL.md naming
        another skill is refused (it would redirect a write or a record, SPEC §2.1)."""
        name = normalize_name(name)
        found = self.find(name)
        if found is None:
            raise NotFound(f"no skill named {name!r} (see 'gitvault skill list --state all')")
        skill = read_skill(found[0])
        check_identity(skill, self.layout.rel(found[0]), name)
        return skill

    def iter_all(self, *, include_archived: bool = True,
                    skipped: list[str] | None = None) -> Iterator[Skill]:
        """Every skill, sorted by name. An unreadable file raises InvalidInput, or, when
        ``skipped`` is a list, is left out and described there (one line each)."""
        folders = [self.layout.skills]
        if include_archived:
            folders.append(self.layout.archive)
        for base in folders:
            link = symlink_below(self.layout.root, base)
            if link is None:
                yield from self._skills_in(base, skipped)
            elif skipped is None:
                refuse_symlinks(self.layout.root, base)
            else:
                skipped.append(f"{link}: is a symlink; gitvault never follows symlinks "
                               "under skills/ (skipped; see 'gitvault doctor')")

    def _skills_in(self, base: Path, skipped: list[str] | None) -> Iterator[Skill]:
        """The skills of one folder (skills/ or its archive), as iter_all says."""
        for folder in sorted(base.iterdir()) if base.is_dir() else []:
            if folder.name.startswith(".") or not (folder / SKILL_FILE).is_file():
                continue
            try:
                skill = read_skill(folder)
                check_identity(skill, self.layout.rel(folder), folder.name)
            except InvalidInput as exc:
                if skipped is None:
                    raise
                skipped.append(f"{exc} (skipped; see 'gitvault doctor')")
                continue
            yield skill

    def history(self, name: str) -> list[versions.Version]:
        return versions.history(self.top, self.vault_rel, name)

    def read_version(self, name: str, version: int) -> Skill:
        return versions.read_version(self.top, self.vault_rel, name, version)

    def urn_for(self, name: str, version: int,
                entries: list[versions.Version] | None = None) -> str:
        superseded = versions.superseded_at(entries, version) if entries is not None else None
        return versions.urn(self.scope, name, version, superseded, now(),
                            self.config.verify.archive_after_days)

    def view(self, skill: Skill, stats: usage.Stats, *, content: bool = False,
             entries: list[versions.Version] | None = None,
             unverified: bool | None = None) -> dict[str, Any]:
        """The ``skill show --json`` object of ``skill`` (without content for a list);
        a code skill this node holds no gate evidence for has state ``unverified``."""
        if unverified is None:
            unverified = bool(codegate.unverified_skills(self.layout, self.node, [skill]))
        view = usage.skill_view(skill, stats, self.urn_for(skill.name, skill.version, entries),
                                content=content)
        return {**view, "state": "unverified"} if unverified else view

    def listing(self, state: str, stats: usage.Stats, warnings: list[Any]) -> dict[str, Any]:
        """``skill list --json``: ``{"skills": [view...], "warnings"?}`` for ``state``
        (one of usage.LIST_STATES); an unreadable file is left out and warned about."""
        choice(state, usage.LIST_STATES, "state")
        skipped: list[str] = []
        skills = list(self.iter_all(skipped=skipped))
        unverified = {s.name for s in codegate.unverified_skills(self.layout, self.node, skills)}
        views = [self.view(s, stats, unverified=s.name in unverified) for s in skills
                 if state == "all" or s.state == state
                 or (state == "unverified" and s.name in unverified)]
        return usage.with_warnings({"skills": views}, [*skipped, *warnings])

    def refuse_links(self, folder: Path, *paths: Path) -> None:
        """SymlinkRefused (exit 2, nothing written) when ``folder`` or ``paths``, or a
        file in ``folder``, goes through a symlink (SPEC §1): a writer never writes
        through one, nor reads what one points at."""
        refuse_symlinks(self.layout.root, folder, *paths)
        try:
            entries = [e for e in os.scandir(folder) if e.is_symlink()]
        except OSError:
            return
        if entries:
            refuse_symlinks(self.layout.root, entries[0].path)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Serialise skill writes of concurrent processes on this machine (a write a crash
        interrupted is finished or undone first)."""
        with self._lock():
            done = recovery.recover(self)
            if done is not None:
                self.notices.append(done)
            yield

    @contextmanager
    def _lock(self) -> Iterator[None]:
        """The skill lock, and the vault-wide git lock (SPEC §3) from before the first
        write to the last commit, so no other command stages or commits in between (a
        wait that runs out is a Conflict raised before anything changed)."""
        with records.locked(self.layout.lock_file("skills")), \
                gitlock.held(self.layout.git_dir, self.config.git.lock_wait_s):
            yield

    def recover(self) -> str | None:
        """Finish or undo a skill write a crash interrupted, under the skill lock;
        what was done (None: nothing to do)."""
        with self._lock():
            return recovery.recover(self)

    def save(self, skill: Skill, op: str, *, archived: bool = False,
                   moved_from: bool | None = None, body: str = "",
                   files: dict[str, str] | None = None, sandbox: str | None = None) -> str | None:
        """Write ``skill`` and commit it as one version with trailers; on a failed
        commit the work tree is put back as it was. Appends an ``events`` record."""
        name = skill.name
        folder = self.layout.skill_dir(name, archived=archived)
        path = folder / SKILL_FILE
        self.refuse_links(folder, *(folder / n for n in files or {}), path)
        if moved_from is not None:
            self.refuse_links(self.layout.skill_dir(name, archived=moved_from))
        old_text = path.read_text("utf-8") if path.is_file() else None
        git_paths = [self.git_path(folder)]
        trailers = {"Op": op, "Skill": name, "Version": str(skill.version), "Node": self.node}
        if sandbox == "none":
            trailers["Sandbox"] = "none (--unsafe-no-sandbox)"
        subject = f"gitvault: {op} {name} v{skill.version}"
        src = self.layout.skill_dir(name, archived=moved_from) if moved_from is not None else None
        if src is not None:
            git_paths.append(self.git_path(src))
            if folder.exists():
                raise Conflict(f"cannot move {name!r}: {self.layout.rel(folder)} already exists")
        # From here a crash is finished or undone by the next skill write (recovery.py).
        recovery.begin(self, op=op, trailers=trailers, subject=subject, body=body,
                       paths=git_paths,
                       written=[self.git_path(folder / n) for n in [*(files or {}), SKILL_FILE]],
                       moved=(self.git_path(src), self.git_path(folder)) if src else None)
        if src is not None:
            git.move(self.top, self.git_path(src), self.git_path(folder))
        old_files = {n: (folder / n).read_text("utf-8") if (folder / n).is_file() else None
                     for n in files or {}}
        try:
            for file_name, text in (files or {}).items():
                write_atomic(folder / file_name, text)
            write_atomic(path, render_skill(skill))
            recovery.mark_written(self)
            self.before_commit()
            # No hook run: gitvault wrote and checked this version itself (and gated a code
            # skill); the hook would start another process only to check it again.
            sha = git.commit_paths(self.top, git_paths, subject, trailers, body, verify=False)
        except (GitError, OSError):
            for file_name, old in old_files.items():
                if old is None:
                    (folder / file_name).unlink(missing_ok=True)
                else:
                    write_atomic(folder / file_name, old)
            self._undo(git_paths, path, old_text, moved_from, folder, name)
            recovery.finish(self)
            raise
        self.append("events", {"op": op, "skill": name, "version": skill.version,
                               "commit": sha})
        recovery.finish(self)
        return sha

    def _undo(self, git_paths: list[str], path: Path, old_text: str | None,
              moved_from: bool | None, folder: Path, name: str) -> None:
        git.git(self.top, "reset", "-q", "--", *git_paths, check=False)
        if moved_from is not None:
            src = self.layout.skill_dir(name, archived=moved_from)
            if old_text is None:
                path.unlink(missing_ok=True)
            folder.rename(src) if folder.exists() and not src.exists() else None
        elif old_text is None:
            path.unlink(missing_ok=True)
            try:
                folder.rmdir()
            except OSError:
                pass
        else:
            write_atomic(path, old_text)

    def next_version(self, skill: Skill) -> int:
        committed = [v.version for v in self.history(skill.name)]
        return max([skill.version, *committed]) + 1

    def create(self, name: str, edit: SkillEdit) -> tuple[Skill, bool]:
        """Create a skill; if it exists, change nothing and return (it, False)."""
        name = normalize_name(name)
        edit.check()
        with self.locked():
            if self.find(name) is not None:
                return self.get(name), False
            return self._create_locked(name, edit), True

    def patch(self, name: str, edit: SkillEdit, op: str = "patch") -> tuple[Skill, str]:
        """A new version with ``edit`` applied, state active (un-archived); a patch of a
        missing skill falls back to create. Returns (skill, "patch" | "create"). ``op``
        names the change in its commit trailer (``improve``: an auto-edit of the loop)."""
        name = normalize_name(name)
        edit.check()
        with self.locked():
            found = self.find(name)
            if found is None:
                if edit.description is None and not edit.trigger:
                    raise InvalidInput(
                        f"no skill named {name!r} to patch, and creating it needs a description")
                return self._create_locked(name, edit), "create"
            folder, archived = found
            self.refuse_links(folder)
            skill = self.get(name)
            edit.apply(skill)
            self.mark(skill, "active").metadata.pop("archived-reason", None)
            files, result = codegate.gate_edit(self, skill, edit, folder)
            self.save(skill, op, moved_from=True if archived else None, files=files,
                      sandbox=result.sandbox if result else None)
            codegate.record_stored(self, skill, result)
        return skill, "patch"

    def _create_locked(self, name: str, edit: SkillEdit) -> Skill:
        """Create ``name`` (the caller holds the skill lock and checked it is new)."""
        if edit.description is None:
            edit.description = check_description(edit.trigger or "")
        stamp = now_seconds()
        skill = Skill(name=name, description=edit.description,
                      metadata={"version": "1", "kind": "procedure", "provenance": "agent",
                                "state": "active", "trigger": edit.description, "tags": "",
                                "sensitive": "false", "created": stamp, "updated": stamp})
        edit.apply(skill)
        files, result = codegate.gate_edit(self, skill, edit, None)
        self.save(skill, "create", files=files, sandbox=result.sandbox if result else None)
        codegate.record_stored(self, skill, result)
        return skill

    def mark(self, skill: Skill, state: str) -> Skill:
        """``skill`` as its next version in ``state`` (updated now)."""
        skill.version = self.next_version(skill)
        skill.metadata["state"] = state
        skill.metadata["updated"] = now_seconds()
        return skill

    def _current(self, name: str, *, archived: bool, refuse: str) -> Skill:
        """The skill ``name``; InvalidInput ``refuse`` unless it is archived as asked."""
        skill = self.get(name)
        found = self.find(skill.name)
        if (found is not None and found[1]) != archived:
            raise InvalidInput(refuse.format(name=skill.name))
        return skill

    def rollback(self, name: str, version: int, op: str = "rollback") -> Skill:
        """Write version ``version``'s content as a new version (history is kept)."""
        with self.locked():
            current = self._current(name, archived=False,
                                    refuse="skill {name!r} is archived; restore it before a rollback")
            old = self.read_version(current.name, version)
            check_identity(old, f"{current.name}@v{version}", current.name)
            old.metadata["created"] = current.metadata.get("created", old.metadata.get("created", ""))
            old.version = current.version  # next_version counts from the current one
            self.mark(old, current.state)
            self.save(old, op, body=f"Content of v{version}.")
        return old

    def archive(self, name: str, reason: str | None = None) -> Skill:
        """``git mv`` to skills/.archive/, state archived, as a new version."""
        with self.locked():
            skill = self.mark(self._current(name, archived=False,
                                             refuse="skill {name!r} is already archived"), "archived")
            if reason:
                skill.metadata["archived-reason"] = " ".join(reason.split())
            self.save(skill, "archive", archived=True, moved_from=False,
                      body=f"Reason: {reason}" if reason else "")
        return skill

    def restore(self, name: str) -> Skill:
        """Move an archived skill back, state active, as a new version."""
        with self.locked():
            skill = self.mark(self._current(name, archived=True,
                                             refuse="skill {name!r} is not archived"), "active")
            skill.metadata.pop("archived-reason", None)
            self.save(skill, "restore", moved_from=True)
        return skill
