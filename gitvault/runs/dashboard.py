"""``gitvault dashboard``: skill health as a terminal table (rich) or one
self-contained HTML file: summary counts, then flagged and drifting skills first
(with why), each with its daily score trend and its latest failure notes."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
from bisect import bisect_right
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from gitvault import __version__
from gitvault.core.paths import NOFOLLOW
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


# -- the HTML report --------------------------------------------------------------------
#
# One self-contained page: inline CSS (allowed by its hash in the Content-Security-
# Policy), inline SVG charts, no script, no font, image or link to load. Every text
# that comes from the vault (skill names, tasks, notes: a clone may be hostile) is
# redacted where it is free text and HTML-escaped everywhere.

NOTES_PER_SKILL = 3  # the latest failures shown on a skill's card
NOTE_CHARS = 400  # a longer note is cut (after redaction) with an ellipsis
CHART_W, CHART_H = 560, 150
_LEFT, _RIGHT, _TOP, _BOTTOM = 34, 10, 10, 22  # the plot area's margins in the SVG


@dataclass(frozen=True)
class FailureNote:
    """One failed run as the report shows it (already redacted, not yet escaped)."""

    ts: str
    agent: str
    task: str
    notes: str


def _text(value: Any, limit: int = NOTE_CHARS) -> str:
    """Free text from a run line, redacted, then cut to ``limit`` characters."""
    from gitvault.core.redact import redact

    if value is None:
        return ""
    shown = redact(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    return shown if len(shown) <= limit else shown[:limit - 1] + "…"


def _when(ts: Any) -> str:
    """A run's ts as ``YYYY-MM-DD HH:MM UTC`` (the raw text, redacted and cut, if it is
    not a timestamp)."""
    from gitvault.runs.columns import EPOCH, ts_ms

    ms = ts_ms(ts)
    if ms is None:
        return _text(ts, 40)
    return (EPOCH + timedelta(milliseconds=ms)).strftime("%Y-%m-%d %H:%M UTC")


def failure_notes(folder: Path, per_skill: int = NOTES_PER_SKILL) -> dict[str, list[FailureNote]]:
    """The latest ``per_skill`` failed runs of each skill under ``folder`` (the runs
    stream), newest first. Only lines that mention ``"fail"`` are decoded; a bad line
    or a symlink is skipped (the analysis already reports them); a record copied into
    two files counts once."""
    from gitvault.core.records import decode_line, stream_files
    from gitvault.runs.columns import check_run, ts_ms

    kept: dict[str, list[tuple[tuple[int, int, int], str, dict[str, Any]]]] = {}
    for order, path in enumerate(stream_files(folder)):
        try:
            fd = os.open(path, os.O_RDONLY | NOFOLLOW)
        except OSError:
            continue
        with open(fd, "rb") as fh:
            for line, raw in enumerate(fh, 1):
                if b'"fail"' not in raw or not raw.endswith(b"\n"):
                    continue
                record, why = decode_line(raw)
                if why is not None or check_run(record) is not None or record["result"] != "fail":
                    continue
                ident = record.get("id")
                ident = ident if isinstance(ident, str) and ident else f"{order}:{line}"
                rows = kept.setdefault(record["skill"], [])
                if any(row[1] == ident for row in rows):
                    continue
                rows.append(((ts_ms(record["ts"]) or 0, order, line), ident, record))
                if len(rows) > per_skill:
                    rows.remove(min(rows, key=lambda row: row[0]))
    return {skill: [FailureNote(ts=_when(r.get("ts")), agent=_text(r.get("agent"), 80),
                                task=_text(r.get("task"), 200), notes=_text(r.get("notes")))
                    for _key, _ident, r in sorted(rows, key=lambda row: row[0], reverse=True)]
            for skill, rows in kept.items()}


def attention_reasons(data: dict[str, Any], drift_row: dict[str, Any] | None, threshold: float) -> list[str]:
    """Why a skill is on the attention list, in words (the HTML report and ci's)."""
    why = []
    if data["avgScore"] < threshold:
        why.append(f"average score {data['avgScore']:.2f} is below the flag threshold "
                   f"{threshold:.2f}")
    if data["trend"] == "broken":
        why.append(f"broken: the last {data['consecutiveFails']} runs failed")
    elif data["trend"] == "declining":
        why.append(f"declining: recent average {data['recentAvg']:.2f} against "
                   f"{data['avgScore']:.2f} overall")
    if drift_row is not None:
        why.append(f"drifting: {drift_row['thisWeekAvg']:.2f} this week, "
                   f"{drift_row['lastWeekAvg']:.2f} the week before "
                   f"(down {drift_row['drop']:.2f})")
    return why


def _chart(points: list[float | None], threshold: float, now: datetime) -> str:
    """The daily average score as an inline SVG line chart on a 0-1 scale (days
    without runs bridged), with the flag threshold drawn as a dashed line and each day
    below it as a red dot."""
    e = html.escape
    plot_w, plot_h = CHART_W - _LEFT - _RIGHT, CHART_H - _TOP - _BOTTOM
    n = len(points)

    def x(i: int) -> float:
        return round(_LEFT + plot_w * (i + 0.5) / n, 1)

    def y(value: float) -> float:
        return round(_TOP + plot_h * (1 - min(1.0, max(0.0, value))), 1)

    parts = [f'<svg class="chart" viewBox="0 0 {CHART_W} {CHART_H}" role="img" '
             f'aria-label="daily average score over the last {n} days">']
    for value in (0.0, 0.5, 1.0):
        parts.append(f'<line class="grid" x1="{_LEFT}" x2="{CHART_W - _RIGHT}" y1="{y(value)}" '
                     f'y2="{y(value)}"/><text class="axis" x="{_LEFT - 6}" y="{y(value) + 4}" '
                     f'text-anchor="end">{value:.1f}</text>')
    labels = sorted({0, n // 2, n - 1}) if n > 2 else list(range(n))
    for i in labels:
        label = (now - timedelta(days=n - 1 - i)).strftime("%b %d")
        parts.append(f'<text class="axis" x="{x(i)}" y="{CHART_H - 6}" text-anchor="middle">'
                     f'{e(label)}</text>')
    seg: list[tuple[float, float]] = []  # days without runs are bridged
    dots = []
    for i, point in enumerate(points):
        if point is None:
            continue
        value = point
        seg.append((x(i), y(value)))
        day = (now - timedelta(days=n - 1 - i)).strftime("%Y-%m-%d")
        dots.append(f'<circle class="{"low" if value < threshold else "dot"}" cx="{x(i)}" '
                    f'cy="{y(value)}" r="3.5"><title>{e(day)}: average {value:.3f}</title></circle>')
    base = y(0.0)
    lines, areas = [], []
    if seg:
        coords = " L".join(f"{px},{py}" for px, py in seg)
        lines.append(f"M{coords}" if len(seg) > 1 else f"M{seg[0][0] - 6},{seg[0][1]} h12")
        areas.append(f"M{seg[0][0]},{base} L{coords} L{seg[-1][0]},{base} Z")
    if lines:
        parts.append(f'<path class="area" d="{" ".join(areas)}"/>'
                     f'<path class="trend" d="{" ".join(lines)}"/>')
    else:
        parts.append(f'<text class="empty" x="{_LEFT + plot_w / 2}" y="{_TOP + plot_h / 2}" '
                     f'text-anchor="middle">no runs in the last {n} days</text>')
    parts.append(f'<line class="thr" x1="{_LEFT}" x2="{CHART_W - _RIGHT}" y1="{y(threshold)}" '
                 f'y2="{y(threshold)}"/><text class="thr-label" x="{CHART_W - _RIGHT}" '
                 f'y="{y(threshold) - 4}" text-anchor="end">flag below {threshold:.2f}</text>')
    parts.extend(dots)
    parts.append("</svg>")
    return "".join(parts)


def _card(name: str, data: dict[str, Any], drift_row: dict[str, Any] | None, threshold: float,
          points: list[float | None], notes: list[FailureNote], now: datetime) -> str:
    e = html.escape
    status = "flagged" if data["flagged"] else "drifting" if drift_row is not None else "ok"
    badges = []
    if data["flagged"]:
        badges.append('<span class="badge flag">flagged</span>')
    if drift_row is not None:
        badges.append(f'<span class="badge drift">drift −{drift_row["drop"]:.2f}</span>')
    if data["trend"] != "stable":
        badges.append(f'<span class="badge">{TREND_MARK[data["trend"]]} {data["trend"]}</span>')
    why = attention_reasons(data, drift_row, threshold)
    recent = "–" if data["recentAvg"] is None else f"{data['recentAvg']:.2f}"
    last = _when(data["lastFail"]) if data["lastFail"] else "never"
    stats = (f'<div class="stats"><span>average <b>{data["avgScore"]:.2f}</b></span>'
             f'<span>recent <b>{recent}</b></span>'
             f'<span><b>{data["runs"]}</b> runs</span>'
             f'<span><b>{data["consecutiveFails"]}</b> failed in a row</span>'
             f'<span>last failure <b>{e(last)}</b></span></div>')
    reasons = (f'<ul class="why">{"".join(f"<li>{e(w)}</li>" for w in why)}</ul>' if why else "")
    shown = []
    for note in notes:
        context = " · ".join(e(part) for part in (note.agent, note.task) if part)
        shown.append(f'<li><time>{e(note.ts)}</time>{f"<span class=ctx>{context}</span>" if context else ""}'
                     f'<p>{e(note.notes) if note.notes else "<i>no notes</i>"}</p></li>')
    failures = (f'<div class="notes"><h4>Last failures</h4><ol>{"".join(shown)}</ol></div>'
                if shown else "")
    return (f'<article class="card {status}" data-skill="{e(name)}" data-status="{status}">'
            f'<h3><span class="name">{e(name)}</span>{"".join(badges)}</h3>{reasons}{stats}'
            f'{_chart(points, threshold, now)}{failures}</article>')


_CSS = """\
:root{--flag:#cf222e;--drift:#d97706;--ok:#1a7f37;--line:#2563eb;--ink:#1f2328;
--muted:#59636e;--rule:#d8dee4;--bg:#f3f5f8}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
color:var(--ink);background:var(--bg)}
header{background:#fff;border-bottom:1px solid var(--rule)}
header div,main,footer{max-width:1200px;margin:0 auto;padding:18px 28px}
h1{margin:0;font-size:22px;letter-spacing:-.01em}
.sub{margin:2px 0 0;color:var(--muted)}
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(140px,1fr));gap:12px;margin:4px 0 8px}
.tile{background:#fff;border:1px solid var(--rule);border-radius:10px;padding:12px 16px}
.tile b{display:block;font-size:30px;line-height:1.1;font-variant-numeric:tabular-nums}
.tile span{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.05em}
.tile.flag b{color:var(--flag)}.tile.drift b{color:var(--drift)}.tile.ok b{color:var(--ok)}
h2{font-size:13px;text-transform:uppercase;letter-spacing:.06em;color:var(--muted);margin:26px 0 10px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(480px,1fr));gap:16px}
.card{background:#fff;border:1px solid var(--rule);border-left:6px solid var(--ok);border-radius:10px;
padding:14px 18px 12px;min-width:0}
.card.flagged{border-left-color:var(--flag)}.card.drifting{border-left-color:var(--drift)}
h3{margin:0;font-size:16px;display:flex;flex-wrap:wrap;align-items:center;gap:8px}
h3 .name{overflow-wrap:anywhere}
.badge{font-size:11px;font-weight:600;border-radius:999px;padding:2px 9px;background:#eaeef2;
white-space:nowrap}
.badge.flag{background:var(--flag);color:#fff}.badge.drift{background:var(--drift);color:#fff}
.why{margin:8px 0 4px;padding-left:20px;color:#a40e26}
.drifting .why{color:#9a4a00}
.stats{display:flex;flex-wrap:wrap;gap:4px 16px;margin:8px 0 4px;color:var(--muted);font-size:13px}
.stats b{color:var(--ink);font-variant-numeric:tabular-nums}
.chart{display:block;width:100%;height:auto;margin:6px 0 2px}
.chart .grid{stroke:#e6eaef;stroke-width:1}
.chart .axis{fill:var(--muted);font-size:10px}
.chart .area{fill:var(--line);fill-opacity:.09;stroke:none}
.chart .trend{fill:none;stroke:var(--line);stroke-width:2.2;stroke-linejoin:round;stroke-linecap:round}
.chart .dot{fill:#fff;stroke:var(--line);stroke-width:2}
.chart .low{fill:var(--flag);stroke:#fff;stroke-width:1.5}
.chart .thr{stroke:var(--flag);stroke-width:1.2;stroke-dasharray:5 4}
.chart .thr-label{fill:var(--flag);font-size:10px;font-weight:600}
.chart .empty{fill:var(--muted);font-size:12px}
.notes{border-top:1px solid var(--rule);margin-top:8px;padding-top:6px}
h4{margin:2px 0 4px;font-size:12px;text-transform:uppercase;letter-spacing:.05em;color:var(--muted)}
.notes ol{list-style:none;margin:0;padding:0}
.notes li{margin:6px 0}
.notes time{font-size:12px;color:var(--muted);font-variant-numeric:tabular-nums}
.notes .ctx{font-size:12px;color:var(--muted);margin-left:8px;overflow-wrap:anywhere}
.notes p{margin:3px 0 0;padding:5px 9px;background:#fff4f4;border-radius:6px;white-space:pre-wrap;
overflow-wrap:anywhere;font:12.5px/1.4 ui-monospace,"DejaVu Sans Mono",monospace}
.empty-state{background:#fff;border:1px dashed var(--rule);border-radius:10px;padding:24px;color:var(--muted)}
code{font:12.5px ui-monospace,"DejaVu Sans Mono",monospace;background:#eef1f4;padding:1px 5px;
border-radius:4px}
footer{color:var(--muted);font-size:12px}
"""


def content_security_policy(css: str = _CSS) -> str:
    """Nothing loads: no script, frame, font, image, fetch or form target; only the
    page's own stylesheet (by its hash) applies."""
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; style-src 'sha256-{digest}'; img-src 'none'; font-src 'none'; "
            "connect-src 'none'; script-src 'none'; object-src 'none'; frame-src 'none'; "
            "base-uri 'none'; form-action 'none'")


def render_html(report: dict[str, dict[str, Any]], drift_rows: list[dict[str, Any]], runs: Runs,
                now: datetime, days: int, threshold: float,
                notes: dict[str, list[FailureNote]] | None = None) -> str:
    """The report: summary counts, then the flagged and drifting skills (with why),
    then the healthy ones; each card has its daily average over the last ``days`` days
    (at least one) against the flag threshold and its latest failure notes."""
    e = html.escape
    notes = notes or {}
    span = max(days, 1)
    drifting = {row["name"]: row for row in drift_rows}
    attention: list[str] = []
    healthy: list[str] = []
    for name, data in ordered(report, set(drifting)):
        card = _card(name, data, drifting.get(name), threshold,
                     daily_averages(runs, name, now, span), notes.get(name, []), now)
        (attention if data["flagged"] or name in drifting else healthy).append(card)
    cutoff = now_ms(now) - span * DAY_MS
    recent_runs = recent_fails = 0
    for cols in runs.skills.values():
        first = bisect_right(cols.ts, cutoff)
        recent_runs += len(cols) - first
        recent_fails += sum(cols.fail[first:])
    flagged = sum(1 for d in report.values() if d["flagged"])
    drift_only = sum(1 for n in drifting if n in report and not report[n]["flagged"])
    tiles = [("", len(report), "skills"), ("flag", flagged, "flagged"),
             ("drift", len(drifting), "drifting"),
             ("ok", len(report) - flagged - drift_only, "healthy"),
             ("", recent_runs, f"runs, last {span} days"),
             ("flag" if recent_fails else "", recent_fails, f"failures, last {span} days")]
    summary = "".join(f'<div class="tile {cls}"><b>{value}</b><span>{label}</span></div>'
                      for cls, value, label in tiles)
    sections = []
    if attention:
        sections.append(f'<h2>Needs attention · {len(attention)}</h2>'
                        f'<div class="cards">{"".join(attention)}</div>')
    if healthy:
        sections.append(f'<h2>Healthy · {len(healthy)}</h2><div class="cards">{"".join(healthy)}</div>')
    if not report:
        sections.append('<p class="empty-state">No skill runs recorded yet. Record one with '
                        '<code>gitvault record-run --agent my-agent --skill my-skill --task test '
                        '--result success --score 0.9</code></p>')
    stamp = now.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{e(content_security_policy())}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gitvault dashboard</title>
<style>{_CSS}</style></head><body>
<header><div><h1>gitvault dashboard</h1>
<p class="sub">Skill health over the last {span} days · flag threshold {threshold:.2f} ·
generated {e(stamp)}</p></div></header>
<main><section class="tiles" aria-label="summary">{summary}</section>
{"".join(sections)}
</main>
<footer>Charts: average score per day over the last {span} days; the dashed line is the flag
threshold, red dots are days below it. Written by gitvault {e(__version__)}; this page loads
nothing from anywhere.</footer>
</body></html>
"""


def html_page(runs: Runs, runs_folder: Path, now: datetime, window: int, threshold: float,
              report: dict[str, dict[str, Any]], drift_rows: list[dict[str, Any]]) -> str:
    """``dashboard --html``'s page for the analysis ``report``/``drift_rows`` of
    ``runs``, with the latest failure notes read from ``runs_folder``."""
    return render_html(report, drift_rows, runs, now, window, threshold,
                       failure_notes(runs_folder))
