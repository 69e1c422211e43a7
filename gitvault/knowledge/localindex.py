"""A tiny PyPI-shaped JSON index on 127.0.0.1 in a thread: what the demo watches, so a
watcher cycle runs without the internet. ``/pypi/<package>/json`` answers
``{"info": {"name", "version"}}``; :attr:`LocalIndex.versions` may change at any time."""

from __future__ import annotations

import json
import threading
from types import TracebackType
from typing import Any


class LocalIndex:
    """``with LocalIndex({"requests": "2.32.0"}) as index: index.url`` ..."""

    def __init__(self, versions: dict[str, str]) -> None:
        self.versions = dict(versions)
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/pypi"

    def __enter__(self) -> LocalIndex:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = self.path.strip("/").split("/")
                found = len(parts) == 3 and parts[0] == "pypi" and parts[2] == "json" \
                    and parts[1] in index.versions
                body = json.dumps({"info": {"name": parts[1], "version": index.versions[parts[1]]}}
                                  if found else {"message": "Not Found"}).encode()
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
