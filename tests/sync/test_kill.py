"""A sync killed at any moment (SIGKILL of it and every git it started), then run
again, loses nothing and needs no other command."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO
from tests.sync.helpers import Fleet, assert_no_markers, git, record_ids, skill_files

TRIES = 20


def test_a_sync_killed_at_random_moments_loses_nothing(tmp_path: Path) -> None:
    rng = random.Random(12)
    fleet = Fleet(tmp_path)
    fleet.add("node-1")
    a, b = fleet.gv("node-0"), fleet.gv("node-1")
    a.ok("skill", "create", "deploy", "--description", "Deploy it", "--content", "v1")
    fleet.converge()
    root = fleet.clones["node-0"]
    # The remote's side of a push (git-receive-pack) is a server's process, which a
    # client's death does not kill; with a path remote it would be a child of this
    # clone's git push, so it gets a session of its own (as on a server). Killed with
    # the push, it could leave the remote's ref locked for good (a test of its own).
    git(root, "config", "remote.origin.receivepack", "setsid git-receive-pack")
    killed, recovered, span = 0, 0, 1.0  # span: how long the last whole sync took
    for attempt in range(TRIES):
        for n in range(3):
            a.ok("record-run", "--agent", "a", "--skill", "deploy", "--task", f"{attempt}.{n}",
                 "--result", "success", "--score", "1")
        if attempt % 4 == 0:  # a concurrent patch: the killed sync is mid-conflict
            a.ok("skill", "patch", "deploy", "--content", f"node 0, try {attempt}")
            b.ok("skill", "patch", "deploy", "--content", f"node 1, try {attempt}")
            fleet.sync("node-1")
        written = set(record_ids(root))
        proc = subprocess.Popen([sys.executable, "-m", "gitvault", "sync"], cwd=root,
                                env={**fleet.env, "GITVAULT_NODE": "node-0",
                                     "PYTHONPATH": str(REPO)},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        time.sleep(rng.uniform(0.0, span))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            killed += 1
        proc.wait()
        started = time.monotonic()
        result = a("sync", "--json")  # no other command in between
        span = max(time.monotonic() - started, 0.05)
        recovered += bool(result.json()["recovered"])
        assert result.code == 0, (attempt, result.err)
        assert git(root, "rev-parse", "HEAD") == git(fleet.bare, "rev-parse", "main")
        assert git(root, "status", "--porcelain", "--", "logs", "skills") == ""
        assert written <= set(record_ids(root))
        assert_no_markers(root)
    print(f"killed {killed} of {TRIES} syncs; {recovered} reruns cleaned up after one")
    assert killed >= TRIES // 2  # most kills landed mid-sync
    fleet.converge()
    assert sorted(record_ids(root)) == sorted(record_ids(fleet.clones["node-1"]))
    assert skill_files(root) == skill_files(fleet.clones["node-1"])
    versions = [v["version"] for v in a.ok("skill", "log", "deploy", "--json").json()["versions"]]
    assert versions == sorted(set(versions), reverse=True)
