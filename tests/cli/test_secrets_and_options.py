"""Secrets and options (SPEC §3, §4): more kinds of secrets are redacted before a line
is written, untrusted output copied into committed files is redacted too, and a value
starting with '-' never reaches git as an option."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Runner

GHP = "ghp_" + "A1b2" * 9
GLPAT = "glpat-" + "xY7_zQ3-" * 3
NPM = "npm_" + "a1B2c3D4e5" * 4
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
       "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")


def test_cli_style_pairs_gitlab_npm_and_jwt_tokens_are_redacted(gv: Runner, vault: Path) -> None:
    notes = (f"ran mysql --password hunter2 --user bob; curl --token '{NPM}' -v; "
             f"gitlab {GLPAT}; auth {JWT}; --api-key=s3cret; --token-count 5")
    entry = gv.ok("record-run", "--skill", "s1", "--notes", notes, "--json").json()["entry"]
    written = "".join(p.read_text() for p in (vault / "logs" / "runs").rglob("*.jsonl"))
    for secret in ("hunter2", NPM, GLPAT, JWT, "s3cret"):
        assert secret not in written
        assert secret not in json.dumps(entry)
    assert entry["notes"] == ("ran mysql --password [REDACTED] --user bob; curl --token "
                              "'[REDACTED]' -v; gitlab [REDACTED]; auth [REDACTED]; "
                              "--api-key=[REDACTED]; --token-count 5")


def test_a_rejected_skill_s_reasons_and_commit_are_redacted(
        gv: Runner, vault: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "skill.py").write_text("def f(x):\n    return x\n")
    (src / "test_skill.py").write_text(
        f'from skill import *\nassert f(1) == 2, "leaked {GHP} --password hunter2"\n')
    (src / "example.py").write_text("from skill import *\nprint(f(1))\n")
    result = gv("skill", "create", "leaky", "--description", "Leaks.", "--kind", "code",
                "--code", str(src / "skill.py"), "--tests", str(src / "test_skill.py"),
                "--example", str(src / "example.py"))
    assert result.code == 1
    reasons = (vault / "skills" / ".rejected" / "leaky" / "REASONS.md").read_text()
    message = gv.git("log", "-1", "--format=%B")
    assert "gitvault: reject leaky v1" in message
    for text in (reasons, message, result.err):
        assert "a test failed: AssertionError: leaked [REDACTED] --password [REDACTED]" in text
        assert GHP not in text and "hunter2" not in text


def test_a_remote_that_looks_like_an_option_is_refused_and_leaves_nothing(
        gv: Runner, tmp_path: Path) -> None:
    target = tmp_path / "new" / "vault"
    hostile = "--upload-pack=touch /tmp/pwned-by-gitvault-test"
    result = gv("init", str(target), "--remote", hostile)
    assert result.code == 2
    assert result.err_lines == [f"gitvault: error: invalid remote {hostile!r}: give a URL or "
                                "a path (a value starting with '-' would be read by git as "
                                "an option)"]
    assert not (tmp_path / "new").exists()
    assert not Path("/tmp/pwned-by-gitvault-test").exists()
    # the '=' form too, on an existing folder: nothing is made in it
    existing = tmp_path / "existing"
    existing.mkdir()
    assert gv("init", str(existing), "--remote=-oProxyCommand=x").code == 2
    assert list(existing.iterdir()) == []


def test_a_refused_init_removes_what_it_made(gv: Runner, tmp_path: Path) -> None:
    gv.ok("init", str(tmp_path / "a"), "--remote", "https://example.com/a.git")
    # an origin that differs is refused before anything is written
    sub = tmp_path / "a" / "inner"
    result = gv("init", str(sub), "--remote", "https://example.com/other.git")
    assert result.code == 3
    assert "remote origin is already https://example.com/a.git" in result.err
    assert not sub.exists()
    # a step that fails later on (here the user's own pre-commit hook, chained behind
    # gitvault's, refuses the first commit): what this init made is gone again
    hooks = tmp_path / "a" / ".git" / "hooks"
    (hooks / "pre-commit.legacy").write_text("#!/bin/sh\necho 'frozen repo' >&2\nexit 1\n")
    (hooks / "pre-commit.legacy").chmod(0o755)
    refused = gv("init", str(tmp_path / "a" / "deep" / "vault"))
    assert refused.code == 2
    assert "frozen repo" in refused.err
    assert not (tmp_path / "a" / "deep").exists()
    assert gv.git("status", "--porcelain", cwd=tmp_path / "a") == ""
