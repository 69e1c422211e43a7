"""Many clones at once against one bare remote, as real processes: afterwards every
clone holds every record exactly once, the same skill files, the same ``skill log``
and the same queue."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.conftest import REPO
from tests.sync.helpers import Fleet, assert_no_markers, record_ids, skill_files

CLONES = 5
ROUNDS = 4


def _spawn(fleet: Fleet, node: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *args], cwd=REPO, text=True,
                            env={**fleet.env, "GITVAULT_NODE": node},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _assert_converged(fleet: Fleet) -> None:
    roots = list(fleet.clones.values())
    ids = [record_ids(root) for root in roots]
    for found in ids:
        duplicates = [i for i, n in Counter(found).items() if n > 1]
        assert duplicates == [], duplicates
        assert sorted(found) == sorted(ids[0])
    files = [skill_files(root) for root in roots]
    assert all(f == files[0] for f in files)
    for root in roots:
        assert_no_markers(root)
    names = sorted(p.parent.name for p in (roots[0] / "skills").glob("*/SKILL.md"))
    for name in names:
        logs = []
        for node in fleet.clones:
            versions = fleet.gv(node).ok("skill", "log", name, "--json").json()["versions"]
            numbers = [v["version"] for v in versions]
            assert numbers == sorted(set(numbers), reverse=True), (name, numbers)
            logs.append([(v["version"], v["commit"]) for v in versions])
        assert all(log == logs[0] for log in logs), name
    stats = [fleet.gv(node).ok("stats", "--json").json() for node in fleet.clones]
    assert all(s == stats[0] for s in stats)


def test_five_clones_working_and_syncing_at_once(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path)
    gv = fleet.gv("node-0")
    gv.ok("skill", "create", "shared", "--description", "shared skill", "--content", "v1")
    prs = [gv.ok("enqueue", "--task", f"job {i}", "--files", f"repo:file{i % 2}",
                 "--json").json()["pr"]["id"] for i in range(3)]
    for i in range(1, CLONES):
        fleet.add(f"node-{i}")
    fleet.converge()
    workers = [_spawn(fleet, node, "-m", "tests.sync.worker", str(root), str(n), str(ROUNDS),
                      ",".join(prs))
               for n, (node, root) in enumerate(fleet.clones.items())]
    summaries = []
    for proc in workers:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        summaries.append(json.loads(out))
    assert [s["errors"] for s in summaries] == [[]] * CLONES
    fleet.converge()
    _assert_converged(fleet)
    runs = sum(s["runs"] for s in summaries)
    assert sum(1 for i in record_ids(fleet.clones["node-0"]) if i) >= runs
    root = fleet.clones["node-0"]
    assert len(list((root / "logs" / "runs").rglob("*.jsonl"))) == \
        len({s for s, n in zip(fleet.clones, summaries, strict=True) if n["runs"]})


def test_twenty_clones_syncing_at_once(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path)
    for i in range(1, 20):
        fleet.add(f"node-{i}")
    for node, root in fleet.clones.items():
        log = root / "logs" / "runs" / "2026-12" / f"{node}.jsonl"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(json.dumps({"id": f"run-{node}", "ts": "2026-12-01T10:00:00Z",
                                   "agent": "a", "skill": "s", "task": "t",
                                   "result": "success", "score": 1, "node": node}) + "\n")
    fleet.env["GITVAULT_SYNC_TIMEOUT_S"] = "600"  # 20 processes on a shared machine
    procs = {node: _spawn(fleet, node, "-m", "gitvault", "--vault", str(root), "sync",
                          "--json") for node, root in fleet.clones.items()}
    retries = []
    for node, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, (node, err)
        result = json.loads(out)
        assert result["pushed"]
        retries.append(result["retries"])
    assert max(retries) < 40
    fleet.converge()
    _assert_converged(fleet)
    assert len(record_ids(fleet.clones["node-0"])) == 20
