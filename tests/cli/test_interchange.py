"""Agent Skills interchange through the real CLI: ``export`` writes folders the reference
validator (``agentskills validate`` from skills-ref) accepts, ``import`` takes a Claude
Code / Codex skills folder as it is, and a round trip changes nothing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitvault.skills.agentskills import CODE_UNVERIFIED
from tests.cli.test_code_skills import EXAMPLE, SKILL, TESTS
from tests.cli.test_code_skills import create as create_code_skill
from tests.conftest import Runner, snapshot

VALIDATOR = Path(sys.executable).parent / "agentskills"


def validate(folder: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("agentskills") or str(VALIDATOR)
    return subprocess.run([exe, "validate", str(folder)], capture_output=True, text=True,
                          timeout=60)


def claude_folder(root: Path) -> Path:
    """A project's .claude/skills as a user of Claude Code has it."""
    skills = root / ".claude" / "skills"
    pdf = skills / "PDF_Tools"
    (pdf / "scripts").mkdir(parents=True)
    (pdf / "references").mkdir()
    (pdf / "SKILL.md").write_text(
        "---\nname: pdf_tools\ndescription: Fill and merge PDF forms. Use when a task "
        "mentions PDF forms.\nlicense: MIT\nallowed-tools: Bash(python:*)\n"
        "x-team: docs\n---\n# PDF tools\nRun `scripts/fill.py FORM`.\n")
    (pdf / "scripts" / "fill.py").write_text("import sys\nprint(sys.argv)\n")
    (pdf / "references" / "FORMS.md").write_text("# Forms\n")
    (pdf / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    review = skills / "code-review"
    review.mkdir()
    (review / "SKILL.md").write_text("---\nname: code-review\ndescription: Review a diff "
                                     "for bugs first, style last.\n---\n1. Read the diff.\n")
    (skills / "notes").mkdir()  # no SKILL.md
    (skills / "broken").mkdir()
    (skills / "broken" / "SKILL.md").write_text("---\nname: Bad Name!\ndescription: x\n---\n")
    (skills / "latin1").mkdir()
    (skills / "latin1" / "SKILL.md").write_bytes(b"---\nname: latin1\ndescription: caf\xe9\n---\n")
    (skills / "linked").symlink_to(review)
    return skills


def test_export_writes_folders_the_reference_validator_accepts(gv: Runner, vault: Path,
                                                              tmp_path: Path) -> None:
    gv.ok("skill", "create", "fix-flaky-test", "--description", "Fix a flaky test. Use when "
          "a test fails one run in ten.", "--tags", "python,ci", "--content", "## Steps\n1. Loop")
    gv.ok("skill", "create", "old-way", "--description", "An old way")
    gv.ok("skill", "archive", "old-way")
    out = tmp_path / "agent" / ".claude" / "skills"
    data = gv.ok("--json", "export", str(out)).json()
    assert [e["name"] for e in data["exported"]] == ["fix-flaky-test"]
    checked = validate(out / "fix-flaky-test")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Valid skill" in checked.stdout
    text = (out / "fix-flaky-test" / "SKILL.md").read_text()
    assert "metadata:\n  version: '1'\n  kind: procedure\n" in text  # block style, strings
    assert "{" not in text.split("---")[1]
    assert not (out / "old-way").exists()
    # a code skill goes out with its files while this node's gate evidence covers them
    assert create_code_skill(gv, tmp_path, "slugify").code == 0
    data = gv.ok("--json", "export", str(out)).json()
    assert data["skipped"] == []
    assert sorted(p.name for p in (out / "slugify").iterdir()) == [
        "SKILL.md", "example.py", "skill.py", "test_skill.py"]
    assert validate(out / "slugify").returncode == 0
    (vault / "skills" / "slugify" / "skill.py").write_text(SKILL + "\nX = 1\n")  # not gated
    data = gv.ok("--json", "export", str(tmp_path / "again")).json()
    assert data["skipped"] == [{"name": "slugify", "reason": CODE_UNVERIFIED}]
    assert not (tmp_path / "again" / "slugify").exists()


def test_import_a_claude_skills_folder_keeps_keys_and_files(gv: Runner, vault: Path,
                                                           tmp_path: Path) -> None:
    skills = claude_folder(tmp_path / "project")
    before = {p.relative_to(skills).as_posix(): p.read_bytes() for p in skills.rglob("*")
              if p.is_file()}
    result = gv("--json", "import", str(tmp_path / "project"))
    assert result.code == 0, result.err
    data = result.json()
    assert sorted(i["name"] for i in data["imported"]) == ["code-review", "pdf-tools"]
    renamed = next(r for r in data["renamed"] if r["name"] == "pdf-tools")
    assert (renamed["folder"], renamed["frontmatter"]) == ("PDF_Tools", "pdf_tools")
    reasons = {Path(s["path"]).name: s["reason"] for s in data["skipped"]}
    assert reasons["notes"] == "no SKILL.md"
    assert "invalid skill name 'Bad Name!'" in reasons["broken"]
    assert "UTF-8" in reasons["latin1"]
    assert reasons["linked"] == "symlink: not followed"
    folder = vault / "skills" / "pdf-tools"
    assert (folder / "scripts" / "fill.py").read_text() == "import sys\nprint(sys.argv)\n"
    assert (folder / "references" / "FORMS.md").is_file()
    assert (folder / "logo.png").read_bytes() == b"\x89PNG\r\n\x1a\n\x00\xff"
    shown = gv.ok("--json", "skill", "show", "pdf-tools").json()
    assert shown["kind"] == "procedure" and shown["version"] == 1
    skill_md = (folder / "SKILL.md").read_text()
    assert "x-team: docs" in skill_md and "license: MIT" in skill_md  # unknown keys kept
    assert gv.git("status", "--porcelain", "--", "skills") == ""  # one commit per skill
    log = gv.git("log", "--format=%s")
    assert "gitvault: import pdf-tools v1" in log and "gitvault: import code-review v1" in log
    after = {p.relative_to(skills).as_posix(): p.read_bytes() for p in skills.rglob("*")
             if p.is_file()}
    assert after == before  # the source folder is untouched

    again = snapshot(vault)
    second = gv.ok("--json", "import", str(tmp_path / "project")).json()
    assert second["imported"] == []
    assert sorted(u["name"] for u in second["unchanged"]) == ["code-review", "pdf-tools"]
    assert snapshot(vault) == again


def test_round_trip_changes_nothing_and_extra_keys_only_on_request(
        gv: Runner, vault: Path, tmp_path: Path) -> None:
    gv.ok("import", str(claude_folder(tmp_path / "project")))
    out = tmp_path / "out"
    gv.ok("export", str(out))
    assert "x-team" not in (out / "pdf-tools" / "SKILL.md").read_text()
    for name in ("pdf-tools", "code-review"):
        checked = validate(out / name)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (out / "pdf-tools" / "scripts" / "fill.py").is_file()
    before = snapshot(vault)
    data = gv.ok("--json", "import", str(out)).json()
    assert data["imported"] == [] and len(data["unchanged"]) == 2
    assert snapshot(vault) == before
    kept = tmp_path / "kept"
    gv.ok("export", str(kept), "--keep-extra-keys")
    assert "x-team: docs" in (kept / "pdf-tools" / "SKILL.md").read_text()
    # a second export over the first rewrites only its own files
    exported = (out / "code-review" / "SKILL.md").read_bytes()
    again = gv.ok("--json", "export", str(out)).json()
    assert all(e["written"] == [] for e in again["exported"])
    assert (out / "code-review" / "SKILL.md").read_bytes() == exported


def test_export_never_overwrites_a_file_it_did_not_write(gv: Runner, vault: Path,
                                                         tmp_path: Path) -> None:
    gv.ok("skill", "create", "mine", "--description", "Mine")
    gv.ok("skill", "create", "theirs", "--description", "Theirs")
    out = tmp_path / "skills"
    (out / "theirs").mkdir(parents=True)
    (out / "theirs" / "SKILL.md").write_text("a user's own file\n")
    data = gv.ok("--json", "export", str(out)).json()
    assert [e["name"] for e in data["exported"]] == ["mine"]
    assert "is not the file gitvault exported (left as is)" in data["skipped"][0]["reason"]
    assert (out / "theirs" / "SKILL.md").read_text() == "a user's own file\n"
    (out / "mine" / "SKILL.md").write_text("edited by hand\n")
    gv.ok("skill", "patch", "mine", "--content", "new")
    data = gv.ok("--json", "export", str(out)).json()
    assert data["exported"] == [] and (out / "mine" / "SKILL.md").read_text() == "edited by hand\n"


def test_import_does_not_overwrite_a_changed_skill_unless_update(gv: Runner, vault: Path,
                                                                tmp_path: Path) -> None:
    gv.ok("skill", "create", "code-review", "--description", "Review", "--content", "mine")
    skills = claude_folder(tmp_path / "p")
    data = gv.ok("--json", "import", str(skills)).json()
    reason = next(s["reason"] for s in data["skipped"] if s["path"].endswith("code-review"))
    assert "is in the vault (v1) with other content: left as it is" in reason
    assert "mine" in (vault / "skills" / "code-review" / "SKILL.md").read_text()
    data = gv.ok("--json", "import", str(skills), "--update").json()
    updated = next(i for i in data["imported"] if i["name"] == "code-review")
    assert (updated["version"], updated["op"]) == (2, "patch")
    assert "1. Read the diff." in (vault / "skills" / "code-review" / "SKILL.md").read_text()


def test_an_imported_code_skill_goes_through_the_gate(gv: Runner, vault: Path,
                                                      tmp_path: Path) -> None:
    src = tmp_path / "skills"
    good, bad = src / "slugify", src / "evil"
    for folder, code in ((good, SKILL), (bad, "import os\n\n\ndef evil():\n    os.system('id')\n")):
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {folder.name}\ndescription: d\n---\nx\n")
        (folder / "skill.py").write_text(code)
        (folder / "test_skill.py").write_text(TESTS if folder is good else "")
        (folder / "example.py").write_text(EXAMPLE if folder is good else "")
    (good / "helper.py").write_text("x = 1\n")
    (good / "references").mkdir()
    (good / "references" / "notes.md").write_text("How slugs are made.\n")
    result = gv("--json", "import", str(src))
    assert result.code == 1, result.err
    data = result.json()
    assert [i["name"] for i in data["imported"]] == ["slugify"]
    assert "the verification gate refused 'evil'" in data["refused"][0]["reason"]
    assert (vault / "skills" / ".rejected" / "evil" / "REASONS.md").is_file()
    assert not (vault / "skills" / "evil").exists()
    assert not (vault / "skills" / "slugify" / "helper.py").exists()
    assert not (vault / "skills" / "slugify" / "references").exists()
    skipped = {s["path"]: s["reason"] for s in data["skipped"]}
    assert skipped["slugify/helper.py"] == skipped["slugify/references/notes.md"] == \
        "a code skill folder holds only SKILL.md, skill.py, test_skill.py, example.py"
    shown = gv.ok("--json", "skill", "show", "slugify").json()
    assert shown["kind"] == "code"
    assert gv("doctor").code == 0  # what import stored is a folder the gate accepts


@pytest.mark.parametrize("target", ["AGENTS.md", "CLAUDE.md"])
def test_agents_md_index_most_used_first_within_budget(gv: Runner, vault: Path,
                                                       tmp_path: Path, target: str) -> None:
    for name in ("alpha", "beta", "gamma"):
        gv.ok("skill", "create", name, "--description", f"Do {name} things",
              "--trigger", f"When {name} is needed")
    gv.ok("context", "gamma things", "-k", "1")
    gv.ok("context", "gamma", "-k", "1")
    gv.ok("context", "beta things", "-k", "1")
    path = tmp_path / target
    path.write_text("# My project\n\nOwn notes.\n")
    dest = str(path) if target == "CLAUDE.md" else str(tmp_path)
    data = gv.ok("--json", "export", dest, "--format", "agents-md").json()
    assert data["skills"] == ["gamma", "beta", "alpha"] and data["action"] == "appended"
    text = path.read_text()
    assert text.startswith("# My project\n\nOwn notes.\n")
    assert "- **gamma**: use when When gamma is needed (`vault/skills/gamma/SKILL.md`)" in text
    small = gv.ok("--json", "export", dest, "--format", "agents-md", "--budget", "500").json()
    assert small["chars"] <= 500 and small["omitted"] >= 1 and small["action"] == "updated"
    assert path.read_text().count("gitvault:skills:begin") == 1
    assert "Own notes." in path.read_text()


def test_the_agent_skill_passes_the_validator_and_installs_once(gv: Runner, vault: Path,
                                                                tmp_path: Path) -> None:
    from tests.conftest import REPO

    template = REPO / "templates" / "agent-skill" / "gitvault"
    checked = validate(template)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    text = (template / "SKILL.md").read_text()
    for command in ("gitvault context", "gitvault outcome", "gitvault record-run",
                    "gitvault skill patch", "gitvault tool", "skill_context", "skill_outcome"):
        assert command in text, command
    data = gv.ok("--json", "agent-skill").json()
    installed = vault / ".claude" / "skills" / "gitvault" / "SKILL.md"
    assert data == {"status": "installed", "path": ".claude/skills/gitvault"}
    assert installed.read_text() == text
    assert gv.ok("--json", "agent-skill").json()["status"] == "unchanged"
    codex = tmp_path / "proj" / ".codex" / "skills"
    gv.ok("agent-skill", str(codex))
    assert validate(codex / "gitvault").returncode == 0
    refused = gv("agent-skill", "skills")
    assert refused.code == 2 and "inside the vault's own skills/ folder" in refused.err
    assert not (vault / "skills" / "gitvault").exists()
    installed.write_text("my own edits\n")
    again = gv("agent-skill")
    assert again.code == 2 and "left as is" in again.err
    assert installed.read_text() == "my own edits\n"
    names = [r["name"] for r in gv.ok("--json", "skill", "list").json()["skills"]]
    assert "gitvault" not in names  # never part of the vault's own skills
