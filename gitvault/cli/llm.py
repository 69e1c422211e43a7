"""The self-improving loop (SPEC §7): ``extract``, ``curate``, ``improve`` and
``improvements``. The LLM is this clone's provider (GITVAULT_LLM_CMD, git config
gitvault.llm-command or gitvault.llm-model), never one named by gitvault.yaml."""

from __future__ import annotations

from typing import Any

import click

from gitvault.cli.common import dry_run_option, emit, global_options, note, read_input, state, warn


def _budget(item: dict[str, Any]) -> str:
    budget = item.get("budget")
    if not isinstance(budget, dict) or budget.get("action") != "cut":
        return ""
    return (f" (content was {budget['tokens']} tokens, over the limit of {budget['limit']}: "
            f"cut at a line boundary to {budget['keptTokens']})")


@click.command()
@click.option("--summary", "summary_file", metavar="FILE|-", required=True,
              help="The session summary to learn from ('-' for stdin).")
@dry_run_option("Show what would be stored")
@global_options
def extract(summary_file: str, dry_run: bool) -> None:
    """Extract a reusable skill from a session summary with the LLM.

    The answer is SKILL_NAME / TRIGGER / CONTENT (stored as a curator skill, content at
    most extract.max_tokens) or NONE. Every extract.curate_every-th extract run also
    runs the curator."""
    from gitvault.llm.extract import extract as run

    summary = read_input(None, summary_file, "summary") or ""
    result = run(state().vault().loop(), summary, dry_run=dry_run)
    emit(result, lambda: _extract_text(result))


def _extract_text(result: dict[str, Any]) -> str:
    lines = [_extracted(result) + _budget(result)]
    curate = result.get("curate")
    if curate:
        lines.append(f"extract run {curate['run']}: the curator ran too")
        lines.append(f"curate failed: {curate['error']}" if "error" in curate else _curate_text(curate))
    return "\n".join(lines)


def _extracted(result: dict[str, Any]) -> str:
    status = result["status"]
    if status == "none":
        return "the model found no reusable rule (NONE); nothing stored"
    if status == "exists":
        return f"skill {result['skill']} exists; nothing changed"
    if status == "would_create":
        return f"would create skill {result['skill']} (dry run; nothing changed)"
    return f"created skill {result['skill']} v{result['version']} (provenance curator)"


@click.command()
@dry_run_option("Show the merges")
@global_options
def curate(dry_run: bool) -> None:
    """Curate skills with the LLM: merge overlapping ones, archiving the merged.

    Merged skills are archived (restorable), the new skill records them in
    metadata.merged; a merge naming a missing, archived, sensitive or code skill is
    refused as a whole."""
    from gitvault.llm.curate import curate as run

    result = run(state().vault().loop(), dry_run=dry_run)
    emit(result, lambda: _curate_text(result))


def _curate_text(result: dict[str, Any]) -> str:
    lines = [_merge(item) for item in result["merges"]]
    return "\n".join(lines) or f"the curator proposed no merge ({result['skills']} active skills)"


def _merge(item: dict[str, Any]) -> str:
    names = ", ".join(item["merged"])
    if item["action"] == "refused":
        return f"refused merge of {names} into {item['skill']}: {item['reason']}"
    if item["action"] == "would_merge":
        return f"would merge {names} into {item['skill']} (dry run)" + _budget(item)
    return f"merged {names} into {item['skill']} v{item['version']}; archived the others" \
        + _budget(item)


@click.command()
@click.option("--days", type=click.IntRange(min=1), default=None, metavar="N",
              help="The recent window of the health rules (default health.window_days, 7).")
@dry_run_option("Show the diagnoses and decisions")
@global_options
def improve(days: int | None, dry_run: bool) -> None:
    """Improve flagged skills with the LLM (seed §7's seven steps).

    Each flagged skill is diagnosed; the best proposal is applied as a new version only
    if relevance and safety pass improve.min_relevance / min_safety, the skill is not
    sensitive and was not auto-edited in the last 24 hours; otherwise it is committed on
    a branch gitvault/proposals/<skill>/<timestamp> for review. Earlier auto-edits are
    judged by the runs since: no effect is re-diagnosed, a clear drop rolled back."""
    from gitvault.llm.improve import improve as run

    result = run(state().vault().loop(), days=days, dry_run=dry_run)
    for line in result["notes"]:
        note(line)
    emit(result, lambda: _improve_text(result))


def _improve_text(result: dict[str, Any]) -> str:
    lines = [f"{v['skill']} v{v['version']}: {v['action'].replace('_', ' ')} (runs avg "
             f"{v['before'].get('avg')} before, {v['after'].get('avg')} after)"
             + (f"; rolled back as v{v['rollbackVersion']}" if "rollbackVersion" in v else "")
             + (f"; proposed on {v['branch']}" if "branch" in v else "") for v in result["judged"]]
    lines += [f"{v['skill']} v{v['version']}: waiting for runs ({v['after']['runs']} of "
              f"{v['after'].get('needed')})" for v in result["pending"]]
    for d in result["decisions"]:
        title = (d.get("proposal") or {}).get("title", "")
        head = f"{d['skill']}: {d['diagnosis']}"
        action = d["action"]
        if action == "applied":
            what = f"applied {title!r} as v{d['version']} (undo: gitvault skill rollback " \
                   f"{d['skill']} v{d['fromVersion']})"
        elif action == "proposed":
            what = f"proposed {title!r} on branch {d['branch']}"
        elif action in ("apply", "propose"):
            what = f"would {action} {title!r} (dry run)"
        else:
            what = action
        reasons = "; ".join(d.get("reasons") or [])
        lines += [head, f"  -> {what}" + (f" ({reasons})" if reasons else "")]
    if not lines:
        lines.append("no skill is flagged and no earlier change waits to be judged")
    if result["dryRun"]:
        lines.append("dry run: nothing changed")
    return "\n".join(lines)


@click.command()
@click.option("--skill", "skill_name", metavar="S", help="Only the records about skill S.")
@global_options
def improvements(skill_name: str | None) -> None:
    """The improvement records: every decision of extract, curate and improve.

    Shown as the seed's skill-improvements.md; --json lists the records."""
    from gitvault.llm.journal import about, markdown
    from gitvault.skills.model import normalize_name

    loop = state().vault().loop(provider=False)
    scan = loop.scan()
    found = scan.records
    if skill_name is not None:
        name = normalize_name(skill_name)
        found = [r for r in found if about(r, name)]
    warnings = warn(scan.warnings)
    data: dict[str, Any] = {"improvements": found}
    if warnings:
        data["warnings"] = warnings
    emit(data, lambda: markdown(found) if found else "no improvement records")
