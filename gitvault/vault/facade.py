"""The Vault facade: the one object a caller opens. It composes the capability
packages (skills, runs, queue, gate, hooks) over one vault's layout, config and node,
importing each only when it is first used, so the hot paths (``record-run``, the
queue) can open a Vault for the price of its config: no git, YAML or click.
"""

from __future__ import annotations

from gitvault.core import config as config_mod
from gitvault.core.paths import VaultLayout, find_vault, resolve_node

TYPE_CHECKING = False  # typing is not imported at run time (the hot paths start fast)
if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from pathlib import Path
    from typing import Any

    from gitvault.core.records import LineWarning, Scan
    from gitvault.llm.journal import Loop
    from gitvault.queue.commands import Queue
    from gitvault.runs.columns import Runs
    from gitvault.skills.model import Skill
    from gitvault.skills.store import SkillStore
    from gitvault.skills.versions import Version


class Vault:
    """An open vault: ``Vault.open()`` finds it, validates its config, picks the node."""

    def __init__(self, root: Path, node: str | None = None) -> None:
        self.layout = VaultLayout(root)
        self.root = root
        git_dir = self.layout.git_dir
        # The work tree's top: the folder holding ``.git`` (a folder, or the file of a
        # linked worktree), which may be above the vault (SPEC §1: a subfolder vault).
        self.top = next((folder for folder in (root, *root.parents)
                         if (folder / ".git").exists()), root) if git_dir is not None else root
        self.config = config_mod.load(self.layout.config, self.layout.cache)
        self.node = resolve_node(node, git_dir)
        self.notices: list[str] = []  # things a command should tell its user
        self.commits_records = True  # False inside a git hook: git itself is committing
        self._hooks_checked = False
        self._skills: SkillStore | None = None
        self._queue: Queue | None = None

    @classmethod
    def open(cls, path: str | Path | None = None, node: str | None = None) -> Vault:
        return cls(find_vault(path), node)

    # -- paths --------------------------------------------------------------------
    @property
    def vault_rel(self) -> str:
        """The vault folder relative to the work tree ('' at the top)."""
        rel = self.root.relative_to(self.top).as_posix()
        return "" if rel == "." else rel

    def git_path(self, path: Path) -> str:
        return path.relative_to(self.top).as_posix()

    @property
    def scope(self) -> str:
        return str(self.config.vault.scope or self.root.name)

    # -- records ------------------------------------------------------------------
    def append(self, stream: str, record: dict[str, Any]) -> dict[str, Any]:
        """Append one record (adds id, ts, node); commits it when logs.autocommit."""
        from gitvault.core import records

        (written,) = records.append_to_stream(self.layout, stream, self.node, [record])
        self.autocommit(stream)
        return written

    def autocommit(self, stream: str) -> None:
        """Commit pending records now when ``logs.autocommit`` is on. The records are
        written already, so a commit that cannot be made now (the git lock stays held,
        git refuses) leaves them pending, with a notice, and never fails the command
        (SPEC §3); ``gitvault commit`` or the next autocommit takes them."""
        if not self.config.logs.autocommit or not self.commits_records:
            return
        from gitvault.errors import GitvaultError

        try:
            self.commit_logs(f"gitvault: record {stream}")
        except (GitvaultError, OSError) as exc:  # a held lock, git refusing, a hook error
            notice = (f"the {stream} record is written but not committed yet (pending: "
                      f"{exc}); 'gitvault commit' commits it")
            if notice not in self.notices:
                self.notices.append(notice)

    def git_lock(self) -> AbstractContextManager[None]:
        """The vault-wide git lock (SPEC §3), waiting up to ``git.lock_wait_s``."""
        from gitvault.core import gitlock

        return gitlock.held(self.layout.git_dir, self.config.git.lock_wait_s)

    def scan(self, stream: str, check: Callable[[dict[str, Any]], str | None] | None = None
             ) -> Scan:
        from gitvault.core import records

        return records.scan(self.layout.stream(stream), check=check)

    def record_run(self, **fields: str) -> dict[str, Any]:
        """``record-run``: append one run (SPEC §3 run schema) and return the entry."""
        from gitvault.core.records import now_iso
        from gitvault.runs.record import record_run

        ts = now_iso()  # its month names the file: no datetime on record-run's path
        entry = record_run(self.layout.log_file("runs", self.node, ts), self.node,
                           root=self.root, ts=ts, **fields)
        self.autocommit("runs")
        return entry

    # -- capabilities, built on first use ---------------------------------------------
    @property
    def skills(self) -> SkillStore:
        if self._skills is None:
            from gitvault.skills.store import SkillStore

            self._skills = SkillStore(self.layout, self.top, self.node, self.config, self.scope,
                                      self.append, self.ensure_hooks)
            self._skills.notices = self.notices  # recovery notes reach the command's user
        return self._skills

    @property
    def queue(self) -> Queue:
        if self._queue is None:
            from gitvault.queue.commands import Queue

            self._queue = Queue(self.layout, self.node, self.config.queue)
        return self._queue

    def loop(self, *, provider: bool = True) -> Loop:
        """The parts of this vault the self-improving loop works through (SPEC §7), with
        this clone's LLM provider (an LLMError, exit 2, when none is configured)."""
        from gitvault.llm.journal import Loop
        from gitvault.llm.providers import resolve

        return Loop(self.layout, self.top, self.vault_rel, self.node, self.config, self.skills,
                    self.append, self.runs,
                    resolve(self.layout.git_dir, self.root) if provider else None)

    def warnings(self) -> list[str]:
        """Bad lines the capabilities used so far met while reading (SPEC §3)."""
        return [str(w) for w in self._queue.warnings] if self._queue is not None else []

    def runs(self) -> Runs:
        """Every run record, per skill, through the incremental cache."""
        from gitvault.runs import reader

        cache = self.layout.cache
        return reader.load_runs(self.layout.stream("runs"),
                                cache / reader.CACHE_NAME if cache is not None else None)

    def skill_stats(self) -> tuple[dict[str, dict[str, int]], list[LineWarning]]:
        """usage / success / failure / patches per skill, folded from ``events``."""
        from gitvault.skills.usage import skill_stats

        scan = self.scan("events")
        return skill_stats(scan.records), scan.warnings

    # the parts of the skill store that retrieval reads (retrieval.inject.Vault)
    def history(self, name: str) -> list[Version]:
        return self.skills.history(name)

    def read_version(self, name: str, version: int) -> Skill:
        return self.skills.read_version(name, version)

    def get_skill(self, name: str) -> Skill:
        return self.skills.get(name)

    def lifecycle(self, dry_run: bool = False) -> tuple[list[dict[str, Any]], list[str]]:
        """Mark active skills stale (SPEC §2.3). Returns (changes, warnings)."""
        from gitvault.skills.lifecycle import run_lifecycle

        events = self.scan("events")
        changes, skipped = run_lifecycle(self.skills, events.records, dry_run=dry_run)
        return changes, [*skipped, *(str(w) for w in events.warnings)]

    # -- git ----------------------------------------------------------------------
    def ensure_hooks(self) -> None:
        """Install the hook shims where they are missing (a fresh clone), with a notice."""
        from gitvault.hooks import shims

        if self._hooks_checked or self.layout.git_dir is None:
            return
        self._hooks_checked = True
        try:
            done = shims.install(self.top) if shims.missing(self.top) else []
        except shims.HooksPathSet as exc:
            self.notices.append(f"the gitvault git hooks are not installed: {exc}")
            return
        if done:
            self.notices.append("installed the gitvault git hooks (" + "; ".join(done) + ")")

    def pending_logs(self) -> list[tuple[str, int]]:
        """Log files with uncommitted lines: (path relative to the vault, lines)."""
        from gitvault.vault.commit import pending_logs

        return pending_logs(self)

    def commit_logs(self, message: str | None = None) -> tuple[str | None, int]:
        """Commit every pending log line. Returns (sha or None, lines committed)."""
        from gitvault.vault.commit import commit_logs

        return commit_logs(self, message)

    def status(self) -> dict[str, Any]:
        """What ``gitvault status`` shows: skills by state, pending records, changes."""
        from gitvault.vault.commit import status

        return status(self)
