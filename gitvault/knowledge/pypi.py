"""``pypi``: a package's latest version from a PyPI-compatible JSON API
(``<index>/<package>/json``, its ``info.version``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from gitvault.knowledge.http import get_json
from gitvault.knowledge.model import Context, LookupFailed, Observation, checked_version

DEFAULT_INDEX = "https://pypi.org/pypi"
NETWORK = True


def check(source: dict[str, Any], ctx: Context) -> Observation:
    index = (source.get("index") or DEFAULT_INDEX).rstrip("/")
    url = f"{index}/{quote(source['package'], safe='')}/json"
    data = get_json(url, ctx.timeout)
    info = data.get("info") if isinstance(data, dict) else None
    if not isinstance(info, dict) or "version" not in info:
        raise LookupFailed(f"{url}: no info.version in the answer (not a PyPI JSON API?)")
    version = checked_version(info["version"], url)
    return Observation(version, version)
