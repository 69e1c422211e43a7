"""The ``gitvault`` command line: a thin layer over the Vault facade.

Library errors become one line on stderr (``gitvault: error: ...``), a JSON
error object on stdout with ``--json``, and the exit code of SPEC §4.
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

import click

from gitvault.cli.common import global_options, reset, state, wants_json
from gitvault.cli.hot import COMMANDS as HOT
from gitvault.cli.report import fail, install_wait_note, report

__all__ = ["cli", "main"]

from gitvault import __version__ as VERSION


class LazyGroup(click.Group):
    """Subcommands live in their own modules, imported only when used (fast --help)."""

    lazy: ClassVar[dict[str, str]] = {
        **{name: f"gitvault.cli.queue:{name.replace('-', '_')}" for name in HOT},
        "skill": "gitvault.cli.skill:skill",
        "health": "gitvault.cli.runs:health",
        "flagged": "gitvault.cli.runs:flagged",
        "drift": "gitvault.cli.runs:drift",
        "dashboard": "gitvault.cli.runs:dashboard",
        "lifecycle": "gitvault.cli.runs:lifecycle",
        "import-bus": "gitvault.cli.runs:import_bus",
        "tool": "gitvault.cli.tool:tool",
        "hooks": "gitvault.cli.hooks:hooks",
        "search": "gitvault.cli.retrieval:search",
        "context": "gitvault.cli.retrieval:context",
        "outcome": "gitvault.cli.retrieval:outcome",
        "watch": "gitvault.cli.knowledge:watch",
        "diffs": "gitvault.cli.knowledge:diffs",
        "extract": "gitvault.cli.llm:extract",
        "curate": "gitvault.cli.llm:curate",
        "improve": "gitvault.cli.llm:improve",
        "improvements": "gitvault.cli.llm:improvements",
        "export": "gitvault.cli.interchange:export",
        "import": "gitvault.cli.interchange:import_",
        "mcp": "gitvault.cli.mcp_cmd:mcp",
        "agent-skill": "gitvault.cli.interchange:agent_skill",
        "sync": "gitvault.cli.sync:sync",
        "ci": "gitvault.cli.ci:ci",
    }

    # What `gitvault --help` lists, so it need not import every command module.
    # tests/cli/test_help.py checks each line against the command's own help.
    summaries: ClassVar[dict[str, str]] = {
        **{name: spec.summary for name, spec in HOT.items()},
        "skill": "Create, change and inspect skills.",
        "health": "Per-skill health: averages, trend, fails in a row, flags.",
        "flagged": "Skills that are flagged: low average, declining or broken.",
        "drift": "Skills whose average dropped since last week.",
        "dashboard": "Skill health at a glance (terminal or one HTML file).",
        "lifecycle": "Mark unused or failing skills stale.",
        "import-bus": "Import an agent-skill-bus data folder.",
        "tool": "Run one skill_patch JSON request (for agents).",
        "hooks": "Install, remove or run the git hooks.",
        "search": "Rank skills for a query.",
        "context": "The skills block to inject for a prompt.",
        "outcome": "Record whether an injection's task succeeded.",
        "watch": "Check the knowledge sources that are due; route changes.",
        "diffs": "Knowledge diff statistics, or the unprocessed diffs.",
        "extract": "Extract a reusable skill from a session summary with the LLM.",
        "curate": "Curate skills with the LLM: merge overlapping ones.",
        "improve": "Improve flagged skills with the LLM; judge earlier changes.",
        "improvements": "The improvement records (as skill-improvements.md).",
        "export": "Export active skills as Agent Skills folders or an index.",
        "import": "Import Agent Skills folders (.claude/skills, ...).",
        "mcp": "Serve the vault to an MCP client on stdio.",
        "agent-skill": "Install the agent-facing gitvault skill for an agent.",
        "sync": "Commit pending records, fetch, merge and push.",
        "ci": "The GitHub workflow's steps: report and issues.",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy and name in self.summaries:
                rows.append((name, self.summaries[name]))
                continue
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(formatter.width - 6 - len(name))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            module, _, attr = self.lazy[name].partition(":")
            cmd = getattr(__import__(module, fromlist=[attr]), attr)
            return cmd if isinstance(cmd, click.Command) else None
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(VERSION, "--version", prog_name="gitvault")
@global_options
def cli() -> None:
    """gitvault: procedural memory for AI agents, kept in a git repository.

    Skills are SKILL.md files (Agent Skills format); runs, outcomes and other
    records are append-only JSONL under logs/. Every change to a skill is a git
    commit, so versions, rollback and sync come from git.

    Start with 'gitvault demo', or 'gitvault init' in a folder of your own.
    """
    state()


def _register() -> None:
    from gitvault.cli import vault_cmds

    for command in vault_cmds.COMMANDS:
        cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> Any:
    """Run the click CLI on ``argv`` and exit with its code; every error goes through
    the one reporter (:mod:`gitvault.cli.report`)."""
    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args
    install_wait_note()
    if not args:
        args = ["--help"]
    reset()
    try:
        code = cli.main(args=args, prog_name="gitvault", standalone_mode=False)
    except click.UsageError as exc:
        hint = ""
        if exc.ctx is not None and exc.ctx.command_path:
            hint = f" (see '{exc.ctx.command_path} --help')"
        sys.exit(fail("usage", exc.format_message() + hint, 2, as_json or wants_json()))
    except click.exceptions.Abort:  # click's name for Ctrl-C (and EOF at a prompt)
        sys.exit(report(KeyboardInterrupt(), as_json or wants_json()))
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        sys.exit(fail("usage", exc.format_message(), exc.exit_code, as_json or wants_json()))
    except BrokenPipeError:
        sys.exit(1)
    except (Exception, KeyboardInterrupt) as exc:
        sys.exit(report(exc, as_json or wants_json()))
    sys.exit(code if isinstance(code, int) else 0)
