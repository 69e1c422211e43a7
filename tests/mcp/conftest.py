"""The vault the MCP tests serve."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_code_skills import create as create_code_skill
from tests.conftest import Runner


@pytest.fixture
def served_vault(gv: Runner, vault: Path, tmp_path: Path) -> Path:
    """Two served skills (one with a supporting file), and three that are not served:
    a code skill, an archived one and a stale one."""
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
    assert create_code_skill(gv, tmp_path, "slugify").code == 0
    return vault
