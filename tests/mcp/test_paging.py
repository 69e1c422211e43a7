"""Cursor paging of ``tools/list``, ``resources/list`` and ``skills/list`` over stdio with
the SDK's own ``Client``, in both connection modes: every item comes exactly once
across the pages, ``nextCursor`` is set only while more remain, and a cursor the
server did not issue (or issued for another listing) is an invalid-params error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from gitvault.mcp import paging
from tests.conftest import Runner
from tests.mcp.test_server import TOOLS, skills_request

INVALID_PARAMS = -32602


def client(gv: Runner, vault: Path, mode: str, page_size: int | None = None) -> Client:
    """``gitvault mcp`` as a process; with ``page_size``, the same command with the
    module's page size set first (so a few items make several pages)."""
    if page_size is None:
        args = ["-m", "gitvault", "mcp"]
    else:
        args = ["-c", f"import gitvault.mcp.paging as p; p.PAGE_SIZE = {page_size}; "
                      "from gitvault.cli.main import main; main(['mcp'])"]
    params = StdioServerParameters(command=sys.executable, args=args, env=gv.env, cwd=str(vault))
    return Client(params, mode=mode)


async def walk(fetch: Any, limit: int = 100) -> tuple[list[Any], list[int]]:
    """Every page of a listing: (all items, each page's size). ``fetch(cursor)``
    returns (items, nextCursor)."""
    items: list[Any] = []
    sizes: list[int] = []
    cursor = None
    for _ in range(limit):
        got, cursor = await fetch(cursor)
        items += got
        sizes.append(len(got))
        if cursor is None:
            return items, sizes
    raise AssertionError("the listing never ended")


async def skills_pages(c: Client) -> tuple[list[str], list[int]]:
    async def fetch(cursor: str | None) -> tuple[list[str], str | None]:
        page = await skills_request(c, "skills/list", {} if cursor is None else {"cursor": cursor})
        assert page["resultType"] == "complete"
        return [s["frontmatter"]["name"] for s in page["skills"]], page.get("nextCursor")

    return await walk(fetch)


async def refused(request: Any) -> str:
    with pytest.raises(MCPError) as error:
        await request
    assert error.value.code == INVALID_PARAMS
    return str(error.value)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_every_listing_pages_with_cursors(gv: Runner, served_vault: Path, mode: str) -> None:
    async def session() -> None:
        async with client(gv, served_vault, mode, page_size=2) as c:
            async def tool_page(cursor: str | None) -> tuple[list[str], str | None]:
                result = await c.list_tools(cursor=cursor, cache_mode="bypass")
                return [t.name for t in result.tools], result.next_cursor

            tool_names, sizes = await walk(tool_page)
            assert sorted(tool_names) == sorted(TOOLS) and len(tool_names) == len(TOOLS)
            assert sizes == [2, 2, 2, 2, 1]  # nine tools, two a page

            names, sizes = await skills_pages(c)
            assert names == ["debug-flaky-test", "review-diff", "slugify"] and sizes == [2, 1]

            async def resource_page(cursor: str | None) -> tuple[list[str], str | None]:
                result = await c.list_resources(cursor=cursor, cache_mode="bypass")
                return [str(r.uri) for r in result.resources], result.next_cursor

            uris, sizes = await walk(resource_page)
            assert len(uris) == len(set(uris)) == 7 and sizes == [2, 2, 2, 1]  # 2 + 1 + 4 files
            assert "skill://debug-flaky-test/references/GUIDE.md" in uris
            assert not [u for u in uris if u.startswith("skill://shout/")]

            # a tool on a later page still runs (the SDK relists page by page to find it)
            result = await c.call_tool("skill_search", {"query": "flaky test"})
            assert not result.is_error

            message = await refused(c.list_tools(cursor="not-a-cursor", cache_mode="bypass"))
            assert "invalid cursor 'not-a-cursor' for tools/list" in message
            first = await skills_request(c, "skills/list", {})
            message = await refused(c.list_tools(cursor=first["nextCursor"], cache_mode="bypass"))
            assert "for tools/list" in message  # a skills/list cursor is not a tools/list one
            message = await refused(skills_request(c, "skills/list", {"cursor": "%%%"}))
            assert "invalid cursor '%%%' for skills/list" in message
            forged = paging.encode("skills/list", "x")[:-2]
            assert "invalid cursor" in await refused(
                c.list_resources(cursor=forged, cache_mode="bypass"))

    anyio.run(session)


SKILL = """---
name: {name}
description: Step {n} of the demo procedure
metadata:
  version: '1'
  kind: procedure
  provenance: agent
  state: active
  trigger: Step {n} of the demo procedure
  tags: ''
  sensitive: 'false'
  created: '2026-11-01T00:00:00Z'
  updated: '2026-11-01T00:00:00Z'
---
Do step {n}.
"""


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sixty_skills_come_in_two_pages_of_the_default_size(gv: Runner, vault: Path, mode: str) -> None:
    assert paging.PAGE_SIZE == 50
    expected = sorted(f"step-{n:02d}" for n in range(60))
    for n, name in enumerate(expected):
        (vault / "skills" / name).mkdir(parents=True)
        (vault / "skills" / name / "SKILL.md").write_text(SKILL.format(name=name, n=n))

    async def session() -> None:
        async with client(gv, vault, mode) as c:
            names, sizes = await skills_pages(c)
            assert names == expected and sizes == [50, 10]
            tools = await c.list_tools()
            assert tools.next_cursor is None and len(tools.tools) == len(TOOLS)

    anyio.run(session)
