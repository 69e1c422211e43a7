"""``gitvault mcp``: the MCP server on stdio, built on the official Python SDK's
low-level ``Server`` (explicit JSON schemas, errors shaped as SPEC §4 says) with the
skills extension declared through the SDK's extension API.

It speaks the current protocol revision (2026-07-28: ``server/discover``, per-request
envelopes) and the legacy ``initialize`` handshake; the SDK's dual-era loop picks by
the client's first request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server.extension import Extension, MethodBinding
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS

from gitvault import __version__
from gitvault.errors import GitvaultError
from gitvault.mcp import paging, skills, tools

Describe = Callable[[BaseException], tuple[str, str, int]]

INSTRUCTIONS = (
    "gitvault is this project's procedural memory: skills (how to do things) kept in a "
    "git repository. At the start of a task call skill_context with the task; follow "
    "the skills it returns. At the end call skill_outcome with its injection id and "
    "whether the task succeeded. When you learned a better way, call skill_patch "
    "(action 'patch') so the next agent starts from it. record_run scores a skill run; "
    "enqueue/dispatch/complete/fail share work through the queue. The skills are also "
    "served as Agent Skills (skills/list, skill://<name>/SKILL.md).")


class GetSkillParams(types.RequestParams):
    """``skills/get`` params: the URI of a skill's SKILL.md."""

    uri: str


class SkillsExtension(Extension):
    """SEP-2640: ``skills/list`` and ``skills/get`` over the vault's served skills."""

    identifier = skills.IDENTIFIER

    def __init__(self, open_vault: tools.OpenVault) -> None:
        self.open_vault = open_vault

    def methods(self) -> list[MethodBinding]:
        return [MethodBinding("skills/list", types.PaginatedRequestParams, self._list),
                MethodBinding("skills/get", GetSkillParams, self._get)]

    async def _list(self, ctx: Any, params: Any) -> dict[str, Any]:
        with _cursor_errors():
            items, cursor = paging.page(skills.served(self.open_vault()), lambda s: s.name,
                                        _cursor(params), "skills/list")
        return skills.list_result(items, cursor)

    async def _get(self, ctx: Any, params: GetSkillParams) -> dict[str, Any]:
        try:
            return skills.get_result(self.open_vault(), params.uri)
        except GitvaultError as exc:  # a bug is the SDK's internal error, not the caller's
            raise MCPError(code=INVALID_PARAMS, message=str(exc), data={"uri": params.uri}) \
                from None


def _cursor(params: Any) -> str | None:
    return getattr(params, "cursor", None) if params is not None else None


@contextmanager
def _cursor_errors() -> Iterator[None]:
    """A bad cursor is the client's error: invalid params, with the reason."""
    try:
        yield
    except paging.InvalidCursor as exc:
        raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None


def _tool_result(data: Any, error: bool = False) -> types.CallToolResult:
    payload = data if isinstance(data, dict) else {"result": data}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
        structured_content=payload, is_error=error)


def build(open_vault: tools.OpenVault, run_hot: tools.RunHot, describe: Describe) -> Server[Any]:
    """The server: tools, resources (skill files) and the skills extension."""
    ctx = tools.Context(open_vault, run_hot)

    async def list_tools(_: Any, params: Any) -> types.ListToolsResult:
        with _cursor_errors():
            chosen, cursor = paging.page(tools.TOOLS, lambda t: t.name, _cursor(params),
                                         "tools/list")
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.schema(),
                       annotations=types.ToolAnnotations(read_only_hint=t.read_only))
            for t in chosen], next_cursor=cursor)

    async def call_tool(_: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            data = tools.call(ctx, params.name, params.arguments)
        except Exception as exc:  # every error reaches the agent as gitvault reports it
            code, message, _exit = describe(exc)
            return _tool_result({"error": {"code": code, "message": message}}, error=True)
        return _tool_result(data)

    async def list_resources(_: Any, params: Any) -> types.ListResourcesResult:
        with _cursor_errors():
            rows, cursor = paging.page(skills.resource_list(open_vault()), lambda r: r["uri"],
                                       _cursor(params), "resources/list")
        return types.ListResourcesResult(resources=[types.Resource.model_validate(r)
                                                    for r in rows], next_cursor=cursor)

    async def read_resource(_: Any, params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        try:
            data, mime = skills.read(open_vault(), params.uri)
        except GitvaultError as exc:  # a bug is the SDK's internal error, not the caller's
            raise MCPError(code=INVALID_PARAMS, message=str(exc), data={"uri": params.uri}) \
                from None
        try:
            content: types.TextResourceContents | types.BlobResourceContents = \
                types.TextResourceContents(uri=params.uri, text=data.decode("utf-8"),
                                           mime_type=mime)
        except UnicodeDecodeError:
            import base64

            content = types.BlobResourceContents(uri=params.uri, mime_type=mime,
                                                 blob=base64.b64encode(data).decode())
        return types.ReadResourceResult(contents=[content])

    server: Server[Any] = Server("gitvault", version=__version__, instructions=INSTRUCTIONS,
                                 on_list_tools=list_tools, on_call_tool=call_tool,
                                 on_list_resources=list_resources,
                                 on_read_resource=read_resource)
    extension = SkillsExtension(open_vault)
    for method in extension.methods():
        server.add_request_handler(method.method, method.params_type, method.handler)
    server.extensions[extension.identifier] = extension.settings()
    return server


def serve(open_vault: tools.OpenVault, run_hot: tools.RunHot, describe: Describe) -> None:
    """Serve on stdin/stdout until the client closes the stream."""
    from mcp.server.stdio import stdio_server

    server = build(open_vault, run_hot, describe)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            # The 2025-11-25 wire has no capabilities.extensions (the SDK sieves it out
            # of the initialize result): legacy clients see the skills extension under
            # ``experimental``; 2026-07-28 clients get it under ``extensions``.
            options = server.create_initialization_options(
                experimental_capabilities={skills.IDENTIFIER: {}})
            await server.run(read_stream, write_stream, options)

    anyio.run(main)
