"""``gitvault.yaml``: typed load and validation.

The schema below holds each key's default (the seeds' values) and type; the file
``gitvault init`` writes is ``templates/gitvault.yaml``, which spells out every key
with its default and a comment (tests/test_packaging.py keeps the two equal). An
unknown key or a wrong type is a :class:`ConfigError` naming the key and the file.
"""

from __future__ import annotations

import json
import math
import os
from collections import namedtuple
from pathlib import Path

from gitvault.core.files import decode_text, parse_error, read_bytes
from gitvault.errors import ConfigError

TYPE_CHECKING = False  # typing is not imported at run time: record-run starts fast
if TYPE_CHECKING:
    from typing import Any

CONFIG_NAME = "gitvault.yaml"


Key = namedtuple("Key", "default kind")  # a schema entry; templates/gitvault.yaml explains each

# SPEC §4.3 (the peer's TTL): queue.lock_ttl_s's default, and the TTL of a lock record
# (imported from the peer, or written by an older gitvault) that names none.
DEFAULT_LOCK_TTL_S = 7200


SCHEMA: dict[str, dict[str, Key]] = {
    "vault": {
        "scope": Key("", str),
    },
    "logs": {
        "autocommit": Key(False, bool),
    },
    "git": {
        "lock_wait_s": Key(30.0, float),
    },
    "lifecycle": {
        "stale_after_days": Key(14, int),
        "stale_failure_rate": Key(0.70, float),
        "min_outcomes": Key(3, int),
    },
    "health": {
        "window_days": Key(7, int),
        "flag_below": Key(0.7, float),
        "trend_threshold": Key(0.05, float),
        "broken_after": Key(3, int),
        "drift_threshold": Key(0.15, float),
    },
    "queue": {
        "lock_ttl_s": Key(DEFAULT_LOCK_TTL_S, int),
        "max_locks": Key(10, int),
        "max_per_dag": Key(20, int),
        "max_per_dispatch": Key(5, int),
        "max_active": Key(100, int),
    },
    "verify": {
        "enabled": Key(True, bool),
        "banned": Key(["subprocess", "socket", "ctypes", "os.system", "os.fork"], list),
        "allowed_packages": Key([], list),
        "max_body_lines": Key(80, int),
        "timeout_s": Key(10, int),
        "max_evidence_age_s": Key(3600, int),
        "archive_after_days": Key(30, int),
    },
    "sandbox": {
        "enabled": Key(True, bool),
        "memory_mb": Key(1024, int),
        "file_size_mb": Key(16, int),
        "open_files": Key(64, int),
    },
    "context": {
        "k": Key(3, int),
        "budget": Key(1000, int),
        "lesson_tokens": Key(400, int),
        "helper_tokens": Key(600, int),
    },
    "improve": {
        "min_relevance": Key(0.7, float),
        "min_safety": Key(0.8, float),
        "max_auto_edits_per_day": Key(1, int),
        "min_runs_after": Key(5, int),
    },
    "extract": {
        "max_tokens": Key(500, int),
        "curate_every": Key(5, int),
    },
    "watch": {
        "sources": Key([], list),
        "timeout_s": Key(10.0, float),
        "max_lookups": Key(3, int),
    },
}

SOURCE_KEYS: dict[str, type | tuple[type, ...]] = {
    "id": str, "type": str, "package": str, "index": str, "registry": str, "path": str,
    "remote": str, "ref": str, "command": str, "tier": int, "affectedSkills": list,
    "severity": str,
}
SOURCE_TYPES = ("pypi", "npm", "file", "git-ref", "command")
# A knowledge change routes to a PR at the priority named like its severity (SPEC §8),
# so this is also the queue's PRIORITIES.
SEVERITIES = ("critical", "high", "medium", "low")
SOURCE_NEEDS = {"pypi": "package", "npm": "package", "file": "path", "git-ref": "remote",
                "command": "command"}


class Section:
    """One config section; attributes are the keys (``cfg.health.flag_below``)."""

    def __init__(self, name: str, values: dict[str, Any]) -> None:
        self._name = name
        self.__dict__.update(values)

    def __getattr__(self, key: str) -> Any:  # only reached for unknown keys
        raise AttributeError(f"config section {self._name!r} has no key {key!r}")

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}


class Config:
    """The validated configuration: one :class:`Section` per schema section."""

    def __init__(self, sections: dict[str, Section], source: str = CONFIG_NAME) -> None:
        self.sections = sections
        self.source = source

    def __getattr__(self, name: str) -> Section:
        try:
            return self.__dict__["sections"][name]
        except KeyError:
            raise AttributeError(name) from None

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {name: s.as_dict() for name, s in self.sections.items()}


def _type_ok(value: Any, kind: type | tuple[type, ...]) -> bool:
    if isinstance(value, bool) and kind is not bool:
        return False
    if kind is float:
        return isinstance(value, (int, float))
    return isinstance(value, kind)


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {bool: "true/false", int: "an integer", float: "a number", str: "a string",
             list: "a list"}
    return names.get(kind, str(kind)) if isinstance(kind, type) else "a value"


