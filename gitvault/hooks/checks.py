"""The pre-commit checks (SPEC §6). They read the staged content (the index git is
about to commit): skill files valid, folder = name, version bumped on any change, code
skills with passing gate evidence for exactly the staged content (else the gate runs),
staged JSONL valid and append-only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from gitvault.core import git
from gitvault.core.clock import now
from gitvault.core.paths import (
    ARCHIVE_DIR,
    CONFIG_NAME,
    LOGS_DIR,
    REJECTED_DIR,
    SKILLS_DIR,
    VaultLayout,
)
from gitvault.core.redact import redact
from gitvault.errors import InvalidInput
from gitvault.skills.model import SKILL_FILE, file_problems, parse_skill_bytes
from gitvault.skills.versions import skill_paths


def staged_changes(top: Path) -> list[tuple[str, str]]:
    """(status letter, path) of every staged change, renames split in delete + add."""
    base = ["HEAD"] if git.has_commits(top) else []
    text = git.out(top, "diff", "--cached", "--name-status", "--no-renames", "-z", *base)
    items = [p for p in text.split("\0") if p]
    return [(items[i][0], items[i + 1]) for i in range(0, len(items) - 1, 2)]


def staged_symlinks(top: Path, folders: list[str]) -> list[str]:
    """Paths under ``folders`` that the commit would add or change as a symlink (git
    mode 120000)."""
    base = ["HEAD"] if git.has_commits(top) else []
    text = git.out(top, "diff", "--cached", "--raw", "--no-renames", "-z", *base, "--",
                   *folders)
    items = [p for p in text.split("\0") if p]
    found = []
    for i in range(0, len(items) - 1, 2):
        fields = items[i].split()
        if len(fields) >= 2 and fields[1] == "120000":
            found.append(items[i + 1])
    return found


def _staged(top: Path, path: str) -> bytes | None:
    return git.show_file(top, "", path)


def _head(top: Path, path: str) -> bytes | None:
    return git.show_file(top, "HEAD", path) if git.has_commits(top) else None


_REPAIR = " ('gitvault doctor --repair' moves it aside, kept)"


def check_jsonl(top: Path, path: str, status: str) -> list[str]:
    """A staged log file: valid records, committed lines untouched."""
    old = _head(top, path)
    if status == "D":
        return [f"{path}: deletes committed records (logs are append-only)"] if old else []
    new = _staged(top, path) or b""
    problems = []
    if old and not new.startswith(old):
        old_lines, new_lines = old.split(b"\n"), new.split(b"\n")
        line = next((i + 1 for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=False)) if a != b),
                    min(len(old_lines), len(new_lines)))
        problems.append(f"{path}:{line}: edits or deletes a committed line "
                        "(logs are append-only)")
        return problems
    added = new[len(old or b""):]
    ended = old is not None and old != b"" and not old.endswith(b"\n") and added.startswith(b"\n")
    if ended:
        added = added[1:]  # it ends a committed last line (an unterminated one) unchanged
    if added and not added.endswith(b"\n"):
        problems.append(f"{path}: the last line is incomplete (no newline){_REPAIR}")
    first = (old or b"").count(b"\n") + 1 + ended
    for offset, raw in enumerate(added.split(b"\n")[:-1]):
        if not raw.strip():
            problems.append(f"{path}:{first + offset}: a blank line{_REPAIR}")
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            problems.append(f"{path}:{first + offset}: not a JSON record{_REPAIR}")
            continue
        if not isinstance(record, dict):
            problems.append(f"{path}:{first + offset}: not a JSON object{_REPAIR}")
    return problems


def _version(data: bytes | None) -> int:
    if data is None:
        return 0
    try:
        return parse_skill_bytes(data).version
    except InvalidInput:
        return 0


def check_skill(top: Path, vault_rel: str, name: str, archived: bool, gate: Callable[..., Any],
                evidence: Callable[[str], bool]) -> list[str]:
    """One changed skill folder: ``skills/<name>`` or ``skills/.archive/<name>`` of the
    vault at ``vault_rel`` in the work tree ``top``."""
    folder = VaultLayout.skill_git_dir(vault_rel, name, archived=archived)
    skill_md = f"{folder}/{SKILL_FILE}"
    data = _staged(top, skill_md)
    if data is None:
        other = VaultLayout.skill_git_dir(vault_rel, name, archived=not archived)
        if _staged(top, f"{other}/{SKILL_FILE}") is None:
            return [f"{folder}: deletes skill {name!r} (skills are archived, never deleted)"]
        return []
    try:
        skill = parse_skill_bytes(data, skill_md)
    except InvalidInput as exc:
        return [f"{skill_md}: invalid skill file: {exc}"]
    if skill.name != name:
        return [f"{skill_md}: name {skill.name!r} does not match its folder {name!r}"]
    if file_problems(skill):
        return [f"{skill_md}: invalid skill file: {p}" for p in file_problems(skill)]
    before = max(_version(_head(top, path)) for path in skill_paths(vault_rel, name))
    if before and skill.version <= before:
        return [f"{skill_md}: the skill changed but metadata.version is still "
                f"{skill.version} (committed: {before}); bump it to {before + 1}"]
    if skill.kind != "code" or archived:
        return []
    from gitvault.gate.scan import FILES, FOLDER_FILES, folder_reasons
    from gitvault.gate.verify import evidence_hash  # only code skills need the gate

    staged = git.out(top, "ls-files", "-z", "--", folder).split("\0")
    extra = [f"{folder}/{r.file}: {r.message}" for r in folder_reasons(top / folder)]
    extra += [f"{p}: staged, but a code skill folder holds only {', '.join(FOLDER_FILES)}"
              for p in staged if p and p[len(folder) + 1:] not in FOLDER_FILES
              and not (top / p).exists()]
    if extra:
        return [f"{folder}: code skill {name!r} v{skill.version} fails the verification "
                f"gate: extra-file: {e}" for e in extra]
    files = {}
    for file in FILES:
        content = _staged(top, f"{folder}/{file}")
        if content is not None:
            files[file] = content.decode("utf-8", "surrogateescape")
    if evidence(evidence_hash(files)):
        return []
    result = gate(skill.name, skill.version, files)
    if result.passed:
        return []
    return [f"{folder}: code skill {name!r} v{skill.version} fails the verification gate: "
            + redact("; ".join(result.messages()))]


def vaults_of(top: Path, paths: Iterable[str]) -> list[str]:
    """The vaults (their folders relative to the work tree ``top``, '' for the top) that
    hold any of ``paths``: for each path the nearest folder above it with a
    ``gitvault.yaml`` on disk or in the index. A repository may hold several vaults in
    subfolders (SPEC §1), or none; paths in no vault belong to none."""
    indexed = {p.rsplit("/", 1)[0] if "/" in p else "" for p in
               git.out(top, "ls-files", "-z", "--", f":(glob)**/{CONFIG_NAME}").split("\0")
               if p}
    found: dict[str, None] = {}
    known: dict[str, bool] = {}

    def is_vault(folder: str) -> bool:
        if folder not in known:
            known[folder] = folder in indexed or (top / folder / CONFIG_NAME).is_file()
        return known[folder]

    for path in paths:
        parts = path.split("/")[:-1]
        for depth in range(len(parts), -1, -1):
            folder = "/".join(parts[:depth])
            if is_vault(folder):
                found[folder] = None
                break
    return list(found)


def pre_commit(top: Path, vault_rel: str, gate: Callable[..., Any],
               evidence: Callable[[str], bool],
               staged: list[tuple[str, str]] | None = None) -> list[str]:
    """Every problem with what is staged in the vault at ``vault_rel`` (empty: the
    commit may go ahead). ``staged``: :func:`staged_changes`, when known already."""
    skills, logs = (VaultLayout.git_path(vault_rel, d) for d in (SKILLS_DIR, LOGS_DIR))
    folders: dict[tuple[str, bool], None] = {}  # (name, archived), in the order staged
    problems: list[str] = []
    problems += [f"{path}: a symlink; gitvault never follows symlinks under skills/ or logs/, "
                 "so none may be committed there (add the file itself)"
                 for path in staged_symlinks(top, [skills, logs])]
    for status, path in staged if staged is not None else staged_changes(top):
        if path.startswith(f"{logs}/") and path.endswith(".jsonl"):
            problems += check_jsonl(top, path, status)
        elif path.startswith(f"{skills}/"):
            parts = path[len(skills) + 1:].split("/")
            if parts[0] == REJECTED_DIR or len(parts) < 2:
                continue
            archived = parts[0] == ARCHIVE_DIR
            if len(parts) > 1 + archived:
                folders[parts[archived], archived] = None
    for name, archived in folders:
        problems += check_skill(top, vault_rel, name, archived, gate, evidence)
    return problems


def evidence_checker(records: Iterable[dict[str, Any]], max_age_s: int,
                     allow_unsandboxed: bool = False, *, node: str) -> Callable[[str], bool]:
    """Whether ``node`` itself holds fresh passing evidence for a sha256 (never another
    node's records: they arrive with every sync and could be forged)."""
    from gitvault.gate.verify import find_evidence

    kept = list(records)
    moment = now()
    return lambda sha: find_evidence(kept, sha, moment, max_age_s, node=node,
                                     allow_unsandboxed=allow_unsandboxed) is not None
