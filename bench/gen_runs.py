"""Deterministic generator of agent-skill-bus run logs, for gitvault's benchmarks.

Writes one compact JSON object per line, keys in order ts, agent, skill, task, result,
score, notes (agent-skill-bus's ``skill-runs.jsonl``). ``ts`` is ISO 8601 UTC with
milliseconds and ``Z`` (Node's ``toISOString``), uniform over the ``--days`` days
before ``--end`` and sorted ascending; ``result`` is success|partial|fail; ``score`` is
in [0, 1], rounded to 2 decimals. ``--with-ids NODE`` writes the records as gitvault's
``record-run`` does: ``id`` (a ULID of the record's millisecond) first, ``node`` last.

The data gives health, drift and flagged something to find: ~50 skills with a base
success rate and Zipf-ish popularity, a few "degrading" (much worse over the last 7
days), a few "broken" (their last 3 to 6 runs fail), the rest stable; 12 agents;
notes empty for most successes, error strings for fails and partials.

``--by-month`` (with ``--with-ids``) makes ``--out`` a folder and writes the log as
gitvault does: ``OUT/<YYYY-MM>/<NODE>.jsonl``, each line in the month of its ``ts``.
``--gap-hours H`` leaves no run in the H hours after end - 7 days and after end - 14
days (the edges of health's and drift's windows), so that tools reading the real
clock a few minutes apart still see the same runs in each window.

The same arguments give the same bytes (stdlib only, one ``random.Random(seed)``);
``--with-ids`` and ``--by-month`` change only how the same runs are written.
``--end`` defaults to now, floored to the second; the end used is printed to stderr.

Usage: python bench/gen_runs.py --count 1000000 --out runs.jsonl [--seed 42]
       [--skills 50] [--days 30] [--end 2026-11-30T12:00:00.000Z] [--with-ids NODE]
       [--by-month] [--gap-hours 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from datetime import datetime, timedelta, timezone
from itertools import accumulate

SKILLS = (
    "api-caller", "web-search", "code-review", "pr-summarizer", "issue-triage", "deploy-pipeline",
    "db-migrate", "unit-test-writer", "merge-conflict", "security-audit", "screenshot-diff",
    "log-analyzer", "doc-writer", "dependency-update", "flaky-test-fixer", "changelog-writer",
    "release-notes", "k8s-rollout", "terraform-plan", "sql-optimizer", "csv-cleaner", "email-drafter",
    "slack-notifier", "jira-sync", "incident-responder", "perf-profiler", "lint-fixer", "type-checker",
    "commit-message", "i18n-extractor", "image-resizer", "pdf-parser", "scraper", "cache-warmer",
    "backup-verify", "cost-report", "oncall-handoff", "schema-validator", "api-docs", "feature-flag",
    "rollback-helper", "cron-auditor", "secret-rotation", "sitemap-builder", "accessibility-check",
    "bundle-analyzer", "query-planner", "data-export", "metrics-dashboard", "ticket-router",
)
AGENTS = ("claude-code", "codex", "dev-agent", "review-bot", "release-bot", "ops-agent",
          "qa-agent", "triage-bot", "data-agent", "content-agent", "monitor", "security-bot")
VERBS = ("fix", "update", "verify", "check", "sync", "draft", "summarize", "generate",
         "review", "fetch", "refactor", "deploy", "triage", "audit")
OBJECTS = ("billing export", "search index", "auth tokens", "docs site", "README", "user profile",
           "nightly build", "staging cluster", "weekly report", "onboarding flow", "CI config",
           "rate limiter", "payment webhook", "feature flags", "PR #{}", "issue #{}",
           "migration {:05d}")
SUCCESS_NOTES = ("ok", "no changes needed", "cached result reused", "took 2 retries",
                 "done in one pass", "minor formatting fixed")
PARTIAL_NOTES = ("3 of 5 checks passed", "output truncated at the token limit",
                 "timed out after partial results", "lint warnings left unresolved",
                 "skipped 2 files: permission denied", "summary incomplete: context window exceeded",
                 "tests pass locally, CI still red")
FAIL_NOTES = ("429 Too Many Requests, retried 3x, giving up", "401 Unauthorized - session expired",
              "TypeError: Cannot read properties of undefined (reading 'map')",
              "ECONNRESET while fetching upstream", "merge conflict in src/index.ts",
              "AssertionError: expected 200, got 500", "ModuleNotFoundError: No module named 'requests'",
              "timeout after 120s", "git push rejected: non-fast-forward",
              "JSON parse error at position 1832", "selector not found: #submit-button",
              "JavaScript heap out of memory", "permission denied: /var/run/docker.sock",
              "exit code 137 (OOM killed)")
# Tasks are written between quotes as they are: their words need no JSON escaping.
assert all(json.dumps(word) == f'"{word}"' for word in VERBS + OBJECTS)
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
PAIRS = [a + b for a in CROCKFORD for b in CROCKFORD]  # 10 bits -> 2 characters
DAY_MS = 86_400_000
CHUNK = 1 << 16  # lines per write


def parse_end(end: datetime | str | None) -> datetime:
    """``end`` as an aware UTC datetime with whole milliseconds; default now, floored to the second."""
    if end is None:
        return datetime.now(timezone.utc).replace(microsecond=0)
    if isinstance(end, str):
        end = datetime.fromisoformat(end.strip().replace("Z", "+00:00"))
    if end.tzinfo is None:
        end = end.replace(tzinfo=timezone.utc)
    end = end.astimezone(timezone.utc)
    return end.replace(microsecond=end.microsecond // 1000 * 1000)


def skill_names(count: int) -> list[str]:
    return [SKILLS[i % len(SKILLS)] + (f"-{i // len(SKILLS) + 1}" if i >= len(SKILLS) else "")
            for i in range(count)]


def b32_40(value: int) -> str:
    """The low 40 bits of ``value`` as 8 Crockford base32 characters, most significant first."""
    return PAIRS[value >> 30 & 1023] + PAIRS[value >> 20 & 1023] + PAIRS[value >> 10 & 1023] + \
        PAIRS[value & 1023]


def _spread(rng: random.Random, count: int, end_ms: int, span: int, gap: int) -> list[int]:
    """``count`` sorted times uniform over the ``span`` ms before ``end_ms``, none in the
    ``gap`` ms after end - 7 days and after end - 14 days (the gaps inside the span)."""
    if not gap:
        return sorted(end_ms - span + int(rng.random() * span) for _ in range(count))
    gaps = sorted(start for start in (end_ms - 14 * DAY_MS, end_ms - 7 * DAY_MS)
                  if end_ms - span <= start and start + gap <= end_ms)
    free = span - gap * len(gaps)
    times = sorted(end_ms - span + int(rng.random() * free) for _ in range(count))
    for start in gaps:  # shift everything from a gap's start past it
        times = [t + gap if t >= start else t for t in times]
    return times


class _Sink:
    """Where lines go: one stream, or ``folder/<YYYY-MM>/<node>.jsonl`` by the month of
    each line's ts (lines come in ts order)."""

    def __init__(self, out_path: str, by_month: str | None) -> None:
        self.folder, self.node, self.month = (out_path, by_month, None) if by_month else \
            (None, None, None)
        self.out = None if by_month else sys.stdout.buffer if out_path == "-" else \
            open(out_path, "wb")  # noqa: SIM115

    def write(self, chunk: list[str], month: str | None) -> None:
        if self.folder is not None and month != self.month:
            self.close()
            folder = os.path.join(self.folder, month or "")
            os.makedirs(folder, exist_ok=True)
            self.out = open(os.path.join(folder, f"{self.node}.jsonl"), "wb")  # noqa: SIM115
            self.month = month
        if chunk and self.out is not None:
            self.out.write("".join(chunk).encode())

    def close(self) -> None:
        if self.out is not None:
            self.out.flush()
            if self.out is not sys.stdout.buffer:
                self.out.close()
        self.out = None


