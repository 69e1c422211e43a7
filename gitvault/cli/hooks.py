"""``gitvault hooks install|uninstall|run HOOK``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gitvault.cli.common import emit, global_options, note, state, unsafe_no_sandbox_option, warn
from gitvault.hooks.shims import HOOKS
from gitvault.vault.facade import Vault


@click.group()
@global_options
def hooks() -> None:
    """Install, remove or run the git hooks that enforce the verification gate."""


def _top() -> Path:
    """The work tree the hooks belong to: that of --vault / GITVAULT_DIR when given,
    else the one around the current folder (git runs hooks at the top of the work
    tree, which may hold no vault of its own: the vaults may sit in subfolders)."""
    from gitvault.core import git
    from gitvault.core.paths import find_vault
    from gitvault.errors import NotFound

    current = state()
    start = find_vault(current.vault_path) if current.vault_path else None
    if start is None:
        try:
            start = find_vault()
        except NotFound:
            start = Path.cwd()
    top = git.work_tree(start)
    if top is None:
        raise NotFound(f"{start} is not in a git repository")
    return top


def _shims(verb: str, nothing: str) -> None:
    from gitvault.hooks import shims

    done = getattr(shims, verb)(_top())
    emit({"status": f"{verb}ed", "changes": done}, "; ".join(done) if done else nothing)


@hooks.command()
@global_options
def install() -> None:
    """Install the pre-commit, post-merge and post-checkout shims (a hook of your own
    is kept as <hook>.legacy and still runs first)."""
    _shims("install", "hooks already installed; nothing changed")


@hooks.command()
@global_options
def uninstall() -> None:
    """Remove gitvault's shims (never a hook of your own); restore <hook>.legacy."""
    _shims("uninstall", "no gitvault hooks installed; nothing changed")


@hooks.command()
@click.argument("hook", type=click.Choice(HOOKS))
@click.argument("args", nargs=-1)
@unsafe_no_sandbox_option("Let the gate run tests where no OS sandbox can be had (recorded).")
@global_options
def run(hook: str, args: tuple[str, ...], unsafe_no_sandbox: bool) -> None:
    """Run HOOK's checks now (what the installed shim does). pre-commit exits 1 with
    the reasons when the staged changes must not be committed."""
    from gitvault.hooks import checks

    top = _top()
    if hook == "post-merge":
        for vault_rel in _all_vaults(top):
            _regate(Vault(top / vault_rel if vault_rel else top, state().node), unsafe_no_sandbox)
        return
    if hook != "pre-commit":
        emit({"hook": hook, "problems": []})
        return
    staged = checks.staged_changes(top)
    problems: list[str] = []
    for vault_rel in checks.vaults_of(top, [path for _, path in staged]):
        vault = Vault(top / vault_rel if vault_rel else top, state().node)
        problems += _pre_commit(vault, top, vault_rel, staged, unsafe_no_sandbox)
    emit({"hook": hook, "problems": problems})
    if problems:
        for problem in problems:
            click.echo(f"gitvault: error: pre-commit: {problem}", err=True)
        raise click.exceptions.Exit(1)


def _pre_commit(vault: Vault, top: Path, vault_rel: str, staged: list[tuple[str, str]],
                unsafe_no_sandbox: bool) -> list[str]:
    """The pre-commit problems of one vault of the repository."""
    from gitvault.hooks import checks

    vault.commits_records = False  # git is committing: the gate's records stay pending
    cfg = vault.config.verify

    def gate(name: str, version: int, files: dict[str, str]) -> Any:
        note(f"pre-commit: no gate evidence for {name} v{version}; running the gate")
        from gitvault.skills.codegate import run_gate

        return run_gate(vault.skills, name, version, files, unsafe_no_sandbox=unsafe_no_sandbox)

    def evidence(sha: str) -> bool:
        return not cfg.enabled or found(sha)

    found = checks.evidence_checker(vault.scan("gate").records, cfg.max_evidence_age_s,
                                       unsafe_no_sandbox, node=vault.node)
    return checks.pre_commit(top, vault_rel, gate, evidence, staged)


def _all_vaults(top: Path) -> list[str]:
    """Every vault of the repository (the folder of each tracked gitvault.yaml)."""
    from gitvault.core import git

    listed = git.out(top, "ls-files", "-z", "--", "gitvault.yaml", "**/gitvault.yaml")
    folders = {Path(path).parent.as_posix() for path in listed.split("\0") if path}
    return sorted("" if folder == "." else folder for folder in folders)


def _regate(vault: Vault, unsafe_no_sandbox: bool) -> None:
    """post-merge: gate every code skill this node holds no evidence for (those the
    merge brought or changed); until one passes it is not served (SPEC §1 Trust). A
    merge is done already, so a refusal is reported, never an exit status."""
    from gitvault.skills.codegate import verify_stored

    skipped: list[str] = []
    results = verify_stored(vault.skills, None, unsafe_no_sandbox=unsafe_no_sandbox,
                            only_unverified=True, skipped=skipped)
    for skill, result in results:
        verdict = "passed" if result.passed else "REFUSED (not served to agents): " \
            + "; ".join(result.messages())
        note(f"post-merge: gated {skill.name} v{skill.version}: {verdict}")
    emit({"hook": "post-merge", "problems": warn(skipped),
          "gated": [{"name": s.name, "version": s.version, "passed": r.passed,
                     "reasons": r.messages()} for s, r in results]})
