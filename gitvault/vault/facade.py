"""The Vault facade: the one object a caller opens. It wires config, records,
skills and git history together; the CLI, the MCP server and library users
all go through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitvault.core import config as config_mod
from gitvault.core import git, records
from gitvault.core.clock import now, parse_iso
from gitvault.core.paths import GITATTRIBUTES, VaultLayout, find_vault, resolve_node
from gitvault.errors import Conflict, GitError, InvalidInput, NotFound
from gitvault.skills import versions
from gitvault.skills.model import (
    KINDS,
    PROVENANCES,
    SKILL_FILE,
    Skill,
    check_description,
    choice,
    normalize_name,
    read_skill,
    render_skill,
    write_atomic,
)

if TYPE_CHECKING:
    from gitvault.runs import columns


def stamp_now() -> str:
    return now().strftime("%Y-%m-%dT%H:%M:%SZ")


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


class Vault:
    """An open vault: ``Vault.open()`` finds it, validates its config, picks the node."""

    def __init__(self, root: Path, node: str | None = None) -> None:
        self.layout = VaultLayout(root)
        self.root = root
        git_dir = self.layout.git_dir
        self.top = git_dir.parent if git_dir is not None and git_dir.name == ".git" else root
        self.config = config_mod.load(self.layout.config, self.layout.cache)
        self.node = resolve_node(node, git_dir)
        self.notices: list[str] = []  # things a command should tell its user
        self._hooks_checked = False

    @classmethod
    def open(cls, path: str | Path | None = None, node: str | None = None) -> Vault:
        return cls(find_vault(path), node)

    # -- paths --------------------------------------------------------------------
    @property
    def vault_rel(self) -> str:
        """The vault folder relative to the work tree ('' at the top)."""
        rel = self.root.relative_to(self.top).as_posix()
        return "" if rel == "." else rel

    def git_path(self, path: Path) -> str:
        return path.relative_to(self.top).as_posix()

    @property
    def scope(self) -> str:
        return self.config.vault.scope or self.root.name

    # -- records ------------------------------------------------------------------
    def append(self, stream: str, record: dict[str, Any]) -> dict[str, Any]:
        """Append one record (adds id, ts, node); commits it when logs.autocommit."""
        stamped = records.stamp(record, self.node)
        path = self.layout.log_file(stream, self.node, now())
        written = records.append_record(path, stamped)
        if self.config.logs.autocommit:
            self.commit_logs(f"gitvault: record {stream}")
        return written

    def scan(self, stream: str, check: Callable[[dict[str, Any]], str | None] | None = None
             ) -> records.Scan:
        return records.scan(self.layout.stream(stream), check=check)

    # -- skills -------------------------------------------------------------------
    def find_skill(self, name: str) -> tuple[Path, bool] | None:
        """(folder, archived) of an existing skill, or None."""
        for archived in (False, True):
            folder = self.layout.skill_dir(name, archived=archived)
            if (folder / SKILL_FILE).is_file():
                return folder, archived
        return None

    def get_skill(self, name: str) -> Skill:
        name = normalize_name(name)
        found = self.find_skill(name)
        if found is None:
            raise NotFound(f"no skill named {name!r} (see 'gitvault skill list --state all')")
        return read_skill(found[0])

    def iter_skills(self, *, include_archived: bool = True,
                    skipped: list[str] | None = None) -> Iterator[Skill]:
        """Every skill, sorted by name. An unreadable file raises InvalidInput, or, when
        ``skipped`` is a list, is left out and described there (one line each)."""
        folders = [self.layout.skills]
        if include_archived:
            folders.append(self.layout.archive)
        for base in folders:
            if not base.is_dir():
                continue
            for folder in sorted(base.iterdir()):
                if folder.name.startswith(".") or not (folder / SKILL_FILE).is_file():
                    continue
                try:
                    skill = read_skill(folder)
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

    @contextmanager
    def _skill_lock(self) -> Iterator[None]:
        """Serialise skill writes of concurrent processes on this machine."""
        cache = self.layout.cache or self.root / ".gitvault-lock"
        with records.locked(cache / "locks" / "skills.lock"):
            yield

    def save_skill(self, skill: Skill, op: str, *, archived: bool = False,
                   moved_from: bool | None = None, body: str = "",
                   files: dict[str, str] | None = None, sandbox: str | None = None) -> str | None:
        """Write ``skill`` and commit it as one version with trailers; on a failed
        commit the work tree is put back as it was. Appends an ``events`` record."""
        name = skill.name
        folder = self.layout.skill_dir(name, archived=archived)
        path = folder / SKILL_FILE
        old_text = path.read_text("utf-8") if path.is_file() else None
        git_paths = [self.git_path(folder)]
        if moved_from is not None:
            src = self.layout.skill_dir(name, archived=moved_from)
            git_paths.append(self.git_path(src))
            if folder.exists():
                raise Conflict(f"cannot move {name!r}: {self.layout.rel(folder)} already exists")
            git.move(self.top, self.git_path(src), self.git_path(folder))
        old_files = {n: (folder / n).read_text("utf-8") if (folder / n).is_file() else None
                     for n in files or {}}
        try:
            for file_name, text in (files or {}).items():
                write_atomic(folder / file_name, text)
            write_atomic(path, render_skill(skill))
            trailers = {"Op": op, "Skill": name, "Version": str(skill.version),
                        "Node": self.node}
            if sandbox == "none":
                trailers["Sandbox"] = "none (--unsafe-no-sandbox)"
            self.ensure_hooks()
            # No hook run: gitvault wrote and checked this version itself (and gated a code
            # skill); the hook would start another process only to check it again.
            sha = git.commit_paths(self.top, git_paths, f"gitvault: {op} {name} v{skill.version}",
                                       trailers, body, verify=False)
        except (GitError, OSError):
            for file_name, old in old_files.items():
                if old is None:
                    (folder / file_name).unlink(missing_ok=True)
                else:
                    write_atomic(folder / file_name, old)
            self._undo(git_paths, path, old_text, moved_from, folder, name)
            raise
        self.append("events", {"op": op, "skill": name, "version": skill.version,
                               "commit": sha})
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

    def create_skill(self, name: str, edit: SkillEdit) -> tuple[Skill, bool]:
        """Create a skill; if it exists, change nothing and return (it, False)."""
        name = normalize_name(name)
        edit.check()
        with self._skill_lock():
            if self.find_skill(name) is not None:
                return self.get_skill(name), False
            return self._create_locked(name, edit), True

    def patch_skill(self, name: str, edit: SkillEdit) -> tuple[Skill, str]:
        """A new version with ``edit`` applied, state active (un-archived); a patch of a
        missing skill falls back to create. Returns (skill, "patch" | "create")."""
        name = normalize_name(name)
        edit.check()
        with self._skill_lock():
            found = self.find_skill(name)
            if found is None:
                if edit.description is None and not edit.trigger:
                    raise InvalidInput(
                        f"no skill named {name!r} to patch, and creating it needs a description")
                return self._create_locked(name, edit), "create"
            folder, archived = found
            skill = read_skill(folder)
            edit.apply(skill)
            skill.version = self.next_version(skill)
            skill.metadata["state"] = "active"
            skill.metadata.pop("archived-reason", None)
            skill.metadata["updated"] = stamp_now()
            files, result = self._gate(skill, edit, folder)
            self.save_skill(skill, "patch", moved_from=True if archived else None, files=files,
                            sandbox=result.sandbox if result else None)
            self._stored(skill, result)
        return skill, "patch"

    def _create_locked(self, name: str, edit: SkillEdit) -> Skill:
        """Create ``name`` (the caller holds the skill lock and checked it is new)."""
        if edit.description is None:
            edit.description = check_description(edit.trigger or "")
        stamp = stamp_now()
        skill = Skill(name=name, description=edit.description,
                      metadata={"version": "1", "kind": "procedure", "provenance": "agent",
                                "state": "active", "trigger": edit.description, "tags": "",
                                "sensitive": "false", "created": stamp, "updated": stamp})
        edit.apply(skill)
        files, result = self._gate(skill, edit, None)
        self.save_skill(skill, "create", files=files, sandbox=result.sandbox if result else None)
        self._stored(skill, result)
        return skill

    def rollback(self, name: str, version: int) -> Skill:
        """Write version ``version``'s content as a new version (history is kept)."""
        name = normalize_name(name)
        with self._skill_lock():
            current = self.get_skill(name)
            if self.find_skill(name) == (self.layout.skill_dir(name, archived=True), True):
                raise InvalidInput(f"skill {name!r} is archived; restore it before a rollback")
            old = self.read_version(name, version)
            old.metadata["version"] = str(self.next_version(current))
            old.metadata["state"] = current.state
            old.metadata["updated"] = stamp_now()
            old.metadata["created"] = current.metadata.get("created", old.metadata.get("created", ""))
            self.save_skill(old, "rollback", body=f"Content of v{version}.")
        return old

    def archive(self, name: str, reason: str | None = None) -> Skill:
        """``git mv`` to skills/.archive/, state archived, as a new version."""
        name = normalize_name(name)
        with self._skill_lock():
            skill = self.get_skill(name)
            if self.find_skill(name) == (self.layout.skill_dir(name, archived=True), True):
                raise InvalidInput(f"skill {name!r} is already archived")
            skill.version = self.next_version(skill)
            skill.metadata["state"] = "archived"
            skill.metadata["updated"] = stamp_now()
            if reason:
                skill.metadata["archived-reason"] = " ".join(reason.split())
            self.save_skill(skill, "archive", archived=True, moved_from=False,
                            body=f"Reason: {reason}" if reason else "")
        return skill

    def restore(self, name: str) -> Skill:
        """Move an archived skill back, state active, as a new version."""
        name = normalize_name(name)
        with self._skill_lock():
            skill = self.get_skill(name)
            if self.find_skill(name) != (self.layout.skill_dir(name, archived=True), True):
                raise InvalidInput(f"skill {name!r} is not archived")
            skill.version = self.next_version(skill)
            skill.metadata["state"] = "active"
            skill.metadata.pop("archived-reason", None)
            skill.metadata["updated"] = stamp_now()
            self.save_skill(skill, "restore", moved_from=True)
        return skill

    # -- code skills and the verification gate (SPEC §5) ----------------------------
    def code_files(self, folder: Path) -> dict[str, str]:
        """skill.py, test_skill.py and example.py of a skill folder (those present)."""
        from gitvault.gate.scan import FILES

        return {n: (folder / n).read_text("utf-8") for n in FILES if (folder / n).is_file()}

    def run_gate(self, name: str, version: int, files: dict[str, str], *,
                 unsafe_no_sandbox: bool = False) -> Any:
        """Run the gate on ``files`` and append its ``verify`` record; returns the result."""
        from gitvault.gate import verify as gate

        result = gate.verify(files, self.config.verify, self.config.sandbox,
                             unsafe_no_sandbox=unsafe_no_sandbox)
        self.append("gate", gate.gate_record("verify", result, name, version,
                                             self.urn_for(name, version)))
        return result

    def _gate(self, skill: Skill, edit: SkillEdit, folder: Path | None
              ) -> tuple[dict[str, str] | None, Any]:
        """Gate a code skill before it is stored; a refusal quarantines it and raises."""
        if skill.kind != "code":
            if edit.code_files():
                raise InvalidInput(f"{skill.name!r} is a {skill.kind}, not a code skill; "
                                   "--code, --tests and --example are for code skills")
            return None, None
        if folder is None and not edit.code_files():
            raise InvalidInput("a code skill needs --code F, --tests F and --example F: the "
                               "verification gate checks them before it is stored")
        files = self.code_files(folder) if folder is not None else {}
        files.update(edit.code_files())
        if not self.config.verify.enabled:
            return files, None
        result = self.run_gate(skill.name, skill.version, files,
                               unsafe_no_sandbox=edit.unsafe_no_sandbox)
        if not result.passed:
            self._reject(skill, files, result)
            from gitvault.errors import CheckFailed

            raise CheckFailed(f"the verification gate refused {skill.name!r} (quarantined in "
                              f"skills/.rejected/{skill.name}/): " + "; ".join(result.messages()))
        return files, result

    def _stored(self, skill: Skill, result: Any) -> None:
        if result is not None:
            from gitvault.gate import verify as gate

            self.append("gate", gate.gate_record("store", result, skill.name, skill.version,
                                                 self.urn_for(skill.name, skill.version)))

    def _reject(self, skill: Skill, files: dict[str, str], result: Any) -> None:
        """Quarantine a refused code skill in skills/.rejected/<name>/ with its reasons."""
        folder = self.layout.rejected / skill.name
        for name, text in files.items():
            write_atomic(folder / name, text)
        write_atomic(folder / SKILL_FILE, render_skill(skill))
        reasons = "\n".join(f"- {m}" for m in result.messages())
        write_atomic(folder / "REASONS.md",
                     f"# {skill.name} v{skill.version}: refused by the verification gate\n\n"
                     f"{stamp_now()}, sandbox {result.sandbox}, sha256 {result.sha256}\n\n"
                     f"{reasons}\n")
        git.commit_paths(self.top, [self.git_path(folder)],
                             f"gitvault: reject {skill.name} v{skill.version}",
                             {"Op": "reject", "Skill": skill.name,
                              "Version": str(skill.version), "Node": self.node}, reasons)

    def verify_skills(self, name: str | None, *, unsafe_no_sandbox: bool = False
                      ) -> list[tuple[Skill, Any]]:
        """Run the gate on one stored code skill (or every one when ``name`` is None)."""
        if name is not None:
            skills = [self.get_skill(name)]
            if skills[0].kind != "code":
                raise InvalidInput(f"{skills[0].name!r} is a {skills[0].kind}, not a code skill")
        else:
            skills = [s for s in self.iter_skills() if s.kind == "code"]
        results = []
        for skill in skills:
            found = self.find_skill(skill.name)
            files = self.code_files(found[0]) if found is not None else {}
            results.append((skill, self.run_gate(skill.name, skill.version, files,
                                                 unsafe_no_sandbox=unsafe_no_sandbox)))
        return results

    def ensure_hooks(self) -> None:
        """Install the hook shims where they are missing (a fresh clone), with a notice."""
        from gitvault.hooks import shims

        if self._hooks_checked or self.layout.git_dir is None:
            return
        self._hooks_checked = True
        done = shims.install(self.top) if shims.missing(self.top) else []
        if done:
            self.notices.append("installed the gitvault git hooks (" + "; ".join(done) + ")")

    # -- runs and lifecycle ---------------------------------------------------------
    def runs(self) -> columns.Runs:
        """Every run record, per skill, through the incremental cache."""
        cache = self.layout.cache
        from gitvault.runs import reader  # the columnar reader: only for commands that analyse runs

        return reader.load_runs(self.layout.stream("runs"),
                                  cache / reader.CACHE_NAME if cache is not None else None)

    def lifecycle(self, dry_run: bool = False) -> tuple[list[dict[str, Any]], list[str]]:
        """Mark active skills stale by the rules of SPEC §2.3; each change is a new version.
        Returns (changes, warnings)."""
        from gitvault.runs import health

        rules = health.LifecycleRules.from_config(self.config.lifecycle)
        moment = now()
        events = self.scan("events")
        last_inject, outcomes = health.skill_usage(events.records)
        skipped: list[str] = []
        changes = []
        for skill in self.iter_skills(include_archived=False, skipped=skipped):
            if skill.state != "active":
                continue
            changed_at = parse_iso(skill.metadata.get("updated") or skill.metadata.get("created")
                                   or "1970-01-01T00:00:00Z")
            used = last_inject.get(skill.name)
            last_used = max(changed_at, parse_iso(used)) if used else changed_at
            since = [ok for ts, ok in outcomes.get(skill.name, []) if parse_iso(ts) >= changed_at]
            reason = health.stale_reason(last_used, sum(since), len(since) - sum(since), moment,
                                         rules)
            if reason is None:
                continue
            change = {"name": skill.name, "from": "active", "to": "stale", "reason": reason,
                      "version": skill.version}
            if not dry_run:
                with self._skill_lock():
                    current = self.get_skill(skill.name)
                    current.version = self.next_version(current)
                    current.metadata["state"] = "stale"
                    current.metadata["updated"] = stamp_now()
                    self.save_skill(current, "lifecycle", body=f"Stale: {reason}.")
                change["version"] = current.version
            changes.append(change)
        return changes, [*skipped, *(str(w) for w in events.warnings)]

    # -- derived counts -----------------------------------------------------------
    def skill_stats(self) -> tuple[dict[str, dict[str, int]], list[records.LineWarning]]:
        """usage / success / failure / patches per skill, folded from ``events``."""
        scan = self.scan("events")
        stats: dict[str, dict[str, int]] = {}

        def bump(name: str, key: str) -> None:
            entry = stats.setdefault(name, {"usage": 0, "success": 0, "failure": 0, "patches": 0})
            entry[key] += 1

        for record in scan.records:
            op = record.get("op")
            if op == "inject":
                for ref in record.get("skills") or []:
                    bump(str(ref).split("@")[0], "usage")
            elif op == "outcome":
                key = "success" if record.get("success") is True else "failure"
                for ref in record.get("skills") or []:
                    bump(str(ref).split("@")[0], key)
            elif op == "patch" and isinstance(record.get("skill"), str):
                bump(record["skill"], "patches")
        return stats, scan.warnings

    # -- git ----------------------------------------------------------------------
    def pending_logs(self) -> list[tuple[str, int]]:
        """Log files with uncommitted lines: (path relative to the vault, lines)."""
        result = []
        for status, path in git.changed_paths(self.top, [self.git_path(self.layout.logs)]):
            if path.endswith(".jsonl") and "D" not in status:
                rel = (self.top / path).relative_to(self.root).as_posix()
                result.append((rel, git.added_lines(self.top, path)))
        return result

    def commit_logs(self, message: str | None = None) -> tuple[str | None, int]:
        """Commit every pending log line. Returns (sha or None, lines committed)."""
        pending = self.pending_logs()
        lines = sum(n for _, n in pending)
        if not pending:
            return None, 0
        subject = message or f"gitvault: commit {lines} record{'s' if lines != 1 else ''}"
        self.ensure_hooks()
        sha = git.commit_paths(self.top, [self.git_path(self.root / p) for p, _ in pending],
                                   subject, {"Op": "commit", "Node": self.node})
        return sha, lines

    def skill_view(self, skill: Skill, stats: dict[str, dict[str, int]], *,
                   content: bool = False,
                   entries: list[versions.Version] | None = None) -> dict[str, Any]:
        """The ``skill show --json`` object (``skill list`` leaves out content)."""
        view = skill.summary()
        view["urn"] = self.urn_for(skill.name, skill.version, entries)
        if content:
            view["content"] = skill.body
        view["stats"] = dict(stats.get(skill.name) or
                             {"usage": 0, "success": 0, "failure": 0, "patches": 0})
        ordered = ("name", "description", "trigger", "version", "kind", "state", "provenance",
                   "sensitive", "urn", "metadata", "content", "stats")
        return {k: view[k] for k in ordered if k in view}

    def status(self) -> dict[str, Any]:
        """What ``gitvault status`` shows: skills by state, pending records, changes."""
        counts = {"active": 0, "stale": 0, "archived": 0}
        skipped: list[str] = []
        for skill in self.iter_skills(skipped=skipped):
            counts[skill.state] = counts.get(skill.state, 0) + 1
        pending = self.pending_logs()
        watched = [self.git_path(self.layout.skills), self.git_path(self.layout.config),
                   self.git_path(self.layout.gitattributes)]
        changes = [{"status": st.strip(), "path": p} for st, p in
                   git.changed_paths(self.top, watched)]
        return {
            "vault": str(self.root), "node": self.node, "scope": self.scope,
            "skills": counts,
            "pending": {"records": sum(n for _, n in pending),
                        "files": [{"path": p, "lines": n} for p, n in pending]},
            "changes": changes,
            "warnings": skipped,
        }


