"""Agent Skills interchange composed from a vault's parts: the skills it may hand out,
the code this node trusts, and what ``export`` writes (folders, or the AGENTS.md
index). The CLI, the MCP server and the demo share these."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitvault.skills import agentskills
from gitvault.skills.codegate import trusted_evidence
from gitvault.skills.model import Skill
from gitvault.vault.facade import Vault


def trusted(vault: Vault) -> set[str]:
    """The code skills this node's own passing gate evidence covers (SPEC §1)."""
    return trusted_evidence(vault.layout, vault.node)


def active(vault: Vault, skipped: list[str] | None = None) -> list[tuple[Skill, Path]]:
    """Every active (not archived) skill and its folder; unreadable skill files go to
    ``skipped`` as lines."""
    return [(skill, vault.layout.skill_dir(skill.name))
            for skill in vault.skills.iter_all(include_archived=False, skipped=skipped)]


def export_folders(vault: Vault, dest: Path, *, keep_extra_keys: bool = False,
                   skipped: list[str] | None = None) -> dict[str, Any]:
    """``export DEST``: the served skills as Agent Skills folders (its --json)."""
    return agentskills.export_folders(active(vault, skipped), dest,
                                      keep_extra_keys=keep_extra_keys, trusted=trusted(vault))


def export_index(vault: Vault, dest: Path, budget: int = agentskills.DEFAULT_BUDGET,
                 skipped: list[str] | None = None) -> dict[str, Any]:
    """``export DEST --format agents-md``: the index, most-used first, within ``budget``
    characters, written into DEST/AGENTS.md (or DEST itself, a .md file); its --json."""
    target = agentskills.index_target(dest)
    stats, _ = vault.skill_stats()
    usage = {name: int(row.get("usage", 0)) for name, row in stats.items()}
    block, listed, omitted = agentskills.index_block(active(vault, skipped), usage,
                                                     target.parent.resolve(), budget,
                                                     trusted(vault))
    action = agentskills.write_index(target, block)
    return {"format": "agents-md", "file": str(target), "action": action, "skills": listed,
            "omitted": omitted, "chars": len(block)}
