"""Merging the remote branch into this clone so that nothing is left to resolve.

- Logs: each node appends only to its own files, and ``merge=union`` covers the rest.
- A skill changed on both sides since the merge base (even where git would merge the
  text cleanly: two different v2s are two versions) is resolved the same way on every
  node, whoever merges: the side with the later ``metadata.updated`` wins (then the
  higher node id, then the higher commit id), and its files are written as version
  max(ours, theirs) + 1. Two nodes resolving the same conflict write identical blobs.
- Any other conflicting file (``gitvault.yaml`` edited on both sides, say) takes the
  remote's content; this clone's commits are kept under
  ``refs/gitvault/rescue/<node>/<timestamp>`` and reported.

No conflict marker is ever committed or left in the tree.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitvault.core import git
from gitvault.core.clock import iso, now
from gitvault.core.files import write_atomic
from gitvault.errors import InvalidInput
from gitvault.skills.model import SKILL_FILE, parse_skill_bytes, render_skill
from gitvault.sync.gitops import EMPTY_TREE, is_ancestor, rev


@dataclass
class Side:
    """One side's last change of a skill."""

    sha: str  # the newest commit touching the skill on this side
    node: str
    version: int
    updated: str
    tree: str  # the skill folder's tree id ('' when the side deleted it)

    def key(self) -> tuple[str, str, str]:
        return (self.updated, self.node, self.sha)

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "commit": self.sha, "version": self.version,
                "updated": self.updated}


@dataclass
class Outcome:
    kind: str  # 'up-to-date' | 'fast-forward' | 'merge'
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    rescued: list[dict[str, Any]] = field(default_factory=list)


def changed_skills(top: Path, base: str, tip: str, skills_dir: str) -> set[str]:
    text = git.out(top, "diff", "--name-only", "-z", "--no-renames", base, tip, "--",
                   skills_dir)
    names = set()
    for path in filter(None, text.split("\0")):
        parts = path[len(skills_dir):].strip("/").split("/")
        if parts[0] in (".archive", ".rejected") and len(parts) > 2:
            names.add(parts[1])
        elif len(parts) > 1:
            names.add(parts[0])
    return names


