"""``gitvault demo``: the guided tour a newcomer runs first.

It builds a vault from the bundled example skills and walks through what exists
today: versioned skills, the agent tool protocol, rollback, archive, records,
status, commit and doctor, then shows where each file went. Every step prints
the command a user would type for it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitvault import gitrepo, protocol
from gitvault.doctor import run_doctor
from gitvault.errors import InvalidInput
from gitvault.skills import SKILL_FILE, parse_skill, read_text, render_skill
from gitvault.vault import SkillEdit, Vault, init_vault
from gitvault.versions import diff_text

Echo = Callable[[str], None]


def examples_dir() -> Path:
    """The bundled example skills (in the wheel, or in a source checkout)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_examples" / "skills", here.parent / "examples" / "skills"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("the bundled example skills are missing from this installation")


def run_demo(folder: Path | None, echo: Echo | None = None) -> dict[str, Any]:
    say: Echo = echo or (lambda _text: None)
    base = folder or Path(tempfile.mkdtemp(prefix="gitvault-demo-"))
    root = base / "vault"
    if root.exists() and any(root.iterdir()):
        raise InvalidInput(f"{root} already exists and is not empty; give the demo a new folder")

    def step(title: str, command: str) -> None:
        say(f"\n== {title}\n$ {command}")

    step("Create a vault: a git repository with gitvault.yaml, skills/ and logs/",
         f"gitvault init {root}")
    root, made = init_vault(root)
    vault = Vault(root, node="demo")
    say("created: " + ", ".join(made))

    step("Add the example skills (each is a SKILL.md an Agent Skills loader can read)",
         "gitvault skill create NAME --description ... --file body.md")
    for folder_ in sorted(examples_dir().iterdir()):
        example = parse_skill(read_text(folder_ / SKILL_FILE), str(folder_ / SKILL_FILE))
        meta = example.metadata
        skill, _ = vault.create_skill(example.name, SkillEdit(
            content=example.body, description=example.description,
            trigger=meta.get("trigger"), kind=meta.get("kind"),
            provenance=meta.get("provenance"), tags=meta.get("tags"),
            sensitive=meta.get("sensitive") == "true"))
        say(f"  {skill.name:<32} v{skill.version}  {skill.kind}")

    step("An agent learns mid-task and writes a skill through the tool protocol",
         "gitvault tool '{\"action\": \"create\", \"name\": \"retry_with_backoff\", ...}'")
    request = {"action": "create", "name": "retry_with_backoff",
               "trigger": "An HTTP call fails with 429 or 503",
               "content": "Retry with exponential backoff and jitter; honour Retry-After."}
    answer = protocol.handle(vault, request)
    say(f"  -> {answer['status']}: {answer['skill']['name']} v{answer['skill']['version']}")
    again = protocol.handle(vault, request)
    say(f"  the same create again -> {again['status']} (create never overwrites)")

    name = "fix-flaky-pytest"
    step("Improve a skill: a patch is a new version and a git commit",
         f"gitvault skill patch {name} --file better.md")
    old = vault.get_skill(name)
    new, _ = vault.patch_skill(name, SkillEdit(
        content=old.body + "5. Record the seed of a failing random test in the report.\n"))
    step("What changed between versions", f"gitvault skill diff {name} v1 v2")
    say(diff_text(render_skill(vault.read_version(name, 1)), render_skill(new),
                  f"{name}@v1", f"{name}@v2").rstrip())

    step("Roll back: version 1's content comes back as version 3 (history is kept)",
         f"gitvault skill rollback {name} v1")
    rolled = vault.rollback(name, 1)
    step("The history of the skill, from git", f"gitvault skill log {name}")
    for entry in vault.history(name):
        say(f"  v{entry.version}  {entry.op:<9} {entry.sha[:12]}  "
            f"{vault.urn_for(name, entry.version)}")

    step("Archive and restore: a git mv to skills/.archive/, never a delete",
         "gitvault skill archive prefer-small-commits --reason 'merged into a guide'")
    archived = vault.archive("prefer-small-commits", "merged into a guide")
    say(f"  archived as v{archived.version}; "
        f"restored as v{vault.restore('prefer-small-commits').version}")

    step("Every skill operation is also an append-only record; status shows them",
         "gitvault status")
    report = vault.status()
    say(f"  {report['pending']['records']} records pending in "
        + ", ".join(f["path"] for f in report["pending"]["files"]))
    step("Commit the records", "gitvault commit")
    sha, lines = vault.commit_logs()
    say(f"  committed {lines} records as {sha[:12] if sha else '-'}")

    step("Check everything: config, layout, every skill file, every log line",
         "gitvault doctor")
    doctor = run_doctor(vault.layout)
    say(f"  {doctor.checked['skills']} skill files, {doctor.checked['records']} records, "
        f"{len(doctor.problems)} problems")

    step("Where each file went", f"git -C {root} ls-files")
    files = gitrepo.out(root, "ls-files").split()
    for path in files:
        say(f"  {path}")
    commits = len(gitrepo.log(root, ["."]))
    say(f"\n{commits} commits; explore with: cd {root} && gitvault skill list")
    return {
        "vault": str(root),
        "skills": [s.name for s in vault.iter_skills(include_archived=False)],
        "rolledBack": {"name": name, "version": rolled.version},
        "commits": commits,
        "files": files,
        "doctor": doctor.to_json(),
    }
