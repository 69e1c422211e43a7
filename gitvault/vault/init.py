"""``gitvault init``: create or complete a vault (idempotent)."""

from __future__ import annotations

from pathlib import Path

from gitvault.core import config as config_mod
from gitvault.core import git
from gitvault.core.files import write_atomic
from gitvault.core.paths import VaultLayout, resolve_node
from gitvault.core.shipped import add_gitattributes, template
from gitvault.errors import Conflict, InvalidInput
from gitvault.hooks import shims


def init_vault(folder: Path, remote: str | None = None) -> tuple[Path, list[str]]:
    """Create (or complete) a vault in ``folder``: git repo if none, gitvault.yaml with
    every default, .gitattributes, the folder layout, a first commit. Idempotent: on a
    complete vault it changes nothing. Returns (root, what was created)."""
    root = folder.expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise InvalidInput(f"{root} is a file, not a folder")
    root.mkdir(parents=True, exist_ok=True)
    made: list[str] = []
    top = git.work_tree(root)
    if top is not None and top != root and git.is_ignored(top, root):
        top = None  # a folder the enclosing repository ignores gets a repository of its own
    if top is None:
        git.init_repo(root)
        top = root
        made.append("git repository")
    layout = VaultLayout(root)
    if layout.config.exists():
        config_mod.load(layout.config)  # an existing config must be valid
    else:
        write_atomic(layout.config, template("gitvault.yaml"))
        made.append(layout.rel(layout.config))
    if add_gitattributes(layout):
        made.append(layout.rel(layout.gitattributes))
    for keep in (layout.skills / ".gitkeep", layout.logs / ".gitkeep"):
        if not keep.parent.is_dir():
            keep.parent.mkdir(parents=True)
            keep.touch()
            made.append(layout.rel(keep.parent) + "/")
    if remote:
        have = git.git(top, "remote", "get-url", "origin", check=False)
        if have.returncode != 0:
            git.git(top, "remote", "add", "origin", remote)
            made.append(f"remote origin {remote}")
        elif have.stdout.decode().strip() != remote:
            raise Conflict(f"remote origin is already {have.stdout.decode().strip()}")
    rel = root.relative_to(top).as_posix()
    prefix = "" if rel == "." else rel + "/"
    paths = [f"{prefix}{p}" for p in ("gitvault.yaml", ".gitattributes", "skills/.gitkeep",
                                      "logs/.gitkeep")]
    node = resolve_node(None, layout.git_dir)
    if git.commit_paths(top, paths, "gitvault: init vault", {"Op": "init", "Node": node},
                            verify=False):
        made.append("first commit")
    made += [f"hooks: {change}" for change in shims.install(top)]
    return root, made
