"""One HTTP GET of a JSON document, with a timeout on the whole look-up.

Loopback hosts are reached directly, never through a proxy from the environment.
"""

from __future__ import annotations

import json
import time
from typing import Any

from gitvault.knowledge.model import LookupFailed, Observation, checked_version

MAX_BYTES = 32 << 20
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def get_json(url: str, timeout: float) -> Any:
    """The JSON document at ``url``; LookupFailed (HTTP status, HTML, not JSON, no
    answer within ``timeout`` seconds, unreachable) names the URL and the reason.

    The timeout holds for the whole look-up: a socket timeout alone does not end a
    server that sends a byte now and then (in its headers or its body), so the request
    runs in a daemon thread that is abandoned when the time is up."""
    import threading

    outcome: list[Any] = []

    def fetch() -> None:
        try:
            outcome.append((True, _get_json(url, timeout)))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append((False, exc))

    worker = threading.Thread(target=fetch, name="gitvault-watch-http", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise LookupFailed(f"{url}: no answer within {timeout:g} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def latest_version(url: str, timeout: float, field: str, field_key: str, what: str
                   ) -> Observation:
    """The version at ``answer[field][field_key]`` of a registry's JSON at ``url``
    (``what`` names the API a wrong answer is not, in the failure)."""
    data = get_json(url, timeout)
    part = data.get(field) if isinstance(data, dict) else None
    if not isinstance(part, dict) or field_key not in part:
        raise LookupFailed(f"{url}: no {field}.{field_key} in the answer (not {what}?)")
    version = checked_version(part[field_key], url)
    return Observation(version, version)


def _get_json(url: str, timeout: float) -> Any:
    import urllib.error
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise LookupFailed(f"{url}: only http and https URLs are looked up")
    handlers: list[Any] = []
    if (parts.hostname or "") in LOOPBACK:
        handlers.append(urllib.request.ProxyHandler({}))
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, headers={"Accept": "application/json",
                                                   "User-Agent": "gitvault-watch"})
    deadline = time.monotonic() + timeout
    try:
        with opener.open(request, timeout=timeout) as response:
            kind = response.headers.get("Content-Type", "")
            body = _read(response, deadline, url)
    except urllib.error.HTTPError as exc:
        raise LookupFailed(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except TimeoutError:
        raise LookupFailed(f"{url}: no answer within {timeout:g} s") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            raise LookupFailed(f"{url}: no answer within {timeout:g} s") from None
        raise LookupFailed(f"{url}: cannot reach it ({reason})") from None
    except ConnectionError as exc:
        raise LookupFailed(f"{url}: cannot reach it ({exc.strerror or exc})") from None
    except (OSError, ValueError) as exc:
        raise LookupFailed(f"{url}: {exc}") from None
    head = body[:200].lstrip().lower()
    if "html" in kind.lower() or head.startswith((b"<!doctype", b"<html")):
        raise LookupFailed(f"{url}: answered HTML, not JSON")
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise LookupFailed(f"{url}: answered something that is not JSON") from None


def _read(response: Any, deadline: float, url: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError
        chunk = response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_BYTES:
            raise LookupFailed(f"{url}: answer larger than {MAX_BYTES >> 20} MiB")
        chunks.append(chunk)
