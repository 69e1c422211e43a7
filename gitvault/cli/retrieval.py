"""``gitvault search``, ``context`` and ``outcome`` (also under ``gitvault skill``):
retrieval at task start and outcome feedback at task end (SPEC §4.1)."""

from __future__ import annotations

from typing import Any

import click

from gitvault.cli.common import emit, global_options, note, read_input, state, warn


def _prompt_text(value: str) -> str:
    """PROMPT, or stdin when it is '-'."""
    return (read_input(None, "-", "prompt") or "") if value == "-" else value


@click.command()
@click.argument("query")
@click.option("-k", "k", type=int, default=5, show_default=True, metavar="N",
              help="How many results.")
@click.option("--explain", is_flag=True,
              help="Show per hit which fields and terms scored (and what failures took back).")
@global_options
def search(query: str, k: int, explain: bool) -> None:
    """Find the skills for QUERY, best first.

    BM25 over name, trigger, description, tags and body (name and trigger weigh
    most) and the prompts of past successful injections (failed ones weigh
    against), boosted by usage and success; stale skills rank below active ones;
    archived and rejected ones never appear. QUERY '-' reads stdin."""
    from gitvault.retrieval import inject as retrieval

    vault = state().vault()
    hits, warnings = retrieval.search_hits(vault, _prompt_text(query), k, explain=explain)
    data = retrieval.search_data(hits, warn(warnings), explain=explain)
    results = data["results"]

    def text() -> str:
        if not hits:
            return "no matching skills"
        lines = []
        for h, r in zip(hits, results, strict=True):
            lines.append(f"{h.score:7.3f}  {h.name:<36} v{h.version:<4} {h.state:<7} "
                         f"{h.description[:60]}")
            if explain:
                lines += _explain_lines(r["explain"])
        return "\n".join(lines)

    emit(data, text)


def _explain_lines(why: dict[str, Any]) -> list[str]:
    fields = ", ".join(f"{name} {value:.3f}" for name, value in why["fields"].items())
    dense = f"; dense cosine {why['dense']:.3f} (fused)" if "dense" in why else ""
    lines = [f"         relevance {why['relevance']:.3f} x boost {why['boost']:.3f}; "
             f"fields: {fields or 'none'}{dense}"]
    for term in why["terms"]:
        where = ", ".join(f"{name} {value:.3f}" for name, value in term["fields"].items())
        against = f"; failures -{term['against']:.3f}" if term.get("against") else ""
        lines.append(f"           {term['term']:<16} {term['score']:.3f}  ({where}{against})")
    return lines


@click.command()
@click.argument("prompt")
@click.option("-k", "k", type=int, metavar="N", help="At most N skills (default: context.k, 3).")
@click.option("--budget", type=int, metavar="TOKENS",
              help="Total tokens of the block, 4 characters each (default: context.budget, 1000).")
@click.option("--pin", "pins", multiple=True, metavar="NAME@vN",
              help="Inject this version of a skill (repeatable); pins come first.")
@global_options
def context(prompt: str, k: int | None, budget: int | None, pins: tuple[str, ...]) -> None:
    """Build the skill context for PROMPT and record the injection.

    Prints '### RELEVANT SKILLS' (procedures and lessons, at most
    context.lesson_tokens) and 'Available helper functions:' (code skills' source,
    at most context.helper_tokens, cut only between functions), all within
    --budget. Pinned versions come first. PROMPT '-' reads stdin. Report the
    task's result with 'gitvault outcome INJECTION --success|--fail'."""
    from gitvault.retrieval import inject as retrieval

    vault = state().vault()
    data = retrieval.context(vault, _prompt_text(prompt), k=k, budget=budget, pins=pins)
    if data.get("warnings"):
        data["warnings"] = warn(data["warnings"])
    if not state().json:
        if data["injection"]:
            used = ", ".join(f"{s['name']}@v{s['version']}" for s in data["skills"])
            note(f"injection {data['injection']} ({used}); report the result with "
                 f"'gitvault outcome {data['injection']} --success' or '--fail'")
        else:
            note("no skill matched the prompt; nothing recorded")
    emit(data, data["text"])


@click.command()
@click.argument("injection", required=False)
@click.option("--skills", metavar="a,b", help="Skills to credit instead of an injection.")
@click.option("--success", is_flag=True, help="The task succeeded.")
@click.option("--fail", "failed", is_flag=True, help="The task failed.")
@click.option("--reason", metavar="TEXT", help="Why (kept in the record).")
@global_options
def outcome(injection: str | None, skills: str | None, success: bool, failed: bool,
            reason: str | None) -> None:
    """Record whether a task succeeded with the skills it was given.

    One outcome record: a success or failure for every skill of INJECTION (the id
    'gitvault context' printed), or of --skills a,b. Reporting the same result
    for an injection again changes nothing."""
    from gitvault.errors import InvalidInput
    from gitvault.retrieval import inject as retrieval

    if success == failed:
        raise InvalidInput("give exactly one of --success or --fail")
    vault = state().vault()
    data = retrieval.outcome(vault, success=success, injection=injection, skills=skills,
                             reason=reason)
    record = data["outcome"]
    result = "success" if record.get("success") is True else "failure"
    names = ", ".join(str(s) for s in record.get("skills") or [])
    emit(data, f"recorded {result} for {names}" if data["status"] == "recorded"
         else f"{result} already recorded for injection {injection}; nothing changed")
