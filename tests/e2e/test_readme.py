"""Every command of README.md's tour runs, as written, in the order written: one
real shell per command (``cd`` and ``export`` carry over, as in a terminal), real
``gitvault`` processes, a real local registry for the watcher and a bare repository
for sync. Only what a reader supplies is supplied: the files a command names
(``better.md``, ``skill.py``, ``dag.yaml``, ...), the ids earlier commands printed
(``INJECTION_ID``, ``PR_ID``, ``DAG_ID``), the remote and the LLM command (the demo's
scripted provider instead of a model). A command that fails, or prints an error, fails
the test with its output."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import REPO, isolated_env
from tests.knowledge.servers import no_proxies, registry

README = (REPO / "README.md").read_text("utf-8")
TOUR = README[README.index("## A short tour"):README.index("## Development")]
MAY_EXIT_1 = ("--fail-on",)  # "exit 1 when a skill is flagged (for CI)"

SKILL_PY = '''import re

UNITS = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text):
    """'1h30m' -> 5400."""
    parts = re.findall(r"(\\d+)([hms])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(n) * UNITS[u] for n, u in parts)
'''
TEST_PY = '''from skill import parse_duration


def test_hours_and_minutes():
    assert parse_duration("1h30m") == 5400
'''
EXAMPLE_PY = '''from skill import parse_duration

print(parse_duration("2m5s"))
'''
FILES = {
    "better.md": "1. Reproduce with --count 50.\n2. Look for shared state between tests.\n",
    "skill.py": SKILL_PY, "test_skill.py": TEST_PY, "example.py": EXAMPLE_PY,
    "dag.yaml": "dagId: release-1\ntasks:\n  - {key: build, task: Build the release}\n"
                "  - {key: ship, task: Ship it, dependsOn: [build]}\n",
    "session.md": "We fixed a migration that failed only on the CI database by bisecting "
                  "the migrations against a dump of its schema.\n",
}


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)


def commands(block: str) -> list[str]:
    """The block's commands: a line ending in a backslash, or inside an open quote,
    goes on with the next."""
    out: list[str] = []
    pending = ""
    for line in block.splitlines():
        pending = f"{pending}\n{line}" if pending else line
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # an open quote: the command goes on
            continue
        if pending.rstrip().endswith("\\"):
            continue
        out.append(pending)
        pending = ""
    assert not pending, f"unterminated command in README: {pending!r}"
    return out


def test_the_tour_is_what_the_test_runs() -> None:
    """The split into commands is right (else the tour test would run nonsense)."""
    first = commands(blocks(TOUR, "sh")[0])
    assert first[0].startswith("gitvault init my-vault && cd my-vault")
    assert first[1].count("\n") == 2 and "--tags python,testing" in first[1]
    tool = commands(blocks(TOUR, "sh")[1])
    assert len(tool) == 3 and '"content": "Back off and retry."}\'' in tool[0]


class Shell:
    """Runs commands one shell at a time, carrying the directory and exported variables
    over to the next, as one terminal would."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd, self.env = cwd, env
        self.state = cwd / ".shell-state"

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        script = (f"{command}\nrc=$?\npwd > {self.state}.pwd\nexport -p > {self.state}.env\n"
                  "exit $rc\n")
        result = subprocess.run(["bash", "-c", script], cwd=self.cwd, env=self.env, text=True,
                                capture_output=True, stdin=subprocess.DEVNULL, timeout=300)
        self.cwd = Path(Path(f"{self.state}.pwd").read_text().strip())
        exported = subprocess.run(["bash", "-c", f". {self.state}.env && env -0"],
                                  env={}, capture_output=True, text=True).stdout
        self.env = dict(item.split("=", 1) for item in exported.split("\0") if "=" in item)
        return result


