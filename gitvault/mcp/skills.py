"""The skills extension of MCP (SEP-2640, ``io.modelcontextprotocol/skills``) over a
vault: entries for ``skills/list`` and ``skills/get`` (the front-matter verbatim, a
complete manifest with sha256 digests and sizes) and the ``skill://<name>/<path>``
resources ``resources/read`` serves.

Only what an agent may use is served: active skills, and code skills only while this
node holds passing gate evidence of its own for their current files
(:func:`unserved_reason`). Files are
read from disk on every request, so a skill patched through ``skill_patch`` is served
as it now is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitvault.errors import GitvaultError, NotFound
from gitvault.skills.agentskills import folder_files, json_safe, sha256, unserved_reason
from gitvault.skills.model import SKILL_FILE, front_matter, normalize_name, read_skill

IDENTIFIER = "io.modelcontextprotocol/skills"
SCHEME = "skill://"
TTL_MS = 0  # skills change under the server (skill_patch): a host re-asks each time
CACHE_SCOPE = "private"
MIME = {".md": "text/markdown", ".py": "text/x-python", ".txt": "text/plain",
        ".json": "application/json", ".yaml": "application/yaml", ".yml": "application/yaml",
        ".sh": "text/x-shellscript", ".png": "image/png", ".jpg": "image/jpeg"}


@dataclass
class Served:
    name: str
    folder: Path
    frontmatter: dict[str, Any]
    files: dict[str, Path]  # path in the skill -> file


def uri(name: str, rel: str = SKILL_FILE) -> str:
    return f"{SCHEME}{name}/{rel}"


def mime_type(rel: str) -> str:
    return MIME.get(Path(rel).suffix.lower(), "application/octet-stream")


def served(vault: Any) -> list[Served]:
    """The skills this server hands out, by name."""
    found = []
    from gitvault.vault import interchange

    trusted = interchange.trusted(vault)
    for skill, folder in interchange.active(vault, skipped=[]):
        if unserved_reason(skill, folder, trusted) is None:
            item = _served_folder(skill.name, folder)
            if item is not None:
                found.append(item)
    return found


def _served_folder(name: str, folder: Path) -> Served | None:
    try:
        data, _ = front_matter((folder / SKILL_FILE).read_bytes().decode("utf-8"),
                               str(folder / SKILL_FILE))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return Served(name, folder, json_safe(data), dict(folder_files(folder)))


def find(vault: Any, name: str) -> Served:
    """The served skill ``name``, or NotFound (unknown, not active, or not verified)."""
    try:
        name = normalize_name(name)
        skill = read_skill(vault.layout.skill_dir(name))
    except (GitvaultError, OSError, ValueError):  # a bad name, no such folder, bad file
        raise NotFound(f"no skill {name!r} is served here") from None
    from gitvault.vault.interchange import trusted

    reason = unserved_reason(skill, vault.layout.skill_dir(skill.name), trusted(vault))
    item = None if reason else _served_folder(skill.name, vault.layout.skill_dir(skill.name))
    if item is None:
        raise NotFound(f"skill {name!r} is not served here: {reason or 'unreadable'}")
    return item


def entry(item: Served) -> dict[str, Any]:
    """A SEP-2640 Skill entry: uri, frontmatter verbatim, complete resources."""
    resources = []
    for rel, path in sorted(item.files.items()):
        data = path.read_bytes()
        resources.append({"uri": uri(item.name, rel), "digest": f"sha256:{sha256(data)}",
                          "size": len(data)})
    return {"uri": uri(item.name), "frontmatter": item.frontmatter, "resources": resources}


def list_result(items: list[Served], next_cursor: str | None = None) -> dict[str, Any]:
    """A ``skills/list`` page: these skills' entries, and ``nextCursor`` while more
    remain."""
    result: dict[str, Any] = {"resultType": "complete", "skills": [entry(s) for s in items],
                              "ttlMs": TTL_MS, "cacheScope": CACHE_SCOPE}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


def split_uri(value: str) -> tuple[str, str]:
    """(skill name, path in the skill) of ``skill://<name>/<path>``; NotFound else."""
    if not isinstance(value, str) or not value.startswith(SCHEME):
        raise NotFound(f"not a skill:// resource: {value!r}")
    name, _, rel = value[len(SCHEME):].partition("/")
    if not name or not rel or rel.startswith("/") or ".." in rel.split("/"):
        raise NotFound(f"not a skill resource: {value!r} (skill://<name>/<path>)")
    return name, rel


def get_result(vault: Any, value: str) -> dict[str, Any]:
    name, rel = split_uri(value)
    if rel != SKILL_FILE:
        raise NotFound(f"{value!r} is not a skill's SKILL.md (skills/get takes "
                       f"skill://<name>/SKILL.md)")
    return {"resultType": "complete", "skill": entry(find(vault, name)), "ttlMs": TTL_MS,
            "cacheScope": CACHE_SCOPE}


def read(vault: Any, value: str) -> tuple[bytes, str]:
    """(bytes, mime type) of a served skill's file; NotFound for anything else."""
    name, rel = split_uri(value)
    item = find(vault, name)
    path = item.files.get(rel)
    if path is None:
        raise NotFound(f"skill {item.name!r} has no file {rel!r}")
    return path.read_bytes(), mime_type(rel)


def resource_list(vault: Any) -> list[dict[str, Any]]:
    """Every served file as a resource (SKILL.md named and described as its skill)."""
    out = []
    for item in served(vault):
        for rel, path in sorted(item.files.items()):
            row: dict[str, Any] = {"uri": uri(item.name, rel), "name": f"{item.name}/{rel}",
                                   "mimeType": mime_type(rel), "size": path.stat().st_size}
            if rel == SKILL_FILE:
                row["name"] = item.name
                row["description"] = str(item.frontmatter.get("description", ""))
            out.append(row)
    return out
