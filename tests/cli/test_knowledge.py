"""``gitvault watch`` and ``gitvault diffs`` end to end: the real CLI in a real vault
watching a real registry on 127.0.0.1, a bare git repository and files, with only the
clock fixed (GITVAULT_NOW)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runner, snapshot
from tests.knowledge.servers import BareRepo, Registry, no_proxies, registry, set_sources

T0 = "2026-12-01T00:00:00.000Z"


def at(ts: str) -> dict[str, str]:
    return {"GITVAULT_NOW": ts}


@pytest.fixture
def reg(gv: Runner) -> Iterator[Registry]:
    gv.env = no_proxies(gv.env)
    with registry() as server:
        yield server


def pypi(reg: Registry, sid: str, package: str, **extra: Any) -> dict[str, Any]:
    return {"id": sid, "type": "pypi", "package": package, "index": f"{reg.url}/pypi", **extra}


def watch(gv: Runner, ts: str, *args: str) -> dict[str, Any]:
    result = gv.ok("watch", "--json", *args, env=at(ts))
    return dict(result.json())


def queued(gv: Runner) -> list[dict[str, Any]]:
    return list(gv.ok("dispatch", "--json", env=at(T0)).json()["prs"])


def knowledge_lines(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted((root / "logs" / "knowledge").rglob("*.jsonl"))
            for line in p.read_text().splitlines()]


def test_a_release_becomes_a_diff_and_a_queued_pr_after_one_watch(
        gv: Runner, vault: Path, reg: Registry) -> None:
    reg.pypi["requests"] = "2.31.0"
    set_sources(vault, [pypi(reg, "requests", "requests", severity="high",
                             affectedSkills=["api-caller"])])
    first = gv.ok("watch", env=at(T0))
    assert "requests             pypi     tier 1  baseline 2.31.0" in first.out
    assert "checked 1 source, 0 new diffs, 0 failed" in first.out
    assert queued(gv) == [] and gv.ok("diffs", "--json").json()["totalDiffs"] == 0
    reg.pypi["requests"] = "2.32.0"
    data = watch(gv, "2026-12-01T06:00:00.000Z")
    (row,) = data["checked"]
    assert (row["status"], row["previous"], row["value"]) == ("changed", "2.31.0", "2.32.0")
    (diff,) = data["diffs"]
    assert {k: diff[k] for k in ("source", "type", "detail", "affectedSkills", "severity",
                                 "processed")} == \
        {"source": "requests", "type": "version_change", "detail": "2.31.0 → 2.32.0",
         "affectedSkills": ["api-caller"], "severity": "high", "processed": True}
    (mark,) = data["routed"]
    assert (mark["diff"], mark["action"], mark["priority"]) == (diff["id"], "enqueued", "high")
    (pr,) = queued(gv)
    assert pr["id"] == mark["pr"]
    assert (pr["source"], pr["priority"], pr["affectedSkills"]) == \
        ("knowledge-watcher", "high", ["api-caller"])
    assert "2.31.0 → 2.32.0" in pr["task"] and diff["id"] in pr["context"]
    assert gv.ok("diffs", "--json").json() == {
        "sources": 1, "totalDiffs": 1, "unprocessed": 0,
        "bySeverity": {"critical": 0, "high": 1, "medium": 0, "low": 0}}
    assert gv.ok("diffs", "--unprocessed", "--json").json() == []
    assert gv.ok("diffs").out.strip() == \
        "1 sources, 1 diffs (0 unprocessed): critical 0, high 1, medium 0, low 0"
    # Routing appended a mark; the diff's own line still says what it said when written.
    lines = knowledge_lines(vault)
    assert [line.get("op") for line in lines] == ["check", "check", None, "route"]
    assert lines[2]["processed"] is False and lines[3]["diff"] == diff["id"]


def test_nothing_is_checked_before_it_is_due(gv: Runner, vault: Path, reg: Registry) -> None:
    reg.pypi.update({"a": "1.0.0", "b": "1.0.0", "c": "1.0.0"})
    set_sources(vault, [pypi(reg, "six-hourly", "a", tier=1), pypi(reg, "twice-daily", "b", tier=2),
                        pypi(reg, "weekly", "c", tier=3)])
    assert len(watch(gv, T0)["checked"]) == 3 and len(reg.hits) == 3
    schedule = [("2026-12-01T05:59:59.000Z", []),
                ("2026-12-01T06:00:00.000Z", ["six-hourly"]),
                ("2026-12-01T11:00:00.000Z", []),
                ("2026-12-01T12:00:00.000Z", ["six-hourly", "twice-daily"]),
                ("2026-12-07T23:59:00.000Z", ["six-hourly", "twice-daily"]),
                ("2026-12-08T00:00:00.000Z", ["weekly"])]
    for ts, expected in schedule:
        hits = len(reg.hits)
        data = watch(gv, ts)
        assert [r["source"] for r in data["checked"]] == expected, ts
        assert len(reg.hits) - hits == len(expected), ts
    not_due = gv.ok("watch", env=at("2026-12-08T00:00:01.000Z")).out
    assert "not due weekly (tier 3): next check 2026-12-15T00:00:00.000Z" in not_due
    assert "checked 0 sources" in not_due
    # --tier picks one tier's due sources; --source checks one now, due or not.
    assert [r["source"] for r in watch(gv, "2026-12-08T12:00:00.000Z", "--tier", "2")["checked"]] \
        == ["twice-daily"]
    forced = watch(gv, "2026-12-08T12:00:01.000Z", "--source", "weekly")
    assert [r["source"] for r in forced["checked"]] == ["weekly"] and forced["notDue"] == []


def test_routing_by_severity_and_a_major_bump_is_one_breaking_change(
        gv: Runner, vault: Path, reg: Registry) -> None:
    reg.pypi.update({"crit": "1.0.0", "hi": "1.0.0", "med": "1.0.0", "lo": "1.0.0",
                     "major": "2.9.1"})
    set_sources(vault, [pypi(reg, "crit", "crit", severity="critical"),
                        pypi(reg, "hi", "hi", severity="high"),
                        pypi(reg, "med", "med"),  # medium by default
                        pypi(reg, "lo", "lo", severity="low"),
                        pypi(reg, "major", "major", severity="low")])
    watch(gv, T0)
    reg.pypi.update({"crit": "1.0.1", "hi": "1.1.0", "med": "1.0.1", "lo": "1.0.1",
                     "major": "3.0.0"})
    data = watch(gv, "2026-12-01T06:00:00.000Z")
    by_source = {d["source"]: d for d in data["diffs"]}
    assert {s: (d["type"], d["severity"]) for s, d in by_source.items()} == {
        "crit": ("version_change", "critical"), "hi": ("version_change", "high"),
        "med": ("version_change", "medium"), "lo": ("version_change", "low"),
        "major": ("breaking_change", "critical")}
    assert by_source["major"]["detail"] == "2.9.1 → 3.0.0 (major version 2 → 3)"
    actions = {m["diff"]: (m["action"], m["priority"]) for m in data["routed"]}
    assert actions[by_source["lo"]["id"]] == ("logged", None)
    prs = {pr["context"].split()[2]: pr["priority"] for pr in queued(gv)}
    assert prs == {by_source["crit"]["id"]: "critical", by_source["major"]["id"]: "critical",
                   by_source["hi"]["id"]: "high", by_source["med"]["id"]: "medium"}
    stats = gv.ok("diffs", "--json").json()
    assert stats["unprocessed"] == 0 and stats["bySeverity"] == \
        {"critical": 2, "high": 1, "medium": 1, "low": 1}
    text = gv.ok("watch", "--source", "lo", env=at("2026-12-01T06:00:01.000Z")).out
    assert "unchanged (1.0.1)" in text


def test_failed_checks_are_recorded_and_named_and_watch_exits_0(
        gv: Runner, vault: Path, reg: Registry) -> None:
    reg.routes.update({
        "/pypi/html/json": (200, "text/html", "<!doctype html><p>Sign in</p>"),
        "/pypi/down/json": (500, "text/plain", "Internal Server Error"),
        "/pypi/slow/json": "hang",
        "/pypi/odd/json": (200, "application/json", '{"info": {"version": "banana"}}')})
    reg.pypi["fine"] = "1.0.0"
    set_sources(vault, [pypi(reg, name, name) for name in ("html", "down", "slow", "odd", "fine")],
                timeout_s=0.5)
    result = gv("watch", env=at(T0))
    assert result.code == 0, result.err
    out = result.out
    assert "answered HTML, not JSON" in out and "HTTP 500" in out
    assert "no answer within 0.5 s" in out and "'banana' is not a version" in out
    assert "fine                 pypi     tier 1  baseline 1.0.0" in out
    assert out.strip().endswith("checked 5 sources, 0 new diffs, 4 failed: html, down, slow, odd")
    checks = [line for line in knowledge_lines(vault) if line.get("op") == "check"]
    assert [(c["source"], c["ok"]) for c in checks] == [
        ("html", False), ("down", False), ("slow", False), ("odd", False), ("fine", True)]
    # A failed check counts as a check (not due again at once), and is no baseline:
    # once the source answers, its first good value is the baseline.
    assert watch(gv, "2026-12-01T01:00:00.000Z")["checked"] == []
    reg.routes.pop("/pypi/down/json")
    reg.pypi["down"] = "4.0.0"
    data = watch(gv, "2026-12-01T06:00:00.000Z", "--source", "down")
    assert data["checked"][0]["status"] == "baseline" and data["diffs"] == []
    json_out = gv.ok("watch", "--json", env=at("2026-12-01T12:00:00.000Z")).json()
    assert {f["source"] for f in json_out["failed"]} == {"html", "slow", "odd"}


def test_at_most_three_network_look_ups_per_tier_2_or_3_cycle(
        gv: Runner, vault: Path, reg: Registry) -> None:
    names = ["p1", "p2", "p3", "p4", "p5"]
    reg.pypi.update({n: "1.0.0" for n in names})
    (vault / "notes.md").write_text("local\n")
    set_sources(vault, [*(pypi(reg, n, n, tier=2) for n in names),
                        {"id": "notes", "type": "file", "path": "notes.md", "tier": 2},
                        *(pypi(reg, f"t1-{n}", n, tier=1) for n in names)])
    data = watch(gv, T0, "--tier", "2")
    assert [r["source"] for r in data["checked"]] == ["p1", "p2", "p3", "notes"]
    assert len(reg.hits) == 3
    assert [s["source"] for s in data["skipped"]] == ["p4", "p5"]
    assert "at most 3 network look-ups" in data["skipped"][0]["reason"]
    # The next run takes the ones left waiting first; tier 1 has no cap.
    again = watch(gv, "2026-12-01T00:10:00.000Z")
    assert [r["source"] for r in again["checked"] if not r["source"].startswith("t1-")] == \
        ["p4", "p5"]
    assert len([r for r in again["checked"] if r["source"].startswith("t1-")]) == 5


def test_an_npm_release_on_a_local_registry(gv: Runner, vault: Path, reg: Registry) -> None:
    reg.npm["@acme/sdk"] = "4.2.0"
    set_sources(vault, [{"id": "acme-sdk", "type": "npm", "package": "@acme/sdk",
                         "registry": f"{reg.url}/npm", "tier": 2,
                         "affectedSkills": ["acme-client"]}])
    assert watch(gv, T0)["checked"][0]["value"] == "4.2.0"
    reg.npm["@acme/sdk"] = "4.3.0"
    assert watch(gv, "2026-12-01T11:59:00.000Z")["checked"] == []  # tier 2: 12 hours
    (diff,) = watch(gv, "2026-12-01T12:00:00.000Z")["diffs"]
    assert (diff["type"], diff["severity"], diff["detail"]) == \
        ("version_change", "medium", "4.2.0 → 4.3.0")
    (pr,) = queued(gv)
    assert (pr["priority"], pr["affectedSkills"]) == ("medium", ["acme-client"])
    assert reg.hits == ["/npm/@acme%2Fsdk"] * 2


def test_git_ref_and_file_sources(gv: Runner, vault: Path, tmp_path: Path) -> None:
    upstream = BareRepo(tmp_path, gv.env)
    upstream.release("v1.0.0")
    gv.git("config", "gitvault.allow-local-remotes", "true")  # the upstream is a local path
    (vault / "docs").mkdir()
    (vault / "docs" / "api.md").write_text("GET /v1/items\n")
    set_sources(vault, [
        {"id": "upstream", "type": "git-ref", "remote": str(upstream.path), "ref": "refs/tags/*",
         "affectedSkills": ["release-notes"], "severity": "high"},
        {"id": "main-head", "type": "git-ref", "remote": str(upstream.path),
         "ref": "refs/heads/main", "severity": "low"},
        {"id": "api-doc", "type": "file", "path": "docs/api.md"}])
    base = watch(gv, T0)
    assert [r["status"] for r in base["checked"]] == ["baseline"] * 3
    upstream.release("v1.1.0")
    (vault / "docs" / "api.md").write_text("GET /v2/items\n")
    data = watch(gv, "2026-12-01T06:00:00.000Z")
    details = {d["source"]: (d["type"], d["severity"], d["detail"]) for d in data["diffs"]}
    assert details["upstream"] == ("version_change", "high", "v1.0.0 → v1.1.0")
    assert details["main-head"][:2] == ("version_change", "low")
    assert details["main-head"][2].startswith("main ")
    assert details["api-doc"][:2] == ("version_change", "medium")
    assert details["api-doc"][2].startswith("sha256 ")
    upstream.release("v2.0.0")
    major = watch(gv, "2026-12-01T12:00:00.000Z", "--source", "upstream")["diffs"]
    assert [(d["type"], d["severity"]) for d in major] == [("breaking_change", "critical")]
    priorities = sorted(pr["priority"] for pr in queued(gv))
    assert priorities == ["critical", "high", "medium"]  # the low head move is only logged


def test_command_sources_run_only_where_this_clone_allows_it(gv: Runner, vault: Path) -> None:
    marker = vault.parent / "ran"
    set_sources(vault, [{"id": "tool", "type": "command",
                         "command": f"sh -c 'echo run >> {marker}; echo 1.4.2'"}])
    refused = gv.ok("watch", "--json", env=at(T0)).json()
    assert refused["checked"] == [] and not marker.exists()
    assert "gitvault.allow-commands" in refused["skipped"][0]["reason"]
    assert "skipped tool: command sources run only where" in gv.ok("watch", env=at(T0)).out
    allowed = gv.ok(
        "watch", "--json", env={**at(T0), "GITVAULT_ALLOW_COMMANDS": "1"}).json()
    assert allowed["checked"][0]["value"] == "1.4.2" and marker.read_text() == "run\n"
    gv.git("config", "gitvault.allow-commands", "true")
    again = watch(gv, "2026-12-01T06:00:00.000Z")
    assert again["checked"][0]["status"] == "unchanged" and marker.read_text() == "run\nrun\n"


@pytest.mark.parametrize(("args", "message"), [
    (("--source", "nope"), "no knowledge source 'nope' in watch.sources (only)"),
    (("--tier", "4"), "'--tier'"),
    (("--tier", "2", "--source", "only"), "source 'only' is tier 1, not tier 2"),
])
def test_bad_input_is_one_error_line_exit_2_and_changes_nothing(
        gv: Runner, vault: Path, reg: Registry, args: tuple[str, ...], message: str) -> None:
    reg.pypi["x"] = "1.0.0"
    set_sources(vault, [pypi(reg, "only", "x")])
    gv.git("add", "gitvault.yaml")
    gv.git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--no-verify", "-m", "src")
    before = snapshot(vault)
    result = gv("watch", *args, "--json", env=at(T0))
    assert result.code == 2, result.err
    assert result.err_lines == [f"gitvault: error: {result.json()['error']['message']}"]
    assert message in result.err_lines[0]
    assert snapshot(vault) == before and reg.hits == []


def test_watch_without_sources_says_so(gv: Runner, vault: Path) -> None:
    result = gv.ok("watch")
    assert "no knowledge sources configured" in result.out
    assert gv.ok("watch", "--json").json()["configured"] == 0
    assert gv.ok("diffs", "--json").json() == {
        "sources": 0, "totalDiffs": 0, "unprocessed": 0,
        "bySeverity": {"critical": 0, "high": 0, "medium": 0, "low": 0}}
    assert gv.ok("diffs", "--unprocessed").out.strip() == "no unprocessed diffs"


def test_a_source_missing_its_key_is_a_config_error(gv: Runner, vault: Path) -> None:
    set_sources(vault, [{"id": "x", "type": "npm"}])
    result = gv("watch", env=at(T0))
    assert result.code == 2
    assert result.err_lines == [f"gitvault: error: {vault / 'gitvault.yaml'}: "
                                "'watch.sources[0].package' is required for a npm source"]


def test_import_bus_brings_the_peers_knowledge_files_once(
        gv: Runner, vault: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bus" / "skills" / "knowledge-watcher"
    folder.mkdir(parents=True)
    diffs = [{"ts": "2026-11-20T06:00:00.000Z", "source": "next-framework",
              "type": "version_change", "detail": "14.1.0 → 14.2.0", "affectedSkills": ["*"],
              "severity": "medium", "processed": True},
             {"id": "kd-peer-1", "ts": "2026-11-21T06:00:00.000Z", "source": "api-service",
              "type": "breaking_change", "detail": "auth endpoint moved to /v3",
              "affectedSkills": ["api-caller"], "severity": "high", "processed": False}]
    (folder / "knowledge-diffs.jsonl").write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in diffs) + '{"source": 1}\n')
    (folder / "knowledge-state.json").write_text(json.dumps({
        "lastCheck": "2026-11-21T06:00:00.000Z",
        "sources": {"next-framework": {"version": "14.2.0", "affectedSkills": ["*"],
                                       "checkedAt": "2026-11-21T06:00:00.000Z"}}}, indent=2))
    first = gv.ok("import-bus", str(tmp_path / "bus"), "--json").json()
    assert first["knowledge"] == {"diffs": 2, "sources": 1, "skipped": 0}
    assert any("knowledge-diffs.jsonl:3: " in w for w in first["warnings"])
    again = gv.ok("import-bus", str(tmp_path / "bus"), "--json").json()
    assert again["knowledge"] == {"diffs": 0, "sources": 0, "skipped": 3}
    assert "knowledge: 0 diffs, 0 source states (3 already imported)" in \
        gv.ok("import-bus", str(tmp_path / "bus")).out
    assert gv.ok("diffs", "--json").json() == {
        "sources": 1, "totalDiffs": 2, "unprocessed": 1,
        "bySeverity": {"critical": 0, "high": 1, "medium": 1, "low": 0}}
    (pending,) = gv.ok("diffs", "--unprocessed", "--json").json()
    assert (pending["id"], pending["detail"], pending["processed"]) == \
        ("kd-peer-1", "auth endpoint moved to /v3", False)
    assert "api-service" in gv.ok("diffs", "--unprocessed").out
    # The next watch routes it (the peer had not), with nothing due to check.
    routed = watch(gv, T0)
    assert routed["checked"] == [] and [m["diff"] for m in routed["routed"]] == ["kd-peer-1"]
    assert [pr["priority"] for pr in queued(gv)] == ["high"]
    assert gv.ok("diffs", "--json").json()["unprocessed"] == 0


def test_a_diff_the_queue_cannot_take_stays_unprocessed_until_a_later_watch(
        gv: Runner, vault: Path, reg: Registry) -> None:
    reg.pypi["x"] = "1.0.0"
    set_sources(vault, [pypi(reg, "x", "x", severity="high")])
    path = vault / "gitvault.yaml"
    path.write_text(path.read_text().replace("max_active: 100", "max_active: 1"))
    blocker = gv.ok("enqueue", "--task", "other work", "--json", env=at(T0)).json()["pr"]["id"]
    watch(gv, T0)
    reg.pypi["x"] = "1.1.0"
    result = gv.ok("watch", env=at("2026-12-01T06:00:00.000Z"))
    assert "not routed" in result.out and "the queue is full" in result.out
    (pending,) = gv.ok("diffs", "--unprocessed", "--json").json()
    assert pending["detail"] == "1.0.0 → 1.1.0"
    gv.ok("fail", blocker, env=at(T0))
    later = watch(gv, "2026-12-01T06:30:00.000Z")
    assert later["checked"] == [] and [m["diff"] for m in later["routed"]] == [pending["id"]]
    assert [pr["priority"] for pr in queued(gv)] == ["high"]


def test_a_bad_line_in_the_knowledge_log_is_reported_not_fatal(
        gv: Runner, vault: Path, reg: Registry) -> None:
    reg.pypi["x"] = "1.0.0"
    set_sources(vault, [pypi(reg, "x", "x")])
    bad = vault / "logs" / "knowledge" / "2026-12" / "other.jsonl"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"ts": "2026-12-01T00:00:00Z", "source": "x", "type": "t", '
                   '"severity": "urgent"}\nnot json\n')
    result = gv.ok("watch", "--json", env=at(T0))
    assert result.json()["checked"][0]["status"] == "baseline"
    assert len(result.json()["warnings"]) == 2
    assert "other.jsonl:1: knowledge diff with severity 'urgent'" in result.err
    assert "other.jsonl:2: invalid JSON" in gv.ok("diffs").err


def test_two_watches_at_once_check_a_source_once(gv: Runner, vault: Path, reg: Registry) -> None:
    import subprocess
    import sys

    reg.routes["/pypi/slow/json"] = "hang"
    reg.hang_s = 1.0
    set_sources(vault, [pypi(reg, "slow", "slow")], timeout_s=10)
    procs = [subprocess.Popen([sys.executable, "-m", "gitvault", "watch", "--json"], cwd=vault,
                              env={**gv.env, **at(T0)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(2)]
    outs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert reg.hits == ["/pypi/slow/json"]
    assert sorted(len(o["checked"]) for o in outs) == [0, 1]
    assert len([line for line in knowledge_lines(vault) if line.get("op") == "check"]) == 1


def test_logs_autocommit_commits_what_watch_appended(gv: Runner, vault: Path,
                                                     reg: Registry) -> None:
    reg.pypi["x"] = "1.0.0"
    set_sources(vault, [pypi(reg, "x", "x", severity="high")])
    path = vault / "gitvault.yaml"
    path.write_text(path.read_text().replace("autocommit: false", "autocommit: true"))
    watch(gv, T0)
    reg.pypi["x"] = "1.0.1"
    watch(gv, "2026-12-01T06:00:00.000Z")
    pending = gv.git("status", "--porcelain", "--", "logs")
    assert pending == ""
    assert "logs/knowledge/" in gv.git("log", "--name-only", "--format=%s", "-3")


def test_a_diff_another_program_appended_without_an_id_is_routed_once(
        gv: Runner, vault: Path) -> None:
    other = vault / "logs" / "knowledge" / "2026-11" / "other-tool.jsonl"
    other.parent.mkdir(parents=True)
    other.write_text(json.dumps({"ts": "2026-11-30T10:00:00.000Z", "source": "status-page",
                                 "type": "deprecation", "detail": "v1 API closes in June",
                                 "affectedSkills": ["api-caller"], "severity": "critical",
                                 "processed": False}) + "\n")
    (mark,) = watch(gv, T0)["routed"]
    assert mark["diff"].startswith("sha256:") and mark["priority"] == "critical"
    assert watch(gv, T0)["routed"] == []
    (pr,) = queued(gv)
    assert "v1 API closes in June" in pr["task"] and other.read_text().count("\n") == 1


def test_a_synced_config_cannot_make_watch_read_local_repositories_or_git_files(
        gv: Runner, vault: Path, tmp_path: Path) -> None:
    """A git-ref source naming a path or file:// on this machine is read only where this
    clone allows it (never from gitvault.yaml alone); a file source never reads .git."""
    upstream = BareRepo(tmp_path, gv.env)
    upstream.release("v1.0.0")
    set_sources(vault, [
        {"id": "local", "type": "git-ref", "remote": str(upstream.path), "ref": "refs/tags/*"},
        {"id": "file-url", "type": "git-ref", "remote": f"file://{upstream.path}"},
        {"id": "git-config", "type": "file", "path": ".git/config"}])
    data = watch(gv, T0)
    failed = {r["source"]: r for r in data["checked"]}
    assert {r["status"] for r in failed.values()} == {"failed"}
    assert "gitvault.allow-local-remotes" in failed["local"]["error"]
    assert "gitvault.allow-local-remotes" in failed["file-url"]["error"]
    assert "inside .git" in failed["git-config"]["error"]
    gv.git("config", "gitvault.allow-local-remotes", "true")
    allowed = watch(gv, "2026-12-01T06:00:00.000Z", "--source", "local")
    assert [r["status"] for r in allowed["checked"]] == ["baseline"]
