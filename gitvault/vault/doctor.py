"""``gitvault doctor``: check config, layout, every skill file and every log line;
``--repair`` fixes what it can without losing data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitvault.core import git, records
from gitvault.core.paths import STREAMS, VaultLayout
from gitvault.core.shipped import add_gitattributes
from gitvault.errors import GitvaultError
from gitvault.skills.model import NAME_RE, SKILL_FILE, read_skill


@dataclass
class Problem:
    check: str
    path: str
    message: str
    repaired: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "path": self.path, "message": self.message,
                "repaired": self.repaired}

    def __str__(self) -> str:
        tag = " (repaired)" if self.repaired else ""
        return f"{self.check}: {self.path}: {self.message}{tag}"


def check_layout(layout: VaultLayout, repair: bool) -> list[Problem]:
    problems = []
    if layout.git_dir is None:
        problems.append(Problem("layout", ".", "not inside a git work tree (run 'gitvault init')"))
    for folder in (layout.skills, layout.logs):
        if not folder.is_dir():
            problem = Problem("layout", layout.rel(folder) + "/", "missing folder")
            if repair:
                folder.mkdir(parents=True)
                (folder / ".gitkeep").touch()
                problem.repaired = True
            problems.append(problem)
    missing = add_gitattributes(layout, write=repair)
    if missing:
        problems.append(Problem("layout", ".gitattributes",
                                f"missing line(s): {'; '.join(missing)}", repaired=repair))
    return problems


def check_skills(layout: VaultLayout) -> tuple[list[Problem], int]:
    problems = []
    checked = 0
    for base, archived in ((layout.skills, False), (layout.archive, True)):
        if not base.is_dir():
            continue
        for folder in sorted(base.iterdir()):
            if folder.name.startswith(".") or not folder.is_dir():
                continue
            rel = layout.rel(folder)
            if not (folder / SKILL_FILE).is_file():
                problems.append(Problem("skill", rel, f"no {SKILL_FILE}"))
                continue
            checked += 1
            if not NAME_RE.match(folder.name):
                problems.append(Problem("skill", rel, "folder name is not a valid skill name"))
            try:
                skill = read_skill(folder)
            except GitvaultError as exc:
                problems.append(Problem("skill", rel, str(exc).replace(str(folder) + "/", "")))
                continue
            if skill.name != folder.name:
                problems.append(Problem("skill", rel,
                                        f"name {skill.name!r} differs from its folder"))
            if archived != (skill.state == "archived"):
                where = layout.rel(base) + "/"
                problems.append(Problem("skill", rel,
                                        f"state {skill.state!r} but the skill is in {where}"))
    return problems, checked


def check_logs(layout: VaultLayout, repair: bool) -> tuple[list[Problem], int]:
    problems = []
    count = 0
    for stream in STREAMS:
        folder = layout.stream(stream)
        scan = records.scan(folder)
        count += len(scan.records)
        for warning in scan.warnings:
            rel = layout.rel(Path(warning.file)) if Path(warning.file).is_absolute() else warning.file
            problems.append(Problem("log", f"{rel}:{warning.line}", warning.reason))
        for path in records.stream_files(folder):
            if not records.has_torn_tail(path):
                continue
            problem = Problem("log", layout.rel(path),
                              "unterminated last line (a crash mid-write, or a write in progress)")
            if repair:
                aside = records.move_torn_tail(path)
                if aside is not None:
                    problem.message += f"; moved to {layout.rel(aside)}"
                problem.repaired = True
            problems.append(problem)
    return problems, count


def check_git(layout: VaultLayout, repair: bool) -> list[Problem]:
    git_dir = layout.git_dir
    if git_dir is None or not (git_dir / "index.lock").exists():
        return []
    problem = Problem("git", ".git/index.lock", "a git index lock is present")
    if repair:
        from gitvault.core import gitlock

        # Under the git lock: no gitvault command starts a git process meanwhile.
        with gitlock.held(git_dir):
            if git.git_processes_running():
                problem.message += "; left alone because a git process is running"
            else:
                (git_dir / "index.lock").unlink(missing_ok=True)
                problem.message += " with no git process running"
                problem.repaired = True
    return [problem]


@dataclass
class Report:
    problems: list[Problem]
    checked: dict[str, Any]

    @property
    def ok(self) -> bool:
        """True when nothing is left unrepaired."""
        return all(p.repaired for p in self.problems)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "checked": self.checked,
                "problems": [p.to_json() for p in self.problems]}


def run_doctor(layout: VaultLayout, repair: bool = False) -> Report:
    """Every check, in order: layout, git, skill files, log lines."""
    problems = check_layout(layout, repair) + check_git(layout, repair)
    skill_problems, skills = check_skills(layout)
    log_problems, records = check_logs(layout, repair)
    return Report(problems + skill_problems + log_problems,
                  {"config": layout.rel(layout.config), "skills": skills, "records": records})
