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
    for token in redact.prefixed_tokens(line):  # the token itself, not any word ("task-")
        for prefix, kind in _PREFIXES:
            if token.startswith(prefix):
                return kind
        if token.startswith("eyJ"):
            return "JSON web token"
    lowered = line.lower()
    if "bearer" in lowered:
        return "bearer token"
    if "://" in line and "@" in line:
        return "password in a URL"
    return "password or token value"


def _raw_blobs(text: str) -> list[tuple[str, str]]:
    """(path, blob id) pairs of ``git diff/log --raw -z`` output (new side only)."""
    parts = text.split("\0")
    pairs = []
    i = 0
    while i + 1 < len(parts):
        head, path = parts[i].lstrip("\n"), parts[i + 1]
        i += 2
        fields = head.split()
        if len(fields) >= 5 and fields[0].startswith(":"):
            pairs.append((path, fields[3]))
    return pairs


def scan_outgoing(top: Path, base: str | None, tip: str, skills_dir: str) -> list[str]:
    """``FILE:LINE: KIND`` for every secret in the skill files that a push of ``tip``
    sends beyond ``base`` (all of history when the remote is empty): the tip's files and
    every version an outgoing commit wrote, since the push carries them all, even one a
    later commit removed again."""
    span = [f"{base}..{tip}"] if base is not None else [tip]
    pairs = _raw_blobs(git.out(top, "log", "-z", "--raw", "--no-abbrev", "--no-renames",
                               "--diff-filter=AMR", "--format=", *span, "--", skills_dir))
    tip_pairs: list[tuple[str, str]] = []
    if base is not None:
        tip_pairs = _raw_blobs(git.out(top, "diff", "-z", "--raw", "--no-abbrev",
                                    "--no-renames", "--diff-filter=AMR", base, tip, "--",
                                    skills_dir))
    else:
        listing = git.out(top, "ls-tree", "-r", "-z", tip, "--", skills_dir)
        for entry in filter(None, listing.split("\0")):
            meta, path = entry.split("\t", 1)
            tip_pairs.append((path, meta.split()[2]))
    at_tip = set(tip_pairs)
    pairs += tip_pairs
    findings: list[str] = []
    seen: set[tuple[str, str]] = set()
    for path, blob in sorted(set(pairs)):
        if (path, blob) in seen or set(blob) == {"0"}:
            continue
        seen.add((path, blob))
        proc = git.git(top, "cat-file", "blob", blob, check=False)
        data = proc.stdout if proc.returncode == 0 else None
        if data is None or b"\0" in data[:8192]:
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            kind = kind_of(line)
            if kind is not None:
                finding = f"{path}:{number}: {kind}" + (
                    "" if (path, blob) in at_tip else " (in an unpushed commit, not the tip)")
                if finding not in findings:
                    findings.append(finding)
    return findings
