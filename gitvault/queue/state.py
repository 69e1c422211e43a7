"""Prompt requests as a fold of append-only records (SPEC §3, §4.3; seed §4.3, §5, §6).

Two kinds of ``queue`` records exist. A prompt request (no ``op``) is the seed's
object: ``{id, ts, source, priority, agent, task, context, affectedSkills,
affectedFiles, deadline, status, result, dependsOn, dagId}``. An event (``op``)
names its PR in ``pr``: a status change (``status``, ``result``), a lock taken
(``lock``: ``{agent, files, lockedAt, ttl}``, with ``status: running`` on a start)
or dropped (``unlock``), or an imported DAG snapshot (``dag``). A PR holds its lock
while it is running. :class:`QueueState` is the fold; everything here is pure.
"""

from __future__ import annotations

import marshal

from gitvault.core.config import DEFAULT_LOCK_TTL_S, SEVERITIES

TYPE_CHECKING = False  # typing is not imported at run time (the queue's hot path)
if TYPE_CHECKING:
    from typing import Any

PRIORITIES = SEVERITIES  # a knowledge change's severity is its PR's priority (SPEC §8)
RANK = {name: rank for rank, name in enumerate(PRIORITIES)}
STATUSES = ("queued", "running", "done", "failed", "deferred", "blocked", "purged")
ACTIVE = ("queued", "running")
DEADLINES = {"immediate": 0, "24h": 86400, "week-end": 604800, "next-cycle": None, "none": None}
PR_FIELDS = ("id", "ts", "source", "priority", "agent", "task", "context", "affectedSkills",
             "affectedFiles", "deadline", "status", "result", "dependsOn", "dagId")
LOCK_FIELDS = ("agent", "files", "prId", "lockedAt", "ttl")
DAG_COUNTS = tuple(s for s in STATUSES if s != "deferred")  # the seed's DAG state counts
LIST_FIELDS = ("affectedSkills", "affectedFiles", "dependsOn")
PR_DEFAULTS: dict[str, Any] = {"source": "human", "priority": "medium", "agent": "default",
                             "task": "", "context": "", "deadline": "none", "status": "queued",
                             "result": None, "dagId": None}

Key = tuple[str, str, str, int]  # (ts sort key, node, file, line): the order of SPEC §4.0
# What to_cache keeps of a QueueState as it is (attribute -> key), beside the PRs and
# the last record key.
_CACHED = (("closed", "closed"), ("counts", "counts"), ("locks", "locks"), ("dags", "dags"),
           ("dag_updated", "dagUpdated"), ("dag_snapshots", "dagSnapshots"),
           ("orphans", "orphans"), ("imported", "imported"), ("seq", "seq"),
           ("last_ts", "lastTs"))
FLUSH = 512  # recently closed PRs kept apart before they join the (lazily parsed) history


class NeedRebuild(Exception):
    """An incremental fold met a record it cannot apply in place (fold from scratch)."""


