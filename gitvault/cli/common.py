"""Shared CLI plumbing: the global options (accepted before or after the command),
opening the vault, and output in text or JSON."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from gitvault.vault.facade import Vault

F = TypeVar("F", bound=Callable[..., Any])


class State:
    """What the global options set, shared by the group and its commands."""

    def __init__(self) -> None:
        self.vault_path: str | None = None
        self.node: str | None = None
        self.json = False
        self._vault: Vault | None = None

    def vault(self) -> Vault:
        if self._vault is None:
            from gitvault.vault.facade import Vault

            self._vault = Vault.open(self.vault_path, self.node)
        return self._vault


_current: State | None = None


def state() -> State:
    global _current
    ctx = click.get_current_context()
    root = ctx.find_root()
    if not isinstance(root.obj, State):
        root.obj = State()
    _current = root.obj
    return root.obj


def reset() -> None:
    """Forget the last run's global options (a long-lived caller runs many)."""
    global _current
    _current = None


def wants_json() -> bool:
    """Whether the command being run asked for JSON (for errors raised out of it)."""
    return _current is not None and _current.json


def _set(attr: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value not in (None, False):
            setattr(state(), attr, value)
    return callback


def global_options(func: F) -> F:
    """``--vault``, ``--node`` and ``--json``, accepted on the group and on every command."""
    func = click.option("--json", "json_", is_flag=True, expose_value=False, is_eager=True,
                        callback=_set("json"), help="Machine output on stdout.")(func)
    func = click.option("--node", metavar="NAME", expose_value=False, callback=_set("node"),
                        help="This clone's node id (default: GITVAULT_NODE, git config "
                             "gitvault.node, the host name).")(func)
    func = click.option("--vault", metavar="PATH", expose_value=False,
                        callback=_set("vault_path"),
                        help="The vault folder (default: GITVAULT_DIR, else the nearest "
                             "folder with gitvault.yaml).")(func)
    return func


def dry_run_option(shows: str) -> Callable[[F], F]:
    """``--dry-run``: the command ``shows`` what it would do and changes nothing."""
    return click.option("--dry-run", is_flag=True, help=f"{shows}; change nothing.")


def unsafe_no_sandbox_option(help: str) -> Callable[[F], F]:
    """``--unsafe-no-sandbox``: the gate may run a code skill's tests without an OS
    sandbox where none can be had (the gate records it); ``help`` says where."""
    return click.option("--unsafe-no-sandbox", is_flag=True, help=help)


def emit(data: dict[str, Any], text: str | Callable[[], str] | None = None) -> None:
    """Write ``data`` as JSON with ``--json``, else ``text`` (or nothing); the vault's
    notices go to stderr."""
    opened = state()._vault
    for notice in opened.notices if opened is not None else []:
        note(notice)
    if state().json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    elif text is not None:
        out = text() if callable(text) else text
        if out:
            click.echo(out.rstrip("\n"))


def warn(warnings: list[Any]) -> list[str]:
    """Print each record-level warning on stderr; return them as strings for JSON."""
    lines = [str(w) for w in warnings]
    for line in lines:
        click.echo(f"gitvault: warning: {line}", err=True)
    return lines


def note(message: str) -> None:
    """An informational line on stderr (never mixed into --json stdout)."""
    click.echo(f"gitvault: {message}", err=True)


def read_input(value: str | None, file: str | None, what: str = "content") -> str | None:
    """``--content TEXT``, ``--file F`` or ``--file -`` (stdin); at most one, of at most
    ``files.INPUT_LIMIT`` bytes (a larger file or stdin is refused, never read whole)."""
    from gitvault.core.files import decode_text, read_stream, read_text
    from gitvault.errors import InvalidInput

    if value is not None and file is not None:
        raise InvalidInput(f"give the {what} with --content or --file, not both")
    if file is None:
        return value
    if file == "-":
        return decode_text(read_stream(sys.stdin.buffer, "stdin"), "stdin")
    from pathlib import Path

    return read_text(Path(file))
