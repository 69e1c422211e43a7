"""Secret redaction for free text written to the logs (SPEC §3).

Logs are replicated and never rewritten, so a secret must be removed before its
line is written. :func:`redact` replaces prefixed tokens (GitHub, OpenAI,
Anthropic, AWS, Slack, Google, GitLab ``glpat-``, npm ``npm_``), JWTs, bearer
tokens, private key blocks, passwords in URLs, the values of
``password=``/``secret:``/``token=``-style pairs and of command-line style
``--password VALUE`` / ``--token VALUE`` pairs by ``[REDACTED]``; ordinary prose
("a token budget of 500") is left alone.

This sits on the hot path of every append: text holding none of a few cheap
marker substrings is returned untouched, and the patterns are compiled once, when
the first text that needs them comes.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing is not imported at run time: record-run starts fast
if TYPE_CHECKING:
    from typing import Any

MASK = "[REDACTED]"

# A pair needs a ``:`` or ``=`` and one of these in its lower-case form.
_PAIR_MARKERS = ("pass", "pwd", "secret", "token", "key", "auth", "cred", "://")
_SHORTEST = 15  # no token below is shorter ("xoxb-" + 10, "Bearer " + 8)

_KEYWORD = (
    r"(?:password|passwd|passphrase|pwd|secret|secret[_\-]?key|token|api[_\-]?key"
    r"|access[_\-]?key|private[_\-]?key|client[_\-]?secret|credentials?"
    r"|authorization|authentication|auth)(?![A-Za-z])"
)


class _Patterns:
    """The regular expressions, compiled once, on the first text that needs them.

    Compiling them costs milliseconds, and most records hold no secret at all:
    ``record-run`` should not pay for them at import.
    """

    def __init__(self) -> None:
        self.pem = re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r".*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        )
        # Tokens recognisable by their prefix alone: replaced as a whole.
        self.tokens = re.compile(
            r"(?<![A-Za-z0-9])(?:"
            r"gh[pousr]_[A-Za-z0-9]{36,}"  # GitHub classic / OAuth / app tokens
            r"|github_pat_[A-Za-z0-9_]{22,}"  # GitHub fine-grained tokens
            r"|sk-(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{20,}"  # OpenAI, Anthropic
            r"|(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"  # AWS access key ids
            r"|xox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack tokens
            r"|AIza[0-9A-Za-z_\-]{35}"  # Google API keys
            r"|ya29\.[0-9A-Za-z_\-.]{20,}"  # Google OAuth access tokens
            r"|glpat-[A-Za-z0-9_\-]{20,}"  # GitLab personal access tokens
            r"|npm_[A-Za-z0-9]{36,}"  # npm access tokens
            r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"  # JWTs
            r")"
        )
        self.slack_hook = re.compile(r"(hooks\.slack\.com/services/)[A-Za-z0-9_/\-]+")
        # ``Bearer <token>``: a token has a digit or is long ("Bearer tokens" is prose).
        self.bearer = re.compile(
            r"(?<![A-Za-z0-9])((?i:bearer)\s+)"
            r"(?:(?=[\w\-.~+/]*[0-9])[\w\-.~+/]{8,}|[\w\-.~+/]{20,})=*"
        )
        # ``scheme://user:PASS@host``: the password runs to the authority's last ``@``.
        self.url_password = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:)([^\s/?#]+)(@)")
        # ``key=value`` / ``key: value`` / ``"key": "value"`` whose key holds a
        # keyword ending a word ("max_tokens", "author", "secretary" are no keys).
        self.pair = re.compile(
            r"(?<![\w.\-])(?P<key>[\w.\-]{0,40}?" + _KEYWORD + r"[\w.\-]{0,40})"
            r"(?P<sep>[\"']?[ \t]*[:=][ \t]*"
            r"(?:(?i:bearer|basic|token|digest|negotiate)[ \t]+)?)"
            r"(?P<value>\[REDACTED\]|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'"
            r"|[^\s,;&\"'<>{}\[\]()]+)",
            re.IGNORECASE,
        )
        # Command-line style ``--password VALUE`` / ``--api-key "VALUE"`` (the ``=``
        # form is a pair above); a value starting with ``-`` is the next option.
        self.option = re.compile(
            r"(?<![\w\-])(?P<key>--?[A-Za-z][\w\-]{0,60})(?P<sep>[ \t]+)"
            r"(?P<value>\[REDACTED\]|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|[^\s\-\"'][^\s]*)"
        )
        self.sensitive_key = re.compile(_KEYWORD, re.IGNORECASE)
        self.words = re.compile(r"[_.\-]+")


_compiled: list[_Patterns] = []


def _rx() -> _Patterns:
    if not _compiled:
        _compiled.append(_Patterns())
    return _compiled[0]


# A key whose words after the keyword name a property of the secret, not the secret:
# "token_count=5", "password_file=/etc/x", "secret_name: prod-db".
_NOT_SECRET = frozenset(
    {
        "count", "counts", "budget", "limit", "limits", "usage", "used", "type",
        "types", "len", "length", "size", "max", "min", "file", "files", "path",
        "paths", "dir", "name", "names", "url", "uri", "env", "ttl", "expiry",
        "expires", "expiration", "at", "id", "ids", "policy", "method", "mode",
        "enabled", "required", "hint", "label", "field", "prompt", "rotation",
        "store", "manager", "location", "endpoint", "format", "version",
    }
)  # fmt: skip
# Words after ``auth: `` and the like that report a state and are no secret.
_NOT_SECRET_VALUES = frozenset(
    {
        "true", "false", "null", "none", "yes", "no", "ok", "failed", "failure",
        "missing", "expired", "invalid", "required", "optional", "enabled",
        "disabled", "revoked", "rotated", "unset", "empty",
    }
)  # fmt: skip
_KEY_CACHE: dict[str, bool] = {}  # record keys repeat: remember the verdicts
_KEY_CACHE_MAX = 4096


def prefixed_tokens(text: str) -> list[str]:
    """The tokens of ``text`` that :func:`redact` recognises by their prefix alone."""
    return [match.group(0) for match in _rx().tokens.finditer(text)]


def redact(text: str) -> str:
    """Return *text* with every secret it holds replaced by ``[REDACTED]``."""
    options = "-" in text
    pairs = ("=" in text or ":" in text or options) and _has_pair_marker(text.lower())
    if not pairs and (len(text) < _SHORTEST or not _has_token_marker(text)):
        return text
    rx = _rx()
    if "PRIVATE KEY" in text:
        text = rx.pem.sub(MASK, text)
    text = rx.tokens.sub(MASK, text)
    if "hooks.slack" in text:
        text = rx.slack_hook.sub(r"\1" + MASK, text)
    if "earer" in text or "EARER" in text:
        text = rx.bearer.sub(r"\1" + MASK, text)
    if pairs:
        if "://" in text and "@" in text:
            text = rx.url_password.sub(_redact_url_password, text)
        text = rx.pair.sub(_redact_pair, text)
        if options:
            text = rx.option.sub(_redact_option, text)
    return text


def _has_pair_marker(lowered: str) -> bool:
    for marker in _PAIR_MARKERS:  # noqa: SIM110 - a plain loop is faster than any()
        if marker in lowered:
            return True
    return False


def _has_token_marker(text: str) -> bool:
    """Whether *text* may hold a prefixed token; cheap checks gate the rest."""
    return (
        ("_" in text and "gh" in text)  # ghp_ gho_ ghu_ ghs_ ghr_ github_pat_
        or ("-" in text and ("sk-" in text or "xox" in text or "PRIVATE KEY" in text))
        or ("." in text and ("ya29." in text or "hooks.slack" in text))
        or ("A" in text and ("AKIA" in text or "ASIA" in text or "AIza" in text))
        or "glpat-" in text
        or "npm_" in text
        or "eyJ" in text
        or "earer" in text
        or "EARER" in text
    )


def redact_record(record: dict[str, Any]) -> dict[str, Any]:
    """A copy of *record* with every string value redacted, in nested dicts and lists.

    A string under a key that names a secret (``"password"``, ``"api_key"``, ...)
    is replaced whole. Keys, and values that are not strings, are left as they are.
    """
    return _redact_dict(record)


def _redact_dict(record: dict[Any, Any]) -> dict[Any, Any]:
    copy: dict[Any, Any] = {}
    for key, value in record.items():
        if (
            isinstance(value, str)
            and isinstance(key, str)
            and _is_secret_key(key)
            and value
            and value != MASK
            and value.lower() not in _NOT_SECRET_VALUES
        ):
            copy[key] = MASK
        else:
            copy[key] = _redact_value(value)
    return copy


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return _redact_dict(value)
    if isinstance(value, (list, tuple)):
        return [_redact_value(item) for item in value]
    return value


def _redact_url_password(match: re.Match[str]) -> str:
    if match.group(2) == MASK:
        return match.group(0)
    return match.group(1) + MASK + match.group(3)


def _redact_pair(match: re.Match[str]) -> str:
    key, sep, value = match.group("key", "sep", "value")
    if value == MASK or value.lower() in _NOT_SECRET_VALUES or not _is_secret_key(key):
        # The value may itself hold pairs, e.g. token_url=https://x/?password=y.
        return key + sep + _rx().pair.sub(_redact_pair, value)
    if value[0] in "\"'":  # quoted: keep the quotes
        return key + sep + value[0] + MASK + value[-1]
    return key + sep + MASK


def _redact_option(match: re.Match[str]) -> str:
    key, sep, value = match.group("key", "sep", "value")
    if value == MASK or value.lower() in _NOT_SECRET_VALUES or not _is_secret_key(key):
        return match.group(0)
    if value[0] in "\"'":
        return key + sep + value[0] + MASK + value[-1]
    return key + sep + MASK


def _is_secret_key(key: str) -> bool:
    """True unless every keyword in *key* is followed by a word like ``count``."""
    known = _KEY_CACHE.get(key)
    if known is None:
        known = _has_pair_marker(key.lower()) and _names_secret(key, _rx())
        if len(_KEY_CACHE) >= _KEY_CACHE_MAX:
            _KEY_CACHE.clear()
        _KEY_CACHE[key] = known
    return known


def _names_secret(key: str, rx: _Patterns) -> bool:
    for found in rx.sensitive_key.finditer(key):
        rest = [word.lower() for word in rx.words.split(key[found.end() :]) if word]
        if not any(word in _NOT_SECRET for word in rest):
            return True
    return False
