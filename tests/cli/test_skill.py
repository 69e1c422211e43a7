"""``gitvault skill ...`` end to end: the real CLI in real git repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import Runner, snapshot


def front(path: Path) -> dict:
    text = path.read_text("utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def events(root: Path) -> list[dict]:
    lines = []
    for path in sorted((root / "logs" / "events").rglob("*.jsonl")):
        lines += [json.loads(line) for line in path.read_text().splitlines()]
    return lines


def commit_count(gv: Runner) -> int:
    return int(gv.git("rev-list", "--count", "HEAD"))


def test_create_writes_agent_skills_file_commit_and_record(gv: Runner, vault: Path) -> None:
    result = gv.ok("skill", "create", "debug_swift_actor_isolation",
                   "--description", "Debug Swift 6 actor isolation errors.",
                   "--content", "## How\n1. Check Sendable", "--tags", "swift, concurrency")
    assert result.out.strip() == "created skill debug-swift-actor-isolation v1"
    path = vault / "skills" / "debug-swift-actor-isolation" / "SKILL.md"
    data = front(path)
    assert list(data)[:3] == ["name", "description", "metadata"]
    assert data["name"] == "debug-swift-actor-isolation"
    meta = data["metadata"]
    assert all(isinstance(v, str) for v in meta.values())
    assert meta["version"] == "1" and meta["kind"] == "procedure"
    assert meta["state"] == "active" and meta["provenance"] == "agent"
    assert meta["trigger"] == "Debug Swift 6 actor isolation errors."
    assert meta["tags"] == "swift,concurrency" and meta["sensitive"] == "false"
    assert path.read_text().endswith("---\n## How\n1. Check Sendable\n")
    message = gv.git("log", "-1", "--format=%B")
    assert message.startswith("gitvault: create debug-swift-actor-isolation v1")
    for trailer in ("Gitvault-Op: create", "Gitvault-Skill: debug-swift-actor-isolation",
                    "Gitvault-Version: 1", "Gitvault-Node: test-node"):
        assert trailer in message
    (record,) = events(vault)
    assert record["op"] == "create" and record["skill"] == "debug-swift-actor-isolation"
    assert record["version"] == 1 and record["node"] == "test-node"
    assert record["id"] and record["ts"].endswith("Z")


def test_create_existing_changes_nothing(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "x-skill", "--description", "first")
    before = snapshot(vault)
    result = gv.ok("skill", "create", "x_skill", "--description", "second", "--json")
    assert result.json()["status"] == "exists"
    assert result.json()["skill"]["description"] == "first"
    assert snapshot(vault) == before


def test_gitvault_now_sets_timestamps_and_commit_dates(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "timed", "--description", "d",
          env={"GITVAULT_NOW": "2026-11-29T10:00:00Z"})
    meta = front(vault / "skills" / "timed" / "SKILL.md")["metadata"]
    assert meta["created"] == meta["updated"] == "2026-11-29T10:00:00Z"
    assert gv.git("log", "-1", "--format=%aI %cI").split() == ["2026-11-29T10:00:00+00:00"] * 2
    assert events(vault)[0]["ts"] == "2026-11-29T10:00:00.000Z"


@pytest.mark.parametrize("name", ["../x", "Bad Name", "a--b", "a-", "a/b", "x" * 65, "", "é"])
def test_bad_names_are_refused_and_change_nothing(gv: Runner, vault: Path, name: str) -> None:
    before = snapshot(vault)
    result = gv("skill", "create", name, "--description", "d")
    assert result.code == 2
    assert len(result.err_lines) == 1
    assert result.err_lines[0].startswith("gitvault: error: invalid skill name")
    assert snapshot(vault) == before
    assert not (vault.parent / "x").exists()


@pytest.mark.parametrize("description, why", [
    ("uses <html>", "must not contain"), ("x" * 1025, "limit is 1024"), ("   ", "needs a description")])
def test_bad_descriptions(gv: Runner, vault: Path, description: str, why: str) -> None:
    before = snapshot(vault)
    result = gv("skill", "create", "ok-name", "--description", description)
    assert result.code == 2 and why in result.err
    assert snapshot(vault) == before


def test_body_from_file_and_stdin(gv: Runner, vault: Path, tmp_path: Path) -> None:
    body = tmp_path / "body.md"
    body.write_text("## From a file\n")
    gv.ok("skill", "create", "from-file", "--description", "d", "--file", str(body))
    gv.ok("skill", "create", "from-stdin", "--description", "d", "-", input="## From stdin\n")
    gv.ok("skill", "create", "from-stdin2", "--description", "d", "--file", "-", input="## two\n")
    assert (vault / "skills/from-file/SKILL.md").read_text().endswith("## From a file\n")
    assert (vault / "skills/from-stdin/SKILL.md").read_text().endswith("## From stdin\n")
    assert (vault / "skills/from-stdin2/SKILL.md").read_text().endswith("## two\n")


def test_non_utf8_body_file_is_refused(gv: Runner, vault: Path, tmp_path: Path) -> None:
    body = tmp_path / "latin1.md"
    body.write_bytes("caf\xe9".encode("latin-1"))
    before = snapshot(vault)
    result = gv("skill", "create", "latin", "--description", "d", "--file", str(body))
    assert result.code == 2 and "not UTF-8" in result.err and "latin1.md" in result.err
    assert snapshot(vault) == before


def test_unknown_flag_and_missing_vault(gv: Runner, vault: Path, tmp_path: Path) -> None:
    result = gv("skill", "create", "x", "--description", "d", "--bogus")
    assert result.code == 2 and result.err_lines[0].startswith("gitvault: error: No such option")
    assert len(result.err_lines) == 1
    elsewhere = tmp_path / "empty"
    elsewhere.mkdir()
    result = gv("skill", "list", cwd=elsewhere)
    assert result.code == 2 and len(result.err_lines) == 1
    assert "no vault in" in result.err and "gitvault init" in result.err
    result = gv("--json", "skill", "list", cwd=elsewhere)
    assert result.json()["error"]["code"] == "not_found"


def test_vault_found_by_flag_env_and_walking_up(gv: Runner, vault: Path, tmp_path: Path) -> None:
    gv.ok("skill", "create", "found", "--description", "d")
    inner = vault / "skills" / "found"
    assert "found" in gv.ok("skill", "list", cwd=inner).out
    other = tmp_path / "other"
    other.mkdir()
    assert "found" in gv.ok("--vault", str(vault), "skill", "list", cwd=other).out
    assert "found" in gv.ok("skill", "list", "--vault", str(vault), cwd=other).out
    assert "found" in gv.ok("skill", "list", cwd=other, env={"GITVAULT_DIR": str(vault)}).out


def test_patch_versions_and_falls_back_to_create(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "p", "--description", "d", "--content", "one")
    result = gv.ok("skill", "patch", "p", "--content", "two", "--json").json()
    assert result["status"] == "patched" and result["skill"]["version"] == 2
    assert (vault / "skills/p/SKILL.md").read_text().endswith("---\ntwo\n")
    assert "Gitvault-Version: 2" in gv.git("log", "-1", "--format=%B")
    created = gv.ok("skill", "patch", "new-one", "--description", "d", "--json").json()
    assert created["status"] == "created" and created["skill"]["version"] == 1
    before = snapshot(vault)
    missing = gv("skill", "patch", "absent", "--content", "x")
    assert missing.code == 2 and "needs a description" in missing.err
    assert snapshot(vault) == before


def test_show_and_list_json_shapes(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "s", "--description", "d", "--content", "v1 body",
          "--kind", "lesson", "--provenance", "human", "--sensitive")
    gv.ok("skill", "patch", "s", "--content", "v2 body")
    shown = gv.ok("skill", "show", "s", "--json").json()
    assert list(shown) == ["name", "description", "trigger", "version", "kind", "state",
                           "provenance", "sensitive", "urn", "metadata", "content", "stats"]
    assert shown["version"] == 2 and shown["kind"] == "lesson" and shown["sensitive"] is True
    assert shown["content"] == "v2 body\n"
    assert shown["urn"] == "urn:gitvault:skill:vault:s:v2"
    assert shown["stats"] == {"usage": 0, "success": 0, "failure": 0, "patches": 1}
    old = gv.ok("skill", "show", "s@v1", "--json").json()
    assert old["version"] == 1 and old["content"] == "v1 body\n"
    assert gv.ok("skill", "show", "s@1", "--json").json()["version"] == 1
    listed = gv.ok("skill", "list", "--json").json()["skills"]
    assert [s["name"] for s in listed] == ["s"] and "content" not in listed[0]
    assert set(listed[0]) == set(shown) - {"content"}
    assert gv("skill", "show", "s@v9").code == 2
    assert gv("skill", "show", "nope").code == 2
    assert gv("skill", "show", "s@vx").code == 2


def test_log_diff_rollback(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "r", "--description", "d", "--content", "first")
    gv.ok("skill", "patch", "r", "--content", "second")
    log = gv.ok("skill", "log", "r", "--json").json()
    assert [v["version"] for v in log["versions"]] == [2, 1]
    assert [v["op"] for v in log["versions"]] == ["patch", "create"]
    diff = gv.ok("skill", "diff", "r", "v1", "2").out
    assert "-first" in diff and "+second" in diff and "--- r@v1" in diff
    rolled = gv.ok("skill", "rollback", "r", "v1", "--json").json()
    assert rolled["skill"]["version"] == 3
    assert (vault / "skills/r/SKILL.md").read_text().endswith("---\nfirst\n")
    assert gv.ok("skill", "show", "r@v2", "--json").json()["content"] == "second\n"
    assert "Gitvault-Op: rollback" in gv.git("log", "-1", "--format=%B")
    assert [v["version"] for v in gv.ok("skill", "log", "r", "--json").json()["versions"]] \
        == [3, 2, 1]
    assert gv("skill", "rollback", "r", "v7").code == 2
    assert gv("skill", "log", "absent").code == 2


def test_archive_is_git_mv_and_restore(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "a", "--description", "d")
    result = gv.ok("skill", "archive", "a", "--reason", "superseded", "--json").json()
    assert result["skill"]["state"] == "archived" and result["skill"]["version"] == 2
    assert not (vault / "skills/a").exists()
    assert front(vault / "skills/.archive/a/SKILL.md")["metadata"]["state"] == "archived"
    assert gv.git("status", "--porcelain", "--", "skills") == ""
    renamed = gv.git("show", "--stat", "-M", "--format=", "HEAD")
    assert "skills/{ => .archive}/a/SKILL.md" in renamed
    assert gv.ok("skill", "list", "--json").json()["skills"] == []
    archived = gv.ok("skill", "list", "--state", "archived", "--json").json()["skills"]
    assert [s["name"] for s in archived] == ["a"]
    assert gv("skill", "archive", "a").code == 2
    restored = gv.ok("skill", "restore", "a", "--json").json()["skill"]
    assert restored["state"] == "active" and restored["version"] == 3
    assert (vault / "skills/a/SKILL.md").exists() and not (vault / "skills/.archive/a").exists()
    assert gv("skill", "restore", "a").code == 2
    # a patch un-archives too
    gv.ok("skill", "archive", "a")
    patched = gv.ok("skill", "patch", "a", "--content", "back", "--json").json()["skill"]
    assert patched["state"] == "active" and patched["version"] == 5
    assert gv.git("status", "--porcelain", "--", "skills") == ""


def test_malformed_skill_files_are_reported(gv: Runner, vault: Path) -> None:
    folder = vault / "skills" / "broken"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: broken\ndescription: [unclosed\n---\nbody\n")
    result = gv("skill", "show", "broken")
    assert result.code == 2 and len(result.err_lines) == 1
    assert "skills/broken/SKILL.md" in result.err and "invalid YAML" in result.err
    (folder / "SKILL.md").write_bytes(b"---\nname: broken\ndescription: caf\xe9\n---\n")
    result = gv("skill", "show", "broken")
    assert result.code == 2 and "not UTF-8" in result.err
    (folder / "SKILL.md").write_text("no front matter here\n")
    result = gv("skill", "show", "broken", "--json")
    assert result.code == 2 and "no front-matter" in result.json()["error"]["message"]


def test_a_broken_skill_file_does_not_hide_the_others(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "fine", "--description", "d")
    (vault / "skills" / "bad").mkdir()
    (vault / "skills" / "bad" / "SKILL.md").write_text("---\nname: bad\ndescription: [x\n---\n")
    listed = gv.ok("skill", "list", "--json")
    assert [s["name"] for s in listed.json()["skills"]] == ["fine"]
    assert "skills/bad/SKILL.md" in listed.json()["warnings"][0]
    assert listed.err_lines[0].startswith("gitvault: warning:") and "skills/bad/SKILL.md" in listed.err
    status = gv.ok("status", "--json").json()
    assert status["skills"]["active"] == 1 and len(status["warnings"]) == 1
    answer = gv.ok("tool", '{"action": "list"}').json()
    assert [s["name"] for s in answer["skills"]] == ["fine"] and answer["warnings"]
    assert gv("doctor").code == 1


def test_unknown_top_level_keys_are_kept(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "keep", "--description", "d")
    path = vault / "skills/keep/SKILL.md"
    path.write_text(path.read_text().replace("metadata:", "x-custom: kept\nlicense: MIT\nmetadata:"))
    gv.ok("skill", "patch", "keep", "--content", "new")
    data = front(path)
    assert data["x-custom"] == "kept" and data["license"] == "MIT"
    assert list(data).index("license") < list(data).index("metadata")


def test_hand_edit_is_a_version_in_history(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "h", "--description", "d", "--content", "one")
    path = vault / "skills/h/SKILL.md"
    path.write_text(path.read_text().replace("version: '1'", "version: '2'").replace("one", "two"))
    gv.git("-c", "user.name=Me", "-c", "user.email=me@example.com", "commit", "-qam", "hand edit")
    log = gv.ok("skill", "log", "h", "--json").json()["versions"]
    assert [(v["version"], v["op"]) for v in log] == [(2, "edit"), (1, "create")]
    assert gv.ok("skill", "show", "h@v2", "--json").json()["content"] == "two\n"
    assert gv.ok("skill", "patch", "h", "--content", "three", "--json").json()["skill"]["version"] == 3


def test_a_code_skill_without_its_files_is_refused(gv: Runner, vault: Path) -> None:
    before = snapshot(vault)
    result = gv("skill", "create", "c", "--description", "d", "--kind", "code")
    assert result.code == 2 and "verification gate" in result.err
    assert snapshot(vault) == before


def test_help_explains_every_skill_command(gv: Runner) -> None:
    for command in ("create", "patch", "show", "list", "log", "diff", "rollback", "archive",
                    "restore"):
        result = gv.ok("skill", command, "--help")
        assert "Usage: gitvault skill " + command in result.out
        assert "--json" in result.out and "--vault" in result.out
