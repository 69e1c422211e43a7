"""Every command explains itself, and `gitvault --help` lists each with a summary that
matches the command's own help."""

from __future__ import annotations

import click
import pytest

from gitvault.cli.app import LazyGroup, cli
from tests.conftest import Runner


def test_every_lazy_command_has_a_summary_that_fits_its_help() -> None:
    assert set(LazyGroup.summaries) == set(LazyGroup.lazy)
    ctx = click.Context(cli)
    for name in LazyGroup.lazy:
        command = cli.get_command(ctx, name)
        assert command is not None, name
        first = (command.help or "").strip().splitlines()[0].lower()
        summary = LazyGroup.summaries[name].lower().rstrip(".")
        words = [w for w in summary.replace(":", " ").split() if len(w) > 4]
        assert any(w in first for w in words), (name, summary, first)


@pytest.mark.parametrize("name", sorted(LazyGroup.lazy))
def test_each_command_has_help_with_global_options(gv: Runner, name: str) -> None:
    result = gv.ok(name, "--help")
    assert f"Usage: gitvault {name}" in result.out


def test_top_level_help_lists_every_command(gv: Runner) -> None:
    out = gv.ok("--help").out
    for name, summary in LazyGroup.summaries.items():
        assert name in out and summary in out
