"""The JSON that ``health``, ``flagged``, ``drift`` and ``dashboard`` print (SPEC §4),
built once here for every front end: the CLI, the MCP server and the CI workflow.

Each function takes the runs (read through the cache), the clock and the
``health`` config section, and returns agent-skill-bus's shape plus a
``"warnings"`` list when lines were bad (SPEC §3).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from gitvault.core.clock import iso
from gitvault.core.paths import VaultLayout
from gitvault.runs import health as rules
from gitvault.runs.columns import Runs


def run_warnings(runs: Runs, layout: VaultLayout) -> list[str]:
    """``FILE:LINE: why`` for each bad run line, FILE relative to the vault."""
    def shown(file: str) -> str:
        try:
            return layout.rel(Path(file))
        except ValueError:
            return file

    return [f"{shown(w.file)}:{w.line}: {w.reason}" for w in runs.warnings]


def _window(section: Any, days: int | None) -> int:
    return int(section.window_days if days is None else days)


def _with(data: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    if warnings:
        data["warnings"] = warnings
    return data


def health_report(runs: Runs, moment: datetime, section: Any, warnings: list[str],
                  days: int | None = None) -> dict[str, Any]:
    """``{"lastUpdated", "skills": {NAME: {runs, avgScore, ...}}}``."""
    report = rules.analyze(runs, moment, _window(section, days), rules.Thresholds.from_config(section))
    return _with({"lastUpdated": iso(moment), "skills": rules.to_json_numbers(report)}, warnings)


def flagged_report(runs: Runs, moment: datetime, section: Any, warnings: list[str],
                   days: int | None = None) -> dict[str, Any]:
    """``{"count", "skills": [{name, ...}]}``: the flagged skills."""
    report = rules.analyze(runs, moment, _window(section, days), rules.Thresholds.from_config(section))
    found = rules.flagged(report)
    return _with({"count": len(found), "skills": rules.to_json_numbers(found)}, warnings)


def drift_report(runs: Runs, moment: datetime, section: Any, warnings: list[str]
                 ) -> dict[str, Any]:
    """``{"count", "skills": [{name, lastWeekAvg, thisWeekAvg, drop}]}``."""
    found = rules.drift(runs, moment, rules.Thresholds.from_config(section), _window(section, None))
    return _with({"count": len(found), "skills": rules.to_json_numbers(found)}, warnings)


def dashboard_report(runs: Runs, moment: datetime, section: Any, warnings: list[str],
                     days: int | None = None
                     ) -> tuple[dict[str, Any], dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The dashboard's JSON ``{"skills": {NAME: health}, "drift": [...]}``, and the
    health report and drift rows it was made of (for drawing)."""
    window = _window(section, days)
    thresholds = rules.Thresholds.from_config(section)
    report = rules.analyze(runs, moment, window, thresholds)
    drift_rows = rules.drift(runs, moment, thresholds, window)
    data = _with({"skills": rules.to_json_numbers(report),
                  "drift": rules.to_json_numbers(drift_rows)}, warnings)
    return data, report, drift_rows
