"""``gitvault dashboard``: skill health as a terminal table (rich) or one
self-contained HTML file with per-skill score trends, flagged and drifting first."""

from __future__ import annotations

import html
from bisect import bisect_right
from datetime import datetime, timezone
from typing import Any

from gitvault.runs.columns import Runs
from gitvault.runs.health import DAY_MS, now_ms

TREND_MARK = {"improving": "↑", "declining": "↓", "broken": "✗", "stable": "─"}


def ordered(report: dict[str, dict[str, Any]], drifting: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """Flagged first, then drifting, then by average score (lowest first)."""
    return sorted(report.items(), key=lambda item: (not item[1]["flagged"],
                                                    item[0] not in drifting,
                                                    item[1]["avgScore"], item[0]))


def daily_averages(runs: Runs, name: str, now: datetime, days: int) -> list[float | None]:
    """Average score per day for the last ``days`` days (None for a day without runs)."""
    cols = runs.skills[name]
    end = now_ms(now)
    points: list[float | None] = []
    for day in range(days, 0, -1):
        lo = bisect_right(cols.ts, end - day * DAY_MS)
        hi = bisect_right(cols.ts, end - (day - 1) * DAY_MS)
        points.append(sum(cols.score[lo:hi]) / (hi - lo) if hi > lo else None)
    return points


def render_terminal(report: dict[str, dict[str, Any]], drifting: set[str], days: int,
                    queue: dict[str, Any] | None, color: bool) -> str:
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    buffer = StringIO()
    console = Console(file=buffer, color_system="standard" if color else None,
                      force_terminal=color, width=100, highlight=False)
    console.print(f"[bold cyan]gitvault dashboard[/] [dim]({days}-day window)[/]")
    if queue is not None:
        by_status = queue.get("byStatus", {})
        console.print(f"queue: {queue.get('total', 0)} total, {by_status.get('queued', 0)} queued, "
                      f"{by_status.get('running', 0)} running, {by_status.get('done', 0)} done; "
                      f"{queue.get('activeLocks', 0)} locks")
    if not report:
        console.print("[dim]No skill runs recorded yet. Record one with: gitvault record-run "
                      "--agent my-agent --skill my-skill --task test --result success --score 0.9[/]")
        return buffer.getvalue()
    table = Table(title=f"{len(report)} skills", title_justify="left", expand=False)
    for header, justify in (("", "left"), ("skill", "left"), ("avg", "right"),
                            ("recent", "right"), ("trend", "center"), ("runs", "right"),
                            ("fails in a row", "right"), ("", "left")):
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for name, data in ordered(report, drifting):
        score = data["avgScore"]
        style = "green" if score >= 0.8 else "yellow" if score >= 0.6 else "red"
        recent = "-" if data["recentAvg"] is None else f"{data['recentAvg']:.2f}"
        notes = ", ".join(x for x in ("FLAGGED" if data["flagged"] else "",
                                      "DRIFT" if name in drifting else "") if x)
        table.add_row("[red]●[/]" if data["flagged"] else "[green]●[/]", name,
                      f"[{style}]{score:.2f}[/]", recent, TREND_MARK[data["trend"]],
                      str(data["runs"]), str(data["consecutiveFails"]), notes)
    console.print(table)
    return buffer.getvalue()


def _sparkline(points: list[float | None], threshold: float, width: int = 360,
               height: int = 80) -> str:
    step = width / max(len(points) - 1, 1)

    def y(value: float) -> float:
        return round(height - 4 - value * (height - 8), 1)

    segments: list[list[str]] = [[]]
    dots = []
    for i, value in enumerate(points):
        if value is None:
            if segments[-1]:
                segments.append([])
            continue
        x = round(i * step, 1)
        segments[-1].append(f"{x},{y(value)}")
        dots.append(f'<circle cx="{x}" cy="{y(value)}" r="1.8"><title>day -{len(points) - i}: '
                    f"{value:.3f}</title></circle>")
    lines = "".join(f'<polyline points="{" ".join(s)}"/>' for s in segments if s)
    return (f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            f'role="img" aria-label="daily average score">'
            f'<line class="thr" x1="0" x2="{width}" y1="{y(threshold)}" y2="{y(threshold)}"/>'
            f'<g class="line">{lines}</g><g class="dots">{"".join(dots)}</g></svg>')


def render_html(report: dict[str, dict[str, Any]], drift_rows: list[dict[str, Any]], runs: Runs,
                now: datetime, days: int, threshold: float, chart_days: int = 30) -> str:
    drifting = {row["name"]: row for row in drift_rows}
    cards = []
    for name, data in ordered(report, set(drifting)):
        badges = []
        if data["flagged"]:
            badges.append('<span class="badge flag">flagged</span>')
        if name in drifting:
            badges.append(f'<span class="badge drift">drift −{drifting[name]["drop"]:.3f}</span>')
        if data["trend"] != "stable":
            badges.append(f'<span class="badge">{data["trend"]}</span>')
        recent = "–" if data["recentAvg"] is None else f"{data['recentAvg']:.3f}"
        cards.append(
            f'<section class="card{" bad" if data["flagged"] else ""}"><h2>{html.escape(name)} '
            f'{"".join(badges)}</h2><p>avg {data["avgScore"]:.3f} · recent {recent} · '
            f'{data["runs"]} runs · {data["consecutiveFails"]} fails in a row · last fail '
            f'{html.escape(data["lastFail"] or "never")}</p>'
            f"{_sparkline(daily_averages(runs, name, now, chart_days), threshold)}</section>")
    stamp = now.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = "".join(cards) or "<p>No skill runs recorded yet.</p>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>gitvault dashboard</title>
<style>
body{{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;background:#fafafa}}
.card{{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.6em 1em;margin:.8em 0}}
.card.bad{{border-color:#d33}} h2{{font-size:1.05em;margin:.2em 0}}
.badge{{font-size:.75em;border-radius:3px;padding:1px 5px;margin-left:.4em;background:#eee}}
.badge.flag{{background:#d33;color:#fff}} .badge.drift{{background:#e80;color:#fff}}
svg .line polyline{{fill:none;stroke:#36c;stroke-width:1.5}} svg .dots circle{{fill:#36c}}
svg .thr{{stroke:#d33;stroke-dasharray:4 3;stroke-width:1}}
</style></head><body>
<h1>gitvault dashboard</h1>
<p>{len(report)} skills · {days}-day window · daily average score over the last {chart_days}
days (dashed line: flag threshold {threshold}) · generated {stamp}</p>
{body}
</body></html>
"""
