"""Shared fixtures: real git repositories in temp folders and the real ``gitvault``
command run as a subprocess, in an environment with no user git config (like a
fresh machine or CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


def isolated_env(tmp: Path) -> dict[str, str]:
    """The environment of a CLI run under ``tmp``: its own HOME, no user or system git
    config, no GITVAULT_* settings from outside, node ``test-node``."""
    home = tmp / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("GITVAULT_", "GIT_"))}
    base.update({
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GITVAULT_NODE": "test-node",
        "PYTHONPATH": str(REPO),
    })
    return base


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path)


class Runner:
    """Runs ``python -m gitvault`` (the real CLI) in ``cwd``."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = env
        self.cwd = cwd

    def __call__(self, *args: str, input: str | bytes | None = None, cwd: Path | None = None,
                 env: dict[str, str] | None = None) -> Result:
        data = input.encode() if isinstance(input, str) else input
        proc = subprocess.run([sys.executable, "-m", "gitvault", *args], input=data,
                              capture_output=True, cwd=cwd or self.cwd,
                              env={**self.env, **(env or {})}, timeout=120)
        return Result(proc.returncode, proc.stdout.decode("utf-8", "replace"),
                      proc.stderr.decode("utf-8", "replace"))

    def ok(self, *args: str, **kw: Any) -> Result:
        result = self(*args, **kw)
        assert result.code == 0, f"gitvault {' '.join(args)} -> {result.code}\n{result.err}"
        return result

    def git(self, *args: str, cwd: Path | None = None) -> str:
        proc = subprocess.run(["git", *args], capture_output=True, cwd=cwd or self.cwd,
                              env=self.env, check=True)
        return proc.stdout.decode()


@pytest.fixture
def gv(env: dict[str, str], tmp_path: Path) -> Runner:
    """The CLI, run from an empty folder that is not a vault."""
    work = tmp_path / "work"
    work.mkdir()
    return Runner(env, work)


@pytest.fixture
def vault(gv: Runner, tmp_path: Path) -> Path:
    """A fresh vault (its own git repository) that ``gv`` runs in."""
    root = tmp_path / "vault"
    gv.ok("init", str(root))
    gv.cwd = root
    return root


def vault_runner(tmp: Path) -> Runner:
    """The CLI in a fresh vault under ``tmp``: for module-scoped fixtures whose tests
    share one vault."""
    gv = Runner(isolated_env(tmp), tmp)
    gv.ok("init", str(tmp / "vault"))
    gv.cwd = tmp / "vault"
    return gv


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root except .git internals that git itself rewrites freely."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(".git/"):
            files[rel] = path.read_bytes()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True)
    files[".git/HEAD@"] = head.stdout
    status = subprocess.run(["git", "status", "--porcelain", "-uall"], cwd=root,
                            capture_output=True)
    files[".git/status@"] = status.stdout
    return files
