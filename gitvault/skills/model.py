"""The skill model and the SKILL.md format (Agent Skills front-matter markdown).

gitvault writes only Agent Skills top-level keys; its own fields live in
``metadata`` as strings. Unknown top-level keys of imported files are kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitvault.core.files import FILE_LIMIT, decode_text, parse_error, read_text
from gitvault.core.paths import skill_name
from gitvault.errors import InvalidInput

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
KINDS = ("procedure", "code", "lesson")
PROVENANCES = ("agent", "curator", "human")
STATES = ("active", "stale", "archived")
TOP_LEVEL = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
METADATA_ORDER = ("version", "kind", "provenance", "state", "trigger", "tags", "sensitive",
                  "created", "updated")


def normalize_name(raw: str) -> str:
    """The canonical skill name: lower-cased, ``_`` as ``-``; anything else invalid
    (never a path outside ``skills/``) is an InvalidInput (core/paths.skill_name, the
    one rule, which the hot path uses too)."""
    return skill_name(raw)


def check_description(text: str) -> str:
    text = (text or "").strip()
    if not text:
        raise InvalidInput("a skill needs a description (--description TEXT)")
    if len(text) > 1024:
        raise InvalidInput(f"description is {len(text)} characters; the limit is 1024")
    if "<" in text or ">" in text:
        raise InvalidInput("description must not contain '<' or '>'")
    return text


def check_identity(skill: Skill, where: str, folder: str) -> None:
    """The folder is a skill's identity: a SKILL.md naming another skill is refused."""
    if skill.name != folder:
        raise InvalidInput(f"{where}: SKILL.md names {skill.name!r} but its folder is "
                           f"{folder!r}; the folder is the skill's identity: fix the name "
                           "(see 'gitvault doctor')")


def file_problems(skill: Skill) -> list[str]:
    """What a hand edit may have broken that parsing lets through (SPEC §2.1)."""
    try:
        check_description(skill.description)
    except InvalidInput as exc:
        return [str(exc)]
    return []


def choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise InvalidInput(f"invalid {what} {value!r}: use one of {', '.join(allowed)}")
    return value


class _Metadata:
    """A metadata string of Skill read as an attribute (``skill.kind``), with the
    default it has when SKILL.md does not set it."""

    def __init__(self, default: str) -> None:
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    def __get__(self, skill: Skill, owner: type | None = None) -> str:
        return skill.metadata.get(self.key, self.default)


@dataclass
class Skill:
    """One skill: front-matter fields, ``metadata`` (strings) and the markdown body."""

    name: str
    description: str
    body: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # other top-level keys, kept

    @property
    def version(self) -> int:
        value = self.metadata.get("version", "1")
        return int(value) if value.isascii() and value.isdigit() else 1

    @version.setter
    def version(self, value: int) -> None:
        self.metadata["version"] = str(value)

    kind = _Metadata("procedure")
    state = _Metadata("active")
    provenance = _Metadata("agent")

    @property
    def trigger(self) -> str:
        return self.metadata.get("trigger") or self.description

    @property
    def tags(self) -> list[str]:
        return [t.strip() for t in self.metadata.get("tags", "").split(",") if t.strip()]

    @property
    def sensitive(self) -> bool:
        return self.metadata.get("sensitive", "false").lower() == "true"

    def summary(self) -> dict[str, Any]:
        """The fields of ``skill list --json`` (stats and urn are added by the vault)."""
        return {
            "name": self.name, "description": self.description, "trigger": self.trigger,
            "version": self.version, "kind": self.kind, "state": self.state,
            "provenance": self.provenance, "sensitive": self.sensitive,
            "metadata": dict(self.metadata),
        }


