"""record-run, health, flagged, drift, dashboard, lifecycle and import-bus from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Runner, snapshot
from tests.peer import write_runs

NOW = {"GITVAULT_NOW": "2026-11-30T12:00:00.000Z"}


def runs_lines(root: Path) -> list[dict]:
    return [json.loads(line) for p in sorted((root / "logs" / "runs").rglob("*.jsonl"))
            for line in p.read_text().splitlines()]


def record(gv: Runner, skill: str, result: str, score: str, ts: str) -> None:
    gv.ok("record-run", "--agent", "dev", "--skill", skill, "--task", "t", "--result", result,
          "--score", score, env={"GITVAULT_NOW": ts})


def test_record_run_shape_redaction_and_clamping(gv: Runner, vault: Path) -> None:
    out = gv.ok("record-run", "--agent", "dev", "--skill", "api-caller", "--task",
                "call with token=sk-abcdefghijklmnopqrstuvwx", "--result", "partial",
                "--score", "1.7", "--notes", "password: hunter2", "--json", env=NOW).json()
    assert out["status"] == "recorded"
    entry = out["entry"]
    assert list(entry) == ["id", "ts", "agent", "skill", "task", "result", "score", "notes", "node"]
    assert entry["ts"] == "2026-11-30T12:00:00.000Z" and entry["score"] == 1.0
    assert "sk-abc" not in entry["task"] and "hunter2" not in entry["notes"]
    (line,) = runs_lines(vault)
    assert line == entry
    assert (vault / "logs/runs/2026-11/test-node.jsonl").is_file()
    gv.ok("record-run", "--skill", "api-caller", "--score", "-3")
    assert runs_lines(vault)[-1]["score"] == 0.0
    assert runs_lines(vault)[-1]["agent"] == "default"
    text = gv.ok("record-run", "--skill", "api-caller", "--result", "fail", "--score", "0").out
    assert text.strip() == "recorded fail run of api-caller (score 0.0)"


@pytest.mark.parametrize("args, why", [
    (["--score", "abc"], "invalid score 'abc'"), (["--score", "nan"], "invalid score 'nan'"),
    (["--score", "inf"], "invalid score 'inf'"), (["--result", "meh"], "invalid result 'meh'"),
    (["--skill", " "], "needs --skill"), (["--bogus", "1"], "No such option"),
])
def test_record_run_refuses_bad_input(gv: Runner, vault: Path, args: list[str], why: str) -> None:
    before = snapshot(vault)
    base = ["record-run", "--skill", "s"]
    result = gv(*base, *args, "--json")
    assert result.code == 2 and why in result.err and len(result.err_lines) == 1
    assert result.json()["error"]["message"]
    assert snapshot(vault) == before


def test_record_run_without_vault_or_skill(gv: Runner, tmp_path: Path) -> None:
    result = gv("record-run", "--skill", "s")
    assert result.code == 2 and "no vault" in result.err
    gv.ok("init", str(tmp_path / "v"))
    missing = gv("record-run", "--score", "1", cwd=tmp_path / "v")
    assert missing.code == 2 and "--skill" in missing.err


def test_health_flagged_drift_and_fail_on(gv: Runner, vault: Path) -> None:
    for day, score in ((16, "0.95"), (17, "0.9"), (18, "0.92")):
        record(gv, "slipping", "success", score, f"2026-11-{day}T10:00:00.000Z")
    record(gv, "slipping", "partial", "0.5", "2026-11-28T10:00:00.000Z")
    for minute in range(3):
        record(gv, "broken", "fail", "0", f"2026-11-29T10:0{minute}:00.000Z")
    record(gv, "fine", "success", "0.9", "2026-11-29T10:00:00.000Z")
    health = gv.ok("health", "--json", env=NOW).json()
    assert health["lastUpdated"] == "2026-11-30T12:00:00.000Z"
    assert health["skills"]["broken"]["trend"] == "broken"
    assert health["skills"]["fine"] == {"runs": 1, "avgScore": 0.9, "recentAvg": 0.9,
                                        "trend": "stable", "lastFail": None,
                                        "consecutiveFails": 0, "flagged": False}
    flagged = gv.ok("flagged", "--json", env=NOW).json()
    assert {s["name"] for s in flagged["skills"]} == {"slipping", "broken"}
    assert flagged["count"] == 2 and flagged["skills"][0]["name"] == "slipping"
    assert gv("flagged", "--fail-on", env=NOW).code == 1
    drift = gv.ok("drift", "--json", env=NOW).json()
    assert drift == {"count": 1, "skills": [{"name": "slipping", "lastWeekAvg": 0.91,
                                            "thisWeekAvg": 0.5, "drop": 0.41}]}
    assert gv("drift", "--fail-on", env=NOW).code == 1
    text = gv.ok("health", env=NOW).out
    assert "broken" in text and "FLAGGED" in text
    assert gv("health", "--days", "-1").code == 2


def test_fail_on_passes_when_nothing_matches(gv: Runner, vault: Path) -> None:
    record(gv, "fine", "success", "0.9", "2026-11-29T10:00:00.000Z")
    assert gv("flagged", "--fail-on", env=NOW).code == 0
    assert gv("drift", "--fail-on", env=NOW).code == 0


def test_bad_lines_are_reported_and_the_rest_analysed(gv: Runner, vault: Path) -> None:
    """Where the peer crashes or miscounts: torn line, blank line, null, prototype
    names, a string score, a bad timestamp."""
    good = '{"ts":"2026-11-29T10:00:00.000Z","agent":"a","skill":"%s","task":"t",' \
           '"result":"%s","score":%s,"notes":""}'
    lines = [good % ("constructor", "success", "0.9"), "", "null",
             good % ("__proto__", "fail", "0.1"), good % ("x", "success", '"0.5"'),
             good.replace("2026-11-29T10:00:00.000Z", "yesterday") % ("x", "success", "0.5"),
             good % ("x", "success", "0.5"), '{"ts": "2026-11-29T10:', good % ("x", "fail", "0.2")]
    path = vault / "logs" / "runs" / "2026-11" / "other-tool.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n" + good % ("x", "success", "1"))  # last: in progress
    result = gv.ok("health", "--json", env=NOW)
    data = result.json()
    assert set(data["skills"]) == {"constructor", "__proto__", "x"}
    assert data["skills"]["constructor"]["avgScore"] == 0.9
    assert data["skills"]["x"]["runs"] == 2 and data["skills"]["x"]["lastFail"]
    rel = "logs/runs/2026-11/other-tool.jsonl"
    assert data["warnings"] == [f"{rel}:3: not a JSON object",
                                f'{rel}:5: score is not a number: "0.5"',
                                f'{rel}:6: bad ts: "yesterday"',
                                f"{rel}:8: invalid JSON: Unterminated string starting at"]
    assert [line for line in result.err_lines] == [f"gitvault: warning: {w}" for w in data["warnings"]]
    assert gv("doctor").code == 1


def test_cache_follows_appends_edits_and_deletions(gv: Runner, vault: Path) -> None:
    record(gv, "s", "success", "0.8", "2026-11-29T10:00:00.000Z")
    assert gv.ok("health", "--json", env=NOW).json()["skills"]["s"]["runs"] == 1
    assert (vault / ".git" / "gitvault" / "runs-cache.bin").is_file()
    record(gv, "s", "fail", "0.2", "2026-11-29T11:00:00.000Z")
    after = gv.ok("health", "--json", env=NOW).json()["skills"]["s"]
    assert after["runs"] == 2 and after["avgScore"] == 0.5
    path = next((vault / "logs" / "runs").rglob("*.jsonl"))
    text = path.read_text()
    path.write_text(text.replace('"score":0.8', '"score":0.6'))  # same size, new content
    assert gv.ok("health", "--json", env=NOW).json()["skills"]["s"]["avgScore"] == 0.4
    path.unlink()
    assert gv.ok("health", "--json", env=NOW).json()["skills"] == {}
    (vault / ".git" / "gitvault" / "runs-cache.bin").write_bytes(b"garbage")
    record(gv, "t", "success", "1", "2026-11-29T11:00:00.000Z")
    assert gv.ok("health", "--json", env=NOW).json()["skills"]["t"]["avgScore"] == 1


def test_dashboard_terminal_and_html(gv: Runner, vault: Path, tmp_path: Path) -> None:
    for day in range(20, 30):
        record(gv, "steady", "success", "0.9", f"2026-11-{day}T10:00:00.000Z")
    record(gv, "weak", "fail", "0.1", "2026-11-29T10:00:00.000Z")
    plain = gv.ok("dashboard", "--no-color", env=NOW).out
    assert "\x1b[" not in plain
    assert plain.index("weak") < plain.index("steady") and "FLAGGED" in plain
    page = tmp_path / "health.html"
    result = gv.ok("dashboard", "--html", str(page), "--json", env=NOW).json()
    assert result["html"] == str(page)
    html = page.read_text()
    assert html.startswith("<!doctype html>") and "<svg" in html and 'class="trend" d="M' in html
    assert "http://" not in html and "https://" not in html and "<script" not in html
    assert html.index("weak") < html.index("steady")
    empty_root = tmp_path / "empty"
    gv.ok("init", str(empty_root))
    assert "No skill runs recorded yet" in gv.ok("dashboard", cwd=empty_root).out


def test_import_bus_twice_adds_nothing(gv: Runner, vault: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "bus"
    runs_file = write_runs(data_dir, [
        {"ts": "2026-11-29T10:00:00.000Z", "agent": "a", "skill": "s", "task": "t",
         "result": "success", "score": 0.9, "notes": ""}])
    with runs_file.open("a") as fh:
        fh.write('{"ts":"2026-11-29T10:00:00.000Z","skill":"s","score":"high"}\n')
    first = gv.ok("import-bus", str(data_dir), "--json").json()
    assert first["runs"] == {"imported": 1, "skipped": 0, "bad": 1}
    assert first["warnings"] and ":2: " in first["warnings"][0]
    (line,) = runs_lines(vault)
    assert line["importedFrom"] == {"file": "skills/self-improving-skills/skill-runs.jsonl",
                                    "line": 1}
    again = gv.ok("import-bus", str(data_dir), "--json").json()
    assert again["runs"] == {"imported": 0, "skipped": 1, "bad": 1}
    assert len(runs_lines(vault)) == 1
    assert gv("import-bus", str(tmp_path / "nowhere")).code == 2
    (tmp_path / "not-bus").mkdir()
    assert gv("import-bus", str(tmp_path / "not-bus")).code == 2


def committed_runs(gv: Runner, root: Path) -> list[dict]:
    """The runs records in the vault's last commit, ids aside (each import makes its own)."""
    gv.ok("commit", cwd=root)
    names = gv.git("ls-files", "logs/runs", cwd=root).split()
    return [{k: v for k, v in json.loads(line).items() if k != "id"}
            for name in sorted(names) if name.endswith(".jsonl")
            for line in gv.git("show", f"HEAD:{name}", cwd=root).splitlines()]


