"""``gitvault ci report``: the job summary a user reads on the run's page, and the
``health`` record it appends, from a real vault with flagged and drifting skills."""

from __future__ import annotations

import json
from pathlib import Path

from tests.ci.helpers import (
    HOSTILE_NOTE,
    HOSTILE_SKILL,
    NOW,
    actions_env,
    assert_inert,
    flagged_and_drifting,
    hostile_runs,
    record,
    render,
)
from tests.conftest import Runner, snapshot


def health_lines(root: Path) -> list[dict]:
    return [json.loads(line) for path in sorted((root / "logs" / "health").rglob("*.jsonl"))
            for line in path.read_text().splitlines()]


def test_the_summary_lists_problem_skills_first_with_why(gv: Runner, vault: Path,
                                                         tmp_path: Path) -> None:
    flagged_and_drifting(gv)
    env = {**actions_env(tmp_path), "GITVAULT_NOW": NOW}
    summary = Path(env["GITHUB_STEP_SUMMARY"])
    summary.write_text("## an earlier step's report\n\n")
    result = gv("ci", "report", env=env)
    assert result.code == 0, result.err  # flagged skills are news, not a failure
    record_id = health_lines(vault)[0]["id"]
    assert result.out.strip() == (f"wrote the report to {summary}: 1 flagged, 1 drifting of 3 "
                                  f"skills; health record {record_id}")
    text = summary.read_text()
    assert text.startswith("## an earlier step's report\n\n## gitvault: 2 skills need attention\n")
    assert ("1 flagged, 1 drifting of 3 skills with runs (window 7 days, checked "
            f"2026-11-30T12:00:00.000Z; health record `{record_id}`). "
            "[Workflow run](https://github.com/acme/skills/actions/runs/4242)") in text
    assert ("- ` deploy ` is **flagged**: average score 0.00 is below the flag threshold 0.70; "
            "broken: the last 3 runs failed. Latest failure (` 2026-11-29 10:02 UTC `): "
            "` kubectl rollout timed out (try 3) `") in text
    assert ("- ` slipping ` is **drifting**: drifting: 0.80 this week, 1.00 the week before "
            "(down 0.20).") in text
    assert text.index("` deploy ` is") < text.index("` slipping ` is")
    rows = [line for line in text.splitlines() if line.startswith("| ` ")]
    assert rows == [
        "| ` deploy ` | 3 | 0.000 | 0.000 | broken | 3 | **flagged** | "
        "` kubectl rollout timed out (try 3) ` |",
        "| ` slipping ` | 9 | 0.844 | 0.800 | stable | 0 | **drifting** | – |",
        "| ` fine ` | 1 | 0.900 | 0.900 | stable | 0 | ok | – |"]
    assert "No lifecycle changes." in text and "No knowledge sources configured" in text
    html = render(text)
    assert "<td><code>deploy</code></td>" in html and "<th>last failure note</th>" in html


def test_the_health_record_sums_up_the_check(gv: Runner, vault: Path, tmp_path: Path) -> None:
    flagged_and_drifting(gv)
    env = {**actions_env(tmp_path), "GITVAULT_NOW": NOW}
    out = gv.ok("ci", "report", "--json", env=env).json()
    (line,) = health_lines(vault)
    assert out["record"] == line
    assert list(line)[:2] == ["id", "ts"] and line["node"] == "test-node"
    assert (vault / "logs/health/2026-11/test-node.jsonl").is_file()
    assert line["ts"] == NOW and line["op"] == "check"
    assert line["flagged"] == ["deploy"] and line["drifting"] == ["slipping"]
    assert line["skills"] == 3 and line["runs"] == 13 and line["window"] == 7
    assert line["findings"][0] == {"name": "deploy", "status": "flagged",
                                   "why": ["average score 0.00 is below the flag threshold 0.70",
                                           "broken: the last 3 runs failed"],
                                   "avgScore": 0, "trend": "broken"}
    assert line["github"] == {"repository": "acme/skills", "runId": "4242",
                              "workflow": "gitvault", "sha": "0" * 40,
                              "runUrl": "https://github.com/acme/skills/actions/runs/4242"}
    assert out["flagged"] == ["deploy"] and out["summary"] == env["GITHUB_STEP_SUMMARY"]
    assert out["findings"][1]["drift"] == {"lastWeekAvg": 1, "thisWeekAvg": 0.8, "drop": 0.2}
    assert out["markdown"] == Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    status = gv.ok("status", "--json").json()  # pending until commit or sync
    assert {"path": "logs/health/2026-11/test-node.jsonl", "lines": 1} in status["pending"]["files"]


