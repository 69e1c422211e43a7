"""Code skills through the verification gate (SPEC §5): gate an edit before it is
stored, record the gate's verdicts, quarantine a refused skill in
``skills/.rejected/<name>/``, re-verify stored code skills.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitvault.core import git, records
from gitvault.core.clock import now_seconds
from gitvault.core.files import write_atomic
from gitvault.core.paths import VaultLayout
from gitvault.core.redact import redact
from gitvault.errors import InvalidInput
from gitvault.gate import verify as gate
from gitvault.gate.scan import FILES, folder_reasons
from gitvault.skills.model import SKILL_FILE, Skill, render_skill

if TYPE_CHECKING:
    from gitvault.skills.store import SkillEdit, SkillStore

def code_files(folder: Path) -> dict[str, str]:
    """skill.py, test_skill.py and example.py of a skill folder (those present), their
    exact bytes (no newline translation; undecodable bytes as surrogate escapes, which
    the scan refuses)."""
    return {n: (folder / n).read_bytes().decode("utf-8", "surrogateescape")
            for n in FILES if (folder / n).is_file()}

def evidence_for(files: dict[str, str]) -> str:
    """The evidence sha256 of a skill's three code files (what a gate record holds)."""
    return gate.evidence_hash(files)

LEDGER = "gate-evidence"  # .git/gitvault/gate-evidence: sha256 lines this clone's gate passed

def trusted_evidence(layout: VaultLayout, node: str) -> set[str]:
    """The file sets (evidence sha256) this node's own gate passed (SPEC §1 Trust): its
    passing gate records that this clone's gate passed here too (its ledger). A record
    naming this node arrives with every sync like any other, so a remote can forge one:
    a clone that has gated nothing yet (a fresh clone) holds no evidence, and its
    post-merge hook or 'skill verify --all' gates its code skills."""
    hashes = gate.trusted_hashes(records.scan(layout.stream("gate")).records, node)
    if layout.cache is None:
        return hashes  # no git repository: nothing is synced into it
    try:
        here = set((layout.cache / LEDGER).read_text("ascii").split())
    except (OSError, UnicodeDecodeError):
        here = set()  # never gated in this clone: no record here is its own for sure
    return hashes & here

def remember(layout: VaultLayout, node: str, sha256: str) -> None:
    """Note in this clone's ledger that its gate passed ``sha256``."""
    if layout.cache is None:
        return
    ledger = layout.cache / LEDGER
    lines = f"{sha256}\n"
    ledger.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, lines.encode("ascii"))
    finally:
        os.close(fd)

def is_trusted(folder: Path, trusted: set[str]) -> bool:
    """Whether the code skill in ``folder`` may be handed to an agent: the folder holds
    nothing the gate would refuse beside its files (SPEC §5, the folder as shipped), and
    this node holds passing gate evidence for exactly those files."""
    try:
        files = code_files(folder)
    except OSError:
        return False
    return gate.evidence_hash(files) in trusted and not folder_reasons(folder)

def unverified_skills(layout: VaultLayout, node: str, skills: list[Skill]) -> list[Skill]:
    """The code skills of ``skills`` (in ``skills/``, not archived) without evidence."""
    code = [s for s in skills if s.kind == "code" and s.state != "archived"]
    if not code:
        return []
    trusted = trusted_evidence(layout, node)
    return [s for s in code if not is_trusted(layout.skill_dir(s.name), trusted)]

def run_gate(store: SkillStore, name: str, version: int, files: dict[str, str], *,
             unsafe_no_sandbox: bool = False, folder: Path | None = None) -> Any:
    """Run the gate on ``files`` (and on what else ``folder`` holds) and append its
    ``verify`` record; returns the result."""
    result = gate.verify(files, store.config.verify, store.config.sandbox,
                         unsafe_no_sandbox=unsafe_no_sandbox, folder=folder)
    store.append("gate", gate.gate_record("verify", result, name, version,
                                         store.urn_for(name, version)))
    if result.passed:
        remember(store.layout, store.node, result.sha256)
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
                      unsafe_no_sandbox=edit.unsafe_no_sandbox,
                      folder=folder if folder is not None else store.layout.skill_dir(skill.name))
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

def verify_stored(store: SkillStore, name: str | None, *, unsafe_no_sandbox: bool = False,
                  only_unverified: bool = False, skipped: list[str] | None = None
                  ) -> list[tuple[Skill, Any]]:
    """Run the gate on one stored code skill (or every one when ``name`` is None; with
    ``only_unverified``, those this node holds no evidence for, as after a merge)."""
    if name is not None:
        skills = [store.get(name)]
        if skills[0].kind != "code":
            raise InvalidInput(f"{skills[0].name!r} is a {skills[0].kind}, not a code skill")
    else:
        skills = [s for s in store.iter_all(skipped=skipped) if s.kind == "code"]
    if only_unverified:
        skills = unverified_skills(store.layout, store.node, skills)
    results = []
    for skill in skills:
        found = store.find(skill.name)
        folder = found[0] if found is not None else None
        files = code_files(folder) if folder is not None else {}
        results.append((skill, run_gate(store, skill.name, skill.version, files,
                                        unsafe_no_sandbox=unsafe_no_sandbox, folder=folder)))
    return results