def test_import_bus_records_no_path_of_this_machine(gv: Runner, tmp_path: Path) -> None:
    """The same folder imported from two places gives the same committed records, and
    importing it again from the other place, or a folder of other runs, adds only
    what is new."""
    runs = [{"ts": f"2026-11-{day}T10:00:00.000Z", "agent": "a", "skill": "s", "task": "t",
             "result": "success", "score": 0.5, "notes": ""} for day in (28, 29, 30)]
    here, there = tmp_path / "here" / "bus", tmp_path / "over" / "there" / "bus"
    write_runs(here, runs)
    write_runs(there, runs)
    one, two = tmp_path / "one", tmp_path / "two"
    for root, folder in ((one, here), (two, there)):
        gv.ok("init", str(root))
        assert gv.ok("import-bus", str(folder), "--json", cwd=root).json()["runs"]["imported"] == 3
    assert committed_runs(gv, one) == committed_runs(gv, two)
    assert str(tmp_path) not in gv.git("log", "-p", cwd=one)
    assert gv.ok("import-bus", str(there), "--json", cwd=one).json()["runs"] == \
        {"imported": 0, "skipped": 3, "bad": 0}
    other = tmp_path / "other" / "bus"
    write_runs(other, [{**runs[0], "ts": "2026-11-27T10:00:00.000Z"}, *runs[1:],
                       {**runs[0], "ts": "2026-11-30T11:00:00.000Z"}])
    assert gv.ok("import-bus", str(other), "--json", cwd=one).json()["runs"] == \
        {"imported": 2, "skipped": 2, "bad": 0}
    assert len(committed_runs(gv, one)) == 5


