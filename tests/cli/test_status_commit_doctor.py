"""``gitvault status``, ``commit`` and ``doctor [--repair]`` end to end: the real CLI
in real git repositories, with damage done by hand the way a user or a crash would."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runner, snapshot

HAND = ("-c", "user.name=Hand", "-c", "user.email=hand@example.com")


def create(gv: Runner, name: str, description: str = "A skill for tests.") -> None:
    gv.ok("skill", "create", name, "--description", description, "--content", "body")


def hand_commit(gv: Runner, message: str) -> None:
    gv.git(*HAND, "commit", "-q", "--no-verify", "-am", message)  # a person bypassing the hook


def set_state(path: Path, state: str) -> None:
    text = path.read_text("utf-8")
    assert "state: active" in text
    path.write_text(text.replace("state: active", f"state: {state}"), "utf-8")


def event_lines(root: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in (root / "logs" / "events").rglob("*.jsonl"))


def head(gv: Runner) -> str:
    return gv.git("rev-parse", "HEAD").strip()


def problems(result: Any) -> list[dict[str, Any]]:
    return result.json()["problems"]


# -- status -----------------------------------------------------------------------

def test_status_of_a_fresh_vault(gv: Runner, vault: Path) -> None:
    text = gv.ok("status").out
    assert "skills: 0 active, 0 stale, 0 archived" in text
    assert "pending records: none" in text
    assert "uncommitted" not in text
    data = gv.ok("status", "--json").json()
    assert data["skills"] == {"active": 0, "stale": 0, "archived": 0}
    assert data["pending"] == {"records": 0, "files": []}
    assert data["changes"] == []
    assert data["node"] == "test-node"
    assert Path(data["vault"]).resolve() == vault.resolve()


def test_status_counts_skills_by_state_and_pending_records(gv: Runner, vault: Path) -> None:
    for name in ("alpha", "beta", "gamma"):
        create(gv, name)
    gv.ok("skill", "archive", "gamma")
    set_state(vault / "skills" / "beta" / "SKILL.md", "stale")
    hand_commit(gv, "beta is stale")
    before = snapshot(vault)

    data = gv.ok("status", "--json").json()
    assert data["skills"] == {"active": 1, "stale": 1, "archived": 1}
    # three creates and one archive: four events records, none committed yet
    assert data["pending"]["records"] == 4 == event_lines(vault)
    (entry,) = data["pending"]["files"]
    assert entry["path"].startswith("logs/events/") and entry["path"].endswith("/test-node.jsonl")
    assert entry["lines"] == 4
    assert data["changes"] == []

    text = gv.ok("status").out
    assert "skills: 1 active, 1 stale, 1 archived" in text
    assert "pending records: 4" in text
    assert f"{entry['path']}: 4" in text
    assert snapshot(vault) == before  # status changes nothing


def test_status_shows_uncommitted_changes_of_hand_edited_skills(gv: Runner, vault: Path) -> None:
    create(gv, "edited")
    path = vault / "skills" / "edited" / "SKILL.md"
    path.write_text(path.read_text("utf-8") + "A line added by hand.\n", "utf-8")
    extra = vault / "skills" / "by-hand" / "SKILL.md"
    extra.parent.mkdir()
    extra.write_text("---\nname: by-hand\ndescription: Written by hand.\n---\nbody\n", "utf-8")

    data = gv.ok("status", "--json").json()
    changes = {c["path"]: c["status"] for c in data["changes"]}
    assert changes == {"skills/edited/SKILL.md": "M", "skills/by-hand/SKILL.md": "??"}
    assert data["skills"]["active"] == 2
    text = gv.ok("status").out
    assert "uncommitted changes:" in text
    assert "skills/edited/SKILL.md" in text and "skills/by-hand/SKILL.md" in text


# -- commit -----------------------------------------------------------------------

def test_commit_commits_pending_log_lines_only(gv: Runner, vault: Path) -> None:
    create(gv, "one")
    create(gv, "two")
    # a hand edit of a skill is not part of a log commit
    path = vault / "skills" / "one" / "SKILL.md"
    path.write_text(path.read_text("utf-8") + "edited\n", "utf-8")
    parent = head(gv)

    data = gv.ok("commit", "--json").json()
    assert data["committed"] is True and data["records"] == 2
    assert data["commit"] == head(gv) != parent
    assert gv.git("rev-parse", "HEAD~1").strip() == parent
    touched = gv.git("show", "--name-only", "--format=", "HEAD").split()
    assert touched and all(p.startswith("logs/events/") for p in touched)
    assert gv.git("status", "--porcelain", "-uall", "--", "logs").strip() == ""
    assert "Gitvault-Op: commit" in gv.git("log", "-1", "--format=%B")
    # the committed file holds exactly the two records
    lines = gv.git("show", f"HEAD:{touched[0]}").splitlines()
    assert [json.loads(line)["skill"] for line in lines] == ["one", "two"]
    assert gv.git("status", "--porcelain", "--", "skills").strip() == "M skills/one/SKILL.md"
    status = gv.ok("status", "--json").json()
    assert status["pending"] == {"records": 0, "files": []}


def test_commit_text_output_and_nothing_to_commit(gv: Runner, vault: Path) -> None:
    create(gv, "one")
    result = gv.ok("commit")
    sha = head(gv)
    assert result.out.strip() == f"committed 1 record as {sha[:12]}"

    again = gv.ok("commit")
    assert again.out.strip() == "nothing to commit"
    data = gv.ok("commit", "--json").json()
    assert data == {"committed": False, "commit": None, "records": 0}
    assert head(gv) == sha


def test_commit_on_a_fresh_vault_has_nothing_to_commit(gv: Runner, vault: Path) -> None:
    before = snapshot(vault)
    assert gv.ok("commit", "--json").json()["committed"] is False
    assert snapshot(vault) == before


def test_commit_uses_the_given_message(gv: Runner, vault: Path) -> None:
    create(gv, "one")
    create(gv, "two")
    create(gv, "three")
    data = gv.ok("commit", "-m", "records from the nightly run", "--json").json()
    assert data["records"] == 3
    assert gv.git("log", "-1", "--format=%s").strip() == "records from the nightly run"
    assert gv.git("rev-parse", "HEAD").strip() == data["commit"]


def test_commit_includes_records_another_program_appended(gv: Runner, vault: Path) -> None:
    other = vault / "logs" / "runs" / "2026-01" / "other-tool.jsonl"
    other.parent.mkdir(parents=True)
    other.write_text('{"ts":"2026-01-01T00:00:00Z","agent":"a","skill":"s","task":"t",'
                     '"result":"success","score":1}\n' * 2, "utf-8")
    data = gv.ok("commit", "--json").json()
    assert data["committed"] is True and data["records"] == 2
    assert gv.git("show", "--name-only", "--format=", "HEAD").split() == [
        "logs/runs/2026-01/other-tool.jsonl"]


# -- doctor: clean ----------------------------------------------------------------

def test_doctor_on_a_clean_vault(gv: Runner, vault: Path) -> None:
    result = gv.ok("doctor")
    assert result.out.strip().endswith("no problems")
    create(gv, "fine")
    gv.ok("skill", "archive", "fine")
    create(gv, "also-fine")
    gv.ok("commit")
    before = snapshot(vault)
    data = gv.ok("doctor", "--json").json()
    assert data["ok"] is True and data["problems"] == []
    assert data["checked"]["skills"] == 2
    assert data["checked"]["records"] == 3
    assert snapshot(vault) == before


# -- doctor: log lines ------------------------------------------------------------

GOOD = (b'{"ts":"2026-01-05T10:00:00Z","agent":"a","skill":"s","task":"t",'
        b'"result":"success","score":1}\n')
BAD_LINES = {
    "null": b"null\n",
    "broken-json": b"{broken\n",
    "not-utf8": b'{"ts":"2026-01-05T10:00:00Z","notes":"caf\xe9"}\n',
    "missing-ts": b'{"agent":"a","skill":"s","task":"t","result":"success","score":1}\n',
    "array": b"[1, 2]\n",
    "bad-ts": b'{"ts":"yesterday","agent":"a"}\n',
}


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_doctor_reports_bad_log_line_with_file_and_line(gv: Runner, vault: Path,
                                                        case: str) -> None:
    path = vault / "logs" / "runs" / "2026-01" / "hand.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(GOOD + BAD_LINES[case] + GOOD)
    before = snapshot(vault)

    result = gv("doctor")
    assert result.code == 1, result.err
    assert "logs/runs/2026-01/hand.jsonl:2" in result.out
    assert "hand.jsonl:1" not in result.out and "hand.jsonl:3" not in result.out

    result = gv("doctor", "--json")
    assert result.code == 1
    data = result.json()
    assert data["ok"] is False
    (problem,) = data["problems"]
    assert problem["check"] == "log"
    assert problem["path"] == "logs/runs/2026-01/hand.jsonl:2"
    assert problem["repaired"] is False and problem["message"]
    assert data["checked"]["records"] == 2
    assert snapshot(vault) == before  # doctor without --repair changes nothing


def test_doctor_reports_every_bad_line_in_every_stream(gv: Runner, vault: Path) -> None:
    create(gv, "one")
    own = next((vault / "logs" / "events").rglob("test-node.jsonl"))
    with open(own, "ab") as fh:
        fh.write(b"null\n")
    runs = vault / "logs" / "runs" / "2026-02" / "hand.jsonl"
    runs.parent.mkdir(parents=True)
    runs.write_bytes(b"{broken\n" + GOOD + GOOD + b"\xff\xfe\n")
    result = gv("doctor", "--json")
    assert result.code == 1
    paths = sorted(p["path"] for p in problems(result))
    own_rel = own.relative_to(vault).as_posix()
    assert paths == sorted([f"{own_rel}:2", "logs/runs/2026-02/hand.jsonl:1",
                            "logs/runs/2026-02/hand.jsonl:4"])


# -- doctor: skills ---------------------------------------------------------------

def _renamed(root: Path) -> str:
    folder = root / "skills" / "renamed"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: other-name\ndescription: Name and folder differ.\n---\nbody\n", "utf-8")
    return "other-name"


def _bad_yaml(root: Path) -> str:
    folder = root / "skills" / "bad-yaml"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: bad-yaml\ndescription: [unclosed\nmetadata:\n  state: active\n---\nbody\n",
        "utf-8")
    return "YAML"


def _latin1(root: Path) -> str:
    folder = root / "skills" / "latin"
    folder.mkdir()
    (folder / "SKILL.md").write_bytes(
        b"---\nname: latin\ndescription: Caf\xe9 au lait.\n---\nbody\n")
    return "UTF-8"


def _archived_in_skills(root: Path) -> str:
    folder = root / "skills" / "shelved"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: shelved\ndescription: Archived but not moved.\nmetadata:\n"
        "  version: '2'\n  state: archived\n---\nbody\n", "utf-8")
    return "archived"


SKILL_DAMAGE: dict[str, tuple[Callable[[Path], str], str]] = {
    "name-differs": (_renamed, "skills/renamed"),
    "malformed-yaml": (_bad_yaml, "skills/bad-yaml"),
    "not-utf8": (_latin1, "skills/latin"),
    "archived-in-skills": (_archived_in_skills, "skills/shelved"),
}


@pytest.mark.parametrize("case", list(SKILL_DAMAGE))
def test_doctor_reports_bad_skill_files(gv: Runner, vault: Path, case: str) -> None:
    create(gv, "healthy")
    damage, where = SKILL_DAMAGE[case]
    needle = damage(vault)
    before = snapshot(vault)

    result = gv("doctor")
    assert result.code == 1, result.err
    assert where in result.out and needle in result.out

    result = gv("doctor", "--json")
    assert result.code == 1
    (problem,) = problems(result)
    assert problem["check"] == "skill"
    assert problem["path"] == where
    assert needle in problem["message"]
    assert problem["repaired"] is False
    assert snapshot(vault) == before


def test_doctor_reports_an_active_skill_inside_the_archive(gv: Runner, vault: Path) -> None:
    create(gv, "boxed")
    gv.ok("skill", "archive", "boxed")
    path = vault / "skills" / ".archive" / "boxed" / "SKILL.md"
    path.write_text(path.read_text("utf-8").replace("state: archived", "state: active"), "utf-8")
    result = gv("doctor", "--json")
    assert result.code == 1
    (problem,) = problems(result)
    assert problem["path"] == "skills/.archive/boxed" and "active" in problem["message"]


# -- doctor --repair --------------------------------------------------------------

def test_repair_moves_a_torn_last_line_aside(gv: Runner, vault: Path) -> None:
    path = vault / "logs" / "runs" / "2026-01" / "crashed.jsonl"
    path.parent.mkdir(parents=True)
    torn = b'{"ts":"2026-01-05T11:00:00Z","agent":"a","notes":"caf\xc3'  # cut mid-character
    path.write_bytes(GOOD + GOOD + torn)
    before = snapshot(vault)

    result = gv("doctor", "--json")
    assert result.code == 1
    (problem,) = problems(result)
    assert problem["path"] == "logs/runs/2026-01/crashed.jsonl"
    assert "unterminated" in problem["message"] and problem["repaired"] is False
    assert snapshot(vault) == before

    result = gv("doctor", "--repair", "--json")
    assert result.code == 0, result.out + result.err
    data = result.json()
    assert data["ok"] is True
    (problem,) = data["problems"]
    assert problem["repaired"] is True
    assert "crashed.jsonl.torn" in problem["message"]
    assert path.read_bytes() == GOOD + GOOD
    aside = path.with_name("crashed.jsonl.torn")
    assert aside.read_bytes().rstrip(b"\n") == torn  # preserved byte for byte

    assert gv("doctor").code == 0
    # the repaired log still reads: both good records are there
    assert gv.ok("doctor", "--json").json()["checked"]["records"] == 2


def test_repair_keeps_every_torn_fragment(gv: Runner, vault: Path) -> None:
    path = vault / "logs" / "runs" / "2026-01" / "crashed.jsonl"
    path.parent.mkdir(parents=True)
    first, second = b'{"ts":"2026-01-05T11:00', b'{"ts":"2026-01-06T09:00:00Z","agent":"b"'
    path.write_bytes(GOOD + first)
    gv.ok("doctor", "--repair")
    with open(path, "ab") as fh:
        fh.write(GOOD + second)
    gv.ok("doctor", "--repair")
    assert path.read_bytes() == GOOD + GOOD
    aside = path.with_name("crashed.jsonl.torn").read_bytes()
    assert aside.split(b"\n")[:2] == [first, second]


def test_repair_restores_missing_gitattributes_lines(gv: Runner, vault: Path) -> None:
    attributes = vault / ".gitattributes"
    attributes.write_text("*.png binary\nskills/**/SKILL.md text eol=lf\n", "utf-8")
    before = snapshot(vault)

    result = gv("doctor", "--json")
    assert result.code == 1
    (problem,) = problems(result)
    assert problem["path"] == ".gitattributes"
    assert "logs/**/*.jsonl merge=union" in problem["message"]
    assert snapshot(vault) == before

    result = gv("doctor", "--repair", "--json")
    assert result.code == 0
    assert result.json()["problems"][0]["repaired"] is True
    lines = attributes.read_text("utf-8").splitlines()
    assert "logs/**/*.jsonl merge=union" in lines
    assert "skills/**/SKILL.md text eol=lf" in lines
    assert "*.png binary" in lines  # the user's own line is kept
    assert gv("doctor").code == 0


def test_repair_recreates_a_deleted_gitattributes(gv: Runner, vault: Path) -> None:
    (vault / ".gitattributes").unlink()
    assert gv("doctor").code == 1
    gv.ok("doctor", "--repair")
    lines = (vault / ".gitattributes").read_text("utf-8").splitlines()
    assert set(lines) >= {"logs/**/*.jsonl merge=union", "skills/**/SKILL.md text eol=lf"}
    assert gv.git("check-attr", "merge", "--", "logs/runs/2026-01/x.jsonl").strip().endswith(
        "merge: union")
    gv.ok("doctor")


def test_repair_leaves_what_it_cannot_fix_and_exits_1(gv: Runner, vault: Path) -> None:
    path = vault / "logs" / "runs" / "2026-01" / "hand.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"null\n" + GOOD)
    gv.git("add", "logs")
    gv.git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--no-verify", "-m",
           "a bad line arrives committed")
    before = snapshot(vault)
    result = gv("doctor", "--repair", "--json")
    assert result.code == 1
    (problem,) = problems(result)
    assert problem["path"] == "logs/runs/2026-01/hand.jsonl:1"
    assert problem["repaired"] is False
    assert "committed, so it stays: committed lines are never edited" in problem["message"]
    assert snapshot(vault) == before  # a committed line is reported, never rewritten


def test_doctor_json_shape(gv: Runner, vault: Path) -> None:
    create(gv, "fine")
    path = vault / "logs" / "runs" / "2026-01" / "hand.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(GOOD + b"{broken\n")
    result = gv("doctor", "--json")
    assert result.code == 1
    data = result.json()
    assert set(data) == {"ok", "checked", "problems"}
    assert data["ok"] is False
    assert isinstance(data["checked"], dict)
    assert data["checked"]["skills"] == 1 and data["checked"]["records"] == 2
    assert data["problems"] and all(
        set(p) == {"check", "path", "message", "repaired"}
        and all(isinstance(p[k], str) for k in ("check", "path", "message"))
        and isinstance(p["repaired"], bool) for p in data["problems"])
    assert result.err == ""
