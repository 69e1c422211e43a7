"""``gitvault sync``: commit pending records, fetch, merge, push; retry a lost push race.

One sync at a time per clone (``.git/gitvault/sync.lock``). Each round commits what is
pending, fetches the remote branch, merges it (:mod:`gitvault.sync.merge`), answers lost
starts (:mod:`gitvault.sync.starts`), scans what would go out for secrets, and pushes
without force. A rejected push means another node pushed first: fetch and go round
again after a jittered, growing pause, until ``GITVAULT_SYNC_TIMEOUT_S`` runs
out (120 s; exit 3, nothing lost: every local commit stays on the branch for the next sync).
"""

from __future__ import annotations

import os
import random
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitvault.core import git
from gitvault.errors import CheckFailed, Conflict
from gitvault.sync import gitops, merge, secrets, starts
from gitvault.sync.gitops import EMPTY_TREE

if TYPE_CHECKING:
    from collections.abc import Iterator

    from gitvault.vault.facade import Vault

DEFAULT_TIMEOUT_S = 120.0
LOCK_WAIT_S = 60.0


def _timeout() -> float:
    try:
        return max(float(os.environ.get("GITVAULT_SYNC_TIMEOUT_S", DEFAULT_TIMEOUT_S)), 0.0)
    except ValueError:
        return DEFAULT_TIMEOUT_S


