"""``pypi`` and ``npm``: a package's latest version from a package registry's JSON API:
PyPI-compatible (``<index>/<package>/json``, its ``info.version``) or npm-compatible
(``<registry>/<package>``, its ``dist-tags.latest``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gitvault.knowledge.http import latest_version
from gitvault.knowledge.model import Context, Observation

NETWORK = True


@dataclass(frozen=True)
class Registry:
    option: str  # the source key that names another registry than the default
    default: str
    url: str  # of a package's document: {base}, {package}
    safe: str  # what the package name keeps unquoted in the URL
    field: tuple[str, str]  # where the document holds the latest version
    what: str  # the kind of API, for the messages

    def check(self, source: dict[str, Any], ctx: Context) -> Observation:
        base = (source.get(self.option) or self.default).rstrip("/")
        url = self.url.format(base=base, package=quote(source["package"], safe=self.safe))
        return latest_version(url, ctx.timeout, *self.field, self.what)


PYPI = Registry("index", "https://pypi.org/pypi", "{base}/{package}/json", "",
                ("info", "version"), "a PyPI JSON API")
NPM = Registry("registry", "https://registry.npmjs.org", "{base}/{package}", "@",
               ("dist-tags", "latest"), "an npm registry")
