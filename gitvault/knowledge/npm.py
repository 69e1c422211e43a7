"""``npm``: a package's latest version from an npm-compatible registry
(``<registry>/<package>``, its ``dist-tags.latest``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from gitvault.knowledge.http import latest_version
from gitvault.knowledge.model import Context, Observation

DEFAULT_REGISTRY = "https://registry.npmjs.org"
NETWORK = True


def check(source: dict[str, Any], ctx: Context) -> Observation:
    registry = (source.get("registry") or DEFAULT_REGISTRY).rstrip("/")
    url = f"{registry}/{quote(source['package'], safe='@')}"
    return latest_version(url, ctx.timeout, "dist-tags", "latest", "an npm registry")