@contextmanager
def sync_lock(cache: Path, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """One sync at a time in this clone; a wait that runs out is exit 3."""
    from gitvault.core.gitlock import acquire

    path = str(cache / "sync.lock")
    fd = acquire(path, wait_s, f"another gitvault sync is running in this clone (waited "
                               f"{wait_s:g} s for {path})")
    try:
        yield
    finally:
        os.close(fd)


def _empty() -> dict[str, int]:
    return {"skills": 0, "versions": 0, "records": 0}


def _counts(top: Path, old: str | None, new: str, skills_dir: str, logs_dir: str,
            versions_from: str | None = None) -> tuple[set[str], int, int]:
    """(skills changed, skill versions committed, records added) from ``old`` to ``new``."""
    if old == new:
        return set(), 0, 0
    base = old or EMPTY_TREE
    names = merge.changed_skills(top, base, new, skills_dir)
    records = 0
    numstat = git.out(top, "diff", "--numstat", "--no-renames", base, new, "--", logs_dir)
    for line in numstat.splitlines():
        added = line.split("\t", 1)[0]
        records += int(added) if added.isdigit() else 0
    since = versions_from if versions_from is not None else old
    span = f"{since}..{new}" if since else new
    trailers = git.out(top, "log", "--format=%(trailers:key=Gitvault-Version,valueonly)",
                       span, "--", skills_dir)
    versions = sum(1 for line in trailers.splitlines() if line.strip())
    return names, versions, records


def _add(total: dict[str, int], names: set[str], seen: set[str], versions: int,
         records: int) -> None:
    seen |= names
    total["skills"] = len(seen)
    total["versions"] += versions
    total["records"] += records


def _own_queue_files(vault: Vault) -> list[Path]:
    """This node's queue logs, no symlink followed (SPEC §1)."""
    from gitvault.core.records import stream_files

    return [p for p in stream_files(vault.layout.stream("queue")) if p.name == f"{vault.node}.jsonl"]


def _post_merge_hook(top: Path) -> None:
    """Run the post-merge hook; what it says (each code skill it gated, and the
    verdict) goes to stderr, as after a ``git pull``."""
    import sys

    proc = git.git(top, "hook", "run", "--ignore-missing", "post-merge", "--", "0",
                   check=False)
    said = (proc.stderr or b"").decode("utf-8", "replace")
    if said:
        sys.stderr.write(said if said.endswith("\n") else said + "\n")
        sys.stderr.flush()


def run_sync(vault: Vault, remote: str | None = None) -> dict[str, Any]:
    """One ``gitvault sync``; returns SPEC §4's ``--json`` object."""
    top = vault.top
    remote = remote or "origin"
    gitops.check_remote(top, remote)
    cache = vault.layout.cache or gitops.git_dir(top) / "gitvault"
    skills_dir = vault.git_path(vault.layout.skills)
    logs_dir = vault.git_path(vault.layout.logs)
    result: dict[str, Any] = {"pushed": False, "retries": 0, "in": _empty(), "out": _empty(),
                              "conflicts": [], "lostStarts": [], "rescued": [],
                              "remote": remote, "recovered": []}
    seen_in: set[str] = set()
    with sync_lock(cache):
        with vault.git_lock():  # SPEC §3: no other command stages or commits meanwhile
            result["recovered"] = gitops.recover(top)
            name = gitops.branch(top)
            result["branch"] = name
            result["conflicts"] += merge.repair_hand_merges(
                top, gitops.rev(top, gitops.remote_ref(remote, name)), skills_dir=skills_dir,
                node=vault.node, record=lambda c: _record_conflict(vault, c))
        deadline = time.monotonic() + _timeout()
        merged = False
        while True:
            vault.commit_logs("gitvault: sync: commit pending records")
            theirs = gitops.fetch(top, remote, name)
            before = gitops.rev(top, "HEAD")
            if theirs is not None:
                with vault.git_lock():  # the merge stages and commits (the fetch did not)
                    outcome = merge.merge(top, theirs, skills_dir=skills_dir,
                                          logs_dir=logs_dir, node=vault.node, remote=remote,
                                          record=lambda c: _record_conflict(vault, c))
                result["conflicts"] += outcome.conflicts
                result["rescued"] += outcome.rescued
                if outcome.kind != "up-to-date":
                    merged = True
                    after = gitops.rev(top, "HEAD") or theirs
                    names, versions, records = _counts(top, before, after, skills_dir,
                                                       logs_dir, versions_from=before)
                    _add(result["in"], names, seen_in, versions, records)
            answered = _answer_lost_starts(vault, theirs)
            result["lostStarts"] += answered
            if answered:
                vault.commit_logs("gitvault: sync: lost start races")
            head = gitops.rev(top, "HEAD")
            if head is None or head == theirs:
                break  # nothing to push
            findings = secrets.scan_outgoing(top, theirs, head, skills_dir)
            if findings:
                raise CheckFailed("sync refused to push: outgoing skill files hold secrets: "
                                  + "; ".join(findings) + " (remove them from the unpushed "
                                  "commits, e.g. with 'git rebase -i', then sync again)")
            names, versions, records = _counts(top, theirs, head, skills_dir, logs_dir)
            result["out"] = {"skills": len(names), "versions": versions, "records": records}
            rejected = gitops.push(top, remote, name, head)
            if rejected is None:
                result["pushed"] = True
                break
            result["retries"] += 1
            if time.monotonic() >= deadline:
                lock = gitops.held_lock(rejected)
                why = (f"{remote}'s branch stayed locked: {lock} exists; if no push is "
                       "running there, a push that crashed left it: remove it") if lock \
                    else f"others keep pushing to {remote}"
                raise Conflict(f"sync gave up after {result['retries']} rejected pushes "
                               f"({why}); nothing is lost: run 'gitvault sync' again")
            pause = random.uniform(0, min(2.0, 0.05 * 2 ** min(result["retries"], 6)))
            time.sleep(min(pause, max(deadline - time.monotonic(), 0)))
        if merged:  # once, not per round: it re-gates what came in (SPEC §1)
            _post_merge_hook(top)
    return result


def _record_conflict(vault: Vault, conflict: dict[str, Any]) -> Path:
    """The ``events`` record of a resolved skill conflict; the file it went to."""
    from gitvault.core import records

    (written,) = records.append_to_stream(vault.layout, "events", vault.node, [{
        "op": "conflict", "skill": conflict["skill"], "version": conflict["version"],
        "winner": conflict["winner"], "loser": conflict["loser"],
        "sides": [conflict["winner"]["node"], conflict["loser"]["node"]]}])
    path = vault.layout.log_file("events", vault.node, written["ts"])
    return path  # not autocommitted: the merge commit holds it


def _answer_lost_starts(vault: Vault, theirs: str | None) -> list[dict[str, Any]]:
    files = _own_queue_files(vault)
    mine = starts.unpushed(vault.top, files, theirs)
    if "start" not in mine.values():
        return []
    lost = []
    for start, answer in starts.lost_starts(vault.layout.stream("queue"), vault.node,
                                            set(mine)):
        vault.append("queue", answer)
        lost.append({"pr": start["pr"], "start": start["id"], "status": answer["status"]})
    return lost
