"""Providers: a command (the prompt on stdin, the answer on stdout) with a timeout and a
clear one-line error, and where a provider may be named: the environment or the
clone's git config, never gitvault.yaml."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitvault.errors import LLMError
from gitvault.llm.providers import PROVIDERS, CommandProvider, LibraryProvider, configured, resolve
from tests.llm.scripted import Scripted


def test_a_command_gets_the_prompt_on_stdin_and_answers_on_stdout(tmp_path: Path) -> None:
    bot = Scripted(tmp_path / "bot")
    bot.answer([("ping", "pong\n")])
    assert CommandProvider(bot.command).complete("ping?") == "pong\n"
    assert bot.prompts() == ["ping?"]


def test_a_command_that_hangs_is_killed_at_the_timeout(tmp_path: Path) -> None:
    bot = Scripted(tmp_path / "bot")
    bot.answer([("", "@sleep 30")])
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"gave no answer within 0.5 s"):
        CommandProvider(bot.command, timeout=0.5).complete("hello")
    assert time.monotonic() - started < 10


def test_a_failing_or_silent_command_is_one_clear_line(tmp_path: Path) -> None:
    bot = Scripted(tmp_path / "bot")
    bot.answer([("fail", "@fail"), ("quiet", "  \n")])
    with pytest.raises(LLMError) as failed:
        CommandProvider(bot.command).complete("fail")
    assert str(failed.value) == (f"the LLM command {sys.executable!r} failed (exit 3): "
                                 "error: 503 from the server")
    with pytest.raises(LLMError, match="answered nothing"):
        CommandProvider(bot.command).complete("quiet")
    with pytest.raises(LLMError, match="cannot run"):
        CommandProvider(str(tmp_path / "no-such-program")).complete("x")


def test_the_registry_is_literal() -> None:
    assert set(PROVIDERS) == {"command", "llm"}
    assert isinstance(PROVIDERS["llm"]("gpt-4o-mini", 1.0, None), LibraryProvider)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GITVAULT_LLM_CMD", raising=False)
    monkeypatch.delenv("GITVAULT_LLM_TIMEOUT", raising=False)
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    return tmp_path / "r"


def test_the_environment_then_git_config_name_the_provider(repo: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    git_dir = repo / ".git"
    assert configured(git_dir) is None
    with pytest.raises(LLMError, match="no LLM provider: set GITVAULT_LLM_CMD"):
        resolve(git_dir)
    subprocess.run(["git", "-C", str(repo), "config", "gitvault.llm-model", "gpt-4o-mini"], check=True)
    assert configured(git_dir) == ("llm", "gpt-4o-mini")
    subprocess.run(["git", "-C", str(repo), "config", "gitvault.llm-command", "ollama run x"], check=True)
    assert configured(git_dir) == ("command", "ollama run x")
    monkeypatch.setenv("GITVAULT_LLM_CMD", "llm -m claude")
    provider = resolve(git_dir)
    assert isinstance(provider, CommandProvider) and provider.command == "llm -m claude"
    monkeypatch.setenv("GITVAULT_LLM_TIMEOUT", "abc")
    with pytest.raises(LLMError, match="timeout must be a number of seconds"):
        resolve(git_dir)


def test_the_llm_library_is_optional() -> None:
    try:
        import llm  # noqa: F401
    except ImportError:
        with pytest.raises(LLMError, match=r"pip install 'gitvault\[llm\]'"):
            LibraryProvider("gpt-4o-mini").complete("hi")
    else:
        pytest.skip("the llm library is installed here")
