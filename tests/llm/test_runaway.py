"""A provider command that floods its output is cut, not read into memory: the
answer is refused in one line and nothing changes (likewise a command source)."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pytest

from gitvault.errors import LLMError
from gitvault.knowledge.model import Context, LookupFailed
from gitvault.knowledge.sources import Source
from gitvault.llm.providers import CommandProvider
from tests.conftest import Runner, snapshot

# 40 MiB, then a normal exit: small enough to hold, far more than any answer.
FLOOD = "import sys\nfor _ in range(640): sys.stdout.write('A' * 65536)\n"
FOREVER = "import sys\nwhile True: sys.stdout.write('A' * 65536)\n"


def command(tmp_path: Path, code: str) -> str:
    script = tmp_path / "flood.py"
    script.write_text(code)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


@pytest.mark.parametrize("code", [FLOOD, FOREVER], ids=["40-mib", "for-ever"])
def test_an_llm_command_that_floods_stdout_is_refused(tmp_path: Path, code: str) -> None:
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"answered more than 1 MiB: refused \(nothing changed\)"):
        CommandProvider(command(tmp_path, code), timeout=60).complete("hello")
    assert time.monotonic() - started < 30


def test_extract_with_a_flooding_provider_is_one_line_and_changes_nothing(
        gv: Runner, vault: Path, tmp_path: Path) -> None:
    before = snapshot(vault)
    result = gv("extract", "--summary", "-", input="a session",
                env={"GITVAULT_LLM_CMD": command(tmp_path, FLOOD)})
    assert result.code == 2 and len(result.err_lines) == 1
    assert "answered more than 1 MiB" in result.err
    assert snapshot(vault) == before


def test_a_command_source_that_floods_is_a_failed_check(tmp_path: Path) -> None:
    source = Source.from_config({"id": "s", "type": "command",
                                 "command": command(tmp_path, FLOOD)})
    with pytest.raises(LookupFailed, match=r"wrote more than 8 MiB"):
        source.check(Context(tmp_path, 60.0, allow_commands=True))
