"""The sources of ``watch.sources`` and the literal registry of their checkers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from gitvault.knowledge import command, filehash, gitref, registries
from gitvault.knowledge.model import Context, Observation

Checker = Callable[[dict[str, Any], Context], Observation]

CHECKERS: dict[str, Checker] = {
    "pypi": registries.PYPI.check,
    "npm": registries.NPM.check,
    "file": filehash.check,
    "git-ref": gitref.check,
    "command": command.check,
}
NETWORK: dict[str, bool] = {"pypi": registries.NETWORK, "npm": registries.NETWORK,
                            "file": filehash.NETWORK, "git-ref": gitref.NETWORK,
                            "command": command.NETWORK}
PERIODS = {1: timedelta(hours=6), 2: timedelta(hours=12), 3: timedelta(days=7)}


@dataclass(frozen=True)
class Source:
    """One entry of ``watch.sources`` (validated by the config), with its defaults."""

    id: str
    type: str
    tier: int
    severity: str
    affected: tuple[str, ...]
    spec: dict[str, Any]

    @classmethod
    def from_config(cls, raw: dict[str, Any]) -> Source:
        return cls(id=raw["id"], type=raw["type"], tier=raw.get("tier", 1),
                   severity=raw.get("severity", "medium"),
                   affected=tuple(raw.get("affectedSkills") or ["*"]), spec=dict(raw))

    @property
    def network(self) -> bool:
        return NETWORK[self.type]

    @property
    def period(self) -> timedelta:
        return PERIODS[self.tier]

    def check(self, ctx: Context) -> Observation:
        return CHECKERS[self.type](self.spec, ctx)


def configured(sources: list[dict[str, Any]]) -> list[Source]:
    return [Source.from_config(raw) for raw in sources]
