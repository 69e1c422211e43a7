"""``gitvault import DIR``: Agent Skills folders (``.claude/skills``, ``.agents/skills``,
``.codex/skills``, or any folder of skill folders) into the vault, each skill one
version and one commit through the :class:`SkillStore`.

Names are normalised and the front-matter name wins over the folder's (the mismatch is
reported); unknown top-level keys and every extra file of a skill folder (scripts/,
references/, ...) are kept; nothing is run. A folder holding ``skill.py`` is a code
skill and goes through the verification gate like ``skill create --kind code``. A skill
already in the vault with other content is left as it is unless ``update`` (then it is
a new version; history keeps the old one). Importing the same folder again, or a folder
``gitvault export`` wrote, changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitvault.core.clock import now_seconds
from gitvault.core.files import read_text, write_atomic
from gitvault.errors import CheckFailed, InvalidInput
from gitvault.gate.scan import FILES as CODE_FILES
from gitvault.gate.scan import FOLDER_FILES
from gitvault.skills import codegate
from gitvault.skills.agentskills import folder_files
from gitvault.skills.model import (
    SKILL_FILE,
    Skill,
    check_description,
    front_matter,
    normalize_name,
    read_skill,
    skill_from,
)

if TYPE_CHECKING:
    from gitvault.skills.store import SkillStore

SOURCES = (".claude/skills", ".agents/skills", ".codex/skills")


def skill_folders(src: Path) -> list[Path]:
    """The skill folders of ``src``: itself when it holds SKILL.md, else its
    sub-folders, and those of the agents' skill folders below it."""
    if not src.is_dir():
        raise InvalidInput(f"{src} is not a folder")
    if (src / SKILL_FILE).is_file():
        return [src]
    found: list[Path] = []
    for base in [src, *(src / rel for rel in SOURCES)]:
        if base.is_dir() and not base.is_symlink():
            found += [p for p in sorted(base.iterdir()) if p.is_dir() and p not in found
                      and not p.name.startswith(".")]
    return found


def import_skills(store: SkillStore, src: Path, *, update: bool = False,
                  unsafe_no_sandbox: bool = False) -> dict[str, Any]:
    """Import every skill folder of ``src``; returns the report of SPEC's ``import``."""
    report: dict[str, Any] = {"imported": [], "unchanged": [], "skipped": [], "renamed": [],
                              "refused": []}
    for folder in skill_folders(src):
        where = str(folder)
        if folder.is_symlink():
            report["skipped"].append({"path": where, "reason": "symlink: not followed"})
            continue
        if not (folder / SKILL_FILE).is_file() or (folder / SKILL_FILE).is_symlink():
            report["skipped"].append({"path": where, "reason": "no SKILL.md"})
            continue
        try:
            _import_one(store, folder, report, update=update, unsafe=unsafe_no_sandbox)
        except CheckFailed as exc:
            report["refused"].append({"path": where, "reason": str(exc)})
        except InvalidInput as exc:
            report["skipped"].append({"path": where, "reason": str(exc)})
        except OSError as exc:  # an unreadable file: this skill is skipped, not the rest
            report["skipped"].append({"path": where, "reason": f"{exc.filename}: "
                                      f"{exc.strerror or exc}"})
    return report


def _parse(folder: Path, report: dict[str, Any]) -> tuple[Skill, set[str]]:
    """The skill of ``folder`` with the front-matter name normalised, and the metadata
    keys its file states itself."""
    source = str(folder / SKILL_FILE)
    data, body = front_matter(read_text(folder / SKILL_FILE), source)
    raw = data.get("name")
    name = normalize_name(str(raw) if raw is not None else folder.name)
    try:
        folder_name = normalize_name(folder.name)
    except InvalidInput:
        folder_name = folder.name
    if name != folder_name or (raw is not None and raw != name):
        report["renamed"].append({"path": str(folder), "folder": folder.name,
                                  "frontmatter": raw, "name": name})
    data["name"] = name
    if isinstance(data.get("description"), str):
        data["description"] = check_description(data["description"])
    meta = data.get("metadata")
    stated = {str(k) for k in meta} if isinstance(meta, dict) else set()
    skill = skill_from(data, body, source)
    is_code = (folder / "skill.py").is_file()
    if skill.metadata.get("kind") == "code" and not is_code:
        raise InvalidInput(f"{source}: kind code but no skill.py beside it")
    stamp = now_seconds()
    defaults = {"version": "1", "kind": "code" if is_code else "procedure",
                "provenance": "human", "state": "active", "trigger": skill.description,
                "tags": "", "sensitive": "false", "created": stamp, "updated": stamp}
    if is_code:
        skill.metadata["kind"] = "code"
    for key, value in defaults.items():
        skill.metadata.setdefault(key, value)
    return skill, stated


