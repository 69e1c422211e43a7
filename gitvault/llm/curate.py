"""``curate``: the SkillVault seed's curator pass (SPEC §7). The model sees every
active skill with its statistics (``### name [✓8 ✗1, 11% fail]``) and may merge skills;
merged skills are archived (never deleted, restorable) and the new skill records them
in ``metadata.merged``. A merge naming a missing, archived, sensitive or code skill is
refused as a whole, with the reason.
"""

from __future__ import annotations

from typing import Any

from gitvault.errors import InvalidInput, LLMError
from gitvault.llm import parsers, prompts
from gitvault.llm.extract import body_problem, description_of, fit
from gitvault.llm.journal import Loop
from gitvault.skills.model import Skill
from gitvault.skills.store import SkillEdit
from gitvault.skills.usage import skill_stats


def _active(loop: Loop) -> list[Skill]:
    return [s for s in loop.skills.iter_all(include_archived=False, skipped=[])
            if s.state == "active"]


def refusal(loop: Loop, merge: parsers.Merge) -> tuple[list[str], str, str | None]:
    """(skill names, new name, reason the merge is refused or None)."""
    names: list[str] = []
    for raw in merge.names:
        try:
            names.append(parsers.skill_name(raw))
        except InvalidInput:
            return names, merge.new_name, f"{raw!r} is not a skill name"
    try:
        new_name = parsers.skill_name(merge.new_name)
    except InvalidInput:
        return names, merge.new_name, f"NEW_NAME {merge.new_name!r} is not a skill name"
    if len(set(names)) < 2:
        return names, new_name, "a merge needs at least two different skills"
    for name in names:
        found = loop.skills.find(name)
        if found is None:
            return names, new_name, f"no skill named {name!r}"
        skill = loop.skills.get(name)
        if found[1] or skill.state == "archived":
            return names, new_name, f"{name!r} is archived"
        if skill.sensitive:
            return names, new_name, f"{name!r} is sensitive (merge it by hand)"
        if skill.kind == "code":
            return names, new_name, f"{name!r} is a code skill (its files pass the gate; merge it by hand)"
    if new_name not in names and loop.skills.find(new_name) is not None:
        return names, new_name, f"NEW_NAME {new_name!r} is an existing skill outside the merge"
    problem = body_problem(merge.content)
    return names, new_name, problem


def _apply(loop: Loop, names: list[str], new_name: str, merge: parsers.Merge,
           content: str) -> Skill:
    others = [n for n in names if n != new_name]
    merged = ",".join(names)
    if new_name in names:
        skill, _ = loop.skills.patch(new_name, SkillEdit(content=content, provenance="curator",
                                                         metadata={"merged": merged}))
    else:
        descriptions = "; ".join(loop.skills.get(n).description for n in names)
        description = description_of(merge.description or f"Merges {', '.join(names)}: {descriptions}")
        skill, _ = loop.skills.create(new_name, SkillEdit(
            content=content, description=description, trigger=description,
            provenance="curator", metadata={"merged": merged}))
    for name in others:
        loop.skills.archive(name, f"merged into {new_name} by the curator")
    return skill


def curate(loop: Loop, *, dry_run: bool = False) -> dict[str, Any]:
    """One curator pass. Returns ``{"merges": [...], "dryRun"}``; each merge has
    ``action`` merged | refused (``reason``) | would_merge."""
    active = _active(loop)
    stats = skill_stats(loop.scan("events").records)
    entries = [(s.name, stats.get(s.name, {}).get("success", 0),
                stats.get(s.name, {}).get("failure", 0), s.trigger, s.body) for s in active]
    merges = parsers.parse_curate(loop.ask(prompts.curate_prompt(entries)))
    planned = []
    claimed: set[str] = set()  # skills an earlier merge of this answer takes or makes
    for merge in merges:
        names, new_name, reason = refusal(loop, merge)
        taken = next((n for n in [*names, new_name] if n in claimed), None)
        if reason is None and taken is not None:
            reason = f"{taken!r} is in an earlier merge of this answer"
        content, budget = merge.content, None
        if reason is None:
            try:
                content, budget = fit(merge.content, loop.config.extract.max_tokens,
                                      "merged content")
            except LLMError as exc:
                reason = str(exc)
        if reason is None:
            claimed.update([*names, new_name])
        planned.append((merge, names, new_name, reason, content, budget))
    shown = []
    for merge, names, new_name, reason, content, budget in planned:
        item: dict[str, Any] = {"merged": names, "skill": new_name}
        if reason is not None:
            item.update(action="refused", reason=reason)
        elif dry_run:
            item.update(action="would_merge", budget=budget, content=content)
        else:
            made = _apply(loop, names, new_name, merge, content)
            item.update(action="merged", version=made.version, budget=budget)
        if not dry_run:
            loop.record({"op": "curate", **{k: v for k, v in item.items()
                                            if k not in ("content", "budget")}})
        shown.append(item)
    if not merges and not dry_run:
        loop.record({"op": "curate", "action": "no_action"})
    return {"dryRun": dry_run, "merges": shown, "skills": len(active)}
