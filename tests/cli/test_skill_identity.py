"""The folder is a skill's identity (SPEC §2.1): a SKILL.md edited by hand to name
another skill, or to hold a description with '<' or '>', is reported by doctor and
refused by every write and by the pre-commit hook (issue 11, classes 8 and 12)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli.test_code_skills import create as create_code
from tests.conftest import Runner, snapshot

GIT_ID = ["-c", "user.name=Hand", "-c", "user.email=hand@example.com"]


def hand_edit(vault: Path, name: str, old: str, new: str) -> None:
    path = vault / "skills" / name / "SKILL.md"
    path.write_text(path.read_text().replace(old, new, 1))


def commit_by_hand(gv: Runner, vault: Path) -> None:
    gv.git("add", "-A")
    gv.git(*GIT_ID, "commit", "-q", "--no-verify", "-m", "hand edit")


@pytest.fixture
def renamed(gv: Runner, vault: Path) -> Path:
    """skills/d4/SKILL.md says ``name: other``, committed by hand."""
    gv.ok("skill", "create", "d4", "--description", "Deploy the d4 service", "--content", "v1")
    gv.ok("skill", "create", "d5", "--description", "Deploy the d5 service", "--content", "v1")
    gv.ok("skill", "patch", "d4", "--content", "v2")
    hand_edit(vault, "d4", "name: d4", "name: other")
    commit_by_hand(gv, vault)
    return vault


@pytest.mark.parametrize("args", [
    ["skill", "patch", "d4", "--content", "v3"],
    ["skill", "rollback", "d4", "v1"],
    ["skill", "archive", "d4"],
])
def test_every_write_refuses_a_skill_whose_name_differs_from_its_folder(
        gv: Runner, renamed: Path, args: list[str]) -> None:
    before = snapshot(renamed)
    result = gv(*args)
    assert result.code == 2, result.err
    assert result.err_lines == [
        "gitvault: error: skills/d4: SKILL.md names 'other' but its folder is 'd4'; the "
        "folder is the skill's identity: fix the name (see 'gitvault doctor')"]
    assert snapshot(renamed) == before  # nothing written, nothing committed
    assert not (renamed / "skills" / "other").exists()


def test_restore_and_verify_refuse_too(gv: Runner, vault: Path, tmp_path: Path) -> None:
    assert create_code(gv, tmp_path, "slugify").code == 0
    hand_edit(vault, "slugify", "name: slugify", "name: other")
    verify = gv("skill", "verify", "slugify")
    assert verify.code == 2 and "SKILL.md names 'other' but its folder is 'slugify'" in verify.err
    every = gv("skill", "verify", "--all")
    assert every.code == 2 and "names 'other'" in every.err
    hand_edit(vault, "slugify", "name: other", "name: slugify")
    gv.ok("skill", "archive", "slugify")
    hand_edit(vault, ".archive/slugify", "name: slugify", "name: other")
    restore = gv("skill", "restore", "slugify")
    assert restore.code == 2 and "skills/.archive/slugify: SKILL.md names 'other'" in restore.err
    assert not (vault / "skills" / "other").exists()


def test_doctor_reports_the_mismatch_and_lists_skip_it(gv: Runner, renamed: Path) -> None:
    doctor = gv("doctor")
    assert doctor.code == 1
    assert "skill: skills/d4: name 'other' differs from its folder" in doctor.out
    listed = gv.ok("skill", "list", "--json").json()
    assert [s["name"] for s in listed["skills"]] == ["d5"]
    assert any("SKILL.md names 'other' but its folder is 'd4'" in w for w in listed["warnings"])
    found = gv.ok("search", "deploy service", "--json").json()
    assert [r["name"] for r in found["results"]] == ["d5"]
    assert any("names 'other'" in w for w in found["warnings"])
    outcome = gv("outcome", "--skills", "d4", "--success")
    assert outcome.code == 2 and "SKILL.md names 'other'" in outcome.err
    lifecycle = gv.ok("lifecycle", "--json", env={"GITVAULT_NOW": "2027-06-01T00:00:00Z"})
    assert [c["name"] for c in lifecycle.json()["changes"]] == ["d5"]  # d4 is skipped
    assert any("names 'other'" in w for w in lifecycle.json()["warnings"])
    assert not (renamed / "skills" / "other").exists()


def test_a_description_with_angle_brackets_edited_by_hand(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "d4", "--description", "Deploy the d4 service", "--content", "v1")
    hand_edit(vault, "d4", "description: Deploy the d4 service",
              "description: Deploy the <b>d4</b> service")
    hand_edit(vault, "d4", "version: '1'", "version: '2'")
    hand_edit(vault, "d4", 'version: "1"', 'version: "2"')
    doctor = gv("doctor")
    assert doctor.code == 1
    assert "skill: skills/d4/SKILL.md: description must not contain '<' or '>'" in doctor.out
    gv.git("add", "-A")
    commit = subprocess.run(["git", *GIT_ID, "commit", "-q", "-m", "hand edit"], cwd=vault,
                            env=gv.env, capture_output=True, text=True)
    assert commit.returncode == 1
    assert "pre-commit: skills/d4/SKILL.md: invalid skill file: description must not contain " \
        "'<' or '>'" in commit.stderr
