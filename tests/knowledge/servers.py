"""Real local servers for the watcher's tests: an HTTP registry on 127.0.0.1 (random
port, started and stopped by the test) whose answers a test changes between watch
runs, a bare git repository whose tags change, and the environment without proxies."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


class Registry:
    """Serves PyPI-shaped ``/pypi/<pkg>/json`` and npm-shaped ``/npm/<pkg>`` answers from
    :attr:`pypi` and :attr:`npm` (name -> version), and any ``routes`` path ->
    ``(status, content type, body)`` or ``"hang"``. :attr:`hits` lists the paths asked."""

    def __init__(self) -> None:
        self.pypi: dict[str, Any] = {}
        self.npm: dict[str, Any] = {}
        self.routes: dict[str, Any] = {}
        self.hits: list[str] = []
        self.hang_s = 3.0
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.hits.append(self.path)
                status, kind, body = registry.answer(self.path)
                if status == "hang":
                    time.sleep(registry.hang_s)
                    status, kind, body = 200, "application/json", b"{}"
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout under test)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, path: str) -> tuple[Any, str, bytes]:
        if path in self.routes:
            route = self.routes[path]
            if route == "hang":
                return "hang", "", b""
            status, kind, body = route
            return status, kind, body.encode() if isinstance(body, str) else body
        parts = path.strip("/").split("/")
        if parts[0] == "pypi" and len(parts) == 3 and parts[1] in self.pypi:
            return 200, "application/json", json.dumps(
                {"info": {"name": parts[1], "version": self.pypi[parts[1]]}, "releases": {}}).encode()
        name = "/".join(parts[1:]).replace("%2F", "/").replace("%2f", "/")
        if parts[0] == "npm" and name in self.npm:
            return 200, "application/json", json.dumps(
                {"name": name, "dist-tags": {"latest": self.npm[name]}}).encode()
        return 404, "application/json", b'{"message": "Not Found"}'


@contextmanager
def registry() -> Iterator[Registry]:
    server = Registry()
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()
        server.thread.join(5)


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def no_proxies(env: dict[str, str]) -> dict[str, str]:
    """``env`` without proxy settings (127.0.0.1 is never reached through a proxy)."""
    return {k: v for k, v in env.items() if k.lower() not in PROXY_VARS}


def clear_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy settings in this test's environment."""
    for key in list(os.environ):
        if key.lower() in PROXY_VARS:
            monkeypatch.delenv(key)


def set_sources(root: Path, sources: list[dict[str, Any]], **watch: Any) -> None:
    """Rewrite the vault's gitvault.yaml with these knowledge sources (and watch keys)."""
    path = root / "gitvault.yaml"
    data = yaml.safe_load(path.read_text("utf-8"))
    data["watch"].update({"sources": sources, **watch})
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")


class BareRepo:
    """A bare git repository, and a work clone that tags commits and pushes them."""

    def __init__(self, base: Path, env: dict[str, str]) -> None:
        self.path = base / "upstream.git"
        self.work = base / "upstream-work"
        self.env = {**env, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
        self.git(base, "init", "-q", "--bare", "-b", "main", str(self.path))
        self.git(base, "init", "-q", "-b", "main", str(self.work))
        self.git(self.work, "remote", "add", "origin", str(self.path))

    def git(self, cwd: Path, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=cwd, env=self.env, check=True,
                              capture_output=True).stdout.decode()

    def release(self, tag: str) -> str:
        """Commit, tag ``tag`` (annotated) and push both; the commit's sha."""
        (self.work / "VERSION").write_text(tag + "\n")
        self.git(self.work, "add", "VERSION")
        self.git(self.work, "commit", "-q", "-m", f"release {tag}")
        self.git(self.work, "tag", "-a", "-m", tag, tag)
        self.git(self.work, "push", "-q", "origin", "main", "--tags")
        return self.git(self.work, "rev-parse", "HEAD").strip()
