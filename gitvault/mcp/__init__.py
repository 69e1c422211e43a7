"""The MCP server (``gitvault mcp``): the tools of SPEC §4 and the skills extension
(SEP-2640) over the library API, on stdio. The MCP SDK is imported only here, and only
by :mod:`gitvault.mcp.server`; :mod:`tools` and :mod:`skills` are plain Python so their
shapes are testable without it. The CLI hands in what it shares with every front door
(the hot commands' runner, the error describer), so the answers are the CLI's.
"""
