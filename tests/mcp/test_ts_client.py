"""``gitvault mcp`` driven by an independent client: the official TypeScript SDK
(``@modelcontextprotocol/sdk`` from npm, ``StdioClientTransport``), run by a small Node
script. It speaks the initialize handshake, lists and calls tools, gets a tool error
for an empty query, and lists, gets and reads the served skills."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Runner
from tests.mcp.test_server import TOOLS

HERE = Path(__file__).resolve().parent
SDK_VERSION = "1.32.2"
PREFIX = HERE / ".ts-sdk"  # installed from npm on first use (git-ignored)


def ts_sdk() -> Path:
    """node_modules holding the pinned TypeScript SDK, installing it if needed."""
    modules = PREFIX / "node_modules"
    if not (modules / "@modelcontextprotocol" / "sdk" / "package.json").is_file():
        if shutil.which("npm") is None or shutil.which("node") is None:
            pytest.skip("node and npm are needed for the TypeScript SDK client")
        PREFIX.mkdir(exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix",
                        str(PREFIX), f"@modelcontextprotocol/sdk@{SDK_VERSION}"],
                       check=True, capture_output=True, timeout=300)
    return modules


def test_the_typescript_sdk_client_uses_the_server(gv: Runner, served_vault: Path) -> None:
    modules = ts_sdk()
    proc = subprocess.run(["node", str(HERE / "ts_client.mjs"), str(modules), sys.executable,
                           str(served_vault)], capture_output=True, text=True, env=gv.env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["server"]["name"] == "gitvault"
    assert "io.modelcontextprotocol/skills" in out["capabilities"]["experimental"]
    assert set(out["tools"]) == TOOLS
    assert not out["search"]["isError"]
    assert out["search"]["data"]["results"][0]["name"] == "debug-flaky-test"
    assert out["empty"] == {"isError": True, "data": {"error": {
        "code": "bad_input", "message": "the search query is empty"}}}
    assert out["outcome"]["status"] == "recorded"
    names = [s["frontmatter"]["name"] for s in out["skills"]["skills"]]
    assert names == ["debug-flaky-test", "review-diff", "slugify"]
    entry = out["skills"]["skills"][0]
    assert out["get"]["skill"] == entry
    for resource in entry["resources"]:
        body = out["files"][resource["uri"]].encode()
        assert resource["digest"] == "sha256:" + hashlib.sha256(body).hexdigest()
        assert resource["size"] == len(body)
