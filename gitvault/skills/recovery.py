"""Crash consistency of skill writes (SPEC §3, §4 ``doctor --repair``).

A skill write is several steps: write the files, stage and commit them, append the
``events`` record. Before the first step the store writes an *intent* (what it is
about to do, ``.git/gitvault/skill-op.json``, fsynced); it marks the intent
``written`` once every file is in place and removes it after the record. A process
killed at any moment leaves the intent behind, and the next skill write (under the
skill lock) or ``doctor --repair`` finishes the job from it:

- the commit exists (its ``Gitvault-Op/Skill/Version/Node`` trailers say so): the
  index of those paths is brought in line with it and the ``events`` record is
  appended if it is missing (never twice);
- no commit, every file written: the commit is made (nothing is lost), then the record;
- no commit, files half written: the folders are restored from HEAD.

Commits whose record is missing for another reason (a crash before this module
existed) are found from the trailers too (:func:`missing_events`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitvault.core import git, records
from gitvault.core.files import write_atomic

if TYPE_CHECKING:
    from gitvault.skills.store import SkillStore

INTENT_NAME = "skill-op.json"
OPS = ("create", "patch", "rollback", "archive", "restore", "lifecycle")  # SkillStore.save's


def intent_path(store: SkillStore) -> Path:
    cache = store.layout.cache
    return (cache if cache is not None else store.layout.root / ".gitvault-lock") / INTENT_NAME


def begin(store: SkillStore, *, op: str, trailers: dict[str, str], subject: str, body: str,
          paths: list[str], written: list[str], moved: tuple[str, str] | None) -> None:
    """Record what the write is about to do, before it changes anything."""
    proc = git.git(store.top, "rev-parse", "-q", "--verify", "HEAD", check=False)
    head = proc.stdout.decode().strip() if proc.returncode == 0 else ""
    intent = {"op": op, "trailers": trailers, "subject": subject, "body": body,
              "paths": paths, "written": written, "moved": list(moved) if moved else None,
              "head": head, "phase": "writing"}
    write_atomic(intent_path(store), json.dumps(intent, indent=1))


def mark_written(store: SkillStore) -> None:
    """Every file of the write is in place: from now on a crash completes it."""
    intent = load(store)
    if intent is not None:
        intent["phase"] = "written"
        write_atomic(intent_path(store), json.dumps(intent, indent=1))


def finish(store: SkillStore) -> None:
    intent_path(store).unlink(missing_ok=True)


def load(store: SkillStore) -> dict[str, Any] | None:
    try:
        data = json.loads(intent_path(store).read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"op": "?", "trailers": {}, "paths": [], "written": [], "phase": "broken"}
    return data if isinstance(data, dict) else None


def describe(intent: dict[str, Any]) -> str:
    trailers = intent.get("trailers") or {}
    return (f"'gitvault skill {intent.get('op')}' of {trailers.get('Skill', '?')} "
            f"v{trailers.get('Version', '?')} was interrupted")


def recover(store: SkillStore) -> str | None:
    """Finish or undo an interrupted skill write (the caller holds the skill lock).
    Returns what was done, or None when there was nothing to do. A git failure (a
    stale ``index.lock``) raises GitError and leaves the intent for the next try."""
    intent = load(store)
    if intent is None:
        return None
    if intent.get("phase") == "broken":
        finish(store)
        return "an unreadable record of an interrupted skill write was removed"
    trailers = {k: str(v) for k, v in (intent.get("trailers") or {}).items()}
    paths = [p for p in intent.get("paths") or [] if isinstance(p, str)]
    sha = _committed(store, intent, trailers, paths)
    if sha is None and intent.get("phase") == "written":
        sha = git.commit_paths(store.top, paths, str(intent.get("subject") or ""), trailers,
                               str(intent.get("body") or ""), verify=False)
        done = "completed: its commit was made now"
    elif sha is None:
        _restore(store, intent, paths)
        done = "undone: its files were restored from HEAD"
    else:
        done = "its commit was there"
    if sha is not None:
        git.git(store.top, "reset", "-q", "--", *paths, check=False)
        if ensure_event(store, intent.get("op") or trailers.get("Op", ""), trailers, sha):
            done += "; its events record was appended"
    _drop_temp_files(store, paths)
    finish(store)
    return f"{describe(intent)}; {done}"


def _committed(store: SkillStore, intent: dict[str, Any], trailers: dict[str, str],
               paths: list[str]) -> str | None:
    """The commit the interrupted write made, if it got that far."""
    head = intent.get("head") or ""
    rev = f"{head}..HEAD" if head else "HEAD"
    if not git.has_commits(store.top) or not paths:
        return None
    wanted = {f"{git.TRAILER_PREFIX}{k}": v for k, v in trailers.items()
              if k in ("Op", "Skill", "Version", "Node")}
    for commit in git.log(store.top, paths, rev=rev):
        if all(commit.trailers.get(k) == v for k, v in wanted.items()):
            return commit.sha
    return None


def _restore(store: SkillStore, intent: dict[str, Any], paths: list[str]) -> None:
    """Put the write's paths back as HEAD has them; files only the write made go."""
    top = store.top
    moved = intent.get("moved")
    if moved:
        src, dst = (top / moved[0]), (top / moved[1])
        if dst.exists() and not src.exists():
            src.parent.mkdir(parents=True, exist_ok=True)
            os.rename(dst, src)
    git.git(top, "reset", "-q", "--", *paths, check=False)
    tracked = set(git.out(top, "ls-tree", "-r", "-z", "--name-only", "HEAD", "--",
                          *paths).split("\0")) - {""} if git.has_commits(top) else set()
    if tracked:
        git.git(top, "checkout", "HEAD", "--", *sorted(tracked))
    for rel in intent.get("written") or []:
        if isinstance(rel, str) and rel not in tracked:
            (top / rel).unlink(missing_ok=True)
    for rel in paths:
        folder = top / rel
        try:
            if folder.is_dir() and not folder.is_symlink() and not any(
                    e for e in folder.iterdir() if not _temp(e.name)):
                _drop_temp_files(store, [rel])
                folder.rmdir()
        except OSError:
            pass


