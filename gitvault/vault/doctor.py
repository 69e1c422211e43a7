"""``gitvault doctor``: check config, layout, every skill file and every log line;
``--repair`` fixes what it can without losing data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitvault.core import git, records
from gitvault.core.paths import STREAMS, VaultLayout
from gitvault.core.shipped import add_gitattributes
from gitvault.errors import GitvaultError
from gitvault.skills.model import NAME_RE, SKILL_FILE, file_problems, read_skill

if TYPE_CHECKING:
    from gitvault.skills.store import SkillStore


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
        if base.is_symlink():
            problems.append(_link(layout, base))
            continue
        if not base.is_dir():
            continue
        for folder in sorted(base.iterdir()):
            if folder.is_symlink():
                if folder.name not in (".archive", ".rejected") or archived:
                    problems.append(_link(layout, folder))
                continue
            if folder.name.startswith(".") or not folder.is_dir():
                continue
            rel = layout.rel(folder)
            links = [_link(layout, entry) for entry in sorted(folder.iterdir()) if entry.is_symlink()]
            if links:
                problems += links
                continue
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


_COMMITTED = ("; committed, so it stays: committed lines are never edited (logs are "
              "append-only) and readers skip it with this warning")


def _link(layout: VaultLayout, path: Path) -> Problem:
    return Problem("skill", layout.rel(path),
                   "a symlink: never followed, and readers skip the skill (gitvault never "
                   "follows symlinks under skills/ or logs/); replace it with the files or "
                   "delete it")


def check_logs(layout: VaultLayout, repair: bool) -> tuple[list[Problem], int]:
    """Every log line that is not a valid record (blank lines included), torn tails and
    symlinks. ``repair`` moves torn tails and bad uncommitted lines to ``<file>.torn``
    (kept, ignored by git; blank lines are dropped); a committed line is never edited,
    and the problem says so."""
    problems = []
    count = 0
    top: list[Path | None] = []  # the work tree, found once when first needed
    whole: set[str] = set()  # files and folders reported as a whole (a logs/ symlink once)
    for stream in STREAMS:
        folder = layout.stream(stream)
        scan = records.scan(folder)
        count += len(scan.records)
        bad: dict[str, list[tuple[int, str]]] = {}
        for warning in scan.warnings:
            if warning.line == 0:  # a symlink, an unreadable file: nothing to move
                if warning.file not in whole:
                    whole.add(warning.file)
                    problems.append(_whole_file(layout, warning, repair))
            else:
                bad.setdefault(warning.file, []).append((warning.line, warning.reason))
        for path in records.stream_files(folder):
            bad.setdefault(str(path), []).extend(_blank_lines(path))
            if records.has_torn_tail(path):
                problems.append(_torn(layout, path, repair))
        for name, lines in bad.items():
            if lines:
                problems += _bad_lines(layout, Path(name), sorted(lines), repair, top)
    return problems, count


def _rel(layout: VaultLayout, path: Path) -> str:
    return layout.rel(path) if path.is_absolute() else path.as_posix()


def _whole_file(layout: VaultLayout, warning: records.LineWarning, repair: bool) -> Problem:
    problem = Problem("log", _rel(layout, Path(warning.file)), warning.reason)
    if repair:
        problem.message += ("; not removed by --repair: delete the symlink (or the file) "
                            "yourself, gitvault reads and writes past it")
    return problem


def _blank_lines(path: Path) -> list[tuple[int, str]]:
    found = []
    try:
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                if raw.endswith(b"\n") and not raw.strip():
                    found.append((number, "blank line"))
    except OSError:
        pass
    return found


def _torn(layout: VaultLayout, path: Path, repair: bool) -> Problem:
    problem = Problem("log", layout.rel(path),
                      "unterminated last line (a crash mid-write, or a write in progress)")
    if repair:
        aside = records.move_torn_tail(path)
        if aside is not None:
            problem.message += f"; moved to {layout.rel(aside)}"
            problem.repaired = True
        elif not records.has_torn_tail(path):
            problem.message += "; the write finished meanwhile"
            problem.repaired = True
        else:
            problem.message += "; left alone: the line is still growing (a write in progress)"
    return problem


def _committed(layout: VaultLayout, path: Path, top: list[Path | None]) -> bytes:
    """The committed content of the log file ``path`` (b"" if none)."""
    if not top:
        top.append(git.work_tree(layout.root) if layout.git_dir is not None else None)
    if top[0] is None:
        return b""
    return git.show_file(top[0], "HEAD", path.resolve().relative_to(top[0]).as_posix()) or b""


def _bad_lines(layout: VaultLayout, path: Path, lines: list[tuple[int, str]], repair: bool,
               top: list[Path | None]) -> list[Problem]:
    committed = _committed(layout, path, top)
    try:
        data = path.read_bytes()
    except OSError:
        data = b""
    if not data.startswith(committed):  # committed lines edited in the work tree
        committed = b""
        edited = True
    else:
        edited = False
    kept = committed.count(b"\n")
    moved: dict[int, str] = {}
    if repair and any(number > kept for number, _ in lines):
        moved = dict(records.move_bad_lines(path, len(committed)))
    rel = layout.rel(path)
    aside = layout.rel(Path(str(path) + records.TORN_SUFFIX))
    problems = []
    for number, reason in lines:
        problem = Problem("log", f"{rel}:{number}", reason)
        if number <= kept:
            problem.message += _COMMITTED
        elif number in moved:
            problem.repaired = True
            problem.message += "; removed" if reason == "blank line" else f"; moved to {aside}"
        elif repair:
            problem.message += ("; left alone: the committed lines of this file were edited "
                                "in the work tree (restore them with 'git checkout')"
                                if edited else "; left alone: the line changed meanwhile")
        problems.append(problem)
    return problems


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


def check_skill_writes(skills: SkillStore, repair: bool) -> list[Problem]:
    """What a killed skill command can leave (SPEC §4 ``doctor --repair``): its
    intent (files written or staged, no commit yet, or a commit without its
    ``events`` record), temp files, staged changes under ``skills/``, and this node's
    skill commits without their ``events`` record. ``repair`` completes or undoes the
    interrupted write, appends missing records, and unstages what is left staged (the
    work tree keeps it), so nothing is lost."""
    from gitvault.skills import recovery

    problems = []
    layout = skills.layout
    intent = recovery.load(skills)
    if intent is not None:
        problem = Problem("skill", ".git/gitvault/" + recovery.INTENT_NAME,
                          recovery.describe(intent))
        if repair:
            try:
                done = skills.recover()
                problem.repaired = True
                problem.message = done or problem.message + "; finished meanwhile"
            except GitvaultError as exc:
                problem.message += f"; left alone: {exc}"
        problems.append(problem)
    for path in recovery.temp_files(skills):
        problem = Problem("skill", layout.rel(path), "a temp file of an interrupted write")
        if repair:
            path.unlink(missing_ok=True)
            problem.repaired = True
            problem.message += "; removed (the skill's own file is intact)"
        problems.append(problem)
    for staged in recovery.staged_skill_paths(skills):
        problem = Problem("skill", (skills.top / staged).relative_to(layout.root).as_posix(),
                          "staged but not committed")
        if repair:
            git.git(skills.top, "reset", "-q", "--", staged)
            problem.repaired = True
            problem.message += ("; unstaged (the work tree keeps the change: commit it "
                                "with 'gitvault skill patch' or git)")
        problems.append(problem)
    for commit in recovery.missing_events(skills):
        skill, version = commit.trailers.get("Gitvault-Skill"), commit.version
        problem = Problem("skill", f"skills/{skill}",
                          f"v{version} ({commit.op}, commit {commit.sha[:12]}) has no "
                          "events record")
        if repair:
            recovery.ensure_event(skills, commit.op or "", {
                "Skill": skill or "", "Version": str(version)}, commit.sha)
            problem.repaired = True
            problem.message += "; appended"
        problems.append(problem)
    return problems


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


def run_doctor(layout: VaultLayout, repair: bool = False, node: str | None = None,
               store: SkillStore | None = None) -> Report:
    """Every check, in order: layout, git, interrupted skill writes (with ``store``),
    skill files, log lines; with ``node``, also whether that node holds gate evidence
    for every code skill."""
    problems = check_layout(layout, repair) + check_git(layout, repair)
    if store is not None and layout.git_dir is not None:
        problems += check_skill_writes(store, repair)
    skill_problems, skills = check_skills(layout, node)
    log_problems, records = check_logs(layout, repair)
    return Report(problems + skill_problems + log_problems,
                  {"config": layout.rel(layout.config), "skills": skills, "records": records})
