"""The few errors gitvault raises; each carries the exit code of SPEC §4.

Library code raises these with a message a user can act on; the CLI turns
them into one line on stderr (and a JSON error object with ``--json``).
"""

from __future__ import annotations


class GitvaultError(Exception):
    """Base error: bad usage or bad input (exit 2)."""

    exit_code = 2
    code = "bad_input"


class InvalidInput(GitvaultError):
    """Input that gitvault refuses: a bad name, a malformed file, a bad value."""

    code = "bad_input"


class NotFound(GitvaultError):
    """A missing skill, version, PR or vault (exit 2)."""

    code = "not_found"


class ConfigError(GitvaultError):
    """gitvault.yaml is invalid: unknown key, wrong type, bad YAML."""

    code = "config"


class CheckFailed(GitvaultError):
    """A check found problems (doctor, gate, --fail-on): exit 1."""

    exit_code = 1
    code = "check_failed"


class Conflict(GitvaultError):
    """A conflict or a lost race (lock held, sync gave up): exit 3."""

    exit_code = 3
    code = "conflict"


class GitError(GitvaultError):
    """A git command failed in a way the user must look at."""

    code = "git"
    index_locked = False  # git found its index.lock held (another git process at work)


class LLMError(GitvaultError):
    """The LLM provider is missing, failed, or answered something gitvault cannot use
    (exit 2; nothing changed)."""

    code = "llm"
