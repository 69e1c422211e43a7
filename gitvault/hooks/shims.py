"""The hook shims (SPEC §6): install and uninstall them in a repository.

A shim carries the line :data:`MARK`, so install never overwrites a hook of the user's
own (it is kept as ``<hook>.legacy`` and chained) and uninstall removes only shims.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from gitvault.core import git
from gitvault.core.files import write_atomic
from gitvault.core.shipped import shipped
from gitvault.errors import InvalidInput

HOOKS = ("pre-commit", "post-merge", "post-checkout")
MARK = "# gitvault-hook-shim"
PLACEHOLDER = "__GITVAULT_PYTHON__"


def shim_folder() -> Path:
    """The shipped shims (``hooks/`` of the source, ``gitvault/_hooks`` in a wheel)."""
    return shipped("hooks")


def shim_text(hook: str, python: str | None = None) -> str:
    text = (shim_folder() / hook).read_text("utf-8")
    return text.replace(PLACEHOLDER, shlex.quote(python or sys.executable))


def is_shim(path: Path) -> bool:
    try:
        return MARK in path.read_text("utf-8", errors="replace")
    except OSError:
        return False


class HooksPathSet(InvalidInput):
    """``core.hooksPath`` is set: that folder belongs to another tool (or to the user),
    so gitvault installs nothing there (as pre-commit refuses)."""


def hooks_path(top: Path) -> str:
    """``core.hooksPath`` as configured ('' when unset)."""
    configured = git.git(top, "config", "--get", "core.hooksPath", check=False)
    return configured.stdout.decode().strip()


def hooks_dir(top: Path) -> Path:
    """Where git looks for hooks (``core.hooksPath`` honoured)."""
    path = hooks_path(top)
    if path:
        folder = Path(path).expanduser()
        return folder if folder.is_absolute() else top / folder
    common = git.out(top, "rev-parse", "--git-common-dir").strip()
    base = Path(common) if Path(common).is_absolute() else top / common
    return base / "hooks"


def missing(top: Path) -> bool:
    """Whether any gitvault shim is absent. Reads files only (no git process) unless the
    repository sets core.hooksPath."""
    dot_git = top / ".git"
    config = dot_git / "config"
    folder = None
    if dot_git.is_dir() and config.is_file() and \
            "hookspath" not in config.read_text("utf-8", errors="replace").lower():
        folder = dot_git / "hooks"
    if folder is None and hooks_path(top):
        # Another tool's folder: gitvault's checks are there if its pre-commit calls them.
        try:
            return "gitvault" not in (hooks_dir(top) / "pre-commit").read_text("utf-8", "replace")
        except OSError:
            return True
    folder = folder or hooks_dir(top)
    return any(not (folder / hook).exists() or not is_shim(folder / hook) for hook in HOOKS)


def install(top: Path) -> list[str]:
    """Install the shims; a user's own hook is kept as ``<hook>.legacy``. Returns what
    changed (empty when everything was in place). Refused (HooksPathSet, nothing
    changed) when ``core.hooksPath`` points git at a folder of its own."""
    configured = hooks_path(top)
    if configured:
        raise HooksPathSet(
            f"core.hooksPath is set ({configured}), so git runs the hooks of that folder, "
            "which gitvault leaves alone: either run 'git config --unset-all core.hooksPath' "
            "and then 'gitvault hooks install', or have your hook manager call 'gitvault "
            "hooks run pre-commit' (and post-merge, post-checkout)")
    folder = hooks_dir(top)
    folder.mkdir(parents=True, exist_ok=True)
    done = []
    for hook in HOOKS:
        path = folder / hook
        text = shim_text(hook)
        if path.exists() and not is_shim(path):
            legacy = folder / f"{hook}.legacy"
            if legacy.exists():
                raise InvalidInput(f"{path} is not a gitvault hook and {legacy.name} exists "
                                   "already; move one of them away first")
            os.replace(path, legacy)
            done.append(f"kept your {hook} hook as {legacy.name}")
        if path.exists() and path.read_text("utf-8", errors="replace") == text:
            continue
        write_atomic(path, text, mode=0o755)
        done.append(f"installed {hook}")
    return done


def uninstall(top: Path) -> list[str]:
    """Remove the shims (never a user's own hook) and put any ``.legacy`` hook back."""
    folder = hooks_dir(top)
    done = []
    for hook in HOOKS:
        path = folder / hook
        if path.exists() and is_shim(path):
            path.unlink()
            done.append(f"removed {hook}")
        legacy = folder / f"{hook}.legacy"
        if legacy.exists() and not path.exists():
            os.replace(legacy, path)
            done.append(f"restored your {hook} hook")
    return done
