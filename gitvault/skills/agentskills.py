"""Agent Skills interchange out of a vault (SPEC §4 "Interchange"): skill folders an
Agent Skills loader (Claude Code, Codex, ``skills-ref``) takes as they are, and the
compact index for an ``AGENTS.md`` / ``CLAUDE.md``.

What is handed out is what an agent may use: active skills, code skills only with this
node's own passing gate evidence for their current files (:func:`unserved_reason`). Export
never deletes a file and never overwrites one it did not write: it keeps the sha256 of
what it wrote in ``DIR/.gitvault-export.json`` and leaves a file changed by someone
else as it is, reporting it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

from gitvault.core.files import write_atomic
from gitvault.errors import InvalidInput
from gitvault.skills.model import SKILL_FILE, TOP_LEVEL, Skill, render_skill

FORMATS = ("agent-skills", "agents-md")
MANIFEST = ".gitvault-export.json"
INDEX_FILE = "AGENTS.md"
DEFAULT_BUDGET = 8000
BEGIN = "<!-- gitvault:skills:begin -->"
END = "<!-- gitvault:skills:end -->"
SKIP_NAMES = ("__pycache__",)
CODE_UNVERIFIED = ("code skill: unverified (this node holds no passing gate evidence for "
                   "its current files; 'gitvault skill verify NAME' gates it)")


def unserved_reason(skill: Skill, folder: Path | None = None,
                    trusted: set[str] | None = None) -> str | None:
    """Why ``skill`` is not handed to an agent (export, MCP, the index), or None when it
    is: only active skills, and a code skill only while this node holds passing gate
    evidence of its own (``trusted``, from codegate.trusted_evidence) for exactly the
    files in ``folder`` (SPEC §1, Trust)."""
    if skill.state != "active":
        return f"state {skill.state} (only active skills are handed out)"
    if skill.kind == "code":
        from gitvault.skills.codegate import is_trusted

        if folder is None or trusted is None or not is_trusted(folder, trusted):
            return CODE_UNVERIFIED
    return None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def folder_files(folder: Path, skipped: list[dict[str, str]] | None = None
                 ) -> Iterator[tuple[str, Path]]:
    """(path relative to ``folder``, path) of every regular file below it, sorted,
    SKILL.md included; symlinks are never followed (each is reported in ``skipped``),
    nor are hidden names and ``__pycache__`` taken."""
    found: list[tuple[str, Path]] = []
    for base, dirs, files in os.walk(folder, followlinks=False):
        here = Path(base)
        for name in list(dirs):
            path = here / name
            if name.startswith(".") or name in SKIP_NAMES or path.is_symlink():
                dirs.remove(name)
                _note(skipped, folder, path, "symlink: not followed" if path.is_symlink()
                      else None)
        for name in files:
            path = here / name
            if path.is_symlink():
                _note(skipped, folder, path, "symlink: not followed")
            elif not name.startswith(".") and not name.endswith(".pyc") and path.is_file():
                found.append((path.relative_to(folder).as_posix(), path))
    yield from sorted(found)


def _note(skipped: list[dict[str, str]] | None, folder: Path, path: Path,
          reason: str | None) -> None:
    if skipped is not None and reason is not None:
        skipped.append({"path": f"{folder.name}/{path.relative_to(folder).as_posix()}",
                        "reason": reason})


def export_text(skill: Skill, keep_extra_keys: bool = False) -> str:
    """SKILL.md as exported: the six Agent Skills top-level keys (others only with
    ``keep_extra_keys``), metadata values as strings, block-style YAML."""
    extra = skill.extra if keep_extra_keys else {k: v for k, v in skill.extra.items()
                                                 if k in TOP_LEVEL}
    return render_skill(replace(skill, extra=extra))


def json_safe(value: Any) -> Any:
    """A front-matter value as JSON: dates as ISO text, other scalars kept."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


# -- export DIR ------------------------------------------------------------------------
def _manifest(dest: Path) -> dict[str, str]:
    path = dest / MANIFEST
    if not path.is_file() or path.is_symlink():
        return {}
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}


def _refusal(target: Path, data: bytes, ours: str | None, base: Path) -> str | None:
    """Why ``target`` (below ``base``) may not be written with ``data``, or None."""
    for parent in [target, *target.parents]:
        if parent == base.parent:
            break
        if parent.is_symlink():
            return f"{parent} is a symlink (not followed)"
    if not target.exists():
        return None
    if not target.is_file():
        return f"{target} exists and is not a file"
    current = sha256(target.read_bytes())
    if current == sha256(data) or current == ours:
        return None
    return f"{target} exists and is not the file gitvault exported (left as is)"


def export_folders(skills: list[tuple[Skill, Path]], dest: Path, *,
                   keep_extra_keys: bool = False, trusted: set[str] | None = None
                   ) -> dict[str, Any]:
    """Write each served skill of ``skills`` ((skill, its vault folder)) to
    ``dest/<name>/``; a skill whose files cannot all be written is skipped whole."""
    if dest.exists() and not dest.is_dir():
        raise InvalidInput(f"{dest} is not a folder")
    manifest = _manifest(dest)
    exported: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for skill, folder in skills:
        reason = unserved_reason(skill, folder, trusted)
        if reason is not None:
            skipped.append({"name": skill.name, "reason": reason})
            continue
        files = {SKILL_FILE: export_text(skill, keep_extra_keys).encode("utf-8")}
        files.update({rel: path.read_bytes() for rel, path in folder_files(folder)
                      if rel != SKILL_FILE})
        refused = [why for rel, data in files.items()
                   if (why := _refusal(dest / skill.name / rel, data,
                                       manifest.get(f"{skill.name}/{rel}"), dest)) is not None]
        if refused:
            skipped.append({"name": skill.name, "reason": "; ".join(refused)})
            continue
        changed = []
        for rel, data in files.items():
            target = dest / skill.name / rel
            if not target.is_file() or target.read_bytes() != data:
                write_atomic(target, data)
                changed.append(rel)
            manifest[f"{skill.name}/{rel}"] = sha256(data)
        exported.append({"name": skill.name, "version": skill.version,
                         "path": str(dest / skill.name), "files": sorted(files),
                         "written": changed})
    if exported:
        write_atomic(dest / MANIFEST, json.dumps(
            {"writtenBy": "gitvault export", "files": dict(sorted(manifest.items()))},
            indent=1) + "\n")
    return {"format": "agent-skills", "dir": str(dest), "exported": exported,
            "skipped": skipped}


