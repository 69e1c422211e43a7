"""The console script's entry point (``gitvault``, ``python -m gitvault``).

The hot commands (``record-run`` and the queue) run through :mod:`gitvault.cli.hot`
when their arguments are plain, importing neither click nor YAML nor git; everything
else, ``--help`` and malformed arguments included, goes to the click CLI in
:mod:`gitvault.cli.app`. Both report errors through :mod:`gitvault.cli.report`.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    from gitvault.cli.hot import try_run

    code = try_run(args)
    if code is not None:
        sys.exit(code)
    from gitvault.cli.app import main as cli_main

    cli_main(args)
