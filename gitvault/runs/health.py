"""Skill health, flags and drift (SPEC §4.2): pure functions.

On well-formed runs the numbers equal agent-skill-bus 1.4.0's: scores are summed
in reader order as doubles, averages are rounded the way JavaScript's
``toFixed(3)`` rounds, the recent window is ``ts > now - days``, and skills are
listed in the order JavaScript would list them as object keys.
"""

from __future__ import annotations

import operator
import sys
from bisect import bisect_right
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from functools import reduce
from typing import Any

from gitvault.runs.columns import Runs, SkillColumns

DAY_MS = 86_400_000


@dataclass(frozen=True)
class Thresholds:
    """The health rules' figures, from gitvault.yaml's health section."""

    flag_below: float
    trend: float
    broken_after: int
    drift: float

    @classmethod
    def from_config(cls, section: Any) -> Thresholds:
        return cls(section.flag_below, section.trend_threshold, section.broken_after,
                   section.drift_threshold)


_THOUSANDTH = Decimal("0.001")


def fixed3(value: float) -> float:
    """``+value.toFixed(3)`` as JavaScript computes it: the exact binary value rounded
    half away from zero."""
    rounded = float(Decimal(value).quantize(_THOUSANDTH, rounding=ROUND_HALF_UP))
    return rounded + 0.0  # -0.0 becomes 0.0, as JSON.stringify(-0) is "0"


def js_number(value: float | None) -> float | int | None:
    """A double as JSON.stringify writes it: integral values without ``.0``."""
    if value is None:
        return None
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _seq_sum(values: Any) -> float:
    """Left-to-right double sum, as the peer adds. ``sum()`` does exactly that in C up
    to Python 3.11; from 3.12 it compensates, so the sum is done in Python there."""
    if _PLAIN_SUM:
        return sum(values, 0.0)
    return reduce(operator.add, values, 0.0)


_PLAIN_SUM = sys.version_info < (3, 12)


def _is_array_index(name: str) -> bool:
    return name.isdigit() and name.isascii() and (name == "0" or name[0] != "0") \
        and int(name) < 2**32 - 1


def js_key_order(names: list[str]) -> list[str]:
    """Object key order in JavaScript: array-index keys ascending, then insertion order."""
    indexes = sorted((n for n in names if _is_array_index(n)), key=int)
    return indexes + [n for n in names if not _is_array_index(n)]


def consecutive_fails(cols: SkillColumns) -> int:
    """Failed runs in a row from the latest. Runs with equal ts are taken in append
    order within their group, as the peer's stable sort does."""
    count = 0
    end = len(cols)
    while end > 0:
        ms = cols.ts[end - 1]
        start = end - 1
        while start > 0 and cols.ts[start - 1] == ms:
            start -= 1
        for i in range(start, end):
            if not cols.fail[i]:
                return count
            count += 1
        end = start
    return count


def skill_health(cols: SkillColumns, cutoff_ms: int, t: Thresholds) -> dict[str, Any]:
    runs = len(cols)
    avg = fixed3(_seq_sum(cols.score) / runs)
    first_recent = bisect_right(cols.ts, cutoff_ms)
    recent = runs - first_recent
    recent_avg = fixed3(_seq_sum(cols.score[first_recent:]) / recent) if recent else None
    trend = "stable"
    if recent_avg is not None and avg > 0:
        delta = recent_avg - avg
        if delta > t.trend:
            trend = "improving"
        elif delta < -t.trend:
            trend = "declining"
    fails = consecutive_fails(cols)
    if fails >= t.broken_after:
        trend = "broken"
    return {
        "runs": runs,
        "avgScore": avg,
        "recentAvg": recent_avg,
        "trend": trend,
        "lastFail": cols.last_fail,
        "consecutiveFails": fails,
        "flagged": avg < t.flag_below or trend in ("declining", "broken"),
    }


def now_ms(moment: datetime) -> int:
    return (moment - datetime(1970, 1, 1, tzinfo=moment.tzinfo)) // timedelta(milliseconds=1)


def analyze(runs: Runs, now: datetime, days: int, t: Thresholds) -> dict[str, dict[str, Any]]:
    """Per-skill health over all runs, with ``recentAvg`` over the last ``days`` days."""
    cutoff = now_ms(now) - days * DAY_MS
    return {name: skill_health(runs.skills[name], cutoff, t)
            for name in js_key_order([n for n, c in runs.skills.items() if len(c)])}


def flagged(report: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": name, **data} for name, data in report.items() if data["flagged"]]


def drift(runs: Runs, now: datetime, t: Thresholds, days: int = 7) -> list[dict[str, Any]]:
    """Skills whose average dropped by more than ``t.drift`` from last week to this week."""
    this_week = analyze(runs, now, days, t)
    end_ms = now_ms(now) - days * DAY_MS
    start_ms = end_ms - days * DAY_MS
    found = []
    for name, data in this_week.items():
        cols = runs.skills[name]
        lo, hi = bisect_right(cols.ts, start_ms), bisect_right(cols.ts, end_ms)
        if hi <= lo or data["recentAvg"] is None:
            continue
        last_avg = _seq_sum(cols.score[lo:hi]) / (hi - lo)
        if last_avg - data["recentAvg"] > t.drift:
            found.append({"name": name, "lastWeekAvg": fixed3(last_avg),
                          "thisWeekAvg": data["recentAvg"],
                          "drop": fixed3(last_avg - data["recentAvg"])})
    return found


def to_json_numbers(value: Any) -> Any:
    """Integral doubles as integers, recursively (the peer's JSON shape)."""
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, dict):
        return {k: to_json_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_json_numbers(v) for v in value]
    return value
