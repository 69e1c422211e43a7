"""The GitHub CLI, ``gh``: the one way ``ci issues`` reaches GitHub (SPEC §6).

Always an argv list (never a shell), with a timeout that kills its process group,
prompts off, and a one-line error naming the subcommand when gh is missing, fails or
hangs. ``--repo`` is added when a repository is named (the workflow's
``GITHUB_REPOSITORY``), else gh picks the repository of the working folder.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from gitvault.core.program import ProgramFailed, run_program
from gitvault.core.redact import redact
from gitvault.errors import GitvaultError

MAX_OUTPUT = 32 << 20  # an issue list of a few thousand bodies fits


class GhError(GitvaultError):
    """``gh`` is missing, failed or did not answer in time (exit 2)."""

    code = "gh"


def _why(failed: ProgramFailed, timeout: float) -> str:
    if failed.reason == "timeout":
        return f"no answer within {timeout:g} s"
    if failed.reason == "too_large":
        return f"wrote more than {MAX_OUTPUT >> 20} MiB"
    if failed.reason == "exited":
        lines = failed.stderr.strip().splitlines()
        why = redact(lines[-1].strip())[:300] if lines else "no message"
        return f"exited {failed.returncode}: {why}"
    return f"cannot run gh ({failed.detail or failed.reason})"


class Gh:
    """Runs ``gh issue ...`` for one repository."""

    def __init__(self, repo: str | None = None, timeout: float = 60.0,
                 executable: str = "gh") -> None:
        self.repo = repo or None
        self.timeout = timeout
        self.executable = executable
        self.calls: list[list[str]] = []  # what ran, for --json and --dry-run

    def run(self, *args: str) -> str:
        """Run ``gh ARGS [--repo R]``; its stdout, or GhError."""
        found = shutil.which(self.executable)
        what = "gh " + " ".join(args[:2])
        if found is None:
            raise GhError(f"{what}: the GitHub CLI 'gh' is not on PATH (install it from "
                          "https://cli.github.com; GitHub's runners have it)")
        argv = [found, *args, *(["--repo", self.repo] if self.repo else [])]
        self.calls.append(["gh", *argv[1:]])
        env = {**os.environ, "GH_PROMPT_DISABLED": "1", "NO_COLOR": "1", "GH_NO_UPDATE_NOTIFIER": "1"}
        try:
            out = run_program(argv, cwd=None, stdin=None, timeout=self.timeout,
                              limit=MAX_OUTPUT, env=env).stdout
        except ProgramFailed as failed:
            raise GhError(f"{what}: {_why(failed, self.timeout)}") from None
        return out.decode("utf-8", "replace")

    def open_issues(self) -> list[dict[str, Any]]:
        """Every open issue: ``[{number, title, body}]``."""
        import json

        text = self.run("issue", "list", "--state", "open", "--limit", "1000",
                        "--json", "number,title,body")
        try:
            found = json.loads(text or "[]")
        except ValueError:
            raise GhError("gh issue list: its --json output is not JSON") from None
        if not isinstance(found, list):
            raise GhError("gh issue list: its --json output is not a list")
        return [i for i in found if isinstance(i, dict) and isinstance(i.get("number"), int)]

    def create(self, title: str, body: str) -> int | None:
        """Open an issue; its number (read from the URL gh prints), if gh printed one."""
        url = self.run("issue", "create", "--title", title, "--body", body).strip()
        tail = url.rstrip("/").rsplit("/", 1)[-1]
        return int(tail) if tail.isdigit() else None

    def edit(self, number: int, title: str, body: str) -> None:
        self.run("issue", "edit", str(number), "--title", title, "--body", body)

    def comment(self, number: int, body: str) -> None:
        self.run("issue", "comment", str(number), "--body", body)

    def close(self, number: int, comment: str) -> None:
        self.run("issue", "close", str(number), "--comment", comment)
