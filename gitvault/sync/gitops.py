"""The git steps of a sync, each one ``git`` process through :mod:`gitvault.core.git`.

A push is the compare-and-swap of SPEC §4.3: it is never forced, so it succeeds only
when the remote branch is still what this clone merged. A sync killed at any moment
leaves at worst stale ``*.lock`` files and a half-done merge; :func:`recover` clears
both (only while no git process works in this repository) so a rerun needs nothing else.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from gitvault.core import git
from gitvault.errors import GitError

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's tree of no files
REJECTED = ("[rejected]", "non-fast-forward", "fetch first", "failed to update ref",
            "cannot lock ref", "[remote rejected]", "stale info")


def rev(top: Path, name: str) -> str | None:
    proc = git.git(top, "rev-parse", "-q", "--verify", f"{name}^{{commit}}", check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def branch(top: Path) -> str:
    proc = git.git(top, "symbolic-ref", "-q", "--short", "HEAD", check=False)
    name = proc.stdout.decode().strip()
    if proc.returncode != 0 or not name:
        raise GitError("sync needs a branch checked out (HEAD is detached)")
    return name


def remote_ref(remote: str, name: str) -> str:
    return f"refs/remotes/{remote}/{name}"


def check_remote(top: Path, remote: str) -> None:
    proc = git.git(top, "remote", "get-url", remote, check=False)
    if proc.returncode != 0:
        raise GitError(f"no git remote named {remote!r} (add one with 'git remote add "
                       f"{remote} URL' or 'gitvault init --remote URL')")


def fetch(top: Path, remote: str, name: str) -> str | None:
    """Fetch ``remote``'s branch ``name`` into its remote-tracking ref; its sha, or None
    while the remote has no such branch (an empty remote: the first push makes it)."""
    proc = git.git(top, "fetch", "-q", "--no-tags", remote,
                   f"+refs/heads/{name}:{remote_ref(remote, name)}", check=False)
    if proc.returncode != 0:
        text = proc.stderr.decode("utf-8", "replace")
        if "couldn't find remote ref" in text or "could not find remote ref" in text:
            return None
        lines = text.strip().splitlines()
        raise GitError(f"git fetch {remote} failed: {lines[-1] if lines else proc.returncode}")
    return rev(top, remote_ref(remote, name))


def push(top: Path, remote: str, name: str, sha: str) -> str | None:
    """Push ``sha`` to ``remote``'s branch ``name`` without force: None when it landed,
    else what git said when the remote refused it because it moved meanwhile or its
    ref was locked by another push (fetch, merge and try again)."""
    proc = git.git(top, "push", "-q", "--no-verify", remote, f"{sha}:refs/heads/{name}",
                   check=False)
    if proc.returncode == 0:
        git.git(top, "update-ref", remote_ref(remote, name), sha, check=False)
        return None
    text = proc.stderr.decode("utf-8", "replace")
    if any(mark in text for mark in REJECTED):
        return text
    lines = text.strip().splitlines()
    raise GitError(f"git push {remote} failed: {lines[-1] if lines else proc.returncode}")


def held_lock(rejection: str) -> str | None:
    """The lock file a refused push names (``Unable to create '...lock': File exists``):
    another push holds it, or a push that crashed on the remote left it behind."""
    match = re.search(r"Unable to create '([^']+\.lock)': File exists", rejection)
    return match.group(1) if match else None


def is_ancestor(top: Path, older: str, newer: str) -> bool:
    return git.git(top, "merge-base", "--is-ancestor", older, newer,
                   check=False).returncode == 0


def git_dir(top: Path) -> Path:
    path = Path(git.out(top, "rev-parse", "--git-dir").strip())
    return path if path.is_absolute() else top / path


def _git_busy_in(top: Path) -> bool:
    """Whether a git process runs with its working folder inside ``top``."""
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        return git.git_processes_running()
    real = os.path.realpath(top)
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit() or entry.name == str(os.getpid()):
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            if comm != "git" and not comm.startswith("git-"):
                continue
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == real or cwd.startswith(real + os.sep):
            return True
    return False


def recover(top: Path) -> list[str]:
    """Undo what a killed sync (or git) left behind: stale lock files and a merge in
    progress. Returns what it did. Touches nothing while git works in ``top``."""
    gdir = git_dir(top)
    locks = [gdir / "index.lock", gdir / "HEAD.lock", gdir / "packed-refs.lock",
             gdir / "ORIG_HEAD.lock", *sorted((gdir / "refs").rglob("*.lock"))]
    done: list[str] = []
    present = [p for p in locks if p.exists()]
    if present and not _git_busy_in(top):
        for path in present:
            try:
                path.unlink()
                done.append(f"removed stale {path.relative_to(gdir).as_posix()}")
            except OSError:
                pass
    if (gdir / "MERGE_HEAD").exists():
        git.git(top, "merge", "--abort", check=False)
        if (gdir / "MERGE_HEAD").exists():
            git.git(top, "reset", "-q", "--merge", check=False)
        done.append("undid an interrupted merge (redone now)")
    return done
