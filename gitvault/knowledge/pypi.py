"""``pypi``: a package's latest version from a PyPI-compatible JSON API
(``<index>/<package>/json``, its ``info.version``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from gitvault.knowledge.http import latest_version
from gitvault.knowledge.model import Context, Observation

DEFAULT_INDEX = "https://pypi.org/pypi"
NETWORK = True


def check(source: dict[str, Any], ctx: Context) -> Observation:
    index = (source.get("index") or DEFAULT_INDEX).rstrip("/")
    url = f"{index}/{quote(source['package'], safe='')}/json"
    return latest_version(url, ctx.timeout, "info", "version", "a PyPI JSON API")
