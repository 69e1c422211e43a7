"""``gitvault init``: create or complete a vault (idempotent)."""

from __future__ import annotations

import shutil
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
    """``templates/github/gitvault.yml`` with GITVAULT_DIR set to the vault's folder and
    gitvault pinned to this version (the job can write the repository: it installs
    what wrote the vault, not whatever a package index serves later)."""
    from gitvault import __version__

    return template("github/gitvault.yml").replace(
        'GITVAULT_DIR: "."', f'GITVAULT_DIR: "{vault_rel or "."}"').replace(
        '"gitvault==VERSION"', f'"gitvault=={__version__}"')


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
    complete vault it changes nothing. Returns (root, what was created).

    Everything that can refuse is checked before anything is written (a remote that
    looks like an option, an origin that differs, an invalid config), and a failure
    later on removes what this call made: a refused init leaves nothing."""
    root = folder.expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise InvalidInput(f"{root} is a file, not a folder")
    if remote is not None:
        check_remote(remote)
    top = git.work_tree(root) if root.exists() else _enclosing_work_tree(root)
    if top is not None and top != root and git.is_ignored(top, root):
        top = None  # a folder the enclosing repository ignores gets a repository of its own
    workflow: str | None = None
    if github:  # --github: the workflow goes to the top of the work tree
        base = top or root
        rel_top = root.relative_to(base).as_posix()
        text = workflow_text("" if rel_top == "." else rel_top)
        workflow = text if check_workflow(base / WORKFLOW, text) else None
    layout = VaultLayout(root)
    if layout.config.exists():
        config_mod.load(layout.config)  # an existing config must be valid
    if remote and top is not None:
        have = git.git(top, "remote", "get-url", "origin", check=False)
        if have.returncode == 0 and have.stdout.decode().strip() != remote:
            raise Conflict(f"remote origin is already {have.stdout.decode().strip()}")
    created: list[Path] = []  # what to remove if a later step fails
    try:
        made, top = _init(root, top, layout, remote, created, github, workflow)
    except BaseException:
        for path in reversed(created):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        raise
    made += [f"hooks: {change}" for change in _install_hooks(top)]
    return root, made


def check_remote(remote: str) -> None:
    """A remote URL is never an option to git (``--upload-pack=...``): refuse it."""
    if not remote.strip() or remote.lstrip().startswith("-") or "\0" in remote:
        raise InvalidInput(f"invalid remote {remote!r}: give a URL or a path (a value "
                           "starting with '-' would be read by git as an option)")


def _enclosing_work_tree(root: Path) -> Path | None:
    for parent in root.parents:
        if parent.exists():
            return git.work_tree(parent)
    return None


def _init(root: Path, top: Path | None, layout: VaultLayout, remote: str | None,
          created: list[Path], github: bool = False, workflow: str | None = None
          ) -> tuple[list[str], Path]:
    made: list[str] = []
    if not root.exists():
        missing = root
        while not missing.parent.exists():
            missing = missing.parent
        root.mkdir(parents=True)
        created.append(missing)
    if top is None:
        if not (root / ".git").exists():
            created.append(root / ".git")
        git.init_repo(root)
        top = root
        made.append("git repository")
    if not layout.config.exists():
        created.append(layout.config)
        write_atomic(layout.config, template("gitvault.yaml"))
        made.append(layout.rel(layout.config))
    had_attributes = layout.gitattributes.exists()
    if add_gitattributes(layout):
        if not had_attributes:
            created.append(layout.gitattributes)
        made.append(layout.rel(layout.gitattributes))
    for keep in (layout.skills / ".gitkeep", layout.logs / ".gitkeep"):
        if not keep.parent.is_dir():
            keep.parent.mkdir(parents=True)
            created.append(keep.parent)
            keep.touch()
            made.append(layout.rel(keep.parent) + "/")
    if remote:
        have = git.git(top, "remote", "get-url", "origin", check=False)
        if have.returncode != 0:
            git.git(top, "remote", "add", "--", "origin", remote)
            made.append(f"remote origin {remote}")
    rel = root.relative_to(top).as_posix()
    prefix = "" if rel == "." else rel + "/"
    paths = [f"{prefix}{p}" for p in ("gitvault.yaml", ".gitattributes", "skills/.gitkeep",
                                      "logs/.gitkeep")]
    if github:
        if workflow is not None:
            missing = top / WORKFLOW
            while not missing.parent.exists():
                missing = missing.parent
            created.append(missing)
            write_atomic(top / WORKFLOW, workflow)
            made.append(WORKFLOW)
        paths.append(WORKFLOW)
    node = resolve_node(None, layout.git_dir)
    if git.commit_paths(top, paths, "gitvault: init vault", {"Op": "init", "Node": node},
                            verify=False):
        made.append("first commit")
    return made, top


def _install_hooks(top: Path) -> list[str]:
    try:
        return shims.install(top)
    except shims.HooksPathSet as exc:
        return [f"not installed: {exc}"]
