"""The queue's rules as pure functions (SPEC §4.3; seed §4.3, §5, §6): what a new PR
may hold, lock conflicts (``repo:*`` covers a whole repo), lock TTLs, deadlines, and
transitive blocking behind a failed dependency."""

from __future__ import annotations

from gitvault.core import clock
from gitvault.core.config import DEFAULT_LOCK_TTL_S
from gitvault.errors import InvalidInput
from gitvault.queue.state import (
    DEADLINES,
    LIST_FIELDS,
    PR_DEFAULTS,
    PRIORITIES,
    RANK,
    QueueState,
    split_file,
    text_list,
)

TYPE_CHECKING = False  # typing is not imported at run time (the queue's hot path)
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

DEAD = ("failed", "blocked", "purged")  # a dependency in one of these blocks its dependents


class LockIndex:
    """The files held locks cover, for checking many PRs against them."""

    def __init__(self, locks: dict[str, dict[str, Any]]) -> None:
        self.exact: dict[tuple[str, str], str] = {}
        self.whole: dict[str, str] = {}
        self.touched: dict[str, str] = {}
        for holder, lock in locks.items():
            for ref in lock["files"]:
                repo, path = split_file(ref)
                if path == "*":
                    self.whole.setdefault(repo, holder)
                self.exact.setdefault((repo, path), holder)
                self.touched.setdefault(repo, holder)

    def conflicts(self, files: list[str]) -> list[tuple[str, str]]:
        """(file, holding PR) for each of ``files`` a held lock covers; ``repo:*`` covers
        every file of that repo, and is covered by any lock in it."""
        found = []
        for ref in files:
            repo, path = split_file(ref)
            owner = self.whole.get(repo) or self.exact.get((repo, path))
            if owner is None and path == "*":
                owner = self.touched.get(repo)
            if owner is not None:
                found.append((ref, owner))
        return found


def conflicts(files: list[str], locks: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """(file, holding PR) for each of ``files`` the ``locks`` cover (see LockIndex)."""
    return LockIndex(locks).conflicts(files)


def lock_expired(lock: dict[str, Any], now: datetime) -> bool:
    """now - lockedAt > ttl (as the peer); a lock with an unreadable time has expired."""
    try:
        locked_at = clock.parse_iso(lock["lockedAt"])
        ttl = float(lock.get("ttl") or DEFAULT_LOCK_TTL_S)
    except (InvalidInput, TypeError, ValueError):
        return True
    return clock.older_than(locked_at, now, ttl)


def expired(state: QueueState, now: datetime) -> list[str]:
    """Active PRs whose deadline has passed (immediate, 24h, week-end, or an ISO time)."""
    found = []
    for pr in state.active():
        deadline = pr["deadline"]
        if deadline in ("none", "next-cycle", None, ""):
            continue
        try:
            if deadline in DEADLINES:
                due = clock.shift(clock.parse_iso(pr["ts"]), DEADLINES[deadline] or 0)
            else:
                due = clock.parse_iso(deadline)
        except InvalidInput:
            continue
        if now > due:
            found.append(pr["id"])
    return found


def blocking(state: QueueState, dying: set[str] | frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Block records for queued PRs behind a failed, blocked or purged dependency (or
    one of ``dying``, about to be), transitively: a dependent of a newly blocked PR is
    blocked too."""
    waiting = [pr for pr in state.active("queued") if pr["dependsOn"] and pr["id"] not in dying]
    blocked: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for pr in waiting:
            if pr["id"] in blocked:
                continue
            cause = next((d for d in pr["dependsOn"]
                          if d in blocked or d in dying or state.status(d) in DEAD), None)
            if cause is not None:
                blocked[pr["id"]] = cause
                changed = True
    return [{"op": "block", "pr": pr_id, "status": "blocked", "result": "Dependency failed",
             "cause": cause} for pr_id, cause in blocked.items()]


def normalize_request(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields of a new PR with the peer's defaults, checked (InvalidInput names the field)."""
    pr: dict[str, Any] = {
        name: fields.get(name) if fields.get(name) is not None else PR_DEFAULTS.get(name)
        for name in ("source", "priority", "agent", "task", "context", "deadline", "dagId")}
    for name in ("source", "agent", "task", "context", "deadline"):
        if not isinstance(pr[name], str):
            raise InvalidInput(f"{name} must be text, got {pr[name]!r}")
    if pr["priority"] not in RANK:
        raise InvalidInput(f"unknown priority {pr['priority']!r} (use {', '.join(PRIORITIES)})")
    if not pr["task"].strip():
        raise InvalidInput("a prompt request needs a task (--task TEXT)")
    check_deadline(pr["deadline"])
    if pr["dagId"] is not None and (not isinstance(pr["dagId"], str) or not pr["dagId"].strip()):
        raise InvalidInput(f"dagId must be non-empty text, got {pr['dagId']!r}")
    for name in LIST_FIELDS:
        value = fields.get(name) or []
        if text_list(value) is None:
            raise InvalidInput(f"{name} must be a list of text, got {value!r}")
        pr[name] = [v.strip() for v in value if v.strip()]
    return pr


def check_deadline(deadline: str) -> None:
    """A deadline is one of the seed's words or an ISO 8601 time."""
    if deadline in DEADLINES:
        return
    try:
        clock.parse_iso(deadline)
    except InvalidInput:
        raise InvalidInput(f"unknown deadline {deadline!r} (use {', '.join(DEADLINES)} "
                           "or an ISO 8601 time)") from None
