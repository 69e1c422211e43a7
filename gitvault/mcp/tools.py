"""The MCP tools of SPEC §4: their JSON schemas and descriptions, and what each calls.

Arguments mirror the CLI flags; each tool calls what the CLI command calls (the tool
protocol, retrieval's search/context/outcome, the hot commands' runner), so an agent
gets the same data, and the same error codes and messages, on every path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gitvault.errors import InvalidInput
from gitvault.queue.state import PRIORITIES
from gitvault.runs.record import RESULTS
from gitvault.skills.model import KINDS, PROVENANCES, STATES
from gitvault.vault.tool import ACTIONS

OpenVault = Callable[[], Any]
RunHot = Callable[[str, dict[str, Any]], Any]


@dataclass
class Context:
    """What a tool needs: a freshly opened vault per call, and the hot commands."""

    open_vault: OpenVault
    run_hot: RunHot


@dataclass
class Tool:
    name: str
    description: str
    properties: dict[str, Any]
    run: Callable[[Context, dict[str, Any]], Any]
    required: tuple[str, ...] = ()
    read_only: bool = False

    def schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": self.properties,
                "required": list(self.required), "additionalProperties": False}


def _s(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def _list_or_text(description: str) -> dict[str, Any]:
    return {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
            "description": description + " (a list, or one string 'a,b')."}


def _csv(value: Any, key: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    if isinstance(value, str):
        return value
    raise InvalidInput(f"{key!r} must be a string 'a,b' or a list of strings")


_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list,
    "object": dict}


def check_arguments(tool: Tool, args: dict[str, Any]) -> None:
    """Unknown, missing or mistyped arguments, as gitvault's bad-input errors."""
    unknown = sorted(set(args) - set(tool.properties))
    if unknown:
        raise InvalidInput(f"unknown argument(s) {', '.join(map(repr, unknown))} for "
                           f"{tool.name} (it takes {', '.join(tool.properties)})")
    for key in tool.required:
        if args.get(key) is None:
            raise InvalidInput(f"{tool.name} needs {key!r}")
    for key, value in args.items():
        spec = tool.properties[key]
        kinds = [spec["type"]] if "type" in spec else [a["type"] for a in spec.get("anyOf", [])]
        if value is None or any(isinstance(value, _TYPES[k]) and not (
                k in ("integer", "number") and isinstance(value, bool)) for k in kinds):
            continue
        raise InvalidInput(f"{key!r} must be {' or '.join(kinds)}, got {value!r}")


def _skill_patch(ctx: Context, args: dict[str, Any]) -> Any:
    from gitvault.vault import tool as protocol

    return protocol.handle(ctx.open_vault(), dict(args))


def _search(ctx: Context, args: dict[str, Any]) -> Any:
    from gitvault.retrieval import inject

    return inject.search(ctx.open_vault(), args["query"], args.get("k", inject.DEFAULT_SEARCH_K))


def _context(ctx: Context, args: dict[str, Any]) -> Any:
    from gitvault.retrieval import inject

    pins = args.get("pins") or []
    return inject.context(ctx.open_vault(), args["prompt"], k=args.get("k"),
                          budget=args.get("budget"), pins=[pins] if isinstance(pins, str) else pins)


def _outcome(ctx: Context, args: dict[str, Any]) -> Any:
    from gitvault.retrieval import inject

    return inject.outcome(ctx.open_vault(), success=args["success"],
                          injection=args.get("injection"),
                          skills=_csv(args.get("skills"), "skills"), reason=args.get("reason"))


def _hot(name: str, renames: dict[str, str] | None = None) -> Callable[[Context, dict[str, Any]], Any]:
    def run(ctx: Context, args: dict[str, Any]) -> Any:
        options: dict[str, Any] = {}
        for key, value in args.items():
            if value is None:
                continue
            if key in ("files", "skills", "depends_on"):
                value = _csv(value, key)
            if key == "score" and isinstance(value, (int, float)):
                value = repr(float(value))
            options[(renames or {}).get(key, key)] = value
        return ctx.run_hot(name, options)
    return run


