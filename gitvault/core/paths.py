"""Every path a vault uses, in one small value class; vault discovery; node ids."""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path

from gitvault.errors import InvalidInput, NotFound

CONFIG_NAME = "gitvault.yaml"
SKILLS_DIR = "skills"
ARCHIVE_DIR = ".archive"  # skills/.archive/<name>/: archived skills, never deleted
REJECTED_DIR = ".rejected"  # skills/.rejected/<name>/: code skills the gate refused
LOGS_DIR = "logs"
STREAMS = ("runs", "events", "queue", "knowledge", "gate", "improvements", "health")
NODE_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class VaultLayout:
    """The folders and files of one vault rooted at ``root`` (a plain class: this
    module is on the path of record-run, which must not pay for dataclasses)."""

    __slots__ = ("root",)

    def __init__(self, root: Path) -> None:
        self.root = root

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VaultLayout) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    def __repr__(self) -> str:
        return f"VaultLayout({self.root!r})"

    @property
    def config(self) -> Path:
        return self.root / CONFIG_NAME

    @property
    def gitattributes(self) -> Path:
        return self.root / ".gitattributes"

    @property
    def skills(self) -> Path:
        return self.root / SKILLS_DIR

    @property
    def archive(self) -> Path:
        return self.skills / ARCHIVE_DIR

    @property
    def rejected(self) -> Path:
        return self.skills / REJECTED_DIR

    @property
    def logs(self) -> Path:
        return self.root / LOGS_DIR

    def skill_dir(self, name: str, *, archived: bool = False) -> Path:
        return (self.archive if archived else self.skills) / name

    # Paths as git names them (relative to the work tree top, forward slashes), for code
    # that reads the index or history; ``vault_rel`` is the vault folder there ('' or '.'
    # when the vault is the top).
    @staticmethod
    def git_path(vault_rel: str, *parts: str) -> str:
        """``parts`` under the vault folder ``vault_rel``, as git names the path."""
        return "/".join([*([vault_rel] if vault_rel not in ("", ".") else []), *parts])

    @staticmethod
    def skill_git_dir(vault_rel: str, name: str, *, archived: bool = False) -> str:
        """``skills/<name>`` or ``skills/.archive/<name>`` as git names it."""
        return VaultLayout.git_path(vault_rel, SKILLS_DIR, *([ARCHIVE_DIR] if archived else []), name)

    def stream(self, stream: str) -> Path:
        if stream not in STREAMS:
            raise InvalidInput(f"unknown log stream {stream!r}")
        return self.logs / stream

    def log_file(self, stream: str, node: str, moment: datetime) -> Path:
        """Where ``node`` appends ``stream`` records written at ``moment``."""
        return self.stream(stream) / f"{moment.year:04d}-{moment.month:02d}" / f"{node}.jsonl"

    @property
    def git_dir(self) -> Path | None:
        """The .git folder of the work tree holding the vault (None outside git)."""
        return find_git_dir(self.root)

    @property
    def cache(self) -> Path | None:
        """Derived state, never committed: ``.git/gitvault/``."""
        git_dir = self.git_dir
        return git_dir / "gitvault" if git_dir is not None else None

    def rel(self, path: Path) -> str:
        """``path`` relative to the vault root, with forward slashes."""
        return path.relative_to(self.root).as_posix()


def find_git_dir(start: Path) -> Path | None:
    """The git dir of the work tree containing ``start``, without running git."""
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():
            text = dot_git.read_text("utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                target = Path(text[len("gitdir:"):].strip())
                return target if target.is_absolute() else (folder / target).resolve()
    return None


def find_vault(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """The vault root: ``explicit`` (``--vault``), else ``GITVAULT_DIR``, else the nearest
    folder holding gitvault.yaml, walking up from ``cwd``."""
    chosen = explicit if explicit else os.environ.get("GITVAULT_DIR") or None
    if chosen:
        root = Path(chosen).expanduser().resolve()
        if not (root / CONFIG_NAME).is_file():
            raise NotFound(f"no vault at {root} (no {CONFIG_NAME}); run 'gitvault init {root}'")
        return root
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_NAME).is_file():
            return folder
    raise NotFound(
        f"no vault in {here} or any parent folder (no {CONFIG_NAME}); "
        "run 'gitvault init' or pass --vault PATH")


def skill_name(raw: str) -> str:
    """A skill name as every input takes it (SPEC §2.1): lower-cased, ``_`` as ``-``;
    anything else invalid is InvalidInput (the same rule as ``skills.model``, here
    for the hot path, which does not import the skills package)."""
    name = raw.strip().lower().replace("_", "-") if isinstance(raw, str) else ""
    if not name or len(name) > 64 or not NODE_RE.match(name):
        raise InvalidInput(
            f"invalid skill name {raw!r}: use 1-64 lowercase letters, digits and single "
            "hyphens (e.g. debug-swift-actor-isolation)")
    return name


def host_node() -> str:
    """The host name reduced to ``[a-z0-9-]``."""
    reduced = re.sub(r"[^a-z0-9]+", "-", os.uname().nodename.lower()).strip("-")
    return reduced[:64].strip("-") or "node"


def _valid_node(value: str, origin: str) -> str:
    if len(value) > 64 or not NODE_RE.match(value):
        raise InvalidInput(f"invalid node id {value!r} from {origin}: use lowercase letters, "
                           "digits and single hyphens")
    return value


def resolve_node(explicit: str | None, git_dir: Path | None) -> str:
    """``--node``, else ``GITVAULT_NODE``, else ``git config gitvault.node`` as git reads
    it for the repository of ``git_dir`` (``VaultLayout.git_dir``; None outside git:
    system and global config only), else the host name. git runs only when the first
    two are absent."""
    if explicit:
        return _valid_node(explicit, "--node")
    from_env = os.environ.get("GITVAULT_NODE")
    if from_env:
        return _valid_node(from_env, "GITVAULT_NODE")
    from gitvault.core.git import config_value  # a subprocess: only when it is needed

    configured = config_value(git_dir, "gitvault.node")
    if configured:
        return _valid_node(configured, "git config gitvault.node")
    return host_node()
