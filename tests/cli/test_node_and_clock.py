"""Node ids and the clock: --node, GITVAULT_NODE, git config gitvault.node, the host;
GITVAULT_NOW."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

from gitvault.core.paths import host_node
from tests.conftest import Runner, snapshot


def last_event(root: Path) -> dict:
    files = sorted((root / "logs" / "events").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
    return json.loads(files[-1].read_text().splitlines()[-1]) | {"_file": files[-1].name}


def test_node_precedence(gv: Runner, vault: Path) -> None:
    gv.env.pop("GITVAULT_NODE")
    gv.ok("skill", "create", "a", "--description", "d")
    assert last_event(vault)["node"] == host_node()
    assert host_node() == re.sub(r"[^a-z0-9]+", "-", socket.gethostname().lower()).strip("-")
    gv.git("config", "--global", "gitvault.node", "from-global")
    gv.ok("skill", "create", "g", "--description", "d")
    assert last_event(vault)["node"] == "from-global"
    gv.git("config", "gitvault.node", "from-git-config")
    gv.ok("skill", "create", "b", "--description", "d")
    assert last_event(vault)["node"] == "from-git-config"
    assert last_event(vault)["_file"] == "from-git-config.jsonl"
    gv.ok("skill", "create", "c", "--description", "d", env={"GITVAULT_NODE": "from-env"})
    assert last_event(vault)["node"] == "from-env"
    gv.ok("--node", "from-flag", "skill", "create", "d", "--description", "d",
          env={"GITVAULT_NODE": "from-env"})
    assert last_event(vault)["node"] == "from-flag"
    assert "Gitvault-Node: from-flag" in gv.git("log", "-1", "--format=%B")


def test_invalid_node_and_clock_are_refused(gv: Runner, vault: Path) -> None:
    before = snapshot(vault)
    result = gv("--node", "Bad Node", "skill", "create", "x", "--description", "d")
    assert result.code == 2 and "invalid node id 'Bad Node' from --node" in result.err
    result = gv("skill", "create", "x", "--description", "d", env={"GITVAULT_NOW": "yesterday"})
    assert result.code == 2 and "GITVAULT_NOW" in result.err and len(result.err_lines) == 1
    assert snapshot(vault) == before


def test_records_go_to_the_month_of_now(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "m", "--description", "d", env={"GITVAULT_NOW": "2025-02-03T04:05:06Z"})
    path = vault / "logs" / "events" / "2025-02" / "test-node.jsonl"
    record = json.loads(path.read_text())
    assert record["ts"] == "2025-02-03T04:05:06.000Z"
