"""The prompt-request bus commands (agent-skill-bus's names, flags and ``--json``
shapes): enqueue, dispatch, start, complete, fail, stats, locks, dag, dag-create.

Options, handlers and text output live in :mod:`gitvault.cli.hot`, shared with the
click-free fast path; this module turns that table into click commands.
"""

from __future__ import annotations

from typing import Any

import click

from gitvault.cli.common import global_options, state, warn
from gitvault.cli.hot import _ARG_NAMES, COMMANDS, Globals, execute, render


def _build(name: str) -> click.Command:
    spec = COMMANDS[name]

    def callback(**options: Any) -> None:
        current = state()
        g = Globals(current.vault_path, current.node, current.json)
        data, text, warnings = execute(name, g, options)
        warn(warnings)
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
        func = click.argument(_ARG_NAMES[name], metavar=spec.arg)(func)
    func = global_options(func)
    return click.command(name, help=spec.help, short_help=spec.help.split(":")[0].split(" (")[0])(func)


enqueue = _build("enqueue")
dispatch = _build("dispatch")
start = _build("start")
complete = _build("complete")
fail = _build("fail")
stats = _build("stats")
locks = _build("locks")
dag = _build("dag")
dag_create = _build("dag-create")
