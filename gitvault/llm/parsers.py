"""Reading what models answer (SPEC §7), tolerantly: prose around the answer, code
fences around it, markdown emphasis and headings on the keys (``**Skill name:**``,
``### TRIGGER:``), key spellings (``SKILL_NAME``, ``Skill name``, ``skill-name``), JSON
or ``KEY: value`` lines. What cannot be read is an LLMError naming what was expected;
the caller then changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitvault.errors import LLMError

_KEY_LINE = re.compile(
    r"^[ \t>]*(?:[-*+][ \t]+|\d+[.)][ \t]+|#{1,6}[ \t]*)?[*_`]*[ \t]*"
    r"(?P<key>[A-Za-z][A-Za-z0-9 _-]{0,30}?)[ \t]*[*_`]*[ \t]*:[ \t]*(?P<value>.*)$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(?P<lang>[\w+-]*)[ \t]*$")
_EMPHASIS = "*_` \t"


def canonical(key: str) -> str:
    """``Skill name`` / ``skill-name`` / ``SKILL_NAME`` → ``SKILL_NAME``."""
    return re.sub(r"[\s_-]+", "_", key.strip()).upper()


def malformed(expected: str, answer: str) -> LLMError:
    shown = " ".join(answer.split())
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    return LLMError(f"the LLM's answer is malformed: expected {expected}; it answered "
                    f"{shown!r} (nothing changed)")


def key_of(line: str, keys: dict[str, str]) -> tuple[str, str] | None:
    """(canonical key, value) when ``line`` is a ``KEY: value`` line of ``keys``
    (alias → canonical)."""
    match = _KEY_LINE.match(line)
    if not match:
        return None
    key = keys.get(canonical(match.group("key")))
    if key is None:
        return None
    return key, match.group("value").strip().strip(_EMPHASIS).strip()


def _fence_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if _FENCE.match(line)]


def unwrap(text: str, keys: dict[str, str], first: str) -> list[str]:
    """The lines of the answer proper: when the first ``first`` key line sits inside a
    code fence, what lies between that fence and the last fence after it (the prose
    around is dropped)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    fences = _fence_lines(lines)
    at = next((i for i, line in enumerate(lines) if (k := key_of(line, keys)) and k[0] == first),
              None)
    if at is None or not fences:
        return lines
    before = [f for f in fences if f < at]
    after = [f for f in fences if f > at]
    if len(before) % 2 == 1 and after:
        return lines[before[-1] + 1:after[-1]]
    return lines


def clean_block(lines: list[str]) -> str:
    """Block text without blank edges, unwrapped from one markdown fence around it all."""
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and (not lines[-1].strip() or re.fullmatch(r"\s*-{3,}\s*", lines[-1])):
        lines = lines[:-1]
    head = _FENCE.match(lines[0]) if lines else None
    fences = _fence_lines(lines)
    if head and len(fences) >= 2:
        lang = head.group("lang").lower()
        if lang in ("markdown", "md"):  # a markdown wrapper: prose after it is dropped
            lines = lines[1:fences[-1]]
        elif lang == "" and len(fences) == 2 and fences[-1] == len(lines) - 1:
            lines = lines[1:-1]
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def fields(lines: list[str], keys: dict[str, str], last: str = "CONTENT"
           ) -> tuple[dict[str, str], list[str]]:
    """``KEY: value`` fields of a block (the ``last`` key takes every line after it),
    and the keys that appeared more than once."""
    found: dict[str, str] = {}
    repeated: list[str] = []
    for i, line in enumerate(lines):
        hit = key_of(line, keys)
        if hit is None:
            continue
        key, value = hit
        if key in found:
            repeated.append(key)
        if key == last:
            raw = _KEY_LINE.match(line)
            rest = raw.group("value").rstrip() if raw else ""
            found[key] = clean_block([*([rest] if rest.strip(_EMPHASIS) else []), *lines[i + 1:]])
            break
        found[key] = value
    return found, repeated


# -- extract ------------------------------------------------------------------------

