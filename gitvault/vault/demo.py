"""``gitvault demo``: the guided tour a newcomer runs first.

It builds a vault from the bundled example skills and walks through every capability:
versioned skills, the agent tool protocol, rollback, archive, context and outcomes, the
verification gate, runs, health and drift, records, status and commit, two clones
syncing, the knowledge watcher, the LLM loop, search with its reasons, the queue, Agent
Skills export with an AGENTS.md index, the HTML report and doctor, then shows where each
file went. Every step prints the command a user would type for it.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from gitvault.core import git, records
from gitvault.core.clock import iso, now
from gitvault.core.shipped import shipped
from gitvault.errors import GitvaultError, InvalidInput
from gitvault.runs import health
from gitvault.runs.record import record_run
from gitvault.skills.model import read_skill, render_skill
from gitvault.skills.store import SkillEdit
from gitvault.skills.versions import diff_text
from gitvault.vault import tool as protocol
from gitvault.vault.doctor import run_doctor
from gitvault.vault.facade import Vault
from gitvault.vault.init import init_vault

Echo = Callable[[str], None]


def examples_dir() -> Path:
    """The bundled example skills (in the wheel, or in a source checkout)."""
    return shipped("examples") / "skills"


GOOD_CODE = {
    "code": "def parse_duration(text):\n"
            "    \"\"\"'1h30m' -> 5400 seconds.\"\"\"\n"
            "    units = {'h': 3600, 'm': 60, 's': 1}\n"
            "    total, number = 0, ''\n"
            "    for char in text:\n"
            "        if char.isdigit():\n"
            "            number += char\n"
            "        else:\n"
            "            total += int(number) * units[char]\n"
            "            number = ''\n"
            "    return total\n",
    "tests": "from skill import *\n\nassert parse_duration('1h30m') == 5400\n"
             "assert parse_duration('45s') == 45\n",
    "example": "from skill import *\n\nprint(parse_duration('2m5s'))\n",
}
BAD_CODE = {
    "code": "import subprocess\n\n\ndef disk_usage(path):\n"
            "    return subprocess.run(['du', '-s', path], capture_output=True).stdout\n",
    "tests": "from skill import *\n\nassert disk_usage('.')\n",
    "example": "from skill import *\n\nprint(disk_usage('.'))\n",
}


def demo_code_skills(vault: Vault) -> list[str]:
    """A good code skill through the gate, and one the gate refuses."""
    lines = []
    try:
        skill, _ = vault.skills.create("parse-duration", SkillEdit(
            description="Parse a duration such as 1h30m into seconds.", kind="code",
            code=GOOD_CODE["code"], tests=GOOD_CODE["tests"], example=GOOD_CODE["example"]))
        lines.append(f"parse-duration v{skill.version} stored: tests and example passed")
    except GitvaultError as exc:  # e.g. no sandbox on this machine: the gate refuses
        lines.append(f"parse-duration refused: {exc}")
    try:
        vault.skills.create("disk-usage", SkillEdit(
            description="Report the disk usage of a folder.", kind="code",
            code=BAD_CODE["code"], tests=BAD_CODE["tests"], example=BAD_CODE["example"]))
        lines.append("disk-usage stored (unexpected)")
    except GitvaultError as exc:
        lines.append(f"disk-usage refused (exit 1): {str(exc)[:150]}")
    return lines


def record_demo_runs(vault: Vault, moment: datetime) -> int:
    """Two weeks of runs: one steady skill, one that slipped this week, one broken."""
    rng = random.Random(7)
    runs = []
    for hours_ago in range(14 * 24, 0, -6):
        ts = iso(moment - timedelta(hours=hours_ago))
        this_week = hours_ago <= 7 * 24
        for skill, base in (("fix-flaky-pytest", 0.9), ("postgres-slow-query", 0.88),
                            ("debug-swift-actor-isolation", 0.8)):
            if skill == "postgres-slow-query" and this_week:
                base = 0.55
            score = round(min(1.0, max(0.0, rng.gauss(base, 0.05))), 2)
            result = "success" if score >= 0.7 else "partial" if score >= 0.4 else "fail"
            if skill == "debug-swift-actor-isolation" and hours_ago <= 18:
                score, result = 0.0, "fail"
            runs.append({"ts": ts, "agent": "ci-bot", "skill": skill, "task": "nightly",
                            "result": result, "score": score, "notes": ""})
    path = vault.layout.log_file("runs", vault.node, moment)
    records.append_records(path, [records.stamp(r, vault.node) for r in runs], root=vault.root)
    return len(runs)


def _sync(clone: Path, node: str) -> dict[str, Any]:
    """``gitvault sync --json`` in ``clone`` as node ``node``: the command a user runs
    (a process: the vault layer does not import the sync layer above it)."""
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "gitvault", "--node", node, "sync",
                           "--json"], cwd=clone, capture_output=True, timeout=300)
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitvaultError(f"gitvault sync in {clone} failed: {lines[-1] if lines else '?'}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def exchange_between_clones(base: Path, root: Path) -> list[str]:
    """A second clone (node 'laptop') records a run and creates a skill, both nodes
    patch one skill at once, and ``gitvault sync`` on each brings them to one state."""
    remote = base / "remote.git"
    git.git(base, "init", "-q", "--bare", "-b", "main", str(remote))
    git.git(root, "remote", "add", "origin", str(remote))
    _sync(root, "demo")  # the first push
    laptop_dir = base / "laptop"
    git.git(base, "clone", "-q", str(remote), str(laptop_dir))
    laptop = Vault(laptop_dir, node="laptop")
    laptop.skills.create("summarise-ci-failure", SkillEdit(
        description="Summarise a failing CI run for a pull request comment.",
        content="1. Find the first failing step.\n2. Quote the error, not the whole log.\n"))
    record_run(laptop.layout.log_file("runs", "laptop", now()), "laptop", agent="laptop-agent",
               skill="fix-flaky-pytest", task="retry flaky test", result="success", score=0.95)
    home = Vault(root, node="demo")
    record_run(home.layout.log_file("runs", "demo", now()), "demo", agent="ci-bot",
               skill="fix-flaky-pytest", task="nightly", result="success", score=0.9)
    name = "prefer-small-commits"
    home.skills.patch(name, SkillEdit(content="Keep each commit to one idea (demo's take).\n"))
    laptop.skills.patch(name, SkillEdit(content="One idea per commit, under 200 lines "
                                                "(laptop's take).\n"))
    first = _sync(laptop_dir, "laptop")
    second = _sync(root, "demo")
    _sync(laptop_dir, "laptop")
    mine, theirs = home.runs(), laptop.runs()
    count = sum(len(c) for c in mine.skills.values())
    same = count == sum(len(c) for c in theirs.skills.values()) and \
        (root / "skills" / name / "SKILL.md").read_bytes() == \
        (laptop_dir / "skills" / name / "SKILL.md").read_bytes()
    lines = ["laptop created summarise-ci-failure and recorded a run; demo recorded one too; "
             f"both patched {name} at once",
             f"laptop: sync pushed {first['out']['records']} records and "
             f"{first['out']['versions']} skill versions",
             f"demo: sync took in {second['in']['records']} records, pushed "
             f"{second['out']['records']} (after {second['retries']} retries)"]
    for conflict in second["conflicts"]:
        lines.append(f"conflict on {conflict['skill']}: {conflict['winner']['node']}'s "
                     f"v{conflict['winner']['version']} (the later edit) wins as "
                     f"v{conflict['version']}; {conflict['loser']['node']}'s "
                     f"v{conflict['loser']['version']} stays in history")
    log = ", ".join(f"v{v.version} {v.op} ({v.node})" for v in
                    Vault(root, node="demo").skills.history(name))
    lines += [f"skill log {name}: {log}",
              f"after sync both clones hold {count} runs "
              f"({'the same' if same else 'DIFFERENT'} on both) and "
              f"{len(list(home.skills.iter_all(include_archived=False)))} active skills"]
    return lines


def run_demo(folder: Path | None, echo: Echo | None = None) -> dict[str, Any]:
    say: Echo = echo or (lambda _text: None)
    base = (folder or Path(tempfile.mkdtemp(prefix="gitvault-demo-"))).resolve()
    root = base / "vault"
    if root.exists() and any(root.iterdir()):
        raise InvalidInput(f"{root} already exists and is not empty; give the demo a new folder")

    def step(title: str, command: str) -> None:
        say(f"\n== {title}\n$ {command}")

    step("Create a vault: a git repository with gitvault.yaml, skills/ and logs/",
         f"gitvault init {root}")
    root, made = init_vault(root)
    vault = Vault(root, node="demo")
    say("created: " + ", ".join(made))

    step("Add the example skills (each is a SKILL.md an Agent Skills loader can read)",
         "gitvault skill create NAME --description ... --file body.md")
    for folder_ in sorted(examples_dir().iterdir()):
        example = read_skill(folder_)
        meta = example.metadata
        skill, _ = vault.skills.create(example.name, SkillEdit(
            content=example.body, description=example.description,
            trigger=meta.get("trigger"), kind=meta.get("kind"),
            provenance=meta.get("provenance"), tags=meta.get("tags"),
            sensitive=meta.get("sensitive") == "true"))
        say(f"  {skill.name:<32} v{skill.version}  {skill.kind}")

    step("An agent learns mid-task and writes a skill through the tool protocol",
         "gitvault tool '{\"action\": \"create\", \"name\": \"retry_with_backoff\", ...}'")
    request = {"action": "create", "name": "retry_with_backoff",
               "trigger": "An HTTP call fails with 429 or 503",
               "content": "Retry with exponential backoff and jitter; honour Retry-After."}
    answer = protocol.handle(vault, request)
    say(f"  -> {answer['status']}: {answer['skill']['name']} v{answer['skill']['version']}")
    again = protocol.handle(vault, request)
    say(f"  the same create again -> {again['status']} (create never overwrites)")

    name = "fix-flaky-pytest"
    step("Improve a skill: a patch is a new version and a git commit",
         f"gitvault skill patch {name} --file better.md")
    old = vault.get_skill(name)
    new, _ = vault.skills.patch(name, SkillEdit(
        content=old.body + "5. Record the seed of a failing random test in the report.\n"))
    step("What changed between versions", f"gitvault skill diff {name} v1 v2")
    say(diff_text(render_skill(vault.read_version(name, 1)), render_skill(new),
                  f"{name}@v1", f"{name}@v2").rstrip())

    step("Roll back: version 1's content comes back as version 3 (history is kept)",
         f"gitvault skill rollback {name} v1")
    rolled = vault.skills.rollback(name, 1)
    step("The history of the skill, from git", f"gitvault skill log {name}")
    for entry in vault.history(name):
        say(f"  v{entry.version}  {entry.op:<9} {entry.sha[:12]}  "
            f"{vault.skills.urn_for(name, entry.version)}")

    step("Archive and restore: a git mv to skills/.archive/, never a delete",
         "gitvault skill archive prefer-small-commits --reason 'merged into a guide'")
    archived = vault.skills.archive("prefer-small-commits", "merged into a guide")
    say(f"  archived as v{archived.version}; "
        f"restored as v{vault.skills.restore('prefer-small-commits').version}")

    step("At task start an agent asks for the relevant skills within a token budget",
         "gitvault context \"pytest fails one run in ten on CI\" --budget 400")
    from gitvault.retrieval import inject as retrieval

    injected = retrieval.context(vault, "pytest fails one run in ten on CI", budget=400)
    for line in injected["text"].splitlines()[:8]:
        say(f"  | {line}")
    say(f"  injection {injected['injection']}: "
        + ", ".join(f"{s['name']}@v{s['version']}" for s in injected["skills"]))
    step("At task end it reports the outcome; usage and success counts follow",
         f"gitvault outcome {injected['injection']} --success")
    retrieval.outcome(vault, success=True, injection=injected["injection"])
    stats, _ = vault.skill_stats()
    for ref in injected["skills"]:
        counts = stats.get(ref["name"], {})
        say(f"  {ref['name']}: used {counts.get('usage', 0)}, "
            f"succeeded {counts.get('success', 0)}")

    step("A code skill passes the verification gate (AST scan, then its tests and example "
         "in an OS sandbox as an unprivileged user)",
         "gitvault skill create parse-duration --kind code --code skill.py --tests "
         "test_skill.py --example example.py")
    gate_lines = demo_code_skills(vault)
    for line in gate_lines:
        say(f"  {line}")

    step("Agents report every run; a week of runs arrives",
         "gitvault record-run --agent ci-bot --skill fix-flaky-pytest --result success --score 0.9")
    moment = now()
    written = record_demo_runs(vault, moment)
    say(f"  {written} runs of 3 skills over 14 days in logs/runs/")
    step("Health: averages, trends and flags per skill", "gitvault health")
    thresholds = health.Thresholds.from_config(vault.config.health)
    runs = vault.runs()
    health_report = health.analyze(runs, moment, vault.config.health.window_days, thresholds)
    for skill_name, data in health_report.items():
        recent = "-" if data["recentAvg"] is None else f"{data['recentAvg']:.2f}"
        say(f"  {skill_name:<28} avg {data['avgScore']:.2f}  recent {recent}  "
            f"{data['trend']:<9}{'  FLAGGED' if data['flagged'] else ''}")
    step("Drift: quality that slipped since last week", "gitvault drift")
    drifting = health.drift(runs, moment, thresholds, vault.config.health.window_days)
    for row in drifting:
        say(f"  {row['name']}: {row['lastWeekAvg']:.2f} -> {row['thisWeekAvg']:.2f} "
            f"(drop {row['drop']:.2f})")

    step("Every skill operation is also an append-only record; status shows them",
         "gitvault status")
    report = vault.status()
    say(f"  {report['pending']['records']} records pending in "
        + ", ".join(f["path"] for f in report["pending"]["files"]))
    step("Commit the records", "gitvault commit")
    sha, lines = vault.commit_logs()
    say(f"  committed {lines} records as {sha[:12] if sha else '-'}")

    step("Two clones share one vault: each node appends to its own log file, and a skill "
         "patched on both is resolved the same way on every node",
         f"git clone {base / 'remote.git'} laptop  # then on each: gitvault sync")
    shared = exchange_between_clones(base, root)
    for line in shared:
        say(f"  {line}")

    step("The knowledge watcher notices a dependency's major release and queues the work",
         "gitvault watch   # then, after the release: gitvault watch --source requests")
    from gitvault.vault.watchdemo import watcher_cycle

    watched = watcher_cycle(vault, say)
    vault = Vault(root, node="demo")
    from gitvault.vault.llmdemo import loop_cycle

    improved = loop_cycle(vault, say, step)
    from gitvault.vault.agentdemo import agent_cycle

    agents = agent_cycle(vault, base, say, step)

    step("Check everything: config, layout, every skill file, every log line",
         "gitvault doctor")
    doctor = run_doctor(vault.layout, node=vault.node)
    say(f"  {doctor.checked['skills']} skill files, {doctor.checked['records']} records, "
        f"{len(doctor.problems)} problems")

    step("Where each file went", f"git -C {root} ls-files")
    files = git.out(root, "ls-files").split()
    for path in files:
        say(f"  {path}")
    commits = len(git.log(root, ["."]))
    say(f"\n{commits} commits; explore with: cd {root} && gitvault skill list")
    return {
        "vault": str(root),
        "skills": [s.name for s in vault.skills.iter_all(include_archived=False)],
        "rolledBack": {"name": name, "version": rolled.version},
        "commits": commits,
        "files": files,
        "doctor": doctor.to_json(),
        "flagged": [name for name, data in health_report.items() if data["flagged"]],
        "drift": [row["name"] for row in drifting],
        "clones": shared,
        "gate": gate_lines,
        "injection": injected["injection"],
        "watch": watched,
        "improve": improved,
        "agents": agents,
    }