def _tree(top: Path, sha: str, path: str) -> str:
    proc = git.git(top, "rev-parse", "-q", "--verify", f"{sha}:{path}", check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else ""


def _side(top: Path, tip: str, folder: str) -> Side:
    commits = git.log(top, [folder], rev=tip)
    last = commits[0] if commits else None
    data = git.show_file(top, tip, f"{folder}/{SKILL_FILE}")
    version, updated = 0, ""
    if data is not None:
        try:
            skill = parse_skill_bytes(data, folder)
            version, updated = skill.version, skill.metadata.get("updated", "")
        except InvalidInput:
            pass
    if last is not None and last.version is not None:
        version = max(version, last.version)
    return Side(sha=last.sha if last else tip,
                node=last.trailers.get("Gitvault-Node", "") if last else "",
                version=version, updated=updated, tree=_tree(top, tip, folder))


def _write_folder(top: Path, tip: str, folder: str, version: int) -> None:
    """Replace ``folder`` in the tree and index by its content at ``tip``, SKILL.md
    carrying ``version``."""
    git.git(top, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", folder)
    target = top / folder
    if target.exists():
        shutil.rmtree(target)
    if not _tree(top, tip, folder):
        return
    git.git(top, "restore", f"--source={tip}", "--staged", "--worktree", "--", folder)
    skill_md = target / SKILL_FILE
    # never through a symlink the remote committed (SPEC §1): it could point outside
    data = git.show_file(top, tip, f"{folder}/{SKILL_FILE}")
    if data is not None and not skill_md.is_symlink() and skill_md.is_file():
        try:
            skill = parse_skill_bytes(data, folder)
        except InvalidInput:
            skill = None  # kept as the winner wrote it (doctor reports it); sync goes on
        if skill is not None:
            skill.version = version
            write_atomic(skill_md, render_skill(skill))
    git.git(top, "add", "-A", "--", folder)


def _resolve_skill(top: Path, skills_dir: str, name: str, head: str, theirs: str
                   ) -> dict[str, Any] | None:
    folders = [f"{skills_dir}/{name}", f"{skills_dir}/.archive/{name}"]
    ours_sides = [_side(top, head, f) for f in folders]
    their_sides = [_side(top, theirs, f) for f in folders]
    if [s.tree for s in ours_sides] == [s.tree for s in their_sides]:
        return None  # both sides made the same change
    ours = max(ours_sides, key=lambda s: (bool(s.tree), s.version))
    mine = max(their_sides, key=lambda s: (bool(s.tree), s.version))
    winner_tip, winner, loser = (head, ours, mine) if ours.key() > mine.key() else \
        (theirs, mine, ours)
    version = max(s.version for s in (*ours_sides, *their_sides)) + 1
    for folder in folders:
        _write_folder(top, winner_tip, folder, version)
    return {"skill": name, "version": version, "winner": winner.to_json(),
            "loser": loser.to_json()}


def _log_union(top: Path, path: str) -> None:
    """A log file git left conflicted (no union attribute): every line of both sides,
    ours first, each once."""
    ours = git.show_file(top, ":2", path) or b""
    theirs = git.show_file(top, ":3", path) or b""
    seen = set(ours.splitlines())
    extra = [line for line in theirs.splitlines() if line and line not in seen]
    data = ours + b"".join(line + b"\n" for line in extra)
    write_atomic(top / path, data.decode("utf-8", "replace"))
    git.git(top, "add", "--", path)


def _take_theirs(top: Path, path: str) -> None:
    if git.show_file(top, ":3", path) is None:
        git.git(top, "rm", "-q", "--cached", "--ignore-unmatch", "--", path)
        (top / path).unlink(missing_ok=True)
    else:
        git.git(top, "restore", "--source=MERGE_HEAD", "--staged", "--worktree", "--", path)
        git.git(top, "add", "--", path)


def merge(top: Path, theirs: str, *, skills_dir: str, logs_dir: str, node: str,
          remote: str, record: Callable[[dict[str, Any]], Path]) -> Outcome:
    """Merge commit ``theirs`` (the fetched remote branch) into HEAD. ``record`` appends
    the ``events`` record of a resolved conflict and names its file, which the merge
    commit then holds (a kill before that commit leaves the merge to be redone)."""
    head = rev(top, "HEAD")
    if head is None:  # nothing committed here yet
        git.git(top, "reset", "-q", "--keep", theirs)
        return Outcome("fast-forward")
    if is_ancestor(top, theirs, head):
        return Outcome("up-to-date")
    if is_ancestor(top, head, theirs):
        # no hooks here: sync runs post-merge once, after its last round
        git.git(top, "-c", "core.hooksPath=/dev/null", "merge", "-q", "--ff-only", theirs)
        return Outcome("fast-forward")
    found = git.git(top, "merge-base", head, theirs, check=False)
    base = found.stdout.decode().strip() or EMPTY_TREE  # unrelated: two separate inits
    both = sorted(changed_skills(top, base, head, skills_dir) & changed_skills(top, base, theirs, skills_dir))
    proc = git.git(top, *git._identity_args(top), "merge", "-q", "--no-ff", "--no-commit", "--no-verify",
                   "--allow-unrelated-histories", theirs, check=False)
    if proc.returncode != 0 and rev(top, "MERGE_HEAD") is None:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise InvalidInput(f"git merge failed: {lines[-1] if lines else proc.returncode} "
                           "(commit or stash your own changes to these files)")
    outcome = Outcome("merge")
    for name in both:
        resolved = _resolve_skill(top, skills_dir, name, head, theirs)
        if resolved is not None:
            outcome.conflicts.append(resolved)
            git.git(top, "add", "--", record(resolved).relative_to(top).as_posix())
    unmerged = sorted(set(filter(None, git.out(
        top, "diff", "--name-only", "-z", "--diff-filter=U").split("\0"))))
    rescued_paths = []
    for path in unmerged:
        if path.startswith(logs_dir + "/") and path.endswith(".jsonl"):
            _log_union(top, path)
        else:
            _take_theirs(top, path)
            rescued_paths.append(path)
    if rescued_paths:
        stamp = iso(now()).replace(":", "").replace("-", "")
        ref, n = f"refs/gitvault/rescue/{node}/{stamp}", 1
        while rev(top, ref) not in (None, head):  # two rescues in one second
            n += 1
            ref = f"refs/gitvault/rescue/{node}/{stamp}-{n}"
        git.git(top, "update-ref", ref, head)
        outcome.rescued.append({"ref": ref, "commit": head, "paths": rescued_paths})
    _commit_merge(top, outcome, node, remote)
    return outcome


def _commit_merge(top: Path, outcome: Outcome, node: str, remote: str) -> None:
    trailers = {"Op": "conflict" if outcome.conflicts else "sync", "Node": node}
    if len(outcome.conflicts) == 1:
        trailers["Skill"] = outcome.conflicts[0]["skill"]
        trailers["Version"] = str(outcome.conflicts[0]["version"])
    lines = [f"resolved {c['skill']} as v{c['version']}: {c['winner']['node']} over "
             f"{c['loser']['node']}" for c in outcome.conflicts]
    lines += [f"kept this clone's {', '.join(r['paths'])} under {r['ref']}"
              for r in outcome.rescued]
    message = git.format_message(f"gitvault: sync with {remote}", trailers, "\n".join(lines))
    git.git(top, *git._identity_args(top), "commit", "-q", "--no-gpg-sign", "--no-verify",
            "-F", "-", input=message.encode("utf-8"))


def repair_hand_merges(top: Path, pushed: str | None, *, skills_dir: str, node: str,
                       record: Callable[[dict[str, Any]], Path]) -> list[dict[str, Any]]:
    """A user's own ``git pull`` merged two nodes' changes of a skill (cleanly, or by a
    hand resolution): the result carries a version number both sides already used. For
    each such merge not pushed yet, a skill still as that merge left it is written as
    the resolution sync would have made (version max + 1), in a new commit on top: no
    history is rewritten."""
    span = f"{pushed}..HEAD" if pushed else "HEAD"
    merges = git.out(top, "rev-list", "--merges", span).split()
    done: list[dict[str, Any]] = []
    for sha in reversed(merges):
        commit = git.log(top, ["."], rev=f"{sha}^!")
        if not commit or commit[0].op is not None:
            continue  # gitvault's own merges are resolved already
        parents = git.out(top, "rev-parse", f"{sha}^1", f"{sha}^2").split()
        found = git.git(top, "merge-base", *parents, check=False)
        base = found.stdout.decode().strip() or EMPTY_TREE
        both = changed_skills(top, base, parents[0], skills_dir) & \
            changed_skills(top, base, parents[1], skills_dir)
        for name in sorted(both):
            folders = [f"{skills_dir}/{name}", f"{skills_dir}/.archive/{name}"]
            if [_tree(top, sha, f) for f in folders] != [_tree(top, "HEAD", f) for f in folders]:
                continue  # changed again since: that later version stands
            resolved = _resolve_skill(top, skills_dir, name, parents[0], parents[1])
            if resolved is None:
                continue
            events = record(resolved).relative_to(top).as_posix()
            git.commit_paths(top, [*folders, events],
                             f"gitvault: resolve {name} as v{resolved['version']} "
                             f"(merged by git pull in {sha[:12]})",
                             {"Op": "conflict", "Skill": name,
                              "Version": str(resolved["version"]), "Node": node},
                             verify=False)
            done.append(resolved)
    return done