def front_matter(text: str, source: str = SKILL_FILE) -> tuple[dict[str, Any], str]:
    """The YAML front-matter of SKILL.md text as written (a mapping) and the body."""
    import frontmatter
    import yaml

    if not text.lstrip("\ufeff").startswith("---"):
        raise InvalidInput(f"{source}: no front-matter (the file must start with '---')")
    try:
        post = frontmatter.loads(text)
    except yaml.YAMLError as exc:
        raise parse_error(exc, source, "YAML front-matter") from None
    except ValueError as exc:
        raise InvalidInput(f"{source}: malformed front-matter: {exc}") from None
    data = dict(post.metadata)
    if not data:
        raise InvalidInput(f"{source}: empty or malformed front-matter")
    return data, post.content


def parse_skill(text: str, source: str = SKILL_FILE) -> Skill:
    """Parse SKILL.md text; errors name ``source`` and what is wrong."""
    data, body = front_matter(text, source)
    return skill_from(data, body, source)


def skill_from(data: dict[str, Any], body: str, source: str = SKILL_FILE) -> Skill:
    """The Skill of a parsed front-matter mapping and body (checked as parse_skill does)."""
    data = dict(data)
    name = data.pop("name", None)
    description = data.pop("description", None)
    if not isinstance(name, str) or not name:
        raise InvalidInput(f"{source}: front-matter has no 'name'")
    if not NAME_RE.match(name) or len(name) > 64:
        raise InvalidInput(f"{source}: invalid name {name!r} (1-64 of a-z, 0-9 and single hyphens)")
    if not isinstance(description, str) or not description.strip():
        raise InvalidInput(f"{source}: front-matter has no 'description'")
    meta = data.pop("metadata", None) or {}
    if not isinstance(meta, dict):
        raise InvalidInput(f"{source}: 'metadata' must be a mapping")
    metadata = {str(k): _as_text(v) for k, v in meta.items()}
    version = metadata.get("version", "1")
    if not (version.isascii() and version.isdigit()) or int(version) < 1:
        raise InvalidInput(f"{source}: metadata.version must be a positive integer, got {version!r}")
    for key, allowed in (("kind", KINDS), ("state", STATES), ("provenance", PROVENANCES)):
        if key in metadata and metadata[key] not in allowed:
            raise InvalidInput(
                f"{source}: metadata.{key} {metadata[key]!r} is not one of {', '.join(allowed)}")
    return Skill(name=name, description=description.strip(), body=body + "\n" if body else "",
                 metadata=metadata, extra=data)


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)


def render_skill(skill: Skill) -> str:
    """SKILL.md text: Agent Skills keys first, gitvault metadata in a fixed order."""
    import yaml

    front: dict[str, Any] = {"name": skill.name, "description": skill.description}
    for key in TOP_LEVEL[2:]:
        if key == "metadata":
            ordered = {k: skill.metadata[k] for k in METADATA_ORDER if k in skill.metadata}
            ordered.update({k: v for k, v in skill.metadata.items() if k not in ordered})
            front["metadata"] = ordered
        elif key in skill.extra:
            front[key] = skill.extra[key]
    front.update({k: v for k, v in skill.extra.items() if k not in front})
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=88)
    body = skill.body if skill.body.endswith("\n") or not skill.body else skill.body + "\n"
    return f"---\n{head}---\n{body}"


def parse_skill_bytes(data: bytes, source: str = SKILL_FILE) -> Skill:
    """Parse SKILL.md bytes (from git, or read raw); non-UTF-8 is an InvalidInput."""
    return parse_skill(decode_text(data, source), source)


def read_skill(folder: Path, root: Path | None = None) -> Skill:
    """The skill in ``folder`` (``skills/<name>``, ``skills/.archive/<name>``, ...).
    Nothing below the vault ``root`` (by default the folder above ``skills/``) is
    followed through a symlink: one is an InvalidInput naming it (SPEC §1)."""
    path = folder / SKILL_FILE
    if root is None:
        root = folder.parents[2] if folder.parent.name.startswith(".") else folder.parents[1]
    return parse_skill(read_text(path, FILE_LIMIT, below=root), str(path))
