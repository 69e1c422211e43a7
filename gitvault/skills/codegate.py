"""Code skills through the verification gate (SPEC §5): gate an edit before it is
stored, record the gate's verdicts, quarantine a refused skill in
``skills/.rejected/<name>/``, re-verify stored code skills.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitvault.core import git
from gitvault.core.clock import now_seconds
from gitvault.core.files import write_atomic
from gitvault.core.redact import redact
from gitvault.errors import InvalidInput
from gitvault.gate import verify as gate
from gitvault.gate.scan import FILES
from gitvault.skills.model import SKILL_FILE, Skill, render_skill

if TYPE_CHECKING:
    from gitvault.skills.store import SkillEdit, SkillStore

def code_files(folder: Path) -> dict[str, str]:
    """skill.py, test_skill.py and example.py of a skill folder (those present)."""
    return {n: (folder / n).read_text("utf-8") for n in FILES if (folder / n).is_file()}

def run_gate(store: SkillStore, name: str, version: int, files: dict[str, str], *,
             unsafe_no_sandbox: bool = False) -> Any:
    """Run the gate on ``files`` and append its ``verify`` record; returns the result."""
    result = gate.verify(files, store.config.verify, store.config.sandbox,
                         unsafe_no_sandbox=unsafe_no_sandbox)
    store.append("gate", gate.gate_record("verify", result, name, version,
                                         store.urn_for(name, version)))
    return result

def gate_edit(store: SkillStore, skill: Skill, edit: SkillEdit, folder: Path | None
          ) -> tuple[dict[str, str] | None, Any]:
    """Gate a code skill before it is stored; a refusal quarantines it and raises."""
    if skill.kind != "code":
        if edit.code_files():
            raise InvalidInput(f"{skill.name!r} is a {skill.kind}, not a code skill; "
                               "--code, --tests and --example are for code skills")
        return None, None
    if folder is None and not edit.code_files():
        raise InvalidInput("a code skill needs --code F, --tests F and --example F: the "
                           "verification gate checks them before it is stored")
    files = code_files(folder) if folder is not None else {}
    files.update(edit.code_files())
    if not store.config.verify.enabled:
        return files, None
    result = run_gate(store, skill.name, skill.version, files,
                           unsafe_no_sandbox=edit.unsafe_no_sandbox)
    if not result.passed:
        reject(store, skill, files, result)
        from gitvault.errors import CheckFailed

        raise CheckFailed(f"the verification gate refused {skill.name!r} (quarantined in "
                          f"skills/.rejected/{skill.name}/): "
                          + redact("; ".join(result.messages())))
    return files, result

def record_stored(store: SkillStore, skill: Skill, result: Any) -> None:
    if result is not None:
        store.append("gate", gate.gate_record("store", result, skill.name, skill.version,
                                             store.urn_for(skill.name, skill.version)))

def reject(store: SkillStore, skill: Skill, files: dict[str, str], result: Any) -> None:
    """Quarantine a refused code skill in skills/.rejected/<name>/ with its reasons.
    The reasons quote the untrusted tests' output: they are redacted (SPEC §3) before
    they reach REASONS.md and the commit message, both committed and replicated."""
    folder = store.layout.rejected / skill.name
    for name, text in files.items():
        write_atomic(folder / name, text)
    write_atomic(folder / SKILL_FILE, render_skill(skill))
    reasons = redact("\n".join(f"- {m}" for m in result.messages()))
    write_atomic(folder / "REASONS.md",
                 f"# {skill.name} v{skill.version}: refused by the verification gate\n\n"
                 f"{now_seconds()}, sandbox {result.sandbox}, sha256 {result.sha256}\n\n"
                 f"{reasons}\n")
    git.commit_paths(store.top, [store.git_path(folder)],
                         f"gitvault: reject {skill.name} v{skill.version}",
                         {"Op": "reject", "Skill": skill.name,
                          "Version": str(skill.version), "Node": store.node}, reasons)

def verify_stored(store: SkillStore, name: str | None, *, unsafe_no_sandbox: bool = False
                  ) -> list[tuple[Skill, Any]]:
    """Run the gate on one stored code skill (or every one when ``name`` is None)."""
    if name is not None:
        skills = [store.get(name)]
        if skills[0].kind != "code":
            raise InvalidInput(f"{skills[0].name!r} is a {skills[0].kind}, not a code skill")
    else:
        skills = [s for s in store.iter_all() if s.kind == "code"]
    results = []
    for skill in skills:
        found = store.find(skill.name)
        files = code_files(found[0]) if found is not None else {}
        results.append((skill, run_gate(store, skill.name, skill.version, files,
                                             unsafe_no_sandbox=unsafe_no_sandbox)))
    return results
