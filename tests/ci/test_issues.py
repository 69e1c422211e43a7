"""``gitvault ci issues``: one GitHub issue per flagged or drifting skill, opened, updated
and closed idempotently through ``gh`` (a recording stub stands in for the network)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.ci.helpers import (
    HOSTILE_SKILL,
    LONG_SKILL,
    NOW,
    TOKEN,
    GhStub,
    actions_env,
    assert_inert,
    flagged_and_drifting,
    hostile_runs,
    record,
)
from tests.conftest import Runner, snapshot


@pytest.fixture
def gh(gv: Runner, vault: Path, tmp_path: Path) -> GhStub:
    """A vault with ``deploy`` flagged and ``slipping`` drifting, gv set up as a workflow
    step (the GitHub variables, GITVAULT_NOW, the gh stub on PATH)."""
    flagged_and_drifting(gv)
    stub = GhStub.install(tmp_path)
    gv.env.update({**actions_env(tmp_path), **stub.env(gv.env), "GITVAULT_NOW": NOW})
    return stub


def test_one_issue_per_problem_skill_and_twice_adds_nothing(gv: Runner, gh: GhStub) -> None:
    out = gv.ok("ci", "issues", "--json").json()
    assert out["opened"] == [{"skill": "deploy", "number": 1, "title": "gitvault: deploy is flagged"},
                             {"skill": "slipping", "number": 2,
                              "title": "gitvault: slipping is drifting"}]
    assert out["updated"] == out["closed"] == out["unchanged"] == [] and not out["dryRun"]
    assert gh.calls()[0] == ["issue", "list", "--state", "open", "--limit", "1000", "--json",
                             "number,title,body", "--repo", "acme/skills"]
    assert gh.verbs() == ["list", "create", "create"]
    deploy = gh.issues()[0]
    assert deploy["body"].startswith("The skill ` deploy ` is **flagged** (gitvault's check of "
                                     "2026-11-30T12:00:00.000Z, window 7 days).\n\nWhy:\n"
                                     "- average score 0.00 is below the flag threshold 0.70\n"
                                     "- broken: the last 3 runs failed\n")
    assert "| 3 | 0.000 | 0.000 | broken | 3 |" in deploy["body"]
    assert ("Latest failure (` 2026-11-29 10:02 UTC `): ` kubectl rollout timed out "
            "(try 3) `") in deploy["body"]
    assert "- drifting: 0.80 this week, 1.00 the week before (down 0.20)\n" in gh.issues()[1]["body"]

    again = gv.ok("ci", "issues", "--json").json()
    assert again["opened"] == again["updated"] == again["closed"] == []
    assert [u["number"] for u in again["unchanged"]] == [1, 2]
    assert gh.verbs() == ["list", "create", "create", "list"]
    assert gv.ok("ci", "issues").out.strip() == ("unchanged #1: gitvault: deploy is flagged\n"
                                                 "unchanged #2: gitvault: slipping is drifting")
    assert all(issue["comments"] == [] for issue in gh.issues())


def test_a_change_updates_the_issue_once_and_recovery_closes_it(gv: Runner, gh: GhStub,
                                                                tmp_path: Path) -> None:
    gv.ok("ci", "issues")
    record(gv, "deploy", "fail", "0", "2026-11-30T09:00:00.000Z", "disk full on node-3")
    out = gv.ok("ci", "issues", "--json").json()
    assert out["updated"] == [{"skill": "deploy", "number": 1, "title": "gitvault: deploy is flagged"}]
    assert [u["skill"] for u in out["unchanged"]] == ["slipping"]
    assert gh.verbs()[-3:] == ["list", "edit", "comment"]
    deploy = gh.issues()[0]
    assert "broken: the last 4 runs failed" in deploy["body"] and "` disk full on node-3 `" in deploy["body"]
    (comment,) = deploy["comments"]
    assert comment.startswith("gitvault's check of 2026-11-30T12:00:00.000Z ([workflow run]"
                              "(https://github.com/acme/skills/actions/runs/4242)): ` deploy ` "
                              "is still **flagged**.\n\n- average score 0.00 is below the flag "
                              "threshold 0.70\n- broken: the last 4 runs failed\n")
    gv.ok("ci", "issues")
    assert len(gh.issues()[0]["comments"]) == 1  # nothing changed: no second comment

    for minute in range(10, 24):
        record(gv, "deploy", "success", "1", f"2026-11-30T10:{minute}:00.000Z")
    out = gv.ok("ci", "issues", "--json").json()
    assert out["closed"] == [{"skill": "deploy", "number": 1, "title": "gitvault: deploy"}]
    deploy = gh.issues()[0]
    assert deploy["state"] == "closed"
    assert deploy["comments"][-1].endswith("` deploy ` is healthy again (average score 0.778, "
                                           "trend stable).\n")
    assert gh.issues()[1]["state"] == "open" and gh.issues()[1]["comments"] == []
    last = gv.ok("ci", "issues", "--json").json()
    assert last["closed"] == last["opened"] == [] and len(gh.issues()) == 2
    summary = Path(gv.env["GITHUB_STEP_SUMMARY"]).read_text()
    assert "### Issues\n\n- opened #1: ` deploy `\n- opened #2: ` slipping `\n" in summary
    assert "- closed #1: ` deploy `\n- unchanged #2: ` slipping `\n" in summary


def test_other_issues_are_left_alone(gv: Runner, gh: GhStub) -> None:
    gh.state.write_text('{"next": 8, "issues": [{"number": 7, "title": "gitvault: deploy is '
                        'flagged", "body": "a person wrote this", "state": "open", '
                        '"comments": []}]}')
    out = gv.ok("ci", "issues", "--json").json()
    assert [o["number"] for o in out["opened"]] == [8, 9]
    assert gh.issues()[0] == {"number": 7, "title": "gitvault: deploy is flagged",
                              "body": "a person wrote this", "state": "open", "comments": []}


def test_dry_run_lists_and_changes_nothing(gv: Runner, gh: GhStub) -> None:
    text = gv.ok("ci", "issues", "--dry-run").out
    assert text.strip() == ("would open: gitvault: deploy is flagged\n"
                            "would open: gitvault: slipping is drifting")
    out = gv.ok("ci", "issues", "--dry-run", "--json").json()
    assert out["dryRun"] and [o["number"] for o in out["opened"]] == [None, None]
    assert out["commands"] == [["gh", "issue", "list", "--state", "open", "--limit", "1000",
                                "--json", "number,title,body", "--repo", "acme/skills"]]
    assert gh.verbs() == ["list", "list"] and gh.issues() == []
    assert not Path(gv.env["GITHUB_STEP_SUMMARY"]).exists()


def test_a_hostile_skill_name_and_note_stay_inert_in_the_issue(gv: Runner, gh: GhStub,
                                                               vault: Path) -> None:
    hostile_runs(vault)
    gv.ok("ci", "issues")
    (issue,) = [i for i in gh.issues() if "evil" in i["title"]]
    assert issue["title"] == f"gitvault: {HOSTILE_SKILL} is flagged"  # titles render no markup
    assert_inert(issue["body"])
    assert "[REDACTED]" in issue["body"] and TOKEN not in gh.log.read_text()
    (long,) = [i for i in gh.issues() if "very-long" in i["title"]]
    assert long["title"] == f"gitvault: {LONG_SKILL[:79].rstrip()}… is flagged"
    again = gv.ok("ci", "issues", "--json").json()  # their markers find them again
    assert again["opened"] == []
    assert {HOSTILE_SKILL, LONG_SKILL} <= {u["skill"] for u in again["unchanged"]}


def test_gh_missing_failing_or_hanging_is_one_line(gv: Runner, gh: GhStub, vault: Path) -> None:
    before = snapshot(vault)
    missing = gv("ci", "issues", env={"PATH": str(Path(gv.env["PATH"].split(":")[-1]))})
    assert missing.code == 2 and missing.err_lines == [
        "gitvault: error: gh issue list: the GitHub CLI 'gh' is not on PATH (install it from "
        "https://cli.github.com; GitHub's runners have it)"]
    failing = gv("ci", "issues", "--json", env={"GH_STUB_FAIL": "create"})
    assert failing.code == 2 and failing.err_lines == [
        "gitvault: error: gh issue create: exited 1: HTTP 502: Server Error "
        "(https://api.github.com/graphql)"]
    assert failing.json()["error"]["code"] == "gh"
    no_token = gv("ci", "issues", env={"GH_TOKEN": ""})
    assert no_token.code == 2 and "gh issue list: exited 4: gh: To use GitHub CLI" in no_token.err
    started = time.monotonic()
    hanging = gv("ci", "issues", "--timeout", "0.5", env={"GH_STUB_SLEEP": "30"})
    assert time.monotonic() - started < 10
    assert hanging.code == 2 and hanging.err_lines == [
        "gitvault: error: gh issue list: no answer within 0.5 s"]
    assert gv("ci", "issues", "--timeout", "0").code == 2
    assert snapshot(vault) == before  # ci issues never writes to the vault


def test_at_most_max_open_issues_are_opened_per_run(gv: Runner, gh: GhStub) -> None:
    out = gv.ok("ci", "issues", "--max-open", "1", "--json").json()
    assert [o["skill"] for o in out["opened"]] == ["deploy"]
    assert out["deferred"] == [{"skill": "slipping", "number": None,
                                "title": "gitvault: slipping is drifting"}]
    assert len(gh.issues()) == 1
    later = gv.ok("ci", "issues", "--json").json()
    assert [o["skill"] for o in later["opened"]] == ["slipping"] and later["deferred"] == []
