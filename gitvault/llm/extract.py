"""``extract``: a session summary becomes a curator skill (SPEC §7; the SkillVault
seed's DreamActor.extractSkills). Every ``extract.curate_every``-th extract run (NONE
answers count; counted from the ``improvements`` records of every node) also runs the
curator.
"""

from __future__ import annotations

import re
from typing import Any

from gitvault.errors import GitvaultError, InvalidInput, LLMError
from gitvault.llm import parsers, prompts
from gitvault.llm.journal import Loop
from gitvault.skills.store import SkillEdit

CHARS_PER_TOKEN = 4


def tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def fit(content: str, max_tokens: int, what: str = "content") -> tuple[str, dict[str, Any]]:
    """``content`` within ``max_tokens`` (a token is 4 characters): as it is, or cut at
    the last line boundary that fits; refused (LLMError) when not even its first line
    fits. Returns (content, {"tokens", "limit", "action": "kept" | "cut"})."""
    limit = max_tokens * CHARS_PER_TOKEN
    budget = {"tokens": tokens(content), "limit": max_tokens, "action": "kept"}
    if len(content) <= limit:
        return content, budget
    kept: list[str] = []
    size = 0
    for line in content.split("\n"):
        if size + len(line) + (1 if kept else 0) > limit:
            break
        size += len(line) + (1 if kept else 0)
        kept.append(line)
    cut = "\n".join(kept).rstrip()
    if not cut.strip():
        raise LLMError(f"the {what} is {tokens(content)} tokens, over the limit of {max_tokens} "
                       "(extract.max_tokens), and its first line alone is over it: refused "
                       "(nothing changed)")
    budget.update(action="cut", keptTokens=tokens(cut))
    return cut, budget


def description_of(text: str) -> str:
    """A description from model text: one line, no '<' or '>', at most 1024 characters."""
    flat = " ".join(re.sub(r"[<>]", "", text).split())
    return flat[:1024].rstrip() or "Extracted by the curator"


def body_problem(content: str) -> str | None:
    """Why model text cannot be a skill body (None when it can): a body never carries
    front-matter, which would reach the name, metadata or sensitivity."""
    if re.match(r"\s*---[ \t]*\n(?:.*\n)*?[ \t]*[\w-]+[ \t]*:", content) and \
            re.search(r"\n[ \t]*---[ \t]*(\n|$)", content.lstrip()):
        return "the content carries front-matter (only the skill body may change)"
    if not content.strip():
        return "the content is empty"
    return None


def extract(loop: Loop, summary: str, *, dry_run: bool = False) -> dict[str, Any]:
    """Ask the model for a reusable rule in ``summary`` and store it (provenance curator).
    Returns ``{"status": created|exists|none (or would_create with dry_run), ...}``."""
    if not summary.strip():
        raise InvalidInput("the session summary is empty (extract --summary FILE or -)")
    section = loop.config.extract
    answer = loop.ask(prompts.extract_prompt(summary, section.max_tokens))
    parsed = parsers.parse_extract(answer)
    result: dict[str, Any] = {"status": "none", "dryRun": dry_run}
    record: dict[str, Any] = {"op": "extract", "result": "none"}
    if parsed is not None:
        try:
            name = parsers.skill_name(parsed.name)
        except InvalidInput:
            raise parsers.malformed(f"SKILL_NAME as a skill name (a-z, 0-9 and hyphens), not "
                                    f"{parsed.name!r}", answer) from None
        problem = body_problem(parsed.content)
        if problem:
            raise LLMError(f"the extracted skill is refused: {problem} (nothing changed)")
        content, budget = fit(parsed.content, section.max_tokens)
        description = description_of(parsed.trigger)
        result.update(skill=name, trigger=description, budget=budget, content=content)
        found = loop.skills.find(name)
        if dry_run:
            result["status"] = "exists" if found else "would_create"
            return result
        skill, created = loop.skills.create(name, SkillEdit(
            content=content, description=description, trigger=description,
            provenance="curator"))
        result.update(status="created" if created else "exists", version=skill.version)
        record.update(result="created" if created else "exists", skill=name,
                      version=skill.version, budget=budget["action"])
    if dry_run:
        return result
    loop.record(record)
    result["curate"] = curate_if_due(loop)
    return result


def extract_runs(loop: Loop) -> int:
    """Extract runs recorded by every node (NONE answers included)."""
    return sum(1 for r in loop.scan().records if r.get("op") == "extract")


def curate_if_due(loop: Loop) -> dict[str, Any] | None:
    """Run the curator when this was the Nth extract run; its failure is reported in the
    result (the extract itself is done)."""
    every = loop.config.extract.curate_every
    count = extract_runs(loop)
    if every <= 0 or count % every:
        return None
    from gitvault.llm.curate import curate

    try:
        return {"run": count, **curate(loop)}
    except GitvaultError as exc:
        return {"run": count, "error": str(exc)}
