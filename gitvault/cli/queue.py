"""The hot commands as click commands: ``record-run`` and the prompt-request bus
(agent-skill-bus's names, flags and ``--json`` shapes: enqueue, dispatch, start,
complete, fail, stats, locks, dag, dag-create).

Options, handlers and text output live in :mod:`gitvault.cli.hot`, the table the
click-free path parses too; this module turns each entry into a click command whose
callback runs the same :func:`gitvault.cli.hot.execute`.
"""

from __future__ import annotations

from typing import Any

import click

from gitvault.cli.common import global_options, note, state, warn
from gitvault.cli.hot import COMMANDS, Globals, execute, render


def _build(name: str) -> click.Command:
    spec = COMMANDS[name]

    def callback(**options: Any) -> None:
        current = state()
        g = Globals(current.vault_path, current.node, current.json)
        data, text, warnings = execute(name, g, options)
        warn(warnings)
        for line in g.notices:
            note(line)
        out = render(data, text, current.json)
        if out:
            click.echo(out)

    func: Any = callback
    for opt in reversed(spec.options):
        if opt.metavar is None:
            func = click.option(opt.flag, opt.name, is_flag=True, help=opt.help)(func)
        else:
            func = click.option(opt.flag, opt.name, metavar=opt.metavar, type=opt.kind,
                                default=opt.default, show_default=opt.default not in (None, ""),
                                help=opt.help)(func)
    if spec.arg:
        func = click.argument(spec.arg_name, metavar=spec.arg)(func)
    func = global_options(func)
    return click.command(name, help=spec.help, short_help=spec.summary)(func)


def __getattr__(attr: str) -> click.Command:
    """``enqueue``, ``dag_create``, ...: the click command of that hot command (PEP 562)."""
    name = attr.replace("_", "-")
    if name not in COMMANDS:
        raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
    return _build(name)