def _temp(name: str) -> bool:
    """A temp file of ``write_atomic`` (``.<name>.<pid>.tmp``)."""
    return name.startswith(".") and name.endswith(".tmp")


def _drop_temp_files(store: SkillStore, paths: list[str]) -> None:
    for rel in paths:
        folder = store.top / rel
        if not folder.is_dir() or folder.is_symlink():
            continue
        for entry in folder.iterdir():
            if _temp(entry.name) and entry.is_file():
                entry.unlink(missing_ok=True)


def temp_files(store: SkillStore) -> list[Path]:
    """Temp files of interrupted writes left in skill folders."""
    found = []
    for base in (store.layout.skills, store.layout.archive):
        if not base.is_dir() or base.is_symlink():
            continue
        for folder in base.iterdir():
            if folder.is_dir() and not folder.is_symlink():
                found += [e for e in folder.iterdir() if _temp(e.name) and e.is_file()]
    return sorted(found)


def _event_commits(store: SkillStore) -> set[str]:
    scan = records.scan(store.layout.stream("events"))
    return {r["commit"] for r in scan.records
            if isinstance(r.get("commit"), str) and r.get("op") in OPS}


def ensure_event(store: SkillStore, op: str, trailers: dict[str, str], sha: str) -> bool:
    """Append the ``events`` record of commit ``sha`` unless one is there already."""
    if sha in _event_commits(store):
        return False
    version = trailers.get("Version", "")
    store.append("events", {"op": op, "skill": trailers.get("Skill", ""),
                            "version": int(version) if version.isdigit() else version,
                            "commit": sha})
    return True


def missing_events(store: SkillStore) -> list[git.Commit]:
    """This node's skill commits (trailers of :data:`OPS`) that have no events record."""
    if not git.has_commits(store.top):
        return []
    have = _event_commits(store)
    commits = git.log(store.top, [store.git_path(store.layout.skills)])
    return [c for c in reversed(commits)
            if c.op in OPS and c.trailers.get("Gitvault-Node") == store.node
            and c.trailers.get("Gitvault-Skill") and c.version is not None
            and c.sha not in have]


def staged_skill_paths(store: SkillStore) -> list[str]:
    """Paths under ``skills/`` staged but not committed (git names)."""
    base = ["HEAD"] if git.has_commits(store.top) else []
    text = git.out(store.top, "diff", "--cached", "--name-only", "--no-renames", "-z", *base,
                   "--", store.git_path(store.layout.skills))
    return [p for p in text.split("\0") if p]
