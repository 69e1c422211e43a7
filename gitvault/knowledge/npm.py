"""``npm``: a package's latest version from an npm-compatible registry
(``<registry>/<package>``, its ``dist-tags.latest``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from gitvault.knowledge.http import get_json
from gitvault.knowledge.model import Context, LookupFailed, Observation, checked_version

DEFAULT_REGISTRY = "https://registry.npmjs.org"
NETWORK = True


def check(source: dict[str, Any], ctx: Context) -> Observation:
    registry = (source.get("registry") or DEFAULT_REGISTRY).rstrip("/")
    url = f"{registry}/{quote(source['package'], safe='@')}"
    data = get_json(url, ctx.timeout)
    tags = data.get("dist-tags") if isinstance(data, dict) else None
    if not isinstance(tags, dict) or "latest" not in tags:
        raise LookupFailed(f"{url}: no dist-tags.latest in the answer (not an npm registry?)")
    version = checked_version(tags["latest"], url)
    return Observation(version, version)
