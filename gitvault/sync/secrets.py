"""Outgoing skill files are scanned for secrets before a push (SPEC §4 ``sync``).

The classes are those :mod:`gitvault.core.redact` removes from records; a line is a
finding when redacting it changes it. A finding names the file, the line and the kind
of secret, never the secret itself.
"""

from __future__ import annotations

from pathlib import Path

from gitvault.core import git, redact

_PREFIXES = (("ghp_", "GitHub token"), ("gho_", "GitHub token"), ("ghu_", "GitHub token"),
             ("ghs_", "GitHub token"), ("ghr_", "GitHub token"),
             ("github_pat_", "GitHub token"), ("glpat-", "GitLab token"),
             ("npm_", "npm token"), ("sk-ant-", "Anthropic key"), ("sk-", "OpenAI key"),
             ("AKIA", "AWS access key"), ("ASIA", "AWS access key"),
             ("xox", "Slack token"), ("AIza", "Google API key"),
             ("ya29.", "Google OAuth token"))


def kind_of(line: str) -> str | None:
    """What kind of secret ``line`` holds, or None."""
    if redact.redact(line) == line:
        return None
    if "PRIVATE KEY" in line:
        return "private key"
    if "hooks.slack.com" in line:
        return "Slack webhook"
    for prefix, kind in _PREFIXES:
        if prefix in line:
            return kind
    lowered = line.lower()
    if "bearer" in lowered:
        return "bearer token"
    if "://" in line and "@" in line:
        return "password in a URL"
    return "password or token value"


def scan_outgoing(top: Path, base: str | None, tip: str, skills_dir: str) -> list[str]:
    """``FILE:LINE: KIND`` for every secret in the skill files ``tip`` changes since
    ``base`` (all of them when the remote is empty)."""
    if base is not None:
        text = git.out(top, "diff", "--name-only", "-z", "--diff-filter=AMR", "--no-renames",
                       base, tip, "--", skills_dir)
    else:
        text = git.out(top, "ls-tree", "-r", "-z", "--name-only", tip, "--", skills_dir)
    findings = []
    for path in sorted(filter(None, text.split("\0"))):
        data = git.show_file(top, tip, path)
        if data is None or b"\0" in data[:8192]:
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            kind = kind_of(line)
            if kind is not None:
                findings.append(f"{path}:{number}: {kind}")
    return findings
