"""``git-ref``: a remote's tag or branch head, by ``git ls-remote``.

``ref: refs/tags/*`` (a pattern) watches the highest tag that is a version; an exact
ref (``refs/heads/main``, the default ``HEAD``) watches the commit it points at.
"""

from __future__ import annotations

import re
from typing import Any

from gitvault.core import git
from gitvault.errors import GitError
from gitvault.knowledge.model import Context, LookupFailed, Observation, is_version

NETWORK = True


NETWORK_URL = re.compile(r"^(https?|ssh|git)://|^[\w.-]+@[\w.-]+:")
LOCAL_NOT_ALLOWED = ("a local repository (a path or file://) is read only where this clone "
                     "allows it: git config gitvault.allow-local-remotes true, or "
                     "GITVAULT_ALLOW_LOCAL_REMOTES=1 (a synced gitvault.yaml cannot make "
                     "gitvault read another repository of this machine)")


def local_remotes_allowed(root: Any) -> bool:
    """Whether this clone (its git config or the environment) lets git-ref sources read
    repositories on this machine."""
    return git.clone_allows(root, "GITVAULT_ALLOW_LOCAL_REMOTES", "gitvault.allow-local-remotes")


def check(source: dict[str, Any], ctx: Context) -> Observation:
    remote, pattern = source["remote"], source.get("ref") or "HEAD"
    if not NETWORK_URL.match(remote) and not local_remotes_allowed(ctx.root):
        raise LookupFailed(f"{remote}: {LOCAL_NOT_ALLOWED}")
    try:
        refs = git.ls_remote(ctx.root, remote, pattern, ctx.timeout)
    except GitError as exc:
        raise LookupFailed(str(exc)) from None
    if not refs:
        raise LookupFailed(f"{remote}: no ref matches {pattern}")
    if "*" not in pattern:
        sha, ref = refs[0]
        return Observation(sha, None, f"{ref.rsplit('/', 1)[-1]} {sha[:12]}")
    names = {ref.removesuffix("^{}").rsplit("/", 1)[-1] for _, ref in refs}
    versions = sorted((name for name in names if is_version(name)), key=_order)
    if not versions:
        raise LookupFailed(f"{remote}: no ref matching {pattern} is a version "
                           f"({', '.join(sorted(names)[:5])})")
    newest = versions[-1]
    return Observation(newest, newest.lstrip("vV"), newest)


def _order(name: str) -> tuple[tuple[int, ...], str]:
    numbers = []
    for part in name.lstrip("vV").replace("-", ".").replace("+", ".").split("."):
        if not part.isdigit():
            break
        numbers.append(int(part))
    return tuple(numbers), name
