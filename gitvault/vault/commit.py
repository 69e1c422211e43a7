"""``gitvault status`` and ``gitvault commit``: what is pending, and committing it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitvault.core import git, records
from gitvault.core.paths import NOFOLLOW
from gitvault.skills.model import STATES

if TYPE_CHECKING:
    from gitvault.vault.facade import Vault


def pending_logs(vault: Vault) -> list[tuple[str, int]]:
    """Log files with uncommitted lines: (path relative to the vault, lines)."""
    result = []
    for status, path in git.changed_paths(vault.top, [vault.git_path(vault.layout.logs)]):
        if path.endswith(".jsonl") and "D" not in status:
            rel = (vault.top / path).relative_to(vault.root).as_posix()
            result.append((rel, git.added_lines(vault.top, path)))
    return result


def _restore_committed_tail(vault: Vault, rel: str) -> bool:
    """A last line committed without ``\n`` (a careless or hostile node's commit, come by
    sync) was moved aside as a tear by a later append; committed lines are never edited
    or deleted, so put it back, terminated, before this node's new lines (readers report
    it as a bad line). True when the file was rewritten."""
    import fcntl
    import os

    path = vault.root / rel
    old = git.show_file(vault.top, "HEAD", vault.git_path(path))
    if not old or old.endswith(b"\n"):
        return False
    prefix = old[:old.rfind(b"\n") + 1]
    fd = os.open(path, os.O_RDWR | NOFOLLOW)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # appenders hold the shared lock while they write
        data = os.pread(fd, os.fstat(fd).st_size, 0)
        if data.startswith(old) or not data.startswith(prefix):
            return False
        fixed = old + b"\n" + data[len(prefix):]
        os.pwrite(fd, fixed, 0)
        os.ftruncate(fd, len(fixed))
        os.fsync(fd)
        return True
    finally:
        os.close(fd)


def commit_logs(vault: Vault, message: str | None = None) -> tuple[str | None, int]:
    """Commit every pending log line, holding the git lock from the look at what is
    pending to the commit (SPEC §3). A torn tail a crash left is moved aside first: it
    never blocks the commit. Returns (sha or None, lines committed)."""
    with vault.git_lock():
        pending = pending_logs(vault)
        torn = [path for path in (vault.root / p for p, _ in pending)
                if records.has_torn_tail(path)]
        if torn:
            for path in torn:
                records.move_torn_tail(path)
            pending = pending_logs(vault)
        if any(_restore_committed_tail(vault, p) for p, _ in pending):
            pending = pending_logs(vault)
        lines = sum(n for _, n in pending)
        if not pending:
            return None, 0
        subject = message or f"gitvault: commit {lines} record{'s' if lines != 1 else ''}"
        vault.ensure_hooks()
        sha = git.commit_paths(vault.top, [vault.git_path(vault.root / p) for p, _ in pending],
                               subject, {"Op": "commit", "Node": vault.node})
    return sha, lines


def status(vault: Vault) -> dict[str, Any]:
    """Skills by state, pending records, uncommitted changes to skills and config."""
    counts = dict.fromkeys(STATES, 0)
    skipped: list[str] = []
    for skill in vault.skills.iter_all(skipped=skipped):
        counts[skill.state] = counts.get(skill.state, 0) + 1
    pending = pending_logs(vault)
    watched = [vault.git_path(vault.layout.skills), vault.git_path(vault.layout.config),
               vault.git_path(vault.layout.gitattributes)]
    changes = [{"status": st.strip(), "path": p} for st, p in
               git.changed_paths(vault.top, watched)]
    return {
        "vault": str(vault.root), "node": vault.node, "scope": vault.scope,
        "skills": counts,
        "pending": {"records": sum(n for _, n in pending),
                    "files": [{"path": p, "lines": n} for p, n in pending]},
        "changes": changes,
        "warnings": skipped,
    }
