"""What the ci tests share: a vault with one flagged and one drifting skill, the GitHub
Actions environment, the recording ``gh`` stub, and GitHub's markdown renderer."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cmarkgfm
from cmarkgfm.cmark import Options

from tests.conftest import Runner

NOW = "2026-11-30T12:00:00.000Z"
TOKEN = "ghp_" + "A1b2C3d4" * 5  # a GitHub token pasted into a run's notes
HOSTILE_SKILL = "evil](http://evil.example)<b>x</b>"
HOSTILE_NOTE = ("see [docs](http://evil.example) ](http://evil) <script>alert(1)</script> "
                f"<img src=x onerror=alert(1)> @octocat #1 `tick` | pipe www.evil.example {TOKEN}")
LONG_SKILL = "very-long-" * 40  # far longer than a skill file's name may be
STUB = Path(__file__).with_name("gh_stub.py")


def record(gv: Runner, skill: str, result: str, score: str, ts: str, notes: str = "") -> None:
    gv.ok("record-run", "--agent", "dev", "--skill", skill, "--task", "t", "--result", result,
          "--score", score, *(["--notes", notes] if notes else []), env={"GITVAULT_NOW": ts})


def flagged_and_drifting(gv: Runner) -> None:
    """Skills in gv's vault at NOW: ``deploy`` flagged (broken: three failures in a row),
    ``slipping`` drifting but not flagged (1.0 last week, 0.8 this week), ``fine`` fine."""
    for name, what in (("deploy", "Deploy the app"), ("slipping", "Ship the release notes"),
                       ("fine", "Format the code")):
        gv.ok("skill", "create", name, "--description", what, env={"GITVAULT_NOW": NOW})
    for day in range(1, 6):
        record(gv, "slipping", "success", "0.8", f"2026-11-0{day}T10:00:00.000Z")
    for day in (18, 19):
        record(gv, "slipping", "success", "1.0", f"2026-11-{day}T10:00:00.000Z")
    for day in (27, 28):
        record(gv, "slipping", "partial", "0.8", f"2026-11-{day}T10:00:00.000Z")
    for minute in range(3):
        record(gv, "deploy", "fail", "0", f"2026-11-29T10:0{minute}:00.000Z",
               f"kubectl rollout timed out (try {minute + 1})")
    record(gv, "fine", "success", "0.9", "2026-11-29T10:00:00.000Z")


def hostile_runs(root: Path) -> None:
    """Run lines as an untrusted clone may have committed them: a name and notes made to
    inject markdown, HTML and links, a token that was never redacted, a 400-character
    skill name."""
    folder = root / "logs" / "runs" / "2026-11"
    folder.mkdir(parents=True, exist_ok=True)
    line = {"id": "01KHOSTILE0000000000000000", "ts": "2026-11-29T11:00:00.000Z",
            "agent": "x", "skill": HOSTILE_SKILL, "task": "t", "result": "fail", "score": 0,
            "notes": HOSTILE_NOTE, "node": "intruder"}
    long_name = {**line, "id": "01KHOSTILE0000000000000001", "skill": LONG_SKILL, "notes": ""}
    with open(folder / "intruder.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n" + json.dumps(long_name) + "\n")


def actions_env(tmp: Path) -> dict[str, str]:
    """What GitHub Actions sets for a step (the parts gitvault reads)."""
    return {"GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_REPOSITORY": "acme/skills",
            "GITHUB_RUN_ID": "4242", "GITHUB_WORKFLOW": "gitvault",
            "GITHUB_SERVER_URL": "https://github.com", "GITHUB_SHA": "0" * 40,
            "GITHUB_STEP_SUMMARY": str(tmp / "step-summary.md"), "RUNNER_TEMP": str(tmp)}


@dataclass
class GhStub:
    """The recording ``gh`` on PATH (see gh_stub.py)."""

    bin: Path
    state: Path
    log: Path

    @classmethod
    def install(cls, tmp: Path) -> GhStub:
        folder = tmp / "gh-bin"
        folder.mkdir()
        script = folder / "gh"
        script.write_text(f"#!{sys.executable}\n" + STUB.read_text())
        script.chmod(0o755)
        return cls(folder, tmp / "gh-state.json", tmp / "gh-calls.jsonl")

    def env(self, base: dict[str, str]) -> dict[str, str]:
        return {"PATH": f"{self.bin}{os.pathsep}{base.get('PATH', '')}",
                "GH_STUB_STATE": str(self.state), "GH_STUB_LOG": str(self.log),
                "GH_TOKEN": "ghs_stubtoken"}

    def issues(self) -> list[dict[str, Any]]:
        return json.loads(self.state.read_text())["issues"] if self.state.exists() else []

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line)["argv"] for line in self.log.read_text().splitlines()]

    def verbs(self) -> list[str]:
        return [call[1] for call in self.calls()]


def render(markdown: str) -> str:
    """HTML as GitHub renders markdown (cmark-gfm, its extensions; raw HTML passed through
    as GitHub's sanitiser would see it)."""
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def assert_inert(markdown: str, allowed_links: tuple[str, ...] = ()) -> str:
    """The hostile run's name and notes render as text only: no element, link,
    autolink or mention outside code, and no token. Returns the HTML."""
    html = render(markdown)
    assert TOKEN not in markdown and TOKEN not in html
    tags = set(re.findall(r"<([a-z0-9]+)", html))
    assert tags <= {"h2", "h3", "p", "ul", "li", "strong", "code", "table", "thead", "tbody",
                    "tr", "th", "td", "a"}, tags
    links = re.findall(r'<a href="([^"]*)"', html)
    assert all(link in allowed_links for link in links), links
    outside_code = re.sub(r"<code>.*?</code>", "", html, flags=re.DOTALL)
    for text in ("@octocat", "evil.example", "alert(1)", "#1 "):
        assert text not in outside_code, text
    return html
