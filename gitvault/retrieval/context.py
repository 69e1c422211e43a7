"""The context block injected at task start (SPEC §4.1; the seeds' buildSkillContext
and Voyager's task-start retrieval).

Procedures and lessons go under ``### RELEVANT SKILLS`` (that block at most
``lesson_tokens``), code skills' source under ``Available helper functions:`` (at
most ``helper_tokens``, cut only where a top-level function or class starts), the
whole text at most ``budget`` tokens. A token counts as 4 characters.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

from gitvault.errors import InvalidInput

CHARS_PER_TOKEN = 4
SKILLS_HEADER = "### RELEVANT SKILLS"
HELPERS_HEADER = "Available helper functions:"
MIN_BUDGET = 40  # tokens: below this not even one short skill fits
_SEP = "\n\n"


def count_tokens(text: str) -> int:
    """Tokens ``text`` counts for: 4 characters each, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Candidate:
    """A skill offered to the context, in the order it should be considered."""

    name: str
    version: int
    kind: str  # procedure | lesson | code
    trigger: str
    body: str
    code: str | None = None  # skill.py of a code skill
    score: float = 0.0
    pinned: bool = False


@dataclass
class Context:
    text: str
    chosen: list[Candidate] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)  # "name: why" for candidates left out


def code_chunks(source: str) -> list[str]:
    """``source`` cut where each top-level function or class starts (decorators and
    comments above it go with it); the first chunk is what precedes the first one
    (imports, constants). The chunks joined give ``source`` back; source that does
    not parse is one chunk."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return [source]
    lines = source.splitlines(keepends=True)
    starts = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            while first > 0 and lines[first - 1].lstrip().startswith("#"):
                first -= 1
            starts.append(first)
    bounds = [0, *starts, len(lines)]
    chunks = ["".join(lines[a:b]) for a, b in pairwise(bounds)]
    if len(chunks) > 1 and not chunks[0].strip():
        blank = chunks.pop(0)  # nothing but blank lines before the first function
        chunks[0] = blank + chunks[0]
    return chunks


def _skill_entry(c: Candidate, body_lines: int | None = None) -> str:
    label = f"{c.kind}, " if c.kind in ("lesson", "code") else ""  # code: no skill.py
    head = [f"#### {c.name} ({label}v{c.version})", f"Use when: {c.trigger}"]
    lines = c.body.strip("\n").splitlines()
    if body_lines is not None and body_lines < len(lines):
        kept = lines[:body_lines]
        while kept and not kept[-1].strip():
            kept.pop()
        lines = [*kept, f"[... cut to fit the budget; 'gitvault skill show {c.name}' has the rest]"]
    return "\n".join(head + lines)


def _helper_entry(c: Candidate, chunks: list[str]) -> str:
    return f"# {c.name} (v{c.version})\n" + "".join(chunks).strip("\n")


def _largest_fit(cand: Candidate, fits: Callable[[str], bool]) -> str | None:
    """The whole entry if it fits, else the one with the most body lines that fits."""
    whole = _skill_entry(cand)
    if fits(whole):
        return whole
    low, high, best = 0, len(cand.body.strip("\n").splitlines()) - 1, None
    while low <= high:  # longer entries for more lines: binary search
        mid = (low + high) // 2
        trial = _skill_entry(cand, mid)
        if fits(trial):
            best, low = trial, mid + 1
        else:
            high = mid - 1
    return best


def _render(skills: list[str], helpers: list[str]) -> tuple[str, str, str]:
    skills_block = _SEP.join([SKILLS_HEADER, *skills]) if skills else ""
    helpers_block = _SEP.join([HELPERS_HEADER, *helpers]) if helpers else ""
    text = _SEP.join(b for b in (skills_block, helpers_block) if b)
    return skills_block, helpers_block, text + "\n" if text else ""


def build_context(candidates: list[Candidate], *, k: int, budget: int, lesson_tokens: int,
                  helper_tokens: int) -> Context:
    """Pick at most ``k`` candidates, in order, within the budgets. A candidate that
    does not fit is cut (a procedure or lesson at a line, code at a function) or, if
    not even its start fits, left out; a pinned one left out is an error."""
    if k < 1:
        raise InvalidInput(f"-k must be at least 1, got {k}")
    if budget < MIN_BUDGET:
        raise InvalidInput(f"--budget {budget} is too small: at least {MIN_BUDGET} tokens "
                           f"(a token is {CHARS_PER_TOKEN} characters)")
    skills: list[str] = []
    helpers: list[str] = []
    result = Context("")

    def fits(new_skills: list[str], new_helpers: list[str]) -> bool:
        s_block, h_block, text = _render(new_skills, new_helpers)
        return (count_tokens(s_block) <= lesson_tokens and count_tokens(h_block) <= helper_tokens
                and count_tokens(text) <= budget)

    for cand in candidates:
        if len(result.chosen) == k:
            break
        entry: str | None = None
        if cand.kind == "code" and (cand.code or "").strip():
            chunks = code_chunks(cand.code or "")
            for size in range(len(chunks), 0, -1):
                trial = _helper_entry(cand, chunks[:size])
                if fits(skills, [*helpers, trial]):
                    entry = trial
                    break
            if entry is not None:
                helpers.append(entry)
        else:
            entry = _largest_fit(cand, lambda trial: fits([*skills, trial], helpers))
            if entry is not None:
                skills.append(entry)
        if entry is None:
            block = HELPERS_HEADER if cand.kind == "code" and cand.code else SKILLS_HEADER
            why = f"{cand.name}: does not fit the token budgets ({block!r} block or --budget)"
            if cand.pinned:
                raise InvalidInput(f"pinned skill {cand.name}@v{cand.version} does not fit: "
                                   f"raise --budget or the {cand.kind} token limit")
            result.omitted.append(why)
            continue
        result.chosen.append(cand)
    result.text = _render(skills, helpers)[2]
    return result
