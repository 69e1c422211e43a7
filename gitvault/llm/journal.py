"""The ``improvements`` stream (SPEC §3, §7): one record per decision of the loop, and
the parts of a vault the loop works through (:class:`Loop`).

Records (all appended, none rewritten):
- ``{op: "extract", result: created|exists|none, skill?, version?, content?}``
- ``{op: "curate", action: merged|refused|no_action, skill?, version?, merged?, reason?}``
- ``{op: "improve", skill, action: applied|proposed|refused|unchanged, diagnosis,
  proposal, proposals, reasons, fromVersion?, version?, commit?, branch?}``
- ``{op: "judge", skill, version, action: improved|no_effect|rolled_back|proposed|
  superseded|no_baseline, before, after, ...}``: an earlier auto-edit judged by runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitvault.core import records
from gitvault.core.config import Config
from gitvault.core.paths import VaultLayout
from gitvault.llm.providers import Provider
from gitvault.runs.columns import Runs
from gitvault.skills.store import SkillStore

STREAM = "improvements"
OPS = ("extract", "curate", "improve", "judge")


@dataclass
class Loop:
    """What the loop needs of a vault (the facade composes it; see Vault.loop)."""

    layout: VaultLayout
    top: Path
    vault_rel: str
    node: str
    config: Config
    skills: SkillStore
    append: Callable[[str, dict[str, Any]], dict[str, Any]]
    runs: Callable[[], Runs]
    provider: Provider | None = None

    def ask(self, prompt: str) -> str:
        from gitvault.errors import LLMError
        from gitvault.llm.providers import NO_PROVIDER

        if self.provider is None:
            raise LLMError(NO_PROVIDER)
        return self.provider.complete(prompt)

    def record(self, record: dict[str, Any]) -> dict[str, Any]:
        return self.append(STREAM, record)

    def scan(self, stream: str = STREAM) -> records.Scan:
        return records.scan(self.layout.stream(stream), check=check_record if stream == STREAM
                            else None)


def check_record(record: dict[str, Any]) -> str | None:
    op = record.get("op")
    if op not in OPS:
        return None  # another program's line: kept, listed as it is
    if op in ("improve", "judge") and not isinstance(record.get("skill"), str):
        return f"{op} record without a skill"
    return None


def about(record: dict[str, Any], skill: str) -> bool:
    merged = record.get("merged")
    return record.get("skill") == skill or (isinstance(merged, list) and skill in merged)


def _scores(proposal: Any) -> str:
    if not isinstance(proposal, dict):
        return "-"
    parts = [f"{k} {proposal[k]:g}" for k in ("relevance", "safety", "effort")
             if isinstance(proposal.get(k), (int, float))]
    return f"{proposal.get('title', '')} ({', '.join(parts)})" if parts else str(proposal.get("title", "-"))


def action_text(record: dict[str, Any]) -> str:
    action = str(record.get("action") or record.get("result") or "")
    if record.get("branch"):
        action += f" on branch {record['branch']}"
    if record.get("version"):
        start = record.get("fromVersion")
        action += f" (v{start} -> v{record['version']})" if start else f" (v{record['version']})"
    if record.get("rollbackVersion"):
        action += f", rolled back as v{record['rollbackVersion']}"
    return action


def markdown(found: list[dict[str, Any]]) -> str:
    """The records as the seed's ``skill-improvements.md``."""
    out = ["# Skill improvements", ""]
    for r in found:
        op = r.get("op")
        out.append(f"### {r.get('ts', '')} -- {r.get('skill') or op}")
        if op == "judge":
            before, after = r.get("before") or {}, r.get("after") or {}
            out.append(f"- **Diagnosis:** judged v{r.get('version')} (an auto-edit) by its runs")
            out.append(f"- **Proposal:** {r.get('reason', '-')}")
            out.append(f"- **Action:** {action_text(r)}")
            out.append(f"- **Result:** avg {before.get('avg')} over {before.get('runs')} runs "
                       f"before, {after.get('avg')} over {after.get('runs')} after")
        elif op == "improve":
            out.append(f"- **Diagnosis:** {r.get('diagnosis', '-')}")
            out.append(f"- **Proposal:** {_scores(r.get('proposal'))}")
            out.append(f"- **Action:** {action_text(r)}")
            out.append("- **Result:** " + ("; ".join(r.get("reasons") or []) or "-"))
        else:
            merged = r.get("merged")
            out.append(f"- **Action:** {op} {action_text(r)}"
                       + (f", merged {', '.join(merged)}" if isinstance(merged, list) else ""))
            if r.get("reason"):
                out.append(f"- **Result:** {r['reason']}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