def text_list(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def check_pr(record: dict[str, Any]) -> str | None:
    """Why ``record`` is not a valid prompt request, or None."""
    if not isinstance(record.get("id"), str) or not record["id"]:
        return "prompt request without an id"
    for name in ("source", "priority", "agent", "task", "context", "deadline"):
        if name in record and not isinstance(record[name], str):
            return f"prompt request {record['id']}: {name} must be text"
    for name in LIST_FIELDS:
        if name in record and text_list(record[name]) is None:
            return f"prompt request {record['id']}: {name} must be a list of text"
    if record.get("status", "queued") not in STATUSES:
        return f"prompt request {record['id']}: unknown status {record.get('status')!r}"
    if record.get("dagId") is not None and not isinstance(record["dagId"], str):
        return f"prompt request {record['id']}: dagId must be text"
    return None


def check_event(record: dict[str, Any]) -> str | None:
    """Why ``record`` is not a valid queue event, or None."""
    if record["op"] == "dag":
        if not isinstance(record.get("dagId"), str) or not isinstance(record.get("state"), dict):
            return "queue event: dag snapshot without a dagId and a state"
        return None
    if not isinstance(record.get("pr"), str) or not record["pr"]:
        return f"queue event {record.get('op')!r} without a pr"
    if "status" in record and record["status"] not in STATUSES:
        return f"queue event: unknown status {record['status']!r}"
    lock = record.get("lock")
    if lock is not None and (not isinstance(lock, dict) or text_list(lock.get("files")) is None
                             or not isinstance(lock.get("lockedAt"), str)):
        return "queue event: lock must hold files and lockedAt"
    return None


def import_key(record: dict[str, Any]) -> str:
    """What makes an imported lock or DAG snapshot the same as one imported before."""
    if record["op"] == "dag":
        return f"dag {record['dagId']} {record['state'].get('updated')}"
    return f"lock {record['pr']} {record['lock']['lockedAt']}"


def split_file(ref: str) -> tuple[str, str]:
    """``repo:path`` as (repo, path); a reference without a repo is in repo ''."""
    repo, sep, path = ref.partition(":")
    return (repo, path) if sep else ("", ref)


class QueueState:
    """The folded queue. ``prs`` holds full PRs; after :meth:`compact`, PRs that are no
    longer active are kept only as ``[status, dagId, result]`` (plus task and dependsOn
    in a DAG): the recent ones in ``closed``, older ones in the history, which a cached
    state parses only when a look-up needs it (dispatching a long-lived queue never
    does)."""

    def __init__(self) -> None:
        self.prs: dict[str, dict[str, Any]] = {}
        self.closed: dict[str, list[Any]] = {}
        self._history: dict[str, list[Any]] | None = {}  # None: not parsed yet
        self._history_raw = marshal.dumps({})
        self._history_dirty = False
        self.locks: dict[str, dict[str, Any]] = {}
        self.dags: dict[str, list[str]] = {}
        self.dag_updated: dict[str, str] = {}
        self.dag_snapshots: dict[str, dict[str, Any]] = {}
        self.orphans: dict[str, list[dict[str, Any]]] = {}
        self.imported: list[str] = []  # import_key of imported locks and DAG snapshots
        self.counts: dict[str, int] = {}
        self.seq = 0
        self.last_key: Key = ("", "", "", 0)
        self.last_ts = ""

    # -- lookup -------------------------------------------------------------------
    def status(self, pr_id: str) -> str | None:
        pr = self.prs.get(pr_id)
        if pr is not None:
            return str(pr["status"])
        entry = self._closed(pr_id)
        return entry[0] if entry is not None else None

    def dag_of(self, pr_id: str) -> str | None:
        pr = self.prs.get(pr_id)
        if pr is not None:
            return pr.get("dagId")
        entry = self._closed(pr_id)
        return entry[1] if entry is not None else None

    def result_of(self, pr_id: str) -> Any:
        pr = self.prs.get(pr_id)
        entry = self._closed(pr_id) if pr is None else None
        return pr["result"] if pr is not None else entry[2] if entry is not None else None

    def summary(self, pr_id: str) -> dict[str, Any]:
        """``{id, status, task, dependsOn}`` of a PR (task and dependsOn None if forgotten)."""
        pr = self.prs.get(pr_id)
        if pr is not None:
            return {"id": pr_id, "status": pr["status"], "task": pr["task"],
                    "dependsOn": pr["dependsOn"]}
        entry = self._closed(pr_id) or ["queued", None, None]
        extra = entry[3:5] if len(entry) >= 5 else [None, None]
        return {"id": pr_id, "status": entry[0], "task": extra[0], "dependsOn": extra[1]}

    def _closed(self, pr_id: str) -> list[Any] | None:
        entry = self.closed.get(pr_id)
        return entry if entry is not None else self.history().get(pr_id)

    @property
    def history_parsed(self) -> bool:
        return self._history is not None

    def history(self) -> dict[str, list[Any]]:
        """Closed PRs older than the recent ones (parsed on first use)."""
        if self._history is None:
            self._history = marshal.loads(self._history_raw)
        return self._history

    def active(self, status: str | None = None) -> list[dict[str, Any]]:
        """Active PRs (or those in ``status``) in fold order."""
        wanted = (status,) if status else ACTIVE
        return [pr for pr in self.prs.values() if pr["status"] in wanted]

    def total(self) -> int:
        return sum(self.counts.values())

    # -- fold ---------------------------------------------------------------------
    def apply(self, record: dict[str, Any], key: Key, *, new_id: bool = False) -> str | None:
        """Fold one record in; returns why it was refused, or None. ``new_id``: the
        caller knows a PR record's id is new (no look-up in the history)."""
        if "op" in record:
            why = check_event(record)
            if why is None:
                self._event(record)
        else:
            why = check_pr(record)
            if why is None:
                self._create(record, key, new_id)
        if why is None:
            self.last_key = max(self.last_key, key)
            if key == self.last_key:
                self.last_ts = str(record["ts"])
        return why

    def _create(self, record: dict[str, Any], key: Key, new_id: bool) -> None:
        pr_id = record["id"]
        if pr_id in self.prs or (not new_id and self._closed(pr_id) is not None):
            return  # the first record of an id wins
        pr: dict[str, Any] = {name: record.get(name, PR_DEFAULTS.get(name)) for name in PR_FIELDS}
        for name in LIST_FIELDS:
            pr[name] = list(record.get(name) or [])
        pr["_key"], pr["_seq"] = key[0], self.seq
        self.seq += 1
        self.prs[pr_id] = pr
        self.counts[pr["status"]] = self.counts.get(pr["status"], 0) + 1
        if pr["dagId"]:
            self.dags.setdefault(pr["dagId"], []).append(pr_id)
            self._touch_dag(pr["dagId"], pr["ts"])
        for event in self.orphans.pop(pr_id, []):
            self._event(event)

    def _event(self, record: dict[str, Any]) -> None:
        op = record["op"]
        if "importedFrom" in record and op in ("lock", "dag"):
            self.imported.append(import_key(record))
        if op == "dag":
            self.dag_snapshots[record["dagId"]] = dict(record["state"])
            return
        pr_id = record["pr"]
        if self.status(pr_id) is None:
            self.orphans.setdefault(pr_id, []).append(record)
            return
        if record.get("lock") is not None:
            lock = record["lock"]
            self.locks[pr_id] = {"agent": lock.get("agent", "default"), "files": list(lock["files"]),
                                 "prId": pr_id, "lockedAt": lock["lockedAt"],
                                 "ttl": lock.get("ttl", DEFAULT_LOCK_TTL_S)}
        if op == "unlock":
            self.locks.pop(pr_id, None)
        if "status" in record:
            self._set_status(pr_id, record["status"], record.get("result"))
        dag = self.dag_of(pr_id)
        if dag:
            self._touch_dag(dag, record["ts"])

    def _set_status(self, pr_id: str, status: str, result: Any) -> None:
        pr = self.prs.get(pr_id)
        if pr is None:  # compacted: only a move between closed statuses is possible
            if status in ACTIVE:
                raise NeedRebuild(pr_id)
            entry = self.closed.get(pr_id)
            if entry is None:
                entry = self.history()[pr_id]
                self._history_dirty = True
            old = entry[0]
            entry[0] = status
            if result is not None:
                entry[2] = result
        else:
            old = pr["status"]
            pr["status"] = status
            if result is not None:
                pr["result"] = result
        self.counts[old] -= 1
        self.counts[status] = self.counts.get(status, 0) + 1
        if status != "running":
            self.locks.pop(pr_id, None)

    def _touch_dag(self, dag: str, ts: str) -> None:
        self.dag_updated[dag] = ts

    def compact(self) -> None:
        """Keep only active PRs in full (a long history stays small)."""
        for pr_id in [i for i, pr in self.prs.items() if pr["status"] not in ACTIVE]:
            pr = self.prs.pop(pr_id)
            entry = [pr["status"], pr["dagId"], pr["result"]]
            if pr["dagId"]:  # a DAG lists its PRs: keep what it shows
                entry += [pr["task"], pr["dependsOn"]]
            self.closed[pr_id] = entry

    # -- persistence --------------------------------------------------------------
    def history_bytes(self) -> bytes:
        """The history (marshal), with the recent closed PRs moved into it once there are
        many (call before :meth:`to_cache`). Unchanged history is never re-encoded."""
        if len(self.closed) > FLUSH:
            self.history().update(self.closed)
            self.closed = {}
            self._history_dirty = True
        if self._history_dirty and self._history is not None:
            self._history_raw = marshal.dumps(self._history)
            self._history_dirty = False
        return self._history_raw

    def to_cache(self) -> dict[str, Any]:
        return {"prs": list(self.prs.values()), "lastKey": list(self.last_key),
                **{key: getattr(self, attr) for attr, key in _CACHED}}

    @classmethod
    def from_cache(cls, data: dict[str, Any], history: bytes) -> QueueState:
        state = cls()
        state._history, state._history_raw = None, history
        state.prs = {pr["id"]: pr for pr in data["prs"]}
        for attr, key in _CACHED:
            setattr(state, attr, data[key])
        ts, node, file, line = data["lastKey"]
        state.last_key = (ts, node, file, line)
        return state


def view(pr: dict[str, Any]) -> dict[str, Any]:
    """A PR as the peer shows it: the seed's fields, in the seed's order."""
    return {name: pr[name] for name in PR_FIELDS}