def _mapping(given: Any, keys: dict[str, Any], source: str,
             section: str | None = None) -> dict[Any, Any]:
    """``given`` (None: empty) as a mapping of known ``keys``, the whole file or one
    ``section`` of it; else a ConfigError naming what is wrong."""
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise ConfigError(f"{source}: {section} must be a mapping" if section else
                          f"{source}: expected a mapping of sections, got {type(given).__name__}")
    for key in given:
        if key not in keys:
            raise ConfigError(f"{source}: unknown key "
                              + (f"'{section}.{key}'" if section else repr(key)))
    return given


def validate(raw: Any, source: str = CONFIG_NAME) -> Config:
    """Check a parsed gitvault.yaml mapping against the schema; fill in defaults."""
    raw = _mapping(raw, SCHEMA, source)
    sections: dict[str, Section] = {}
    for name, keys in SCHEMA.items():
        given = _mapping(raw.get(name), keys, source, name)
        values: dict[str, Any] = {}
        for key, spec in keys.items():
            value = given.get(key, spec.default)
            if not _type_ok(value, spec.kind):
                raise ConfigError(
                    f"{source}: '{name}.{key}' must be {_type_name(spec.kind)}, got {value!r}")
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(
                    f"{source}: '{name}.{key}' must be a finite number, got {value!r}")
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
                raise ConfigError(f"{source}: '{name}.{key}' must not be negative, got {value!r}")
            if spec.kind is float:
                value = float(value)
            if isinstance(value, list):
                value = list(value)
            values[key] = value
        sections[name] = Section(name, values)
    for key in ("banned", "allowed_packages"):
        for item in sections["verify"].as_dict()[key]:
            if not isinstance(item, str):
                raise ConfigError(f"{source}: 'verify.{key}' must be a list of strings")
    _validate_sources(sections["watch"].as_dict()["sources"], source)
    if sections["watch"].timeout_s <= 0:
        raise ConfigError(f"{source}: 'watch.timeout_s' must be more than 0 seconds")
    if sections["verify"].enabled and not sections["sandbox"].enabled:
        raise ConfigError(
            f"{source}: E044 'verify.enabled: true' requires 'sandbox.enabled: true' "
            "(skill code never runs outside the sandbox)")
    return Config(sections=sections, source=source)


def _validate_sources(sources: list[Any], source: str) -> None:
    seen: set[str] = set()
    for i, src in enumerate(sources):
        where = f"{source}: 'watch.sources[{i}]"
        if not isinstance(src, dict):
            raise ConfigError(f"{where}' must be a mapping")
        for key, value in src.items():
            if key not in SOURCE_KEYS:
                raise ConfigError(f"{where}.{key}' is an unknown key")
            if not _type_ok(value, SOURCE_KEYS[key]):
                raise ConfigError(
                    f"{where}.{key}' must be {_type_name(SOURCE_KEYS[key])}, got {value!r}")
        skills = src.get("affectedSkills", [])
        if not all(isinstance(name, str) and name for name in skills):
            raise ConfigError(f"{where}.affectedSkills' must be a list of skill names")
        sid = src.get("id")
        if not sid or not all(c.isdigit() or c == "-" or ("a" <= c <= "z") for c in sid):
            raise ConfigError(f"{where}.id' must be a non-empty [a-z0-9-] string")
        if sid in seen:
            raise ConfigError(f"{where}.id' {sid!r} is used twice")
        seen.add(sid)
        if src.get("type") not in SOURCE_TYPES:
            raise ConfigError(f"{where}.type' must be one of {', '.join(SOURCE_TYPES)}")
        need = SOURCE_NEEDS[src["type"]]
        if not src.get(need):
            raise ConfigError(f"{where}.{need}' is required for a {src['type']} source")
        if src.get("tier", 1) not in (1, 2, 3):
            raise ConfigError(f"{where}.tier' must be 1, 2 or 3")
        if src.get("severity", "medium") not in SEVERITIES:
            raise ConfigError(f"{where}.severity' must be one of {', '.join(SEVERITIES)}")


def defaults() -> Config:
    return validate({})


def parse_yaml(data: bytes, source: str) -> Any:
    import yaml  # heavy: imported only on a cache miss

    text = decode_text(data, source, ConfigError)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise parse_error(exc, source, "YAML", ConfigError) from None


def load(path: Path, cache_dir: Path | None = None) -> Config:
    """Load and validate ``path``. A parsed copy is cached in ``cache_dir`` with the
    file's whole text (it is used only when the text is the same), so commands that
    do not otherwise need YAML skip importing it."""
    source = str(path)
    data = read_bytes(path, error=ConfigError)
    text = data.decode("utf-8", "surrogateescape")
    cache = cache_dir / "config.json" if cache_dir is not None else None
    raw: Any = None
    hit = False
    if cache is not None:
        try:
            cached = json.loads(cache.read_text("utf-8"))
            if cached.get("text") == text:
                raw, hit = cached["raw"], True
        except (OSError, ValueError, KeyError, AttributeError):
            pass
    if not hit:
        raw = parse_yaml(data, source)
    config = validate(raw, source)
    if cache is not None and not hit:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_name(f"config.json.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"text": text, "raw": raw}), "utf-8")
            os.replace(tmp, cache)
        except (OSError, TypeError, ValueError):
            pass  # the cache is an optimisation; a failure to write it is harmless
    return config
