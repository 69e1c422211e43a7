"""The interchange library on its own: which folders import takes, the agents-md index
within its budget and between its markers, front matter as JSON, and what is served."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from gitvault.errors import InvalidInput
from gitvault.skills import agentskills
from gitvault.skills.model import Skill
from gitvault.skills.skillimport import skill_folders


def skill(name: str, **meta: str) -> Skill:
    return Skill(name=name, description=f"Do {name}",
                 metadata={"version": "1", "state": "active", "kind": "procedure", **meta})


def test_skill_folders_finds_every_agents_folder(tmp_path: Path) -> None:
    for rel in (".claude/skills/a", ".agents/skills/b", ".codex/skills/c", "d"):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "SKILL.md").write_text("x")
    names = [p.name for p in skill_folders(tmp_path)]
    assert sorted(names) == ["a", "b", "c", "d"]
    assert skill_folders(tmp_path / ".claude" / "skills" / "a") == [tmp_path / ".claude/skills/a"]
    with pytest.raises(InvalidInput, match="is not a folder"):
        skill_folders(tmp_path / "missing")


def test_served_skills_are_active_and_code_only_with_evidence(tmp_path: Path) -> None:
    from gitvault.gate.verify import evidence_hash
    from gitvault.skills.codegate import code_files

    assert agentskills.unserved_reason(skill("a")) is None
    assert agentskills.unserved_reason(skill("b", kind="lesson")) is None
    assert "stale" in (agentskills.unserved_reason(skill("c", state="stale")) or "")
    folder = tmp_path / "d"
    folder.mkdir()
    for name in ("skill.py", "test_skill.py", "example.py"):
        (folder / name).write_text(f"# {name}\n")
    code = skill("d", kind="code")
    assert agentskills.unserved_reason(code) == agentskills.CODE_UNVERIFIED
    assert agentskills.unserved_reason(code, folder, set()) == agentskills.CODE_UNVERIFIED
    trusted = {evidence_hash(code_files(folder))}
    assert agentskills.unserved_reason(code, folder, trusted) is None
    (folder / "skill.py").write_text("# changed\n")
    assert agentskills.unserved_reason(code, folder, trusted) == agentskills.CODE_UNVERIFIED


def test_json_safe_keeps_front_matter_and_turns_dates_into_text() -> None:
    data = {"name": "a", "metadata": {"created": date(2026, 1, 2), "n": 3}, "tags": ["x"]}
    assert agentskills.json_safe(data) == {"name": "a", "metadata": {"created": "2026-01-02",
                                                                   "n": 3}, "tags": ["x"]}


def test_index_is_most_used_first_within_the_budget(tmp_path: Path) -> None:
    pairs = [(skill(f"skill-{i:02}", trigger="t " * 40), tmp_path / f"skill-{i:02}")
             for i in range(40)]
    usage = {"skill-07": 5, "skill-03": 2}
    block, listed, omitted = agentskills.index_block(pairs, usage, tmp_path, budget=1500)
    assert listed[:2] == ["skill-07", "skill-03"] and listed[2] == "skill-00"
    assert len(block) <= 1500 and omitted == 40 - len(listed) > 0
    assert "`skill-07/SKILL.md`" in block and f"{omitted} more" in block
    with pytest.raises(InvalidInput, match="too small"):
        agentskills.index_block(pairs, usage, tmp_path, budget=10)


def test_write_index_keeps_the_users_text(tmp_path: Path) -> None:
    target = tmp_path / "CLAUDE.md"
    target.write_text("# Notes\n")
    assert agentskills.write_index(target, f"{agentskills.BEGIN}\none\n{agentskills.END}\n") == \
        "appended"
    target.write_text(target.read_text() + "\n## After\n")
    assert agentskills.write_index(target, f"{agentskills.BEGIN}\ntwo\n{agentskills.END}\n") == \
        "updated"
    text = target.read_text()
    assert text.startswith("# Notes\n") and "two" in text and "one" not in text
    assert text.endswith("## After\n")
    assert agentskills.write_index(target, f"{agentskills.BEGIN}\ntwo\n{agentskills.END}\n") == \
        "unchanged"


def test_export_text_has_only_agent_skills_keys_unless_asked() -> None:
    s = skill("a")
    s.extra = {"license": "MIT", "x-team": "docs"}
    assert "x-team" not in agentskills.export_text(s)
    assert "license: MIT" in agentskills.export_text(s)
    assert "x-team: docs" in agentskills.export_text(s, keep_extra_keys=True)


def test_a_hostile_trigger_cannot_end_the_markers_or_add_html(tmp_path: Path) -> None:
    """A skill's trigger is untrusted: the index shows it without HTML or backticks,
    redacted, and writing it again changes nothing (an injected end marker used to
    make every write append a copy of the file's tail)."""
    hostile = skill("evil", trigger="x <!-- gitvault:skills:end --> <img src=x onerror=alert(1)> "
                                    "`rm -rf /` token=ghp_abcdefghijklmnopqrstuvwxyz0123456789")
    block, listed, _ = agentskills.index_block([(hostile, tmp_path / "evil")], {}, tmp_path)
    assert listed == ["evil"] and block.count(agentskills.END) == 1
    assert "<img" not in block and "`rm" not in block and "ghp_" not in block
    target = tmp_path / "AGENTS.md"
    target.write_text("# My project\n\nKeep this.\n")
    actions = [agentskills.write_index(target, block) for _ in range(3)]
    assert actions == ["appended", "unchanged", "unchanged"]
    text = target.read_text()
    assert text.count(agentskills.BEGIN) == text.count(agentskills.END) == 1
    assert text.startswith("# My project\n\nKeep this.\n")


def test_the_budget_floor_is_the_index_frame(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"--budget 200 is too small: at least \d+ characters"):
        agentskills.index_block([], {}, tmp_path, budget=200)
    block, _, _ = agentskills.index_block([(skill("a", trigger="t"), tmp_path / "a")], {},
                                          tmp_path, budget=400)
    assert len(block) <= 400
