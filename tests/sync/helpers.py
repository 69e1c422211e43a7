"""Clones of one vault around a real remote, for the sync tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gitvault.core.records import scan
from tests.conftest import Runner, isolated_env


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=env, check=True)
    return proc.stdout.decode()


class Fleet:
    """A bare remote and clones of one vault, each clone its own node."""

    def __init__(self, tmp: Path, url: str | None = None, env: dict[str, str] | None = None):
        tmp.mkdir(parents=True, exist_ok=True)
        self.tmp = tmp
        self.env = env or isolated_env(tmp)
        self.bare = tmp / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.bare)],
                       check=True, env=self.env)
        self.url = url or str(self.bare)
        self.clones: dict[str, Path] = {}
        first = tmp / "clone-0"
        runner = Runner(self.env, tmp)
        runner.ok("init", str(first), "--remote", self.url)
        self.clones["node-0"] = first
        self.gv("node-0").ok("sync")

    def gv(self, node: str, *, process: bool = False) -> Runner:
        runner = Runner({**self.env, "GITVAULT_NODE": node}, self.clones[node])
        return runner.process() if process else runner

    def add(self, node: str) -> Path:
        path = self.tmp / f"clone-{len(self.clones)}"
        subprocess.run(["git", "clone", "-q", self.url, str(path)], check=True, env=self.env)
        self.clones[node] = path
        return path

    def sync(self, node: str, *args: str) -> dict[str, Any]:
        result: dict[str, Any] = self.gv(node).ok("sync", "--json", *args).json()
        return result

    def converge(self, rounds: int = 3) -> None:
        """Sync every clone in turn until all hold the remote's head."""
        for _ in range(rounds):
            for node in self.clones:
                self.sync(node)
            heads = {git(p, "rev-parse", "HEAD") for p in self.clones.values()}
            if len(heads) == 1:
                return
        raise AssertionError(f"clones did not converge: {heads}")


def record_ids(root: Path) -> list[str]:
    """Every record id in every log file of ``root``, duplicates kept."""
    ids = []
    for path in sorted((root / "logs").rglob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            ids.append(json.loads(line)["id"])  # a spliced line would not parse
    return ids


def records(root: Path, stream: str) -> list[dict[str, Any]]:
    return scan(root / "logs" / stream).records


def skill_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted((root / "skills").rglob("*")) if p.is_file()}


def assert_no_markers(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            data = path.read_bytes()
            assert b"<<<<<<<" not in data and b">>>>>>>" not in data, path
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def git_daemon(base: Path, env: dict[str, str]) -> Iterator[str]:
    """``git daemon`` on 127.0.0.1 serving ``base`` (push enabled); yields its URL."""
    port = free_port()
    proc = subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all",
                             "--enable=receive-pack", f"--base-path={base}",
                             "--listen=127.0.0.1", f"--port={port}", str(base)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}/"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def fake_ssh(tmp: Path) -> dict[str, str]:
    """An environment whose ssh runs the remote command (git-upload-pack or
    git-receive-pack 'PATH') here: an SSH-style remote without a network."""
    script = tmp / "fake-ssh"
    script.write_text('#!/bin/sh\nwhile [ $# -gt 1 ]; do shift; done\nexec sh -c "$1"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return {"GIT_SSH_COMMAND": str(script), "GIT_SSH_VARIANT": "simple"}