def test_import_bus_knows_runs_imported_with_an_absolute_path(gv: Runner, vault: Path,
                                                             tmp_path: Path) -> None:
    """Runs imported before importedFrom was relative are not imported again."""
    run = {"ts": "2026-11-29T10:00:00.000Z", "agent": "a", "skill": "s", "task": "t",
           "result": "success", "score": 0.5, "notes": ""}
    runs_file = write_runs(tmp_path / "bus", [run, {**run, "ts": "2026-11-30T10:00:00.000Z"}])
    old = vault / "logs" / "runs" / "2026-11" / "test-node.jsonl"
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps({"id": "01KB0000000000000000000000", **run, "importedFrom": {
        "file": str(runs_file.resolve()), "line": 1}, "node": "test-node"}) + "\n")
    assert gv.ok("import-bus", str(tmp_path / "bus"), "--json").json()["runs"] == \
        {"imported": 1, "skipped": 1, "bad": 0}


def test_lifecycle_marks_idle_and_failing_skills_stale(gv: Runner, vault: Path) -> None:
    old = {"GITVAULT_NOW": "2026-11-01T10:00:00Z"}
    gv.ok("skill", "create", "idle", "--description", "d", env=old)
    gv.ok("skill", "create", "failing", "--description", "d", env=old)
    gv.ok("skill", "create", "busy", "--description", "d", env=old)
    events = vault / "logs" / "events" / "2026-11" / "agent.jsonl"
    with events.open("a") as fh:
        for i, ok in enumerate((False, False, True, False)):
            fh.write(json.dumps({"id": f"inj{i}", "ts": f"2026-11-2{i}T10:00:00.000Z",
                                 "op": "inject", "prompt": "p",
                                 "skills": ["failing@v1", "busy@v1"]}) + "\n")
            fh.write(json.dumps({"id": f"out{i}", "ts": f"2026-11-2{i}T11:00:00.000Z",
                                 "op": "outcome", "injection": f"inj{i}",
                                 "skills": ["failing@v1"], "success": ok}) + "\n")
    before = snapshot(vault)
    dry = gv.ok("lifecycle", "--dry-run", "--json", env=NOW).json()
    assert dry["dryRun"] is True
    assert {c["name"]: c["reason"] for c in dry["changes"]} == {
        "idle": "not injected for 29 days", "failing": "3 of 4 outcomes failed (75%)"}
    assert snapshot(vault) == before
    done = gv.ok("lifecycle", "--json", env=NOW).json()
    assert {c["name"]: c["version"] for c in done["changes"]} == {"idle": 2, "failing": 2}
    shown = gv.ok("skill", "show", "idle", "--json").json()
    assert shown["state"] == "stale" and shown["version"] == 2
    assert "Gitvault-Op: lifecycle" in gv.git("log", "-1", "--format=%B")
    assert gv.ok("skill", "show", "busy", "--json").json()["state"] == "active"
    assert gv.ok("lifecycle", "--json", env=NOW).json()["changes"] == []
    # a patch makes it active again, with a fresh start for the failure rule
    gv.ok("skill", "patch", "failing", "--content", "better", env=NOW)
    assert gv.ok("lifecycle", "--json", env=NOW).json()["changes"] == []


