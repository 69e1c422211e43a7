"""Each list of names the library knows (skill kinds, states and provenances, hooks,
queue priorities and statuses, deadlines, run results, log streams) is written once:
no other module retypes it as a literal (a ``click.Choice``, a check, an order)."""

from __future__ import annotations

import ast
from pathlib import Path

from gitvault.core.paths import STREAMS
from gitvault.hooks.shims import HOOKS
from gitvault.queue.state import DEADLINES, PRIORITIES, STATUSES
from gitvault.runs.record import RESULTS
from gitvault.skills.model import KINDS, PROVENANCES, STATES

PACKAGE = Path(__file__).resolve().parent.parent / "gitvault"
CONSTANTS = {
    "skills/model.py KINDS": KINDS, "skills/model.py PROVENANCES": PROVENANCES,
    "skills/model.py STATES": STATES, "hooks/shims.py HOOKS": HOOKS,
    "core/config.py SEVERITIES": PRIORITIES, "queue/state.py STATUSES": STATUSES,
    "queue/state.py DEADLINES": tuple(DEADLINES), "runs/record.py RESULTS": RESULTS,
    "core/paths.py STREAMS": STREAMS,
}
# Copies in cli/ that are still to be switched to the constants (remove each as it goes).
PENDING: set[str] = set()


def copies() -> set[str]:
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
                continue
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            words = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
            if len(words) < 2 or len(words) < len(items):
                continue
            for origin, names in CONSTANTS.items():
                home, name = origin.split()
                # the constant itself, or a copy of it, maybe with an extra such as "all"
                if set(names) <= words and len(words) <= len(names) + 1 and rel != home:
                    found.add(f"{rel}: {name}")
    return found


def test_no_module_retypes_a_constant() -> None:
    assert copies() - PENDING == set()


def test_the_pending_list_has_no_stale_entries() -> None:
    assert PENDING - copies() == set()
