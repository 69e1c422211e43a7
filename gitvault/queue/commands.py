"""The prompt-request bus (SPEC §4, §4.3; seed §5, §6): enqueue, dispatch, start,
complete, fail, locks, DAGs.

Every command that changes the queue reads, decides and appends while holding one
``flock`` (``.git/gitvault/locks/queue.lock``), so concurrent commands on a machine
never lose an update; the state is the fold of the ``queue`` records
(:mod:`gitvault.queue.state`), read incrementally (:mod:`gitvault.queue.log`).
A refused command appends nothing.
"""

from __future__ import annotations

import os

from gitvault.core import clock
from gitvault.errors import Conflict, InvalidInput, NotFound
from gitvault.queue.log import QueueLog
from gitvault.queue.rules import LockIndex, blocking, conflicts, expired, lock_expired, normalize_request
from gitvault.queue.state import DAG_COUNTS, RANK, STATUSES, QueueState, view

TYPE_CHECKING = False  # typing is not imported at run time (the queue's hot path)
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from gitvault.core.config import Section
    from gitvault.core.paths import VaultLayout
    from gitvault.queue.dag import DagSpec

FINISHED = ("done", "failed")


class Queue:
    """The queue of one vault, as seen and written by ``node`` under config ``cfg``."""

    def __init__(self, layout: VaultLayout, node: str, cfg: Section) -> None:
        self.log = QueueLog(layout)
        self.node = node
        self.cfg = cfg

    @property
    def warnings(self) -> list[Any]:
        """Lines of the queue logs that are not valid records (file, line, reason)."""
        return self.log.warnings

    def _writing(self) -> _Writing:
        """The folded queue under the queue's lock (``with``), its cache saved after."""
        return _Writing(self.log)

    def state(self) -> QueueState:
        """The folded queue, for reading (no lock needed: appends are whole lines)."""
        state = self.log.load()
        self.log.save(state)
        return state

    def _append(self, state: QueueState, records: list[dict[str, Any]],
                ts: str | None = None) -> list[dict[str, Any]]:
        ts = ts or self.log.next_ts(state)
        return self.log.append(state, self.node, [{"ts": ts, **r} for r in records])

    # -- commands -----------------------------------------------------------------
    def enqueue(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Add a PR; an identical queued one (source, agent, task) makes it a duplicate."""
        request = normalize_request(fields)
        with self._writing() as state:
            for pr in state.active("queued"):
                if (pr["source"], pr["agent"], pr["task"]) == \
                        (request["source"], request["agent"], request["task"]):
                    return {"status": "duplicate", "message": "Identical PR already in queue",
                            "existing": pr["id"]}
            unknown = [d for d in request["dependsOn"] if state.status(d) is None]
            if unknown:
                raise InvalidInput(f"unknown dependency: {', '.join(unknown)}")
            dag = request["dagId"]
            if dag and len(state.dags.get(dag, [])) >= self.cfg.max_per_dag:
                raise InvalidInput(f"DAG {dag} already has {len(state.dags[dag])} prompt requests "
                                   f"(queue.max_per_dag is {self.cfg.max_per_dag})")
            purge = self._room(state, 1, set(request["dependsOn"]))
            ts = self.log.next_ts(state)
            pr_id = new_pr_id(ts)
            self._append(state, [*purge, {"id": pr_id, **_ordered(request)},
                                 *blocking(state, {r["pr"] for r in purge})], ts)
            result = {"status": "enqueued", "pr": view(state.prs[pr_id])}
            if purge:
                result["purged"] = [r["pr"] for r in purge]
            return result

    def create_dag(self, spec: DagSpec) -> dict[str, Any]:
        """Create every PR of a DAG file, or none (one write); dependsOn keys become ids."""
        if len(spec.tasks) > self.cfg.max_per_dag:
            raise InvalidInput(f"DAG {spec.dag_id} has {len(spec.tasks)} tasks "
                               f"(queue.max_per_dag is {self.cfg.max_per_dag})")
        with self._writing() as state:
            if state.dags.get(spec.dag_id):
                return {"status": "duplicate", "dagId": spec.dag_id,
                        "message": f"DAG {spec.dag_id} already exists (give the new one another dagId)",
                        "prs": list(state.dags[spec.dag_id])}
            ts = self.log.next_ts(state)
            ids = {key: new_pr_id(ts) for key in spec.keys}
            outside: set[str] = set()
            for key, depends in zip(spec.keys, spec.depends, strict=True):
                unknown = [d for d in depends if d not in ids and state.status(d) is None]
                if unknown:
                    raise InvalidInput(f"{spec.source}: task {key!r}: unknown dependency: "
                                       f"{', '.join(unknown)}")
                outside.update(d for d in depends if d not in ids)
            purge = self._room(state, len(spec.tasks), outside)
            records = []
            for key, request, depends in zip(spec.keys, spec.tasks, spec.depends, strict=True):
                request = {**request, "dependsOn": [ids.get(d, d) for d in depends]}
                records.append({"id": ids[key], **_ordered(request)})
            self._append(state, [*purge, *records, *blocking(state, {r["pr"] for r in purge})], ts)
            result = {"status": "created", "dagId": spec.dag_id, "count": len(records),
                      "ids": ids, "prs": [view(state.prs[ids[k]]) for k in spec.keys]}
            if purge:
                result["purged"] = [r["pr"] for r in purge]
            return result

    def dispatch(self, max_count: int = 5) -> dict[str, Any]:
        """Up to ``max_count`` (capped by queue.max_per_dispatch) PRs ready to start:
        dependencies done, no file locked; by priority, then oldest first. Expired locks
        are released first, and PRs behind a failed dependency are blocked."""
        if max_count < 0:
            raise InvalidInput(f"--max must not be negative, got {max_count}")
        count = min(max_count, self.cfg.max_per_dispatch)
        with self._writing() as state:
            now = clock.now()
            releases = self._releases(state, now)
            blocks = blocking(state, {r["pr"] for r in releases if r["op"] == "expire"})
            self._append(state, [*releases, *blocks])
            held = LockIndex(state.locks)
            full = len(state.locks) >= self.cfg.max_locks
            ready = []
            for pr in state.active("queued"):
                if any(state.status(d) != "done" for d in pr["dependsOn"]):
                    continue
                if pr["affectedFiles"] and (full or held.conflicts(pr["affectedFiles"])):
                    continue
                ready.append(pr)
            ready.sort(key=lambda pr: (RANK.get(pr["priority"], 2), pr["_key"], pr["_seq"]))
            prs = [view(pr) for pr in ready[:count]]
            return {"count": len(prs), "prs": prs, "expired": expired(state, now),
                    "released": [r["pr"] for r in releases], "blocked": [r["pr"] for r in blocks]}

    def start(self, pr_id: str) -> dict[str, Any]:
        """Lock the PR's files and mark it running; refused (Conflict) unless it is queued,
        its dependencies are done, and no lock is in the way (checked again here)."""
        with self._writing() as state:
            now = clock.now()
            releases = self._releases(state, now)
            held = {k: v for k, v in state.locks.items() if not lock_expired(v, now)}
            pr = self._find(state, pr_id)
            if pr is None or pr["status"] != "queued":
                raise Conflict(f"{pr_id} is {state.status(pr_id)}, not queued: it cannot start")
            waiting = [f"{d} ({state.status(d) or 'unknown'})" for d in pr["dependsOn"]
                       if state.status(d) != "done"]
            if waiting:
                raise Conflict(f"{pr_id} cannot start: its dependencies are not done: "
                               f"{', '.join(waiting)}")
            event: dict[str, Any] = {"op": "start", "pr": pr_id, "status": "running"}
            files = pr["affectedFiles"]
            if files:
                clash = conflicts(files, held)
                if clash:
                    holders = sorted({holder for _, holder in clash})
                    raise Conflict(f"Lock conflict: files [{', '.join(f for f, _ in clash)}] are "
                                   f"already locked (by {', '.join(holders)}). PR {pr_id} cannot start.")
                if len(held) >= self.cfg.max_locks:
                    raise Conflict(f"{len(held)} locks are held (queue.max_locks is "
                                   f"{self.cfg.max_locks}): PR {pr_id} cannot start yet")
                event["lock"] = {"agent": pr["agent"], "files": files, "lockedAt": clock.iso(now),
                                 "ttl": self.cfg.lock_ttl_s}
            blocks = blocking(state, {r["pr"] for r in releases if r["op"] == "expire"})
            self._append(state, [*releases, *blocks, event])
            return {"status": "running", "pr": view(state.prs[pr_id])}

    def complete(self, pr_id: str, result: str = "done") -> dict[str, Any]:
        """Mark a PR done and release its lock."""
        with self._writing() as state:
            self._finishable(state, pr_id)
            self._append(state, [{"op": "complete", "pr": pr_id, "status": "done", "result": result}])
            return {"status": "completed", "prId": pr_id}

    def fail(self, pr_id: str, reason: str = "unknown") -> dict[str, Any]:
        """Mark a PR failed, release its lock, and block every transitive dependent."""
        with self._writing() as state:
            self._finishable(state, pr_id)
            blocks = blocking(state, {pr_id})
            self._append(state, [{"op": "fail", "pr": pr_id, "status": "failed", "result": reason},
                                 *blocks])
            return {"status": "failed", "prId": pr_id, "blocked": [r["pr"] for r in blocks]}

    def release_expired(self) -> dict[str, Any]:
        """Release locks older than their TTL; their running PRs fail with lock_timeout."""
        with self._writing() as state:
            releases = self._releases(state, clock.now())
            blocks = blocking(state, {r["pr"] for r in releases if r["op"] == "expire"})
            self._append(state, [*releases, *blocks])
            return {"status": "cleaned", "released": len(releases), "active": len(state.locks),
                    "prs": [r["pr"] for r in releases], "blocked": [r["pr"] for r in blocks]}

    def locks(self) -> list[dict[str, Any]]:
        """Held locks, oldest first."""
        return sorted(self.state().locks.values(), key=lambda lock: (lock["lockedAt"], lock["prId"]))

    def stats(self) -> dict[str, Any]:
        state = self.state()
        by_status = {s: state.counts[s] for s in STATUSES if state.counts.get(s)}
        return {"total": state.total(), "byStatus": by_status, "activeLocks": len(state.locks),
                "expired": len(expired(state, clock.now()))}

    def dag(self, dag_id: str) -> dict[str, Any]:
        """A DAG's state: the seed's counts, plus its PRs."""
        state = self.state()
        ids = state.dags.get(dag_id)
        if not ids:
            snapshot = state.dag_snapshots.get(dag_id)
            if snapshot is None:
                raise NotFound(f"no DAG {dag_id!r}")
            return snapshot
        prs = [state.summary(pr_id) for pr_id in ids]
        counts = {name: 0 for name in DAG_COUNTS}
        for pr in prs:
            counts[pr["status"]] = counts.get(pr["status"], 0) + 1
        return {"dagId": dag_id, "updated": state.dag_updated.get(dag_id), "total": len(ids),
                **counts, "prs": prs}

    # -- helpers ------------------------------------------------------------------
    def _find(self, state: QueueState, pr_id: str) -> dict[str, Any] | None:
        if state.status(pr_id) is None:
            raise NotFound(f"no prompt request {pr_id!r} (see 'gitvault stats')")
        return state.prs.get(pr_id)

    def _finishable(self, state: QueueState, pr_id: str) -> None:
        self._find(state, pr_id)
        status = state.status(pr_id)
        if status in FINISHED:
            raise Conflict(f"{pr_id} is already {status}")

    def _releases(self, state: QueueState, now: datetime) -> list[dict[str, Any]]:
        """Records releasing every expired lock (a running PR fails with lock_timeout)."""
        records = []
        for pr_id, lock in sorted(state.locks.items()):
            if lock_expired(lock, now):
                if state.status(pr_id) == "running":
                    records.append({"op": "expire", "pr": pr_id, "status": "failed",
                                    "result": "lock_timeout"})
                else:
                    records.append({"op": "unlock", "pr": pr_id})
        return records

    def _room(self, state: QueueState, wanted: int, keep: set[str]) -> list[dict[str, Any]]:
        """Purge records making room for ``wanted`` new PRs: the oldest queued
        low-priority ones go; Conflict if not enough can."""
        active = len(state.active())
        excess = active + wanted - self.cfg.max_active
        if excess <= 0:
            return []
        low = sorted((pr for pr in state.active("queued")
                      if pr["priority"] == "low" and pr["id"] not in keep),
                     key=lambda pr: (pr["_key"], pr["_seq"]))
        if len(low) < excess:
            raise Conflict(f"the queue is full: {active} active prompt requests "
                           f"(queue.max_active is {self.cfg.max_active}) and only {len(low)} "
                           "queued at low priority to purge")
        return [{"op": "purge", "pr": pr["id"], "status": "purged", "result": "queue_full"}
                for pr in low[:excess]]


def new_pr_id(ts: str) -> str:
    """``pr-<epoch ms of ts>-<8 hex>``, as the peer makes them."""
    ms = int(clock.parse_iso(ts).timestamp() * 1000)
    return f"pr-{ms}-{os.urandom(4).hex()}"


def _ordered(request: dict[str, Any]) -> dict[str, Any]:
    return {"source": request["source"], "priority": request["priority"], "agent": request["agent"],
            "task": request["task"], "context": request["context"],
            "affectedSkills": request["affectedSkills"], "affectedFiles": request["affectedFiles"],
            "deadline": request["deadline"], "status": "queued", "result": None,
            "dependsOn": request["dependsOn"], "dagId": request["dagId"]}


class _Writing:
    """``Queue._writing``: a class, not ``contextlib``, which the hot path would pay for
    at import."""

    __slots__ = ("lock", "log", "state")

    def __init__(self, log: QueueLog) -> None:
        self.log, self.lock = log, log.locked()

    def __enter__(self) -> QueueState:
        self.lock.__enter__()
        try:
            self.state = self.log.load()
        except BaseException:
            self.lock.__exit__(None, None, None)
            raise
        return self.state

    def __exit__(self, *exc: object) -> None:
        try:
            self.log.save(self.state)
        finally:
            self.lock.__exit__(*exc)
