"""Every command is documented: it has help, each of its options has help, and README.md
shows it in use (as sqlite-utils' and llm's tests/test_docs.py do).

The commands are found by walking the click group itself (lazy commands included), so
a new command or option cannot be added without its documentation."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest

from gitvault.cli.app import cli
from tests.conftest import REPO, Runner


def walk(command: click.Command, path: tuple[str, ...], ctx: click.Context
         ) -> Iterator[tuple[tuple[str, ...], click.Command, click.Context]]:
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, (*path, name)
            yield from walk(sub, (*path, name), click.Context(sub, parent=ctx, info_name=name))


ROOT = click.Context(cli, info_name="gitvault")
COMMANDS = {path: (command, ctx) for path, command, ctx in walk(cli, (), ROOT)}
SUBCOMMANDS = [path for path in COMMANDS if path]


def test_the_walk_finds_lazy_and_nested_commands() -> None:
    for path in [("record-run",), ("enqueue",), ("init",), ("skill", "create"),
                 ("skill", "search"), ("hooks", "install")]:
        assert path in COMMANDS, path
    assert len(SUBCOMMANDS) >= 40


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda p: " ".join(p) or "gitvault")
def test_every_command_and_option_has_help(path: tuple[str, ...]) -> None:
    command, ctx = COMMANDS[path]
    assert (command.help or "").strip(), f"gitvault {' '.join(path)} has no help text"
    assert command.get_short_help_str(200).strip()
    bare = [param.opts[0] for param in command.get_params(ctx)
            if isinstance(param, click.Option) and not param.hidden
            and not (param.help or "").strip()]
    assert bare == [], f"gitvault {' '.join(path)}: options without help"


@pytest.mark.parametrize("path", SUBCOMMANDS, ids=" ".join)
def test_every_command_prints_its_help(gv: Runner, path: tuple[str, ...]) -> None:
    result = gv.ok(*path, "--help")
    assert result.out.startswith(f"Usage: gitvault {' '.join(path)} "), result.out
    assert result.err == ""


def readme_code() -> str:
    """The code in README.md: fenced blocks and inline code spans, with shell line
    continuations joined."""
    text = (REPO / "README.md").read_text("utf-8")
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    spans = re.findall(r"`([^`\n]+)`", prose)
    return "\n".join([*blocks, *spans]).replace("\\\n", " ")


CODE = readme_code()
GLOBALS = r"(?:\s+--(?:json|vault\s+\S+|node\s+\S+))*"


def in_readme(path: tuple[str, ...]) -> bool:
    """``gitvault <path>`` (global options may come first), or for a subcommand
    ``<group> <name>``, as whole words in README.md's code."""
    forms = [r"gitvault" + GLOBALS + r"\s+" + r"\s+".join(map(re.escape, path))]
    if len(path) > 1:
        forms.append(r"\s+".join(map(re.escape, path[-2:])))
    return any(re.search(rf"(?<![\w-]){form}(?![\w-])", CODE) for form in forms)


# Not yet in README.md. strict: once README shows one, its entry here must go.
UNDOCUMENTED: set[tuple[str, ...]] = set()


@pytest.mark.parametrize("path", [
    pytest.param(path, marks=pytest.mark.xfail(strict=True, reason="not in README.md yet"))
    if path in UNDOCUMENTED else path for path in SUBCOMMANDS], ids=" ".join)
def test_every_command_appears_in_the_readme(path: tuple[str, ...]) -> None:
    assert in_readme(path), f"README.md never shows `gitvault {' '.join(path)}`"


def test_the_readme_check_tells_commands_apart() -> None:
    assert in_readme(("dag-create",)) and in_readme(("skill", "create"))
    assert not in_readme(("no-such-command",))
    assert not in_readme(("skill", "no-such-command"))
    assert set(SUBCOMMANDS) >= UNDOCUMENTED  # no stale entry for a command that is gone
