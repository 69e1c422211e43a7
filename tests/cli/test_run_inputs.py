"""Inputs that must be refused or normalised the same way on every path (issue 11):
empty scores and results, skill names of runs, foreign scores outside [0, 1], and
version numbers in digits other than ASCII."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gitvault.cli.hot import parse
from tests.conftest import Runner

CLICK = "from gitvault.cli.app import main; main()"


def both_paths(gv: Runner, args: list[str]) -> list[tuple[int, str, str]]:
    assert parse(args) is not None  # a plain invocation: the fast path takes it
    results = []
    for entry in (["-m", "gitvault"], ["-c", CLICK]):
        proc = subprocess.run([sys.executable, *entry, *args], capture_output=True,
                              cwd=gv.cwd, env=gv.env, timeout=120)
        results.append((proc.returncode, proc.stdout.decode(), proc.stderr.decode()))
    return results


def test_an_empty_score_or_result_is_an_error_on_every_path(gv: Runner, vault: Path) -> None:
    for args, message in (
            (["record-run", "--skill", "s1", "--score", ""],
             "gitvault: error: invalid score '': use a number from 0 to 1\n"),
            (["record-run", "--skill", "s1", "--score="],
             "gitvault: error: invalid score '': use a number from 0 to 1\n"),
            (["record-run", "--skill", "s1", "--result", ""],
             "gitvault: error: invalid result '': use one of success, partial, fail\n")):
        fast, slow = both_paths(gv, args)
        assert fast == slow == (2, "", message), args
    assert not (vault / "logs" / "runs").exists() or \
        not any((vault / "logs" / "runs").rglob("*.jsonl"))


def test_a_run_s_skill_name_is_normalised_like_skill_names(gv: Runner, vault: Path) -> None:
    entry = gv.ok("record-run", "--skill", "Foo_Bar", "--json").json()["entry"]
    assert entry["skill"] == "foo-bar"
    gv.ok("record-run", "--skill", "foo-bar", "--result", "fail", "--score", "0")
    assert list(gv.ok("health", "--json").json()["skills"]) == ["foo-bar"]
    fast, slow = both_paths(gv, ["record-run", "--skill", "../etc"])
    assert fast == slow
    assert fast[0] == 2 and "invalid skill name '../etc'" in fast[2]


def test_foreign_scores_outside_0_1_are_clamped_with_a_warning(gv: Runner, vault: Path) -> None:
    foreign = vault / "logs" / "runs" / "2026-11" / "other-tool.jsonl"
    foreign.parent.mkdir(parents=True)
    lines = [{"ts": "2026-11-29T10:00:00Z", "skill": "s", "result": "success", "score": 7.5},
             {"ts": "2026-11-29T10:01:00Z", "skill": "s", "result": "fail", "score": -2},
             {"ts": "2026-11-29T10:02:00Z", "skill": "s", "result": "partial", "score": 0.5}]
    foreign.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = gv.ok("health", "--json", env={"GITVAULT_NOW": "2026-11-30T00:00:00Z"})
    skill = result.json()["skills"]["s"]
    assert skill["runs"] == 3
    assert skill["avgScore"] == 0.5  # (1 + 0 + 0.5) / 3
    where = "logs/runs/2026-11/other-tool.jsonl"
    assert result.json()["warnings"] == [
        f"{where}:1: score 7.5 is outside [0, 1]: counted as 1",
        f"{where}:2: score -2 is outside [0, 1]: counted as 0"]
    assert f"gitvault: warning: {where}:1: score 7.5 is outside [0, 1]" in result.err
    again = gv.ok("health", "--json", env={"GITVAULT_NOW": "2026-11-30T00:00:00Z"})
    assert again.json() == result.json()  # the cache keeps the clamped scores and warnings


def test_versions_take_ascii_digits_only(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "ver", "--description", "Versioned.")
    gv.ok("skill", "patch", "ver", "--content", "Second.")
    for bad in ("v\uff11", "v 1", "\uff11", "v\u0661"):
        shown = gv("skill", "show", f"ver@{bad}")
        assert shown.code == 2, bad
        rolled = gv("skill", "rollback", "ver", bad)
        assert rolled.code == 2, bad
        assert rolled.err_lines == [f"gitvault: error: invalid version {bad!r}: use vN or N, "
                                    "e.g. v2"]
    assert gv.ok("skill", "show", "ver@v1", "--json").json()["version"] == 1
