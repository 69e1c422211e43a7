"""``gitvault hooks install|uninstall|run HOOK``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gitvault.cli.common import emit, global_options, note, state, warn
from gitvault.hooks.shims import HOOKS

if TYPE_CHECKING:
    from gitvault.vault.facade import Vault


@click.group()
@global_options
def hooks() -> None:
    """Install, remove or run the git hooks that enforce the verification gate."""


def _top() -> tuple[Vault, Path]:
    from gitvault.errors import NotFound

    vault = state().vault()
    if vault.layout.git_dir is None:
        raise NotFound(f"{vault.root} is not in a git repository")
    return vault, vault.top


def _shims(verb: str, nothing: str) -> None:
    from gitvault.hooks import shims

    _, top = _top()
    done = getattr(shims, verb)(top)
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
@click.option("--unsafe-no-sandbox", is_flag=True,
              help="Let the gate run tests where no OS sandbox can be had (recorded).")
@global_options
def run(hook: str, args: tuple[str, ...], unsafe_no_sandbox: bool) -> None:
    """Run HOOK's checks now (what the installed shim does). pre-commit exits 1 with
    the reasons when the staged changes must not be committed."""
    from gitvault.hooks import checks

    vault, top = _top()
    if hook == "post-merge":
        _regate(vault, unsafe_no_sandbox)
        return
    if hook != "pre-commit":
        emit({"hook": hook, "problems": []})
        return
    cfg = vault.config.verify

    def gate(name: str, version: int, files: dict[str, str]) -> Any:
        note(f"pre-commit: no gate evidence for {name} v{version}; running the gate")
        from gitvault.skills.codegate import run_gate

        return run_gate(vault.skills, name, version, files, unsafe_no_sandbox=unsafe_no_sandbox)

    def evidence(sha: str) -> bool:
        return not cfg.enabled or found(sha)

    found = checks.evidence_checker(vault.scan("gate").records, cfg.max_evidence_age_s,
                                    unsafe_no_sandbox, node=vault.node)
    problems = checks.pre_commit(top, vault.vault_rel, gate, evidence)
    emit({"hook": hook, "problems": problems})
    if problems:
        for problem in problems:
            click.echo(f"gitvault: error: pre-commit: {problem}", err=True)
        raise click.exceptions.Exit(1)


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
