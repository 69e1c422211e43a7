"""Edge values (issue 11): every date computation tolerates the calendar's edges, and a
record that cannot be interpreted is a warning, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Runner

LAST = {"GITVAULT_NOW": "9999-12-31T23:59:59Z"}
FIRST = {"GITVAULT_NOW": "0001-01-01T00:00:00Z"}


def no_crash(result: object) -> None:
    err = getattr(result, "err", "")
    assert "internal error" not in err and "Traceback" not in err, err


def test_a_deadline_past_the_last_day_never_crashes_the_queue(gv: Runner, vault: Path) -> None:
    gv.ok("enqueue", "--task", "at the end of time", "--deadline", "24h", env=LAST)
    for env in (LAST, {}):
        stats = gv.ok("stats", "--json", env=env)
        no_crash(stats)
        assert stats.json()["total"] == 1
        assert stats.json()["expired"] == 0  # 24 h after the last moment never passes
        dispatched = gv.ok("dispatch", "--json", env=env)
        no_crash(dispatched)
        assert dispatched.json()["count"] == 1
    refused = gv("enqueue", "--task", "t2", "--deadline", "9999-12-31T23:59:59-01:00")
    assert refused.code == 2
    assert refused.err_lines == ["gitvault: error: unknown deadline '9999-12-31T23:59:59-01:00' "
                                 "(use immediate, 24h, week-end, next-cycle, none or an ISO 8601 "
                                 "time)"]


def test_the_first_and_last_moments_work_everywhere(gv: Runner, vault: Path) -> None:
    for env, stamp, month in ((FIRST, "0001-01-01T00:00:00.000Z", "0001-01"),
                              (LAST, "9999-12-31T23:59:59.000Z", "9999-12")):
        entry = gv.ok("record-run", "--skill", "edge", "--json", env=env).json()["entry"]
        assert entry["ts"] == stamp
        assert (vault / "logs" / "runs" / month / "test-node.jsonl").is_file()
        gv.ok("enqueue", "--task", f"task {month}", "--deadline", "immediate", env=env)
        name = f"edge-{month[:4]}"
        gv.ok("skill", "create", name, "--description", "At the edge.", env=env)
        gv.ok("skill", "patch", name, "--content", "Later.", env=env)
        for args in (["stats"], ["dispatch"], ["health"], ["drift"], ["lifecycle"],
                     ["skill", "log", name], ["skill", "list"], ["doctor"], ["commit"]):
            no_crash(gv.ok(*args, env=env))
    dates = gv.git("log", "--format=%aI %s").splitlines()
    assert any(line.startswith("9999-12-31T23:59:59") and "edge-9999" in line for line in dates)


def test_a_time_outside_the_calendar_in_a_record_is_a_warning(gv: Runner, vault: Path) -> None:
    gv.ok("enqueue", "--task", "fine")
    log = next((vault / "logs" / "queue").rglob("*.jsonl"))
    with log.open("a") as fh:
        fh.write(json.dumps({"ts": "9999-12-31T23:59:59-14:00", "op": "start", "pr": "x"}) + "\n")
        fh.write(json.dumps({"ts": "0001-01-01T00:00:00+14:00", "skill": "s"}) + "\n")
    stats = gv.ok("stats", "--json")
    no_crash(stats)
    assert stats.json()["total"] == 1
    assert [w.split(": ", 1)[1] for w in stats.json()["warnings"]] == [
        "bad ts: '9999-12-31T23:59:59-14:00'", "bad ts: '0001-01-01T00:00:00+14:00'"]
    runs = vault / "logs" / "runs" / "2026-01" / "other.jsonl"
    runs.parent.mkdir(parents=True)
    runs.write_text(json.dumps({"ts": "0001-01-01T00:00:00+14:00", "skill": "s",
                                "result": "fail", "score": 0.1}) + "\n")
    health = gv.ok("health", "--json")
    no_crash(health)


def test_huge_day_limits_in_the_config_do_not_crash(gv: Runner, vault: Path) -> None:
    config = vault / "gitvault.yaml"
    config.write_text(config.read_text()
                      .replace("stale_after_days: 14", "stale_after_days: 10000000000")
                      .replace("archive_after_days: 30", "archive_after_days: 10000000000"))
    gv.ok("skill", "create", "old", "--description", "Old.", env=FIRST)
    gv.ok("skill", "patch", "old", "--content", "New.", env=FIRST)
    for args in (["lifecycle"], ["skill", "log", "old"], ["skill", "show", "old@v1"]):
        no_crash(gv.ok(*args, env=LAST))


def test_a_knowledge_check_at_the_last_moment_is_due_never_again(gv: Runner, vault: Path) -> None:
    (vault / "doc.md").write_text("doc\n")
    config = vault / "gitvault.yaml"
    config.write_text(config.read_text().replace(
        "  sources: []", "  sources:\n    - {id: doc, type: file, path: doc.md, tier: 1}", 1))
    gv.ok("watch", env=LAST)
    again = gv.ok("watch", env=LAST)  # last check + 6 h is past the calendar
    no_crash(again)
    assert "not due doc (tier 1): next check 9999-12-31T23:59:59.999Z" in again.out


def test_a_hand_edited_date_in_a_skill_is_a_warning_for_lifecycle(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "dated", "--description", "Dated.")
    gv.ok("skill", "create", "other", "--description", "Other.", env=FIRST)
    skill = vault / "skills" / "dated" / "SKILL.md"
    text = skill.read_text()
    start = text.index("updated: ")
    end = text.index("\n", start)
    skill.write_text(text[:start] + "updated: '0001-01-01T00:00:00+14:00'" + text[end:])
    result = gv.ok("lifecycle", "--dry-run")
    no_crash(result)
    assert "dated: timestamp out of range" in result.err
    assert "other" in result.out  # the rest are still judged