def _same(current: Skill, new: Skill, stated: set[str]) -> bool:
    """Whether importing ``new`` would change nothing that its file states."""
    return (current.description == new.description and current.body == new.body
            and all(current.metadata.get(k) == new.metadata.get(k) for k in stated)
            and all(current.extra.get(k) == v for k, v in new.extra.items()))


def _import_one(store: SkillStore, folder: Path, report: dict[str, Any], *, update: bool,
                unsafe: bool) -> None:
    skill, stated = _parse(folder, report)
    skipped: list[dict[str, str]] = []
    extra: dict[str, bytes] = {}
    code: dict[str, str] = {}
    for rel, path in folder_files(folder, skipped):
        if rel == SKILL_FILE:
            continue
        if skill.kind == "code" and rel in CODE_FILES:
            code[rel] = path.read_bytes().decode("utf-8", "replace")
        elif skill.kind == "code":  # the gate judges the folder as shipped (SPEC §5)
            skipped.append({"path": f"{folder.name}/{rel}", "reason": "a code skill folder "
                            f"holds only {', '.join(FOLDER_FILES)}"})
        else:
            extra[rel] = path.read_bytes()
    report["skipped"] += skipped
    with store.locked():
        found = store.find(skill.name)
        if found is not None:
            target, archived = found
            current = read_skill(target)
            files_same = all((target / rel).is_file() and (target / rel).read_bytes() == data
                             for rel, data in [*extra.items(),
                                               *((k, v.encode()) for k, v in code.items())])
            if _same(current, skill, stated) and files_same:
                report["unchanged"].append({"name": skill.name, "path": str(folder)})
                return
            if not update:
                raise InvalidInput(f"skill {skill.name!r} is in the vault (v{current.version}) "
                                   "with other content: left as it is (--update imports it as "
                                   "a new version)")
            if archived:
                raise InvalidInput(f"skill {skill.name!r} is archived in the vault: "
                                   "'gitvault skill restore' it first")
            skill.version = store.next_version(current)
            skill.metadata["created"] = current.metadata.get("created", skill.metadata["created"])
            skill.metadata["updated"] = now_seconds()
            skill.metadata["state"] = "active"
            op = "patch"
        else:
            target = store.layout.skill_dir(skill.name)
            if target.exists():
                raise InvalidInput(f"{store.layout.rel(target)} exists without a SKILL.md: "
                                   "left as it is")
            op = "import"
        _store(store, skill, op, target, extra, code, unsafe)
    report["imported"].append({"name": skill.name, "version": skill.version, "op": op,
                               "path": str(folder),
                               "files": sorted([SKILL_FILE, *extra, *code])})


def _store(store: SkillStore, skill: Skill, op: str, target: Path, extra: dict[str, bytes],
           code: dict[str, str], unsafe: bool) -> None:
    """Gate a code skill, then write the skill and its files as one version."""
    from gitvault.skills.store import SkillEdit

    result = None
    files: dict[str, str] = {}
    if skill.kind == "code":
        edit = SkillEdit(code=code.get("skill.py", ""), tests=code.get("test_skill.py", ""),
                         example=code.get("example.py", ""), unsafe_no_sandbox=unsafe)
        gated, result = codegate.gate_edit(store, skill, edit, None)
        files.update(gated or {})
    binary: list[Path] = []
    for rel, data in extra.items():
        try:
            files[rel] = data.decode("utf-8")
            if files[rel].encode("utf-8") != data or "\r" in files[rel]:
                raise UnicodeDecodeError("utf-8", data, 0, 1, "not kept byte for byte")
        except UnicodeDecodeError:
            files.pop(rel, None)
            if not (target / rel).is_file():
                binary.append(target / rel)
            write_atomic(target / rel, data)
    try:
        store.save(skill, op, files=files, sandbox=result.sandbox if result else None)
    except BaseException:
        for path in binary:
            path.unlink(missing_ok=True)
        raise
    codegate.record_stored(store, skill, result)