def test_outside_actions_the_report_goes_to_stdout(gv: Runner, vault: Path) -> None:
    result = gv("ci", "report", env={"GITVAULT_NOW": NOW})
    assert result.code == 0, result.err
    assert result.out.startswith("## gitvault: all skills healthy\n")
    assert "No runs recorded yet." in result.out and "Workflow run" not in result.out
    assert health_lines(vault)[0]["flagged"] == [] and "github" not in health_lines(vault)[0]


def test_lifecycle_changes_and_the_watcher_are_reported(gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "old-one", "--description", "Unused for weeks",
          env={"GITVAULT_NOW": "2026-10-01T00:00:00Z"})
    (vault / "NOTES.txt").write_text("v1\n")
    config = vault / "gitvault.yaml"
    config.write_text(config.read_text().replace(
        "  sources: []", "  sources:\n    - {id: notes, type: file, path: NOTES.txt, tier: 1}"))
    gv.ok("commit", "-m", "watch a file")
    out = gv.ok("ci", "report", "--json", env={"GITVAULT_NOW": NOW}).json()
    assert [c["name"] for c in out["lifecycle"]] == ["old-one"]
    assert gv.ok("skill", "show", "old-one", "--json").json()["state"] == "stale"
    assert out["record"]["lifecycle"] == ["old-one"]
    assert out["record"]["knowledge"] == {"checked": 1, "diffs": 0, "failed": 0}
    text = out["markdown"]
    assert "- ` old-one ` marked stale: ` not injected for 60 days" in text
    assert "1 source checked, 0 new diffs, 0 failed, 0 not due." in text
    assert "| ` notes ` | file | baseline |" in text


def test_a_hostile_name_and_note_render_as_text(gv: Runner, vault: Path, tmp_path: Path) -> None:
    flagged_and_drifting(gv)
    hostile_runs(vault)
    env = {**actions_env(tmp_path), "GITVAULT_NOW": NOW}
    gv.ok("ci", "report", env=env)
    text = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    html = assert_inert(text, ("https://github.com/acme/skills/actions/runs/4242",))
    assert "[REDACTED]" in text
    assert "<code>see [docs](http://evil.example) ](http://evil) &lt;script&gt;" in html
    assert "| ` evil](http://evil.example)<b>x</b> ` |" in text  # the table keeps its columns
    assert html.count("<tr>") == 6  # header + 5 skills
    assert HOSTILE_SKILL in json.dumps(health_lines(vault)[0]["flagged"])
    assert HOSTILE_NOTE not in text


def test_bad_input_is_refused(gv: Runner, vault: Path) -> None:
    bad = gv("ci", "report", "--days", "-1")
    assert bad.code == 2 and "--days" in bad.err and len(bad.err_lines) == 1
    assert not (vault / "logs" / "health").exists()
    record(gv, "a", "success", "1", NOW)
    before = snapshot(vault)
    result = gv("ci", "report", "--summary", str(vault / "no" / "such" / "f.md"))
    assert result.code == 2 and len(result.err_lines) == 1
    assert "f.md: cannot append the summary there (No such file or directory)" in result.err
    assert snapshot(vault) == before
