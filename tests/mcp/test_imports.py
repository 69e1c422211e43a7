"""The MCP SDK costs its import only to ``gitvault mcp``: ``--help`` and the hot path
(``record-run``) never load it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import Runner

PROBE = """
import sys
from gitvault.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
loaded = sorted(m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "mcp_types")))
sys.stderr.write("MCP-MODULES:" + ",".join(loaded) + "\\n")
"""


def loaded_mcp(gv: Runner, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                          cwd=gv.cwd, env=gv.env, timeout=60)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("MCP-MODULES:"))
    return line.removeprefix("MCP-MODULES:")


def test_help_and_record_run_do_not_import_the_mcp_sdk(gv: Runner, vault: Path) -> None:
    assert loaded_mcp(gv, "--help") == ""
    assert loaded_mcp(gv, "mcp", "--help") == ""
    assert loaded_mcp(gv, "record-run", "--skill", "s", "--score", "1") == ""
    assert loaded_mcp(gv, "record-run", "--skill", "s", "--score", "1", "--json") == ""


def test_without_the_sdk_mcp_says_how_to_get_it(gv: Runner, vault: Path) -> None:
    code = ("import sys; sys.modules['mcp'] = None; from gitvault.cli.main import main; "
            "main(['mcp'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=gv.cwd, env=gv.env, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("gitvault: error: 'gitvault mcp' needs the MCP SDK (mcp is "
                                   "missing): pip install 'gitvault[mcp]'")