def init_vault(folder: Path, remote: str | None = None) -> tuple[Path, list[str]]:
    """Create (or complete) a vault in ``folder``: git repo if none, gitvault.yaml with
    every default, .gitattributes, the folder layout, a first commit. Idempotent: on a
    complete vault it changes nothing. Returns (root, what was created)."""
    root = folder.expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise InvalidInput(f"{root} is a file, not a folder")
    root.mkdir(parents=True, exist_ok=True)
    made: list[str] = []
    top = git.work_tree(root)
    if top is not None and top != root and git.is_ignored(top, root):
        top = None  # a folder the enclosing repository ignores gets a repository of its own
    if top is None:
        git.init_repo(root)
        top = root
        made.append("git repository")
    layout = VaultLayout(root)
    if layout.config.exists():
        config_mod.load(layout.config)  # an existing config must be valid
    else:
        write_atomic(layout.config, config_mod.render_default())
        made.append(layout.rel(layout.config))
    present = layout.gitattributes.read_text("utf-8").splitlines() \
        if layout.gitattributes.exists() else []
    missing = [line for line in GITATTRIBUTES if line not in present]
    if missing:
        write_atomic(layout.gitattributes, "\n".join([*present, *missing]) + "\n")
        made.append(layout.rel(layout.gitattributes))
    for keep in (layout.skills / ".gitkeep", layout.logs / ".gitkeep"):
        if not keep.parent.is_dir():
            keep.parent.mkdir(parents=True)
            keep.touch()
            made.append(layout.rel(keep.parent) + "/")
    if remote:
        have = git.git(top, "remote", "get-url", "origin", check=False)
        if have.returncode != 0:
            git.git(top, "remote", "add", "origin", remote)
            made.append(f"remote origin {remote}")
        elif have.stdout.decode().strip() != remote:
            raise Conflict(f"remote origin is already {have.stdout.decode().strip()}")
    rel = root.relative_to(top).as_posix()
    prefix = "" if rel == "." else rel + "/"
    paths = [f"{prefix}{p}" for p in ("gitvault.yaml", ".gitattributes", "skills/.gitkeep",
                                      "logs/.gitkeep")]
    node = resolve_node(None, layout.git_dir)
    if git.commit_paths(top, paths, "gitvault: init vault", {"Op": "init", "Node": node},
                            verify=False):
        made.append("first commit")
    from gitvault.hooks import shims

    made += [f"hooks: {change}" for change in shims.install(top)]
    return root, made