# -- export DIR --format agents-md -------------------------------------------------------
def index_block(skills: list[tuple[Skill, Path]], usage: dict[str, int], base: Path,
                budget: int = DEFAULT_BUDGET, trusted: set[str] | None = None
                ) -> tuple[str, list[str], int]:
    """The index of the served skills, most-used first, within ``budget`` characters:
    (text, names listed, how many did not fit)."""
    head = [BEGIN, "## Skills (gitvault)", "",
            "Procedural memory kept by gitvault. When a task matches a skill's \"use when\", "
            "read its SKILL.md and follow it; afterwards report how it went "
            "(`gitvault outcome` or `gitvault record-run`).", ""]
    tail = [END]
    size = sum(len(line) + 1 for line in head + tail) + 80  # room for the "more" line
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < size:
        raise InvalidInput(f"--budget {budget!r} is too small: at least {size} characters")
    served = [(s, f) for s, f in skills if unserved_reason(s, f, trusted) is None]
    served.sort(key=lambda pair: (-usage.get(pair[0].name, 0), pair[0].name))
    lines: list[str] = []
    listed: list[str] = []
    for skill, folder in served:
        when = _plain(skill.trigger)
        when = when if len(when) <= 160 else when[:157] + "..."
        line = f"- **{skill.name}**: use when {when} (`{_rel(folder / SKILL_FILE, base)}`)"
        if size + len(line) + 1 > budget:
            break
        size += len(line) + 1
        lines.append(line)
        listed.append(skill.name)
    omitted = len(served) - len(listed)
    if omitted:
        lines.append(f"- ... {omitted} more: `gitvault search QUERY` finds them.")
    if not served:
        lines.append("- (no active skills yet)")
    return "\n".join([*head, *lines, "", *tail]) + "\n", listed, omitted


def _plain(text: str) -> str:
    """A skill's text (untrusted) on one line of the index: secrets redacted, no HTML
    (so no comment that could end gitvault's markers), no backtick to break a code span."""
    from html import escape

    from gitvault.core.redact import redact

    return escape(" ".join(redact(text).split()), quote=False).replace("`", "'")


def _rel(path: Path, base: Path) -> str:
    try:
        return os.path.relpath(path, base)
    except ValueError:
        return str(path)


def index_target(dest: Path) -> Path:
    """The file ``--format agents-md`` writes: ``dest`` itself when it names a .md
    file, else ``dest/AGENTS.md``."""
    return dest if dest.suffix.lower() == ".md" else dest / INDEX_FILE


def write_index(target: Path, block: str) -> str:
    """Put ``block`` into ``target``: between the gitvault markers when present, else
    appended after the file's own text, which is always kept. Returns what it did."""
    if target.is_symlink():
        raise InvalidInput(f"{target} is a symlink (not followed)")
    old = target.read_text("utf-8") if target.is_file() else None
    if old is None:
        write_atomic(target, block)
        return "created"
    start = old.find(BEGIN)
    end = old.find(END, start + len(BEGIN)) if start >= 0 else -1
    if 0 <= start < end:
        new = old[:start] + block.rstrip("\n") + old[end + len(END):]
        new = new if new.endswith("\n") else new + "\n"
        action = "updated" if new != old else "unchanged"
    else:
        new = old.rstrip("\n") + "\n\n" + block if old.strip() else block
        action = "appended"
    if new != old:
        write_atomic(target, new)
    return action


# -- the agent-facing skill ---------------------------------------------------------------
AGENT_SKILL = "gitvault"


def install_agent_skill(source: Path, skills_dir: Path, vault_skills: Path | None
                        ) -> tuple[Path, str]:
    """Copy the agent-facing skill folder ``source`` to ``skills_dir/gitvault/``:
    (folder, "installed" | "unchanged"). Refused inside the vault's own ``skills/``
    (it would compete in retrieval) and over a file it would change."""
    target = skills_dir / AGENT_SKILL
    if vault_skills is not None:
        inside = target.resolve()
        base = vault_skills.resolve()
        if inside == base or base in inside.parents:
            raise InvalidInput(f"{target} is inside the vault's own skills/ folder, where the "
                               "agent skill would compete in retrieval: give an agent's "
                               "skills folder (such as .claude/skills)")
    files = {rel: path.read_bytes() for rel, path in folder_files(source)}
    refused = [why for rel, data in files.items()
               if (why := _refusal(target / rel, data, None, skills_dir)) is not None]
    if refused:
        raise InvalidInput("; ".join(refused).replace("the file gitvault exported",
                                                      "gitvault's agent skill"))
    changed = False
    for rel, data in files.items():
        if not (target / rel).is_file():
            write_atomic(target / rel, data)
            changed = True
    return target, "installed" if changed else "unchanged"
