"""``gitvault demo``: the tour a newcomer runs first works from the installed command."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Runner


def test_demo_builds_a_vault_and_explains_each_step(gv: Runner, tmp_path: Path) -> None:
    result = gv.ok("demo", str(tmp_path / "tour"))
    out = result.out
    for expected in ("$ gitvault init", "$ gitvault skill patch fix-flaky-pytest",
                     "+5. Record the seed", "v3  rollback", "archived as v2; restored as v3",
                     "$ gitvault doctor", "0 problems", "skills/fix-flaky-pytest/SKILL.md",
                     "$ gitvault health", "postgres-slow-query: 0.8", "(the same on both)",
                     "(the later edit) wins as v5; demo's v4 stays in history",
                     "parse-duration v1 stored: tests and example passed",
                     "disk-usage refused (exit 1)", "imports 'subprocess'",
                     "| ### RELEVANT SKILLS", "fix-flaky-pytest: used 1, succeeded 1",
                     "first check: baseline 2.32.0 (no diff)",
                     "breaking_change (critical): 2.32.0 → 3.0.0",
                     "routed to the queue: prompt request pr-",
                     "scripted provider the demo ships, not a model",
                     "GITVAULT_LLM_CMD=\"llm -m gpt-4o-mini\"",
                     "-> created: bisect-failing-migration v1",
                     "-> applied 'Refresh statistics before reading the plan' as v2 (undo: "
                     "gitvault skill rollback postgres-slow-query v1)",
                     "on branch gitvault/proposals/debug-swift-actor-isolation/"):
        assert expected in out
    root = tmp_path / "tour" / "vault"
    listed = gv.ok("skill", "list", "--json", cwd=root).json()["skills"]
    assert {s["name"] for s in listed} == {
        "debug-swift-actor-isolation", "fix-flaky-pytest", "postgres-slow-query",
        "prefer-small-commits", "retry-with-backoff", "rotate-leaked-api-key",
        "summarise-ci-failure", "parse-duration", "bisect-failing-migration"}
    assert (root / "skills" / ".rejected" / "disk-usage" / "REASONS.md").is_file()
    files = gv.git("ls-files", cwd=root).split()
    runs_files = {f.rsplit("/", 1)[1] for f in files if f.startswith("logs/runs/")}
    assert runs_files == {"demo.jsonl", "laptop.jsonl"}  # both clones' records, merged
    assert gv.git("status", "--porcelain", cwd=root) == ""
    assert gv.ok("doctor", cwd=root).code == 0
    assert gv.ok("dispatch", "--json", cwd=root).json()["prs"] == []  # the demo worked it
    stats = gv.ok("stats", "--json", cwd=root).json()
    assert stats["total"] == 1 and stats["byStatus"]["done"] == 1
    assert gv.ok("diffs", "--json", cwd=root).json()["totalDiffs"] == 1
    for expected in ('$ gitvault search "a test fails on CI only sometimes" --explain',
                     "fix-flaky-pytest", "terms: ", "from knowledge-watcher",
                     "completed pr-", "AGENTS.md: 9 skills, most used first",
                     "$ gitvault dashboard --html"):
        assert expected in out
    project = tmp_path / "tour" / "agent-project"
    exported = sorted(p.parent.name for p in (project / ".claude/skills").glob("*/SKILL.md"))
    assert exported == sorted(s["name"] for s in listed)
    assert "<!-- gitvault:skills:begin" in (project / "AGENTS.md").read_text()
    page = (tmp_path / "tour" / "health.html").read_text()
    assert "postgres-slow-query" in page and "<svg" in page


def test_demo_json_and_refuses_a_used_folder(gv: Runner, tmp_path: Path) -> None:
    data = gv.ok("demo", str(tmp_path / "t"), "--json").json()
    assert data["rolledBack"] == {"name": "fix-flaky-pytest", "version": 3}
    assert data["doctor"]["ok"] is True and data["commits"] >= 10
    assert data["flagged"] == ["postgres-slow-query", "debug-swift-actor-isolation"]
    assert data["drift"] == ["postgres-slow-query"]
    assert data["agents"]["queue"]["source"] == "knowledge-watcher"
    assert data["agents"]["export"]["folders"] == data["agents"]["export"]["indexed"] == 9
    assert data["improve"] == {"extracted": "bisect-failing-migration",
                               "decisions": {"postgres-slow-query": "applied",
                                             "debug-swift-actor-isolation": "proposed"}}
    again = gv("demo", str(tmp_path / "t"))
    assert again.code == 2 and "not empty" in again.err


def test_demo_without_folder_uses_a_temp_folder(gv: Runner) -> None:
    data = gv.ok("demo", "--json").json()
    assert Path(data["vault"]).is_dir()
