"""The few errors gitvault raises; each carries the exit code of SPEC §4.

Library code raises these with a message a user can act on; the CLI turns
them into one line on stderr (and a JSON error object with ``--json``).
"""

from __future__ import annotations


class GitvaultError(Exception):
    """Base error: bad usage or bad input (exit 2). A subclass names its JSON error
    ``code`` and, where it is not 2, its ``exit_code`` as class keywords."""

    exit_code = 2
    code = "bad_input"

    def __init_subclass__(cls, *, code: str | None = None, exit_code: int | None = None,
                          **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.code = code or cls.code
        cls.exit_code = exit_code or cls.exit_code


class InvalidInput(GitvaultError, code="bad_input"):
    """Input that gitvault refuses: a bad name, a malformed file, a bad value."""


class NotFound(GitvaultError, code="not_found"):
    """A missing skill, version, PR or vault (exit 2)."""


class ConfigError(GitvaultError, code="config"):
    """gitvault.yaml is invalid: unknown key, wrong type, bad YAML."""


class CheckFailed(GitvaultError, code="check_failed", exit_code=1):
    """A check found problems (doctor, gate, --fail-on): exit 1."""


class Conflict(GitvaultError, code="conflict", exit_code=3):
    """A conflict or a lost race (lock held, sync gave up): exit 3."""


class GitError(GitvaultError, code="git"):
    """A git command failed in a way the user must look at."""

    index_locked = False  # git found its index.lock held (another git process at work)


class LLMError(GitvaultError, code="llm"):
    """The LLM provider is missing, failed, or answered something gitvault cannot use
    (exit 2; nothing changed)."""
