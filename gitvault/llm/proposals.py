"""Reading improve's answer (SPEC §7): ``{"diagnosis", "proposals": [{"title",
"content", "relevance", "safety", "effort"}]}`` as JSON (in a fence, with prose around
it, or bare), or the same keys as ``KEY: value`` lines with ``CONTENT:`` last. Keys that
reach outside the skill body (``sensitive``, ``metadata``, another skill's name, ...) are
kept on the proposal as ``extras``, so improve can refuse it and say why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from gitvault.llm.parsers import clean_block, fields, key_of, malformed

SCORES = ("relevance", "safety", "effort")
HARMLESS = {"rationale", "reason", "why", "notes", "explanation", "id", "summary"}
IMPROVE_EXPECTED = ('JSON {"diagnosis": str, "proposals": [{"title", "content", "relevance", '
                    '"safety", "effort"}]} with 1-3 proposals (or DIAGNOSIS/TITLE/RELEVANCE/'
                    "SAFETY/EFFORT/CONTENT lines)")
# Keys an answer may use to reach outside the skill body: read so they can be refused.
TAMPER = ("SENSITIVE", "PROVENANCE", "NAME", "SKILL", "SKILL_NAME", "METADATA", "KIND",
          "VERSION", "STATE", "FILES", "CODE", "TESTS", "EXAMPLE", "DESCRIPTION", "TRIGGER",
          "TAGS", "FRONTMATTER", "FRONT_MATTER", "PATH", "FILE")
IMPROVE_KEYS = {"DIAGNOSIS": "DIAGNOSIS", "ROOT_CAUSE": "DIAGNOSIS", "TITLE": "TITLE",
                "PROPOSAL": "TITLE", "RELEVANCE": "RELEVANCE", "SAFETY": "SAFETY",
                "EFFORT": "EFFORT", "CONTENT": "CONTENT", **{k: k for k in TAMPER}}


@dataclass
class Proposal:
    title: str
    content: str
    relevance: float
    safety: float
    effort: float
    extras: dict[str, Any] = field(default_factory=dict)  # keys outside the body: refused

    def scores(self) -> dict[str, Any]:
        return {"title": self.title, **{name: getattr(self, name) for name in SCORES}}


@dataclass
class Diagnosis:
    diagnosis: str
    proposals: list[Proposal]
    dropped: int = 0  # proposals beyond the third


def score(value: Any, what: str, answer: str) -> float:
    if isinstance(value, bool) or value is None:
        raise malformed(f"{what} as a number from 0 to 1 ({IMPROVE_EXPECTED})", answer)
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        match = re.search(r"(\d+(?:\.\d+)?|\.\d+)\s*(%|/\s*(\d+(?:\.\d+)?))?", str(value))
        if not match:
            raise malformed(f"{what} as a number from 0 to 1 ({IMPROVE_EXPECTED})", answer)
        number = float(match.group(1))
        if match.group(2) == "%":
            number /= 100
        elif match.group(3):
            number /= float(match.group(3)) or 1
    if not 0 <= number <= 1:
        raise malformed(f"{what} from 0 to 1, not {number:g} ({IMPROVE_EXPECTED})", answer)
    return number


def _text(value: Any, expected: str, answer: str) -> str:
    """``value`` if it is text with more than white space; else the answer is malformed."""
    if not isinstance(value, str) or not value.strip():
        raise malformed(f"{expected} ({IMPROVE_EXPECTED})", answer)
    return value


def _json_candidates(answer: str) -> list[Any]:
    texts = [m.group(1) for m in re.finditer(r"(?:`{3,}|~{3,})[\w+-]*[ \t]*\n(.*?)\n[ \t]*(?:`{3,}|~{3,})",
                                             answer, re.S)]
    start, end = answer.find("{"), answer.rfind("}")
    if 0 <= start < end:
        texts.append(answer[start:end + 1])
    found = []
    for text in texts:
        try:
            found.append(json.loads(text, strict=False))  # raw newlines in strings, as models write them
        except ValueError:
            continue
    return found


def _proposal(raw: dict[str, Any], answer: str) -> Proposal:
    title = raw.get("title")
    content = _text(raw.get("content"), "every proposal with a non-empty content", answer)
    values = {k: score(raw.get(k), k, answer) for k in SCORES}
    extras = {k: v for k, v in raw.items()
              if k not in ("title", "content", *SCORES) and k.lower() not in HARMLESS}
    return Proposal(str(title or "").strip() or "untitled", clean_block(content.split("\n")),
                    extras=extras, **values)


def _from_json(data: dict[str, Any], answer: str) -> Diagnosis:
    diagnosis = _text(data.get("diagnosis"), "a non-empty diagnosis", answer)
    proposals = data.get("proposals")
    if not isinstance(proposals, list) or not proposals or \
            not all(isinstance(p, dict) for p in proposals):
        raise malformed(f"a list of 1-3 proposal objects ({IMPROVE_EXPECTED})", answer)
    extras = {k: v for k, v in data.items() if k not in ("diagnosis", "proposals")
              and k.lower() not in HARMLESS}
    made = [_proposal(p, answer) for p in proposals[:3]]
    for item in made:
        item.extras.update(extras)
    return Diagnosis(diagnosis.strip(), made, max(len(proposals) - 3, 0))


def _from_lines(answer: str) -> Diagnosis:
    lines = answer.replace("\r\n", "\n").split("\n")
    diagnosis = ""
    blocks: list[list[str]] = [[]]
    inside = False  # after a CONTENT key: lines belong to it until the next TITLE
    for line in lines:
        hit = key_of(line, IMPROVE_KEYS)
        if hit is not None and hit[0] == "DIAGNOSIS" and not inside and not diagnosis:
            diagnosis = hit[1]
            continue
        if hit is not None and hit[0] == "TITLE" and (blocks[-1] or inside):
            blocks.append([])
            inside = False
        if hit is not None and hit[0] == "CONTENT":
            inside = True
        blocks[-1].append(line)
    made = []
    for block in blocks:
        found, _ = fields(block, IMPROVE_KEYS)
        if "CONTENT" not in found:
            continue
        extras = {k.lower(): v for k, v in found.items()
                  if k not in ("TITLE", "CONTENT", "RELEVANCE", "SAFETY", "EFFORT")}
        raw = {"title": found.get("TITLE", ""), "content": found["CONTENT"],
               **{k: found.get(k.upper()) for k in SCORES}}
        proposal = _proposal(raw, answer)
        proposal.extras = extras
        made.append(proposal)
    if not diagnosis or not made:
        raise malformed(IMPROVE_EXPECTED, answer)
    return Diagnosis(diagnosis, made[:3], max(len(made) - 3, 0))


def parse_improve(answer: str) -> Diagnosis:
    """The diagnosis and its 1-3 scored proposals."""
    for data in _json_candidates(answer):
        if isinstance(data, dict) and ("proposals" in data or "diagnosis" in data):
            return _from_json(data, answer)
    return _from_lines(answer)