def test_import_bus_brings_runs_and_the_queue(gv: Runner, vault: Path, tmp_path: Path) -> None:
    from tests.peer import peer

    data_dir = tmp_path / "bus"
    data_dir.mkdir()
    peer(data_dir, "init", "--dir", str(data_dir))
    peer(data_dir, "record-run", "--agent", "a", "--skill", "api-caller", "--task", "t",
         "--result", "success", "--score", "0.9")
    pr = peer(data_dir, "enqueue", "--source", "human", "--priority", "high", "--agent", "dev",
              "--task", "Fix auth bug", "--files", "src/auth.py")["pr"]
    first = gv.ok("import-bus", str(data_dir), "--json").json()
    assert first["runs"]["imported"] == 1 and first["queue"]["prs"] == 1
    stats = gv.ok("stats", "--json").json()
    assert stats["total"] == 1
    dispatched = gv.ok("dispatch", "--json").json()
    assert [p["id"] for p in dispatched["prs"]] == [pr["id"]]
    again = gv.ok("import-bus", str(data_dir), "--json").json()
    assert again["runs"]["imported"] == 0 and again["queue"]["prs"] == 0
    assert gv.ok("stats", "--json").json()["total"] == 1


def test_a_record_copied_into_two_files_counts_once(gv: Runner, vault: Path) -> None:
    record(gv, "s", "success", "0.8", "2026-11-29T10:00:00.000Z")
    (path,) = list((vault / "logs" / "runs").rglob("*.jsonl"))
    copy = path.with_name("other-node.jsonl")
    copy.write_text(path.read_text())
    (vault / "logs" / "runs" / "2026-11" / "plain.jsonl").write_text(
        '{"ts":"2026-11-29T10:00:00.000Z","agent":"a","skill":"s","task":"t",'
        '"result":"fail","score":0.2,"notes":""}\n' * 2)  # no ids: two runs
    data = gv.ok("health", "--json", env=NOW).json()["skills"]["s"]
    assert data["runs"] == 3