def test_every_tour_command_runs(tmp_path: Path) -> None:
    base = tmp_path / "work"
    base.mkdir()
    env = no_proxies(isolated_env(tmp_path))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env.pop("GITVAULT_NOW", None)
    remote = tmp_path / "team-vault.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    peer = tmp_path / "agent-skill-bus-data"
    runs = peer / "skills" / "self-improving-skills" / "skill-runs.jsonl"
    runs.parent.mkdir(parents=True)
    runs.write_text("".join(json.dumps({
        "ts": f"2026-11-2{i}T10:00:00.000Z", "agent": "bus", "skill": "api-caller",
        "task": "fetch", "result": "fail" if i % 3 == 0 else "success", "score": 0.5,
        "notes": ""}) + "\n" for i in range(8)), "utf-8")
    provider = f"{shlex.quote(sys.executable)} {REPO / 'examples' / 'llm' / 'scripted-provider.py'}"
    shell = Shell(base, env)
    printed: list[str] = []  # every command's output so far (ids come from here)
    ran = 0
    with registry() as server:
        server.pypi["requests"] = "2.32.0"
        for number, block in enumerate(blocks(TOUR, "sh")):
            if "gitvault init vault --remote" in block:
                shell.cwd = base  # the sync example starts a vault of its own
            for command in commands(block):
                command = prepare(command, shell.cwd, printed, server.url, remote, peer,
                                  provider, shell)
                result = shell.run(command)
                allowed = (0, 1) if any(flag in command for flag in MAY_EXIT_1) else (0,)
                assert result.returncode in allowed and "error:" not in result.stderr, \
                    f"README block {number + 1}: {command}\n{result.stdout}\n{result.stderr}"
                printed.append(result.stdout + result.stderr)
                ran += 1
    assert ran >= 50  # the tour has 58: a split gone wrong would glue them together
    vault = base / "my-vault"
    assert (vault / "skills" / "parse-duration" / "skill.py").is_file()
    assert (vault / "AGENTS.md").is_file() and (vault / ".claude/skills/gitvault/SKILL.md").is_file()
    assert "requests" in "".join(server.hits)  # the watcher asked the local registry
    synced = subprocess.run(["git", "--git-dir", str(remote), "log", "--oneline", "main"],
                            capture_output=True, text=True, check=True).stdout
    assert synced.strip()  # sync pushed


def prepare(command: str, cwd: Path, printed: list[str], registry_url: str, remote: Path,
            peer: Path, provider: str, shell: Shell) -> str:
    """The command as a reader would type it here: the files it names written, the ids
    it stands for filled in from what earlier commands printed."""
    for name, text in FILES.items():
        if re.search(rf"(^|\s){re.escape(name)}(\s|$)", command) and not (cwd / name).exists():
            (cwd / name).write_text(text, "utf-8")
    if command.startswith("gitvault watch") and "index" not in (cwd / "gitvault.yaml").read_text():
        (snippet,) = [b for b in blocks(TOUR, "yaml") if "watch:" in b]
        sources = yaml.safe_load(snippet)["watch"]["sources"]
        config = yaml.safe_load((cwd / "gitvault.yaml").read_text("utf-8"))
        config["watch"]["sources"] = [{**s, "index": f"{registry_url}/pypi"} for s in sources]
        (cwd / "gitvault.yaml").write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    if "INJECTION_ID" in command:
        (injection,) = re.findall(r"^gitvault: injection (\S+) ", printed[-1], re.M)
        command = command.replace("INJECTION_ID", injection)
    if "PR_ID" in command:
        if command.startswith("gitvault fail"):  # the first PR is done: fail a second one
            second = shell.run("gitvault enqueue --task 'Second fix' --json")
            pr = json.loads(second.stdout)["pr"]["id"]
        else:
            pr = re.findall(r"\bpr-[0-9a-z-]+", "".join(printed))[0]
        command = command.replace("PR_ID", pr)
    command = command.replace("DAG_ID", "release-1")
    command = command.replace("path/to/agent-skill-bus-data", str(peer))
    command = command.replace("git@host:team/vault.git", str(remote))
    return command.replace('"llm -m gpt-4o-mini"', shlex.quote(provider))