_ID = _s("The prompt request's id (from enqueue or dispatch).")
TOOLS: list[Tool] = [
    Tool("skill_patch",
         "Create, patch, search or list skills (the skill_patch protocol of 'gitvault tool'). "
         "Call it with action 'patch' after a task taught you a better procedure, or "
         "'create' for a new one; each change is a new skill version and a git commit. "
         "'create' on an existing name changes nothing; 'patch' falls back to create.",
         {"action": _s("What to do.", enum=list(ACTIONS)),
          "name": _s("The skill's name: lowercase letters, digits and hyphens."),
          "trigger": _s("When an agent should use the skill (defaults to the description)."),
          "description": _s("What the skill does and when to use it (at most 1024 "
                            "characters, no angle brackets); defaults to the trigger."),
          "content": _s("The skill's markdown body: the steps."),
          "kind": _s(", ".join(KINDS) + ".", enum=list(KINDS)),
          "tags": _list_or_text("Tags"),
          "provenance": _s("Who wrote it.", enum=list(PROVENANCES)),
          "sensitive": {"type": "boolean", "description": "Never auto-edited when true."},
          "code": _s("Code skills: skill.py (checked by the verification gate)."),
          "tests": _s("Code skills: test_skill.py, plain asserts."),
          "example": _s("Code skills: example.py, one example call."),
          "query": _s("action 'search': what to look for."),
          "k": {"type": "integer", "minimum": 1, "description": "action 'search': how many."},
          "state": _s("action 'list': " + ", ".join(STATES) + " or all.")},
         _skill_patch, ("action",)),
    Tool("skill_search",
         "Rank the vault's skills for a query, best first (BM25 boosted by past success). "
         "Returns {results: [{name, version, state, score}]}.",
         {"query": _s("What you are about to do, in a few words (must not be empty)."),
          "k": {"type": "integer", "minimum": 1, "description": "How many results (5)."}},
         _search, ("query",), read_only=True),
    Tool("skill_context",
         "Call at the start of a task: the skills to follow for this prompt as one text "
         "block within a token budget, and an injection id. Report the task's result "
         "later with skill_outcome and that id. Returns {injection, skills, text}.",
         {"prompt": _s("The task you are starting (must not be empty)."),
          "k": {"type": "integer", "minimum": 1, "description": "At most k skills (3)."},
          "budget": {"type": "integer", "description": "Total tokens of the block (1000)."},
          "pins": _list_or_text("Skills to include at a fixed version, NAME@vN")},
         _context, ("prompt",)),
    Tool("skill_outcome",
         "Call at the end of a task: whether it succeeded with the skills skill_context "
         "gave you (pass its injection id), or with skills you name. This is how the vault "
         "learns which skills work.",
         {"injection": _s("The injection id skill_context returned."),
          "skills": _list_or_text("Skill names, instead of an injection"),
          "success": {"type": "boolean", "description": "true if the task succeeded."},
          "reason": _s("Why it failed or what helped, in one line.")},
         _outcome, ("success",)),
    Tool("record_run",
         "Record one run of a skill with a score (agent-skill-bus 'record-run'): feeds "
         "health, flags and drift. Returns {status: 'recorded', entry}.",
         {"agent": _s("Who ran the skill (default 'default')."),
          "skill": _s("The skill that ran."),
          "task": _s("What the run was for."),
          "result": _s(", ".join(RESULTS) + ".", enum=list(RESULTS)),
          "score": {"type": "number", "minimum": 0, "maximum": 1,
                    "description": "How well it went, 0 to 1 (clamped)."},
          "notes": _s("Free text; secrets are redacted.")},
         _hot("record-run"), ("skill",)),
    Tool("enqueue",
         "Add a prompt request to the shared queue (an identical queued one is reported "
         "as a duplicate). Returns {status: 'enqueued', pr} or {status: 'duplicate', ...}.",
         {"task": _s("What to do."),
          "source": _s("Where it comes from (human, cron, webhook, ...)."),
          "priority": _s(", ".join(PRIORITIES) + ".", enum=list(PRIORITIES)),
          "agent": _s("The agent that should run it."),
          "context": _s("Background or the reason for it."),
          "deadline": _s("immediate, 24h, week-end, next-cycle, none or an ISO 8601 time."),
          "files": _list_or_text("Files it changes, repo:path (repo:* is the whole repo)"),
          "skills": _list_or_text("Skills it concerns"),
          "depends_on": _list_or_text("PR ids that must be done first"),
          "dag_id": _s("The DAG it belongs to.")},
         _hot("enqueue"), ("task",)),
    Tool("dispatch",
         "The prompt requests ready to start now: dependencies done, files free, highest "
         "priority first. Returns {count, prs, ...}.",
         {"max": {"type": "integer", "minimum": 1, "description": "At most this many (5)."}},
         _hot("dispatch")),
    Tool("complete", "Mark a prompt request done and release its file locks.",
         {"id": _ID, "result": _s("The outcome (default 'done').")},
         _hot("complete", {"id": "pr_id"}), ("id",)),
    Tool("fail", "Mark a prompt request failed; every PR that depends on it is blocked.",
         {"id": _ID, "reason": _s("Why it failed.")},
         _hot("fail", {"id": "pr_id"}), ("id",)),
]
BY_NAME = {tool.name: tool for tool in TOOLS}


def call(ctx: Context, name: str, args: dict[str, Any] | None) -> Any:
    """Run tool ``name``; a GitvaultError is the caller's to report."""
    from gitvault.errors import NotFound

    tool = BY_NAME.get(name)
    if tool is None:
        raise NotFound(f"no tool named {name!r} (tools: {', '.join(BY_NAME)})")
    args = dict(args or {})
    check_arguments(tool, args)
    return tool.run(ctx, args)
