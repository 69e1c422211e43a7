"""``gitvault sync``: commit, fetch, merge, push (SPEC §4)."""

from __future__ import annotations

from typing import Any

import click

from gitvault.cli.common import emit, global_options, note, state


def _side(counts: dict[str, int]) -> str:
    return (f"{counts['records']} record{'s' if counts['records'] != 1 else ''}, "
            f"{counts['versions']} skill version{'s' if counts['versions'] != 1 else ''} "
            f"({counts['skills']} skill{'s' if counts['skills'] != 1 else ''})")


def summary(result: dict[str, Any]) -> str:
    lines = [f"in:  {_side(result['in'])}", f"out: {_side(result['out'])}"]
    for c in result["conflicts"]:
        lines.append(f"conflict: {c['skill']} changed on {c['winner']['node']} and "
                     f"{c['loser']['node']}; resolved as v{c['version']} "
                     f"({c['winner']['node']}'s v{c['winner']['version']} wins, "
                     f"{c['loser']['node']}'s v{c['loser']['version']} stays in history)")
    lines += [f"lost start race: {lost['pr']} was started on another node first; "
              f"here it is {lost['status']} again" for lost in result["lostStarts"]]
    lines += [f"rescued: this clone's {', '.join(kept['paths'])} could not merge; "
              f"its commits are kept under {kept['ref']}" for kept in result["rescued"]]
    pushed = (f"pushed to {result['remote']}/{result['branch']}" if result["pushed"]
              else "nothing to push")
    retries = f" after {result['retries']} retr{'y' if result['retries'] == 1 else 'ies'}" \
        if result["retries"] else ""
    return "\n".join([*lines, pushed + retries])


@click.command()
@click.option("--remote", metavar="NAME", help="The git remote to sync with (default: origin).")
@global_options
def sync(remote: str | None) -> None:
    """Commit pending records, fetch, merge and push.

    A push another node beat is fetched, merged and retried. Skills changed on two
    nodes at once are resolved the same way on every node (a new version); nothing is
    left to resolve by hand.
    """
    from gitvault.sync.engine import run_sync

    vault = state().vault()
    vault.ensure_hooks()
    result = run_sync(vault, remote)
    for done in result["recovered"]:
        note(done)
    emit(result, lambda: summary(result))
