"""The vault the MCP tests serve."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_code_skills import create as create_code_skill
from tests.conftest import Runner


@pytest.fixture
def served_vault(gv: Runner, vault: Path, tmp_path: Path) -> Path:
    """Three served skills (one with a supporting file, one a gated code skill), and two
    that are not: an archived one and a code skill changed since this node gated it."""
    src = tmp_path / "src" / "debug-flaky-test"
    (src / "references").mkdir(parents=True)
    (src / "SKILL.md").write_text("---\nname: debug-flaky-test\ndescription: Debug a flaky "
                                  "test. Use when a test fails one run in ten.\nlicense: MIT\n"
                                  "---\n1. Loop it. See references/GUIDE.md\n")
    (src / "references" / "GUIDE.md").write_text("# Guide\nLoop 50 times.\n")
    gv.ok("import", str(src))
    gv.ok("skill", "create", "review-diff", "--description", "Review a diff for bugs",
          "--tags", "review")
    gv.ok("skill", "create", "old-way", "--description", "The old way")
    gv.ok("skill", "archive", "old-way")
    assert create_code_skill(gv, tmp_path, "slugify").code == 0  # gated here: served
    assert create_code_skill(gv, tmp_path, "shout").code == 0
    shout = vault / "skills" / "shout" / "skill.py"
    shout.write_text(shout.read_text() + "\nX = 1\n")  # changed since its gate: not served
    return vault