def generate(count: int, out_path: str, seed: int = 42, skills: int = 50, days: int = 30,
             end: datetime | str | None = None, with_ids: str | None = None,
             by_month: bool = False, gap_hours: float = 0) -> datetime:
    """Write ``count`` runs to ``out_path`` ('-': stdout; with ``by_month``, a folder of
    month folders); return the end time used."""
    if count < 0 or skills < 1 or days <= 0 or gap_hours < 0:
        raise ValueError("count must be >= 0, skills >= 1, days > 0 and gap_hours >= 0")
    if by_month and with_ids is None:
        raise ValueError("by_month writes <NODE>.jsonl files: it needs with_ids")
    end = parse_end(end)
    rng = random.Random(seed)
    end_ms = (end - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)
    span = days * DAY_MS
    names = skill_names(skills)
    rng.shuffle(names)  # popularity rank -> name
    base = [rng.uniform(0.86, 0.98) for _ in names]
    specials = rng.sample(range(min(skills, 30)), min(skills, 30))  # degrading/broken: popular ones
    n_degrading = max(1, round(skills * 0.08)) if skills >= 3 else 0
    n_broken = max(1, round(skills * 0.06)) if skills >= 3 else 0
    degrading = set(specials[:n_degrading])
    broken = {s: rng.randint(3, 6) for s in specials[n_degrading:n_degrading + n_broken]}
    weights = list(accumulate(1.0 / (rank + 1) ** 0.9 for rank in range(skills)))

    times = _spread(rng, count, end_ms, span, int(gap_hours * 3_600_000))
    picks = rng.choices(range(skills), cum_weights=weights, k=count)
    forced: set[int] = set()  # line numbers of the broken skills' last runs
    left = dict(broken)
    for line in range(count - 1, -1, -1):
        if not left:
            break
        if left.get(picks[line]):
            forced.add(line)
            left[picks[line]] -= 1
            if not left[picks[line]]:
                del left[picks[line]]

    enc = json.dumps
    skill_js = [enc(n) for n in names]
    agent_js = [enc(a) for a in AGENTS]
    ok_js, partial_js, fail_js = ([enc(n) for n in pool] for pool in
                                  (SUCCESS_NOTES, PARTIAL_NOTES, FAIL_NOTES))
    recent = end_ms - 7 * DAY_MS
    id_part = ""
    if with_ids is not None:  # 40 random bits for this (seed, node), then the line number
        id_part = b32_40(random.Random(f"{seed}:{with_ids}").getrandbits(40))
    node_js = enc(with_ids, ensure_ascii=False)  # as gitvault writes it
    rand = rng.random
    days_seen: dict[int, str] = {}
    sink = _Sink(out_path, with_ids if by_month else None)
    month = None
    try:
        chunk: list[str] = []
        for line, (ms, skill) in enumerate(zip(times, picks, strict=True)):
            day, in_day = divmod(ms, DAY_MS)
            prefix = days_seen.get(day)
            if prefix is None:
                prefix = days_seen[day] = (end - timedelta(milliseconds=end_ms - day * DAY_MS)) \
                    .strftime("%Y-%m-%dT")
                if by_month and prefix[:7] != month:  # the lines so far go to the old month
                    sink.write(chunk, month)
                    chunk, month = [], prefix[:7]
            sec, milli = divmod(in_day, 1000)
            ts = f"{prefix}{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}.{milli:03d}Z"
            worse = skill in degrading and ms >= recent
            p = base[skill] - 0.4 if worse else base[skill]
            u = rand()
            if line in forced or u >= p + (1 - p) * 0.45:
                result, score, notes = "fail", rand() * 0.3, fail_js[int(rand() * len(fail_js))]
            elif u >= p:
                result, score = "partial", 0.35 + rand() * 0.4
                notes = partial_js[int(rand() * len(partial_js))]
            else:
                result, score = "success", 0.78 + rand() * 0.22
                notes = ok_js[int(rand() * len(ok_js))] if rand() < 0.25 else '""'
            if worse:
                score *= 0.8
            obj = OBJECTS[int(rand() * len(OBJECTS))]
            if "{" in obj:
                obj = obj.format(int(rand() * 10000))
            task = f"{VERBS[int(rand() * len(VERBS))]} {obj}"
            body = (f'"ts":"{ts}","agent":{agent_js[int(rand() * len(AGENTS))]},'
                    f'"skill":{skill_js[skill]},"task":"{task}","result":"{result}",'
                    f'"score":{round(score, 2)!r},"notes":{notes}')
            if with_ids is None:
                chunk.append(f"{{{body}}}\n")
            else:
                ident = f"{PAIRS[ms >> 40]}{b32_40(ms)}{id_part}{b32_40(line)}"
                chunk.append(f'{{"id":"{ident}",{body},"node":{node_js}}}\n')
            if len(chunk) >= CHUNK:
                sink.write(chunk, month)
                chunk = []
        sink.write(chunk, month)
    finally:
        sink.close()
    return end


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--count", type=int, required=True, help="number of runs (lines)")
    parser.add_argument("--out", required=True, help="output path ('-' for stdout)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--skills", type=int, default=50, help="distinct skills (default 50)")
    parser.add_argument("--days", type=int, default=30, help="spread over the last N days (default 30)")
    parser.add_argument("--end", help="ISO 8601 UTC end time (default: now, floored to the second)")
    parser.add_argument("--with-ids", metavar="NODE",
                        help="add id and node as gitvault's record-run writes them")
    parser.add_argument("--by-month", action="store_true",
                        help="--out is a folder: write OUT/<YYYY-MM>/<NODE>.jsonl (needs --with-ids)")
    parser.add_argument("--gap-hours", type=float, default=0,
                        help="no run in the H hours after end - 7 days and end - 14 days")
    args = parser.parse_args(argv)
    if args.by_month and args.with_ids is None:
        parser.error("--by-month needs --with-ids NODE")
    end = generate(args.count, args.out, args.seed, args.skills, args.days, args.end, args.with_ids,
                   args.by_month, args.gap_hours)
    print(f"gen_runs: end={end.strftime('%Y-%m-%dT%H:%M:%S.')}{end.microsecond // 1000:03d}Z "
          f"seed={args.seed} count={args.count}", file=sys.stderr)


if __name__ == "__main__":
    main()
