"""LLM providers: one small Protocol, a literal registry (as llm's plugins).

- ``command``: a program that reads the prompt on stdin and writes the answer on
  stdout (``llm``, ``ollama run MODEL``, any CLI), from ``GITVAULT_LLM_CMD`` or
  ``git config gitvault.llm-command``;
- ``llm``: the ``llm`` library (extra ``[llm]``), model from ``git config
  gitvault.llm-model``.

SPEC §8: what runs a program comes only from the environment or the clone's git
config, never from the committed ``gitvault.yaml``, so a synced vault cannot make a
node run code.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gitvault.core import git
from gitvault.core.program import ProgramFailed, run_program
from gitvault.errors import LLMError

DEFAULT_TIMEOUT_S = 300.0
MAX_ANSWER_BYTES = 1 << 20  # an answer is a skill or three; more is a runaway program
FAILED = {  # ProgramFailed.reason -> the message
    "unparsable": "the LLM command {command!r} cannot be parsed: {e.detail}",
    "empty": "the LLM command is empty (GITVAULT_LLM_CMD / gitvault.llm-command)",
    "cannot_run": "the LLM command {e.argv0!r} cannot run: {e.detail}",
    "bad_argument": "the LLM command {e.argv0!r} cannot run: {e.detail}",
    "too_large": ("the LLM command {e.argv0!r} answered more than {mib} MiB: refused "
                  "(nothing changed)"),
    "timeout": "the LLM command {e.argv0!r} gave no answer within {timeout:g} s",
    "exited": "the LLM command {e.argv0!r} failed (exit {e.returncode}){why}",
}
NO_PROVIDER = ("no LLM provider: set GITVAULT_LLM_CMD or 'git config gitvault.llm-command "
               "\"llm -m MODEL\"' (any command that reads the prompt on stdin and answers on "
               "stdout, e.g. 'ollama run llama3'), or install gitvault[llm] and set "
               "'git config gitvault.llm-model MODEL'")


class Provider(Protocol):
    """Answers one prompt with text; raises LLMError with one line when it cannot."""

    name: str

    def complete(self, prompt: str) -> str: ...


def _one_line(text: str, limit: int = 200) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return last if len(last) <= limit else last[:limit] + "..."


@dataclass
class CommandProvider:
    """A program: the prompt on its stdin, the answer on its stdout."""

    command: str
    timeout: float = DEFAULT_TIMEOUT_S
    cwd: Path | None = None
    name: str = "command"

    def complete(self, prompt: str) -> str:
        try:
            ran = run_program(self.command, cwd=self.cwd, stdin=prompt.encode("utf-8"),
                              timeout=self.timeout, limit=MAX_ANSWER_BYTES)
        except ProgramFailed as exc:
            why = _one_line(exc.stderr)
            raise LLMError(FAILED[exc.reason].format(
                e=exc, command=self.command, timeout=self.timeout, mib=MAX_ANSWER_BYTES >> 20,
                why=f": {why}" if why else "")) from None
        answer = ran.stdout.decode("utf-8", "replace")
        if not answer.strip():
            raise LLMError(f"the LLM command {ran.argv0!r} answered nothing")
        return answer


@dataclass
class LibraryProvider:
    """A model of the ``llm`` library (imported only when asked)."""

    model: str
    timeout: float = DEFAULT_TIMEOUT_S
    name: str = "llm"

    def complete(self, prompt: str) -> str:
        try:
            import llm  # the optional extra [llm]
        except ImportError:
            raise LLMError("git config gitvault.llm-model is set but the llm library is not "
                           "installed (pip install 'gitvault[llm]')") from None
        import threading

        outcome: list[tuple[bool, object]] = []

        def ask() -> None:
            try:
                outcome.append((True, str(llm.get_model(self.model).prompt(prompt).text())))
            except Exception as exc:  # the library and its plugins raise their own errors
                outcome.append((False, exc))

        # The library has no timeout of its own: the call runs in a daemon thread that
        # is abandoned when the time is up.
        worker = threading.Thread(target=ask, name="gitvault-llm", daemon=True)
        worker.start()
        worker.join(self.timeout)
        if not outcome:
            raise LLMError(f"the llm model {self.model!r} gave no answer within "
                           f"{self.timeout:g} s")
        ok, value = outcome[0]
        if not ok:
            raise LLMError(f"the llm model {self.model!r} failed: "
                           f"{_one_line(str(value)) or type(value).__name__}") from None
        answer = str(value)
        if not answer.strip():
            raise LLMError(f"the llm model {self.model!r} answered nothing")
        return answer


Factory = Callable[[str, float, Path | None], Provider]
PROVIDERS: dict[str, Factory] = {
    "command": lambda value, timeout, cwd: CommandProvider(value, timeout, cwd),
    "llm": lambda value, timeout, cwd: LibraryProvider(value, timeout),
}


def _timeout(git_dir: Path | None) -> float:
    raw = os.environ.get("GITVAULT_LLM_TIMEOUT") or git.config_value(git_dir, "gitvault.llm-timeout")
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise LLMError(f"the LLM timeout must be a number of seconds above 0, got {raw!r} "
                       "(GITVAULT_LLM_TIMEOUT / gitvault.llm-timeout)")
    return value


def configured(git_dir: Path | None) -> tuple[str, str] | None:
    """(registry key, value) of the provider this clone names, or None: the environment
    first, then the clone's git config; never gitvault.yaml."""
    command = os.environ.get("GITVAULT_LLM_CMD") or git.config_value(git_dir, "gitvault.llm-command")
    if command and command.strip():
        return "command", command
    model = git.config_value(git_dir, "gitvault.llm-model")
    if model and model.strip():
        return "llm", model.strip()
    return None


def resolve(git_dir: Path | None, cwd: Path | None = None) -> Provider:
    """The provider of this clone; LLMError (exit 2) naming how to set one if none."""
    found = configured(git_dir)
    if found is None:
        raise LLMError(NO_PROVIDER)
    key, value = found
    return PROVIDERS[key](value, _timeout(git_dir), cwd)
