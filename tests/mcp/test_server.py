"""``gitvault mcp`` driven by the official MCP Python SDK's own ``Client`` over stdio,
in both connection modes: ``auto`` (protocol 2026-07-28, server/discover) and
``legacy`` (the initialize handshake). Every tool is called; errors are tool errors
carrying the CLI's code and message; the skills extension (SEP-2640) lists and gets
the served skills, whose files read back with the manifest's digests and sizes."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from gitvault.skills.model import front_matter
from tests.conftest import Runner

TOOLS = {"skill_patch", "skill_search", "skill_context", "skill_outcome", "record_run",
         "enqueue", "dispatch", "complete", "fail"}
ANY = TypeAdapter(dict[str, Any])


def client(gv: Runner, vault: Path, mode: str) -> Client:
    params = StdioServerParameters(command=sys.executable, args=["-m", "gitvault", "mcp"],
                                   env=gv.env, cwd=str(vault))
    return Client(params, mode=mode)


async def call(c: Client, name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    result = await c.call_tool(name, args)
    assert isinstance(result, types.CallToolResult)
    assert result.content and result.content[0].type == "text"
    return bool(result.is_error), result.structured_content


async def skills_request(c: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = types.Request[dict[str, Any], str](method=method, params=params)
    return await c.session.send_request(request, ANY)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_tools_over_stdio(gv: Runner, served_vault: Path, mode: str) -> None:
    cli_error = gv("--json", "search", "   ").json()["error"]

    async def session() -> None:
        async with client(gv, served_vault, mode) as c:
            assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
            listed = (await c.list_tools()).tools
            assert {t.name for t in listed} == TOOLS
            for tool in listed:
                assert tool.description and len(tool.description) > 40, tool.name
                assert tool.input_schema["type"] == "object"
                assert tool.input_schema["additionalProperties"] is False
                for prop in tool.input_schema["properties"].values():
                    assert prop.get("description"), tool.name
            search = next(t for t in listed if t.name == "skill_search")
            assert search.input_schema["required"] == ["query"]

            error, data = await call(c, "skill_search", {"query": "flaky test"})
            assert not error and data["results"][0]["name"] == "debug-flaky-test"
            error, data = await call(c, "skill_search", {"query": "   "})
            assert error and data == {"error": cli_error}  # the CLI's code and message
            assert data["error"] == {"code": "bad_input", "message": "the search query is empty"}
            error, data = await call(c, "skill_context", {"prompt": ""})
            assert error and data["error"] == {"code": "bad_input", "message": "the prompt is empty"}
            error, data = await call(c, "skill_search", {"query": "x", "bogus": 1})
            assert error and data["error"]["code"] == "bad_input" and "'bogus'" in data["error"]["message"]
            error, data = await call(c, "skill_search", {"query": "x", "k": "three"})
            assert error and "'k' must be integer" in data["error"]["message"]

            error, ctx = await call(c, "skill_context", {"prompt": "a flaky test in CI", "k": 1})
            assert not error and ctx["injection"] and "### RELEVANT SKILLS" in ctx["text"]
            assert [s["name"] for s in ctx["skills"]] == ["debug-flaky-test"]
            error, data = await call(c, "skill_outcome", {"injection": ctx["injection"],
                                                          "success": True})
            assert not error and data["status"] == "recorded"
            error, data = await call(c, "skill_outcome", {"skills": ["review-diff"],
                                                          "success": False, "reason": "missed"})
            assert not error and data["outcome"]["skills"] == ["review-diff@v1"]

            error, data = await call(c, "record_run", {"agent": "claude", "skill": "review-diff",
                                                       "task": "review PR 7", "result": "partial",
                                                       "score": 0.5})
            assert not error and data["status"] == "recorded"
            assert data["entry"]["score"] == 0.5 and data["entry"]["result"] == "partial"
            error, data = await call(c, "record_run", {"skill": "review-diff", "score": "abc"})
            assert error and data["error"]["code"] == "bad_input"

            error, first = await call(c, "enqueue", {"task": "fix the login bug",
                                                     "priority": "high", "files": ["app:login.py"]})
            assert not error and first["status"] == "enqueued"
            error, second = await call(c, "enqueue", {"task": "write the release notes"})
            error, dup = await call(c, "enqueue", {"task": "write the release notes"})
            assert not error and dup["status"] == "duplicate"
            error, ready = await call(c, "dispatch", {"max": 5})
            assert not error and ready["prs"][0]["id"] == first["pr"]["id"]
            error, done = await call(c, "complete", {"id": first["pr"]["id"], "result": "fixed"})
            assert not error, done
            error, failed = await call(c, "fail", {"id": second["pr"]["id"], "reason": "no time"})
            assert not error, failed
            error, data = await call(c, "complete", {"id": "pr-nope"})
            assert error and data["error"]["code"] == "not_found"
            error, data = await call(c, "fail", {})
            assert error and data["error"] == {"code": "bad_input", "message": "fail needs 'id'"}

            name = f"agent-lesson-{mode}"
            error, data = await call(c, "skill_patch", {"action": "create", "name": name,
                                                        "trigger": "When the agent learns"})
            assert not error and data["status"] == "created"
            error, data = await call(c, "skill_patch", {"action": "patch", "name": name,
                                                        "content": "## Steps\n1. Better"})
            assert not error and data["skill"]["version"] == 2
            error, data = await call(c, "skill_patch", {"action": "explode"})
            assert error and data["error"]["code"] == "bad_input"

    anyio.run(session)
    log = gv.git("log", "--format=%s", "-3")
    assert f"gitvault: patch agent-lesson-{mode} v2" in log


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_skills_extension_over_stdio(gv: Runner, served_vault: Path, mode: str) -> None:
    async def session() -> None:
        async with client(gv, served_vault, mode) as c:
            caps = c.server_capabilities
            declared = caps.extensions if mode == "auto" else caps.experimental
            assert declared is not None and "io.modelcontextprotocol/skills" in declared
            assert caps.resources is not None
            listing = await skills_request(c, "skills/list", {})
            assert listing["resultType"] == "complete"
            assert isinstance(listing["ttlMs"], int) and listing["cacheScope"] in ("public", "private")
            names = [s["frontmatter"]["name"] for s in listing["skills"]]
            assert names == ["debug-flaky-test", "review-diff", "slugify"]  # not shout, old-way
            code = next(s for s in listing["skills"] if s["frontmatter"]["name"] == "slugify")
            assert [r["uri"].rsplit("/", 1)[1] for r in code["resources"]] == [
                "SKILL.md", "example.py", "skill.py", "test_skill.py"]
            source = await c.read_resource("skill://slugify/skill.py")
            assert "def slugify" in source.contents[0].text
            entry = listing["skills"][0]
            assert entry["uri"] == "skill://debug-flaky-test/SKILL.md"
            text = (served_vault / "skills" / "debug-flaky-test" / "SKILL.md").read_text()
            assert entry["frontmatter"] == front_matter(text)[0]  # verbatim
            assert entry["frontmatter"]["license"] == "MIT"
            uris = [r["uri"] for r in entry["resources"]]
            assert uris == ["skill://debug-flaky-test/SKILL.md",
                            "skill://debug-flaky-test/references/GUIDE.md"]
            for resource in entry["resources"]:
                read = await c.read_resource(resource["uri"])
                body = read.contents[0].text.encode()
                assert resource["digest"] == "sha256:" + hashlib.sha256(body).hexdigest()
                assert resource["size"] == len(body)
            got = await skills_request(c, "skills/get", {"uri": entry["uri"]})
            assert got["skill"] == entry and got["resultType"] == "complete"
            assert "ttlMs" in got and "cacheScope" in got
            for uri in ("skill://shout/SKILL.md", "skill://old-way/SKILL.md",
                        "skill://nope/SKILL.md", "skill://debug-flaky-test/references/GUIDE.md"):
                with pytest.raises(MCPError) as refused:
                    await skills_request(c, "skills/get", {"uri": uri})
                assert refused.value.code == -32602, uri
            for uri in ("skill://shout/skill.py", "skill://debug-flaky-test/../../gitvault.yaml"):
                with pytest.raises(MCPError):
                    await c.read_resource(uri)
            resources = (await c.list_resources()).resources
            assert "skill://debug-flaky-test/references/GUIDE.md" in [r.uri for r in resources]
            assert not [r for r in resources if r.uri.startswith("skill://shout/")]
            assert "skill://slugify/skill.py" in [r.uri for r in resources]

    anyio.run(session)
