"""``gitvault export`` and ``gitvault import``: Agent Skills folders and the
AGENTS.md / CLAUDE.md index in and out of the vault (SPEC §4, Interchange)."""

from __future__ import annotations

from pathlib import Path

import click

from gitvault.cli.common import emit, global_options, note, state, unsafe_no_sandbox_option, warn


@click.command("export")
@click.argument("directory", type=click.Path(file_okay=True, dir_okay=True))
@click.option("--format", "fmt", type=click.Choice(["agent-skills", "agents-md"]),
              default="agent-skills", show_default=True,
              help="agent-skills: one folder per skill; agents-md: the index for an "
                   "AGENTS.md or CLAUDE.md.")
@click.option("--keep-extra-keys", is_flag=True,
              help="Also write top-level keys that are not Agent Skills ones (the "
                   "reference validator refuses them).")
@click.option("--budget", type=int, default=8000, show_default=True, metavar="CHARS",
              help="agents-md: the index's size in characters.")
@global_options
def export(directory: str, fmt: str, keep_extra_keys: bool, budget: int) -> None:
    """Export the active skills as Agent Skills folders, or as an agents-md index.

    DIRECTORY/<name>/SKILL.md (and the skill's other files) for Claude Code, Codex or
    any Agent Skills loader (e.g. .claude/skills); a code skill only with this node's
    passing gate evidence for its current files. Only the six Agent Skills top-level
    keys are written, gitvault's fields as strings under metadata. A file there that
    gitvault did not write is never overwritten, and nothing is deleted.

    With --format agents-md: one compact index (name, when to use, path), most-used
    first, within --budget characters, written between gitvault's markers in
    DIRECTORY/AGENTS.md (or DIRECTORY itself when it names a .md file, such as
    CLAUDE.md); the rest of that file is kept."""
    from gitvault.vault import interchange

    vault = state().vault()
    skipped: list[str] = []
    if fmt == "agents-md":
        data = interchange.export_index(vault, Path(directory), budget, skipped)
        warn(skipped)
        emit(data, f"{data['action']} {data['file']}: {len(data['skills'])} skills"
                   + (f" ({data['omitted']} more did not fit in {budget} characters)"
                      if data["omitted"] else ""))
        return
    result = interchange.export_folders(vault, Path(directory),
                                        keep_extra_keys=keep_extra_keys, skipped=skipped)
    warn(skipped)

    def text() -> str:
        lines = [f"exported {e['name']} v{e['version']} -> {e['path']}"
                 + ("" if e["written"] else " (unchanged)") for e in result["exported"]]
        lines += [f"skipped {s['name']}: {s['reason']}" for s in result["skipped"]]
        return "\n".join(lines) or "no skills to export"

    emit(result, text)


@click.command("import")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--update", is_flag=True,
              help="A skill already in the vault with other content becomes a new version "
                   "(default: left as it is, and reported).")
@unsafe_no_sandbox_option("Code skills: run the gate's tests without an OS sandbox where "
                          "none can be had (recorded).")
@global_options
def import_(directory: str, update: bool, unsafe_no_sandbox: bool) -> None:
    """Import Agent Skills folders (.claude/skills, .agents/skills, .codex/skills).

    DIRECTORY is a folder of skill folders, one skill folder, or a project holding
    .claude/skills, .agents/skills or .codex/skills. Names are normalised; the
    front-matter name wins over the folder's (reported). Unknown top-level keys and
    every other file of a skill folder are kept, and nothing is run: a folder with
    skill.py is a code skill and goes through the verification gate. Each imported
    skill is one version and one commit; what was skipped is reported with the reason.
    Importing the same folder again changes nothing. Exit 1 when the gate refused one."""
    from gitvault.skills.skillimport import import_skills

    vault = state().vault()
    result = import_skills(vault.skills, Path(directory), update=update,
                           unsafe_no_sandbox=unsafe_no_sandbox)

    def text() -> str:
        lines = [f"imported {i['name']} v{i['version']} from {i['path']}"
                 for i in result["imported"]]
        lines += [f"unchanged {u['name']} ({u['path']})" for u in result["unchanged"]]
        lines += [f"renamed {r['folder']} -> {r['name']} (the front-matter name wins)"
                  for r in result["renamed"]]
        lines += [f"skipped {s['path']}: {s['reason']}" for s in result["skipped"]]
        return "\n".join(lines) or "no skill folders found"

    emit(result, text)
    if result["refused"]:
        for refused in result["refused"]:
            note(f"refused {refused['path']}: {refused['reason']}")
        # The report above is the JSON answer; the refusal is exit 1 (SPEC §5).
        click.echo(f"gitvault: error: the verification gate refused "
                   f"{len(result['refused'])} skill(s); the others were imported", err=True)
        raise click.exceptions.Exit(1)


@click.command("agent-skill")
@click.argument("directory", required=False, default=".claude/skills",
                type=click.Path(file_okay=False))
@global_options
def agent_skill(directory: str) -> None:
    """Install the agent-facing gitvault skill into an agent's skills folder.

    Writes DIRECTORY/gitvault/SKILL.md (default: .claude/skills, for Claude Code; use
    .agents/skills or .codex/skills for others): it teaches an agent when to call
    context, outcome, record-run and skill patch / tool. Never into the vault's own
    skills/ (it would compete in retrieval), and never over a file it would change."""
    from gitvault.core.paths import find_vault
    from gitvault.core.shipped import shipped
    from gitvault.errors import NotFound
    from gitvault.skills.agentskills import AGENT_SKILL
    from gitvault.skills.agentskills import install_agent_skill as install

    try:
        vault_skills: Path | None = find_vault(state().vault_path) / "skills"
    except NotFound:
        vault_skills = None  # no vault here: nothing to keep it out of
    source = shipped("templates") / "agent-skill" / AGENT_SKILL
    target, action = install(source, Path(directory), vault_skills)
    emit({"status": action, "path": str(target)}, f"{action} {target / 'SKILL.md'}")
