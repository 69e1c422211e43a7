"""``gitvault tool``: the skill_patch JSON protocol for agents."""

from __future__ import annotations

import json

import click

from gitvault.cli.common import global_options, state


@click.command()
@click.argument("request", required=False, metavar="[JSON | -]")
@global_options
def tool(request: str | None) -> None:
    """Run one skill_patch request: a JSON object with "action" create, patch,
    search or list (from the argument, or stdin with '-' or no argument).

    Prints one JSON object; an error is exit 2 and {"error": {...}}.
    """
    from gitvault.cli.common import read_input
    from gitvault.vault import tool as protocol

    state().json = True  # the protocol speaks JSON only, errors included
    text = read_input(None, "-", "request") if request in (None, "-") else request
    result = protocol.handle(state().vault(), protocol.parse_request(text or ""))
    click.echo(json.dumps(result, indent=2, ensure_ascii=False))
