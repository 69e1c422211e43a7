"""Vault-level commands: init, status, commit, doctor, demo."""

from __future__ import annotations

from pathlib import Path

import click

from gitvault.cli.common import emit, global_options, state, warn


@click.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option("--remote", metavar="URL", help="Add URL as the 'origin' remote.")
@click.option("--github", is_flag=True,
              help="Also install the scheduled GitHub Actions workflow "
                   "(.github/workflows/gitvault.yml).")
@global_options
def init(directory: str | None, remote: str | None, github: bool) -> None:
    """Create a vault in DIRECTORY (default: here).

    Makes a git repository if there is none, writes gitvault.yaml with every
    default, .gitattributes (union merge for logs) and the folder layout, and
    commits them. Running it again on a vault changes nothing. With --github, also
    the scheduled workflow of health, drift, lifecycle and knowledge checks (never over a
    workflow file of yours).
    """
    from gitvault.vault.init import init_vault

    root, made = init_vault(Path(directory or state().vault_path or "."), remote,
                            github=github)
    emit({"vault": str(root), "created": made},
         lambda: f"initialised vault in {root}: " + ", ".join(made) if made
         else f"vault in {root} is already complete; nothing changed")


@click.command()
@global_options
def status() -> None:
    """Show skills by state, records not yet committed and uncommitted skill changes."""
    report = state().vault().status()
    if report["warnings"]:
        warn(report["warnings"])

    def text() -> str:
        counts = report["skills"]
        lines = [f"vault {report['vault']} (node {report['node']})",
                 f"skills: {counts['active']} active, {counts['stale']} stale, "
                 f"{counts['archived']} archived"]
        pending = report["pending"]
        if pending["records"] or pending["files"]:
            lines.append(f"pending records: {pending['records']} "
                         "(commit them with 'gitvault commit')")
            lines += [f"  {f['path']}: {f['lines']}" for f in pending["files"]]
        else:
            lines.append("pending records: none")
        if report["changes"]:
            lines.append("uncommitted changes:")
            lines += [f"  {c['status']:>2} {c['path']}" for c in report["changes"]]
        return "\n".join(lines)

    emit(report, text)


@click.command()
@click.option("-m", "--message", metavar="MSG", help="Commit message.")
@global_options
def commit(message: str | None) -> None:
    """Commit every pending log record (appending never commits by itself)."""
    sha, lines = state().vault().commit_logs(message)
    emit({"committed": sha is not None, "commit": sha, "records": lines},
         f"committed {lines} record{'s' if lines != 1 else ''} as {sha[:12]}" if sha
         else "nothing to commit")


@click.command()
@click.option("--repair", is_flag=True,
              help="Fix what can be fixed without losing data (missing folders, "
                   ".gitattributes lines, a torn last line moved aside, a stale index.lock).")
@global_options
def doctor(repair: bool) -> None:
    """Check the config, the layout, every skill file and every log line.

    Exits 1 if a problem is left.
    """
    from gitvault.vault.doctor import run_doctor

    vault = state().vault()
    report = run_doctor(vault.layout, repair, vault.node, vault.skills)

    def text() -> str:
        checked = report.checked
        head = (f"checked {checked['config']}, {checked['skills']} skill files, "
                f"{checked['records']} records")
        if not report.problems:
            return head + ": no problems"
        return "\n".join([head + ":", *(f"  {p}" for p in report.problems)])

    emit(report.to_json(), text)
    if not report.ok:
        click.get_current_context().exit(1)


@click.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@global_options
def demo(directory: str | None) -> None:
    """A guided tour: build a vault from the bundled example skills and show what
    gitvault does with it. DIRECTORY defaults to a new temporary folder."""
    from gitvault.vault.demo import run_demo

    result = run_demo(Path(directory) if directory else None,
                      echo=None if state().json else click.echo)
    emit(result)


COMMANDS = [init, status, commit, doctor, demo]
