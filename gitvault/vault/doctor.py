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
from gitvault.skills.model import NAME_RE, SKILL_FILE, file_problems, read_skill


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


def check_code(layout: VaultLayout, folder: Path, node: str | None, trusted: set[str]
               ) -> list[Problem]:
    """A code skill in ``skills/``: nothing beside its files that Python could load, and
    this node's own passing gate evidence for exactly its files (SPEC §1 Trust)."""
    from gitvault.gate.scan import folder_reasons
    from gitvault.skills.codegate import is_trusted

    rel = layout.rel(folder)
    problems = [Problem("gate", f"{rel}/{r.file}", f"{r.message}; move it out of the "
                        "folder (doctor --repair never deletes a file)")
                for r in folder_reasons(folder)]
    if node is not None and not is_trusted(folder, trusted):
        problems.append(Problem("gate", rel, f"unverified code skill: node {node!r} holds no "
                                "passing gate evidence for its current files, so it is not "
                                f"served to agents (run 'gitvault skill verify {folder.name}'; "
                                "doctor --repair never runs code)"))
    return problems


def check_skills(layout: VaultLayout, node: str | None = None) -> tuple[list[Problem], int]:
    from gitvault.skills.codegate import trusted_evidence

    trusted = trusted_evidence(layout, node) if node is not None else set()
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
            problems += [Problem("skill", f"{rel}/{SKILL_FILE}", p) for p in file_problems(skill)]
            if skill.kind == "code" and not archived:
                problems += check_code(layout, folder, node, trusted)
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
        if git.git_processes_running():
            problem.message += "; left alone because a git process is running"
        else:
            (git_dir / "index.lock").unlink()
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


def run_doctor(layout: VaultLayout, repair: bool = False, node: str | None = None) -> Report:
    """Every check, in order: layout, git, skill files, log lines; with ``node``, also
    whether that node holds gate evidence for every code skill."""
    problems = check_layout(layout, repair) + check_git(layout, repair)
    skill_problems, skills = check_skills(layout, node)
    log_problems, records = check_logs(layout, repair)
    return Report(problems + skill_problems + log_problems,
                  {"config": layout.rel(layout.config), "skills": skills, "records": records})
