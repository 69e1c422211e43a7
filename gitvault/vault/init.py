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

WORKFLOW = ".github/workflows/gitvault.yml"


def workflow_text(vault_rel: str) -> str:
    """``templates/github/gitvault.yml`` with GITVAULT_DIR set to the vault's folder."""
    return template("github/gitvault.yml").replace(
        'GITVAULT_DIR: "."', f'GITVAULT_DIR: "{vault_rel or "."}"')


def check_workflow(path: Path, text: str) -> bool:
    """Whether the workflow must be written at ``path``: False when it is there as
    gitvault writes it; a different file there is a Conflict (left as it is)."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise Conflict(f"{WORKFLOW} is not a plain file: left as it is")
    if path.is_file():
        if path.read_text("utf-8") != text:
            raise Conflict(f"{WORKFLOW} exists and is not gitvault's workflow: left as it is "
                           "(compare it with templates/github/gitvault.yml)")
        return False
    return True


def init_vault(folder: Path, remote: str | None = None, *, github: bool = False
               ) -> tuple[Path, list[str]]:
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
    workflow = None
    if github:  # checked before anything is written: a refused init changes nothing
        base = top or root
        rel_top = root.relative_to(base).as_posix()
        text = workflow_text("" if rel_top == "." else rel_top)
        workflow = text if check_workflow(base / WORKFLOW, text) else None
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
    if github:
        if workflow is not None:
            write_atomic(top / WORKFLOW, workflow)
            made.append(WORKFLOW)
        paths.append(WORKFLOW)
    node = resolve_node(None, layout.git_dir)
    if git.commit_paths(top, paths, "gitvault: init vault", {"Op": "init", "Node": node},
                            verify=False):
        made.append("first commit")
    made += [f"hooks: {change}" for change in shims.install(top)]
    return root, made
