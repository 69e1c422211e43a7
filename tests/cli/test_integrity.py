"""Issue 11, trust and integrity: inputs are capped, torn lines are moved aside, a
killed skill command leaves nothing half done, symlinks are never followed."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Runner, snapshot


# -- inputs are capped ------------------------------------------------------------------
def test_file_from_dev_zero_is_refused_with_the_limit(gv: Runner, vault: Path) -> None:
    before = snapshot(vault)
    result = gv("skill", "create", "big", "--description", "d", "--file", "/dev/zero")
    assert result.code == 2
    assert result.err_lines == ["gitvault: error: /dev/zero: more than 1 MiB, the limit "
                                "for one input"]
    assert "MemoryError" not in result.err
    assert snapshot(vault) == before


def test_stdin_over_the_limit_is_refused(gv: Runner, vault: Path) -> None:
    before = snapshot(vault)
    result = gv("skill", "patch", "big", "--description", "d", "-", input=b"a" * (1 << 20) + b"b")
    assert result.code == 2
    assert "stdin: more than 1 MiB" in result.err
    assert snapshot(vault) == before
    # exactly the limit is fine
    gv.ok("skill", "create", "big", "--description", "d", "-", input=b"a" * (1 << 20))
    assert gv.ok("skill", "show", "big", "--json").json()["content"] == "a" * (1 << 20) + "\n"
