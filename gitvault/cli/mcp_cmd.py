"""``gitvault mcp``: the Model Context Protocol server on stdio (extra ``[mcp]``)."""

from __future__ import annotations

from typing import Any

import click

from gitvault.cli.common import global_options, state


@click.command("mcp")
@global_options
def mcp() -> None:
    """Serve the vault to an MCP client on stdio (Model Context Protocol).

    Tools: skill_patch, skill_search, skill_context, skill_outcome, record_run,
    enqueue, dispatch, complete, fail; their errors carry gitvault's codes and
    messages. The skills extension (io.modelcontextprotocol/skills) serves the active
    skills: skills/list, skills/get and skill://<name>/<path> resources. Needs the
    official SDK: pip install 'gitvault[mcp]'. Configure a client with the command
    'gitvault --vault PATH mcp'."""
    try:
        from gitvault.mcp import server
    except ImportError as exc:
        from gitvault.errors import GitvaultError

        missing = (exc.name or "mcp").split(".")[0]
        raise GitvaultError(f"'gitvault mcp' needs the MCP SDK ({missing} is missing): "
                            "pip install 'gitvault[mcp]'") from None
    from gitvault.cli import hot
    from gitvault.cli.report import describe

    opts = state()
    opts.vault()  # a missing vault or a bad gitvault.yaml is reported before serving
    path, node = opts.vault_path, opts.node

    def open_vault() -> Any:
        from gitvault.vault.facade import Vault

        return Vault.open(path, node)

    def run_hot(name: str, given: dict[str, Any]) -> Any:
        cmd = hot.COMMANDS[name]
        options = {opt.name: opt.default for opt in cmd.options}
        options.update(given)
        data, _text, _warnings = hot.execute(name, hot.Globals(path, node, True), options)
        return data

    server.serve(open_vault, run_hot, describe)