EXTRACT_KEYS = {"SKILL_NAME": "SKILL_NAME", "SKILLNAME": "SKILL_NAME", "NAME": "SKILL_NAME",
                "SKILL": "SKILL_NAME", "TRIGGER": "TRIGGER", "WHEN_TO_USE": "TRIGGER",
                "CONTENT": "CONTENT", "BODY": "CONTENT"}
EXTRACT_EXPECTED = "'SKILL_NAME: ...', 'TRIGGER: ...' and 'CONTENT:' lines, or NONE"


@dataclass
class Extracted:
    name: str
    trigger: str
    content: str


def _is_none(lines: list[str]) -> bool:
    for line in lines:
        bare = line.strip().strip(_EMPHASIS + "#>.!").strip()
        if bare.lower() == "none" or re.match(r"^NONE\b", bare):
            return True
    return False


def parse_extract(answer: str) -> Extracted | None:
    """The extraction answer: a skill, or None for ``NONE``."""
    lines = unwrap(answer, EXTRACT_KEYS, "SKILL_NAME")
    found, _ = fields(lines, EXTRACT_KEYS)
    if "SKILL_NAME" not in found:
        if _is_none(lines):
            return None
        raise malformed(EXTRACT_EXPECTED, answer)
    for key in ("SKILL_NAME", "TRIGGER", "CONTENT"):
        if not found.get(key):
            raise malformed(f"a non-empty {key} ({EXTRACT_EXPECTED})", answer)
    return Extracted(found["SKILL_NAME"], found["TRIGGER"], found["CONTENT"])


def skill_name(raw: str) -> str:
    """A name as models write it (``Swift Build Fix``, ``debug_swift``) → canonical."""
    from gitvault.skills.model import normalize_name

    text = raw.strip().strip(_EMPHASIS + "\"'").strip()
    text = re.sub(r"[\s_]+", "-", text.lower())
    text = re.sub(r"-{2,}", "-", text).strip("-")
    return normalize_name(text)


# -- curate -------------------------------------------------------------------------

CURATE_KEYS = {"MERGE": "MERGE", "NEW_NAME": "NEW_NAME", "NEWNAME": "NEW_NAME",
               "NAME": "NEW_NAME", "TRIGGER": "TRIGGER", "DESCRIPTION": "DESCRIPTION",
               "CONTENT": "CONTENT"}
CURATE_EXPECTED = ("blocks of 'MERGE: a,b', 'NEW_NAME: name' and 'CONTENT:' separated by "
                   "'---', or NO_ACTION")


@dataclass
class Merge:
    names: list[str]
    new_name: str
    content: str
    description: str = ""


def _no_action(line: str) -> bool:
    return canonical(line.strip().strip(_EMPHASIS + "#>.!:")) == "NO_ACTION"


def parse_curate(answer: str) -> list[Merge]:
    """The curator's answer: its merges (empty for NO_ACTION)."""
    lines = unwrap(answer, CURATE_KEYS, "MERGE")
    starts = [i for i, line in enumerate(lines) if (k := key_of(line, CURATE_KEYS)) and k[0] == "MERGE"]
    if not starts:
        if any(_no_action(line) for line in lines):
            return []
        raise malformed(CURATE_EXPECTED, answer)
    merges = []
    for n, start in enumerate(starts):
        block = lines[start:starts[n + 1] if n + 1 < len(starts) else len(lines)]
        while block and (not block[-1].strip() or _no_action(block[-1])
                         or re.fullmatch(r"\s*-{3,}\s*", block[-1])):
            block = block[:-1]
        found, _ = fields(block, CURATE_KEYS)
        for key in ("MERGE", "NEW_NAME", "CONTENT"):
            if not found.get(key):
                raise malformed(f"a non-empty {key} in every MERGE block ({CURATE_EXPECTED})",
                                answer)
        names = [n.strip().strip(_EMPHASIS + "\"'") for n in
                 re.split(r",|\band\b|&", found["MERGE"]) if n.strip(_EMPHASIS + "\"' ")]
        merges.append(Merge(names, found["NEW_NAME"], found["CONTENT"],
                            found.get("DESCRIPTION") or found.get("TRIGGER", "")))
    return merges
