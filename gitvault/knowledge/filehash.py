"""``file``: the sha256 of a file of the repository (a change of content is a diff)."""

from __future__ import annotations

import hashlib
from typing import Any

from gitvault.core.paths import find_git_dir
from gitvault.knowledge.model import Context, LookupFailed, Observation

NETWORK = False


def check(source: dict[str, Any], ctx: Context) -> Observation:
    rel = source["path"]
    git_dir = find_git_dir(ctx.root)
    top = git_dir.parent.resolve() if git_dir is not None and git_dir.name == ".git" \
        else ctx.root.resolve()
    if "\0" in rel:
        raise LookupFailed(f"{rel!r}: a path with a null byte")
    path = (ctx.root / rel).resolve()
    if not path.is_relative_to(top):
        raise LookupFailed(f"{rel}: outside the repository")
    if ".git" in path.relative_to(top).parts:
        raise LookupFailed(f"{rel}: inside .git, which is not part of the repository's files")
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        raise LookupFailed(f"{rel}: no such file") from None
    except OSError as exc:
        raise LookupFailed(f"{rel}: cannot read it ({exc.strerror or exc})") from None
    return Observation(digest, None, f"sha256 {digest[:12]}")
