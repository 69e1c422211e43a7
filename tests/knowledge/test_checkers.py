"""Each checker against a real local source: an HTTP registry on 127.0.0.1, a bare git
repository, files and programs. Bad answers are LookupFailed naming why, never a crash."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitvault.knowledge.model import Context, LookupFailed, is_version, major
from gitvault.knowledge.sources import CHECKERS, Source
from tests.conftest import isolated_env
from tests.knowledge.servers import BareRepo, Registry, clear_proxies, free_port, registry


@pytest.fixture
def reg(monkeypatch: pytest.MonkeyPatch) -> Iterator[Registry]:
    clear_proxies(monkeypatch)
    with registry() as server:
        yield server


def check(raw: dict[str, Any], root: Path, timeout: float = 2.0, allow: bool = False) -> Any:
    source = Source.from_config({"id": "s", **raw})
    return source.check(Context(root, timeout, allow))


def failure(raw: dict[str, Any], root: Path, timeout: float = 2.0, allow: bool = False) -> str:
    with pytest.raises(LookupFailed) as caught:
        check(raw, root, timeout, allow)
    return str(caught.value)


def test_the_registry_is_a_literal_table_of_five_checkers() -> None:
    assert sorted(CHECKERS) == ["command", "file", "git-ref", "npm", "pypi"]


def test_pypi_and_npm_read_the_latest_version(reg: Registry, tmp_path: Path) -> None:
    reg.pypi["requests"] = "2.31.0"
    reg.npm["@scope/tool"] = "1.4.0"
    seen = check({"type": "pypi", "package": "requests", "index": reg.url + "/pypi/"}, tmp_path)
    assert (seen.value, seen.version) == ("2.31.0", "2.31.0")
    npm = check({"type": "npm", "package": "@scope/tool", "registry": reg.url + "/npm"}, tmp_path)
    assert (npm.value, npm.version) == ("1.4.0", "1.4.0")
    assert reg.hits == ["/pypi/requests/json", "/npm/@scope%2Ftool"]


@pytest.mark.parametrize(("route", "expected"), [
    ((200, "text/html", "<!DOCTYPE html><html><body>Login</body></html>"),
     "answered HTML, not JSON"),
    ((200, "application/json", "<html>maintenance</html>"), "answered HTML, not JSON"),
    ((500, "application/json", '{"error": "boom"}'), "HTTP 500"),
    ((200, "application/json", "{not json"), "not JSON"),
    ((200, "application/json", '{"info": {"version": "latest!"}}'), "'latest!' is not a version"),
    ((200, "application/json", '{"info": {"version": 3}}'), "3 is not a version"),
    ((200, "application/json", '{"releases": {}}'), "no info.version"),
    ("hang", "no answer within 0.5 s"),
])
def test_bad_pypi_answers_are_failures(reg: Registry, tmp_path: Path, route: Any,
                                       expected: str) -> None:
    reg.routes["/pypi/bad/json"] = route
    started = time.monotonic()
    message = failure({"type": "pypi", "package": "bad", "index": reg.url + "/pypi"}, tmp_path,
                      timeout=0.5)
    assert expected in message and f"{reg.url}/pypi/bad/json" in message
    assert time.monotonic() - started < 2.5  # the hang was cut at the timeout


def test_loopback_never_goes_through_a_proxy(reg: Registry, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    for key in ("http_proxy", "HTTP_PROXY", "https_proxy", "all_proxy"):
        monkeypatch.setenv(key, dead)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    reg.pypi["x"] = "1.0.0"
    assert check({"type": "pypi", "package": "x", "index": reg.url + "/pypi"}, tmp_path).value \
        == "1.0.0"


def test_a_git_remote_that_hangs_is_cut_at_the_timeout(reg: Registry, tmp_path: Path) -> None:
    reg.routes["/slow.git/info/refs?service=git-upload-pack"] = "hang"
    reg.hang_s = 5.0
    started = time.monotonic()
    message = failure({"type": "git-ref", "remote": f"{reg.url}/slow.git",
                       "ref": "refs/tags/*"}, tmp_path, timeout=0.5)
    assert "gave no answer within 0.5 s" in message
    assert time.monotonic() - started < 3


def test_npm_without_dist_tags_and_an_unreachable_registry(reg: Registry, tmp_path: Path) -> None:
    reg.routes["/npm/x"] = (200, "application/json", '{"name": "x"}')
    assert "no dist-tags.latest" in failure(
        {"type": "npm", "package": "x", "registry": reg.url + "/npm"}, tmp_path)
    port = free_port()
    assert "cannot reach it" in failure(
        {"type": "npm", "package": "x", "registry": f"http://127.0.0.1:{port}/npm"}, tmp_path)
    assert "only http and https" in failure(
        {"type": "pypi", "package": "x", "index": "file:///etc"}, tmp_path)


def test_file_hash_follows_the_content(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "docs" / "api.md").write_text("v1\n")
    first = check({"type": "file", "path": "docs/api.md"}, repo)
    assert first == check({"type": "file", "path": "docs/api.md"}, repo)
    (repo / "docs" / "api.md").write_text("v2\n")
    second = check({"type": "file", "path": "docs/api.md"}, repo)
    assert second.value != first.value and second.version is None
    assert second.label == f"sha256 {second.value[:12]}"
    assert "no such file" in failure({"type": "file", "path": "docs/gone.md"}, repo)
    (tmp_path / "secret").write_text("x")
    assert "outside the repository" in failure({"type": "file", "path": "../secret"}, repo)
    os.symlink(tmp_path / "secret", repo / "docs" / "link")
    assert "outside the repository" in failure({"type": "file", "path": "docs/link"}, repo)


def test_git_ref_tags_and_branch_heads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITVAULT_ALLOW_LOCAL_REMOTES", "1")  # the upstream is a local path
    upstream = BareRepo(tmp_path, isolated_env(tmp_path))
    upstream.release("v1.9.0")
    sha = upstream.release("v1.10.0")
    upstream.git(upstream.work, "tag", "nightly")
    upstream.git(upstream.work, "push", "-q", "origin", "--tags")
    tags = {"type": "git-ref", "remote": str(upstream.path), "ref": "refs/tags/*"}
    seen = check(tags, tmp_path)
    assert (seen.value, seen.version) == ("v1.10.0", "1.10.0")  # by version, not by text
    head = check({"type": "git-ref", "remote": str(upstream.path), "ref": "refs/heads/main"},
                 tmp_path)
    assert head.value == sha and head.label == f"main {sha[:12]}"
    upstream.release("v2.0.0")
    assert check(tags, tmp_path).value == "v2.0.0"
    assert "no ref matches refs/heads/nope" in failure(
        {"type": "git-ref", "remote": str(upstream.path), "ref": "refs/heads/nope"}, tmp_path)
    assert "git ls-remote" in failure(
        {"type": "git-ref", "remote": str(tmp_path / "missing.git")}, tmp_path)
    assert "not a git remote" in failure({"type": "git-ref", "remote": "--upload-pack=x"},
                                         tmp_path)
    marker = tmp_path / "ran"
    message = failure({"type": "git-ref", "remote": f"ext::sh -c touch% {marker}"}, tmp_path)
    assert "git ls-remote" in message and not marker.exists()


def test_command_runs_only_when_allowed_and_has_a_timeout(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    raw = {"type": "command", "command": f"sh -c 'touch {marker}; echo 1.2.3'"}
    assert "gitvault.allow-commands" in failure(raw, tmp_path)
    assert not marker.exists()
    seen = check(raw, tmp_path, allow=True)
    assert (seen.value, seen.version) == ("1.2.3", "1.2.3") and marker.exists()
    text = check({"type": "command", "command": "echo hello world"}, tmp_path, allow=True)
    assert (text.value, text.version) == ("hello world", None)
    started = time.monotonic()
    assert "no answer within 0.5 s" in failure(
        {"type": "command", "command": "sleep 5"}, tmp_path, timeout=0.5, allow=True)
    assert time.monotonic() - started < 3
    assert "exited 3" in failure({"type": "command", "command": "sh -c 'exit 3'"}, tmp_path,
                                 allow=True)
    assert "cannot run it" in failure({"type": "command", "command": "no-such-program-xyz"},
                                      tmp_path, allow=True)


@pytest.mark.parametrize(("text", "expected"), [
    ("2.31.0", 2), ("v3.0.0", 3), ("1.0.0-rc.1+build.5", 1), ("3.0.0b1", 3), ("10", 10),
    ("latest", None), ("<html>", None), ("", None), ("1." * 40, None)])
def test_what_a_version_is(text: str, expected: int | None) -> None:
    assert major(text) == expected
    assert is_version(text) is (expected is not None)
