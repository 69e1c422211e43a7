"""Recording one skill run: the whole of ``record-run``'s work, kept free of heavy
imports (no git, YAML, click or the columnar reader)."""

from __future__ import annotations

import math

from gitvault.core.paths import skill_name
from gitvault.core.records import append_record, stamp
from gitvault.errors import InvalidInput

TYPE_CHECKING = False  # typing is not imported at run time: record-run starts fast
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

RESULTS = ("success", "partial", "fail")


def parse_score(text: str | float) -> float:
    """A finite number clamped to [0, 1]; anything else is InvalidInput."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise InvalidInput(f"invalid score {text!r}: use a number from 0 to 1") from None
    if not math.isfinite(value):
        raise InvalidInput(f"invalid score {text!r}: use a number from 0 to 1")
    return min(1.0, max(0.0, value))


def record_run(log_file: Path, node: str, *, agent: str, skill: str, task: str, result: str,
               score: str | float, notes: str = "", root: Path | None = None,
               ts: str | None = None) -> dict[str, Any]:
    """Validate and append one run record; returns it as written (secrets redacted).
    With ``root`` (the vault root) no symlink below it is followed."""
    if not skill or not skill.strip():
        raise InvalidInput("a run needs --skill NAME")
    if result not in RESULTS:
        raise InvalidInput(f"invalid result {result!r}: use one of {', '.join(RESULTS)}")
    entry: dict[str, Any] = {"ts": ts} if ts else {}
    entry.update(agent=agent, skill=skill_name(skill), task=task, result=result,
                 score=parse_score(score), notes=notes)
    return append_record(log_file, stamp(entry, node), root=root)
