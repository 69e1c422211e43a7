"""``gitvault.yaml``: defaults, validation and the parsed-config cache, through the
library (``gitvault.core.config``) and through the real CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitvault.core import config
from gitvault.errors import ConfigError
from tests.conftest import Result, Runner, snapshot

# -- library: defaults --------------------------------------------------------------

SEED_DEFAULTS = {
    "lifecycle": {"stale_after_days": 14, "stale_failure_rate": 0.70, "min_outcomes": 3},
    "health": {"window_days": 7, "flag_below": 0.7, "trend_threshold": 0.05,
               "broken_after": 3, "drift_threshold": 0.15},
    "queue": {"lock_ttl_s": 7200, "max_locks": 10, "max_per_dag": 20, "max_per_dispatch": 5,
              "max_active": 100},
    "verify": {"max_body_lines": 80, "timeout_s": 10, "max_evidence_age_s": 3600,
               "archive_after_days": 30},
    "context": {"k": 3, "budget": 1000, "lesson_tokens": 400, "helper_tokens": 600},
    "improve": {"min_relevance": 0.7, "min_safety": 0.8, "max_auto_edits_per_day": 1},
    "extract": {"max_tokens": 500, "curate_every": 5},
}


def test_defaults_are_the_seeds_values() -> None:
    cfg = config.defaults()
    for section, keys in SEED_DEFAULTS.items():
        for key, value in keys.items():
            got = getattr(getattr(cfg, section), key)
            assert got == value and type(got) is type(value), (section, key, got)
    assert cfg.verify.enabled is True and cfg.sandbox.enabled is True
    assert cfg.logs.autocommit is False
    assert cfg.watch.sources == []
    assert cfg.vault.scope == ""
    assert {"subprocess", "socket", "ctypes"} <= set(cfg.verify.banned)
    assert cfg.verify.allowed_packages == []


def test_validate_fills_every_schema_key() -> None:
    data = config.validate({}).as_dict()
    assert {s: set(keys) for s, keys in data.items()} == {
        s: set(keys) for s, keys in config.SCHEMA.items()}
    assert data == config.validate(None).as_dict()
    assert data == config.validate({"health": None}).as_dict()  # an empty section


def test_given_values_override_defaults() -> None:
    cfg = config.validate({"health": {"flag_below": 1, "window_days": 14},
                           "logs": {"autocommit": True}})
    assert cfg.health.flag_below == 1.0 and isinstance(cfg.health.flag_below, float)
    assert cfg.health.window_days == 14
    assert cfg.health.drift_threshold == 0.15  # the other keys keep their defaults
    assert cfg.logs.autocommit is True


def test_defaults_are_not_shared_between_configs() -> None:
    one = config.validate({})
    one.verify.banned.append("eval")
    assert "eval" not in config.validate({}).verify.banned


# -- library: errors ----------------------------------------------------------------

BAD_CONFIGS: dict[str, tuple[Any, str]] = {
    "unknown-section": ({"bogus": 1}, "bogus"),
    "unknown-nested": ({"health": {"flag_bellow": 0.8}}, "health.flag_bellow"),
    "str-for-int": ({"health": {"window_days": "seven"}}, "health.window_days"),
    "int-for-bool": ({"logs": {"autocommit": 1}}, "logs.autocommit"),
    "bool-for-int": ({"queue": {"max_locks": True}}, "queue.max_locks"),
    "float-for-int": ({"context": {"k": 2.5}}, "context.k"),
    "str-for-float": ({"health": {"flag_below": "0.7"}}, "health.flag_below"),
    "nan": ({"health": {"flag_below": float("nan")}}, "health.flag_below"),
    "infinity": ({"lifecycle": {"stale_failure_rate": float("inf")}},
                 "lifecycle.stale_failure_rate"),
    "negative": ({"lifecycle": {"stale_after_days": -1}}, "lifecycle.stale_after_days"),
    "section-not-mapping": ({"health": 5}, "health"),
    "list-not-list": ({"verify": {"banned": "subprocess"}}, "verify.banned"),
    "list-of-non-strings": ({"verify": {"allowed_packages": [1]}}, "verify.allowed_packages"),
    "top-level-list": (["health"], "mapping"),
    "e044": ({"verify": {"enabled": True}, "sandbox": {"enabled": False}}, "E044"),
    "e044-by-default": ({"sandbox": {"enabled": False}}, "E044"),
}


@pytest.mark.parametrize("case", list(BAD_CONFIGS))
def test_validate_refuses_with_the_key_named(case: str) -> None:
    raw, needle = BAD_CONFIGS[case]
    with pytest.raises(ConfigError) as info:
        config.validate(raw, "some/gitvault.yaml")
    message = str(info.value)
    assert needle in message
    assert message.startswith("some/gitvault.yaml: ")
    assert "\n" not in message
    assert info.value.exit_code == 2


@pytest.mark.parametrize(("raw", "message"), [
    (["health"], "expected a mapping of sections, got list"),
    ({"bogus": 1}, "unknown key 'bogus'"),
    ({7: 1}, "unknown key 7"),
    ({"health": 5}, "health must be a mapping"),
    ({"health": {"flag_bellow": 0.8}}, "unknown key 'health.flag_bellow'"),
])
def test_a_wrong_shape_is_named_exactly(raw: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        config.validate(raw, "g.yaml")
    assert str(info.value) == f"g.yaml: {message}"


def test_an_empty_file_or_section_is_the_defaults() -> None:
    assert config.validate(None).as_dict() == config.defaults().as_dict()
    assert config.validate({"health": None}).health.flag_below == 0.7


def test_verify_off_allows_sandbox_off() -> None:
    cfg = config.validate({"verify": {"enabled": False}, "sandbox": {"enabled": False}})
    assert cfg.verify.enabled is False and cfg.sandbox.enabled is False


def source(**extra: Any) -> dict[str, Any]:
    return {"id": "requests", "type": "pypi", "package": "requests", **extra}


def test_watch_timeout_must_be_positive() -> None:
    assert config.validate({"watch": {"timeout_s": 0.5}}).watch.timeout_s == 0.5
    with pytest.raises(ConfigError, match=r"'watch\.timeout_s' must be more than 0"):
        config.validate({"watch": {"timeout_s": 0}})


def test_watch_sources_valid() -> None:
    sources = [source(tier=2, affectedSkills=["api-caller"], severity="high",
                      index="https://pypi.org/pypi"),
               {"id": "docs-api", "type": "file", "path": "docs/api.md"},
               {"id": "upstream", "type": "git-ref", "remote": "https://example.com/r.git",
                "ref": "refs/tags/*", "tier": 3}]
    cfg = config.validate({"watch": {"sources": sources}})
    assert [s["id"] for s in cfg.watch.sources] == ["requests", "docs-api", "upstream"]


BAD_SOURCES: dict[str, tuple[list[Any], str]] = {
    "unknown-key": ([source(bogus=1)], "watch.sources[0].bogus"),
    "tier-as-text": ([source(tier="1")], "watch.sources[0].tier"),
    "tier-out-of-range": ([source(tier=4)], "watch.sources[0].tier"),
    "package-not-text": ([source(package=5)], "watch.sources[0].package"),
    "duplicate-id": ([source(), source(package="other")], "watch.sources[1].id"),
    "missing-id": ([{"type": "pypi", "package": "x"}], "watch.sources[0].id"),
    "bad-id": ([source(id="Requests!")], "watch.sources[0].id"),
    "bad-type": ([source(type="ftp")], "watch.sources[0].type"),
    "missing-type": ([{"id": "x", "package": "x"}], "watch.sources[0].type"),
    "bad-severity": ([source(severity="urgent")], "watch.sources[0].severity"),
    "affected-not-list": ([source(affectedSkills="api-caller")],
                          "watch.sources[0].affectedSkills"),
    "affected-not-names": ([source(affectedSkills=[1, 2])], "watch.sources[0].affectedSkills"),
    "not-a-mapping": (["requests"], "watch.sources[0]"),
    "pypi-without-package": ([{"id": "x", "type": "pypi"}], "watch.sources[0].package"),
    "git-ref-without-remote": ([{"id": "x", "type": "git-ref", "ref": "refs/tags/*"}],
                               "watch.sources[0].remote"),
    "command-without-command": ([{"id": "x", "type": "command"}], "watch.sources[0].command"),
}


@pytest.mark.parametrize("case", list(BAD_SOURCES))
def test_watch_sources_refused(case: str) -> None:
    sources, needle = BAD_SOURCES[case]
    with pytest.raises(ConfigError) as info:
        config.validate({"watch": {"sources": sources}})
    assert needle in str(info.value)


def test_sources_must_be_a_list() -> None:
    with pytest.raises(ConfigError, match=r"watch\.sources"):
        config.validate({"watch": {"sources": {"id": "requests", "type": "pypi"}}})


# -- library: load and its cache ------------------------------------------------------

def test_load_sees_every_edit_despite_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "gitvault.yaml"
    cache = tmp_path / "cache"
    path.write_text("health: {window_days: 7}\n", "utf-8")
    assert config.load(path, cache).health.window_days == 7
    assert config.load(path, cache).health.window_days == 7  # a cache hit
    stat = path.stat()
    path.write_text("health: {window_days: 8}\n", "utf-8")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime
    assert config.load(path, cache).health.window_days == 8
    path.write_text("health: {window_days: x}\n", "utf-8")
    with pytest.raises(ConfigError, match=r"health\.window_days"):
        config.load(path, cache)
    path.write_text("health: {window_days: 7}\n", "utf-8")
    assert config.load(path, cache).health.window_days == 7


def test_load_survives_a_damaged_cache(tmp_path: Path) -> None:
    path = tmp_path / "gitvault.yaml"
    cache = tmp_path / "cache"
    path.write_text("context: {k: 5}\n", "utf-8")
    config.load(path, cache)
    for junk in ("", "not json", "[]", json.dumps({"sha256": 1})):
        for file in cache.iterdir():
            file.write_text(junk, "utf-8")
        assert config.load(path, cache).context.k == 5


def test_load_errors(tmp_path: Path) -> None:
    path = tmp_path / "gitvault.yaml"
    with pytest.raises(ConfigError, match=r"gitvault\.yaml: no such file"):
        config.load(path)
    path.write_bytes(b"vault: {scope: caf\xe9}\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        config.load(path)
    path.write_text("health:\n  window_days: 7\n\tflag_below: 0.7\n", "utf-8")
    with pytest.raises(ConfigError, match="line 3"):
        config.load(path)


# -- CLI ------------------------------------------------------------------------------

def test_init_writes_every_key_with_its_default(gv: Runner, vault: Path) -> None:
    text = (vault / "gitvault.yaml").read_text("utf-8")
    assert yaml.safe_load(text) == config.validate({}).as_dict()
    for section, keys in config.SCHEMA.items():
        assert f"\n{section}:\n" in text
        for key in keys:
            assert f"\n  {key}: " in text


def write_config(root: Path, text: str | bytes) -> None:
    path = root / "gitvault.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, "utf-8")


def assert_config_error(result: Result, *needles: str) -> str:
    assert result.code == 2, (result.out, result.err)
    assert len(result.err_lines) == 1, result.err
    line = result.err_lines[0]
    assert line.startswith("gitvault: error: ")
    assert "gitvault.yaml" in line
    for needle in needles:
        assert needle in line, line
    assert "Traceback" not in result.err
    return line


CLI_BAD = {
    "unknown-top-level": ("colour: blue\n", ["colour"]),
    "unknown-nested": ("health: {flag_bellow: 0.8}\n", ["flag_bellow"]),
    "wrong-type-int": ('health: {window_days: "seven"}\n', ["health.window_days"]),
    "wrong-type-bool": ("logs: {autocommit: 1}\n", ["logs.autocommit"]),
    "invalid-yaml": ("health:\n  window_days: 7\n  flag_below: 0.7\n    broken_after: 3\n",
                     ["line 4", "YAML"]),
    "not-utf8": (b"vault:\n  scope: caf\xe9\n", ["UTF-8"]),
    "e044": ("verify: {enabled: true}\nsandbox: {enabled: false}\n", ["E044"]),
    "source-unknown-key": ("watch:\n  sources:\n    - {id: a, type: pypi, package: a, "
                           "colour: red}\n", ["watch.sources[0].colour"]),
    "source-bad-type": ("watch:\n  sources:\n    - {id: a, type: pypi, tier: high}\n",
                        ["watch.sources[0].tier"]),
    "source-duplicate-id": ("watch:\n  sources:\n    - {id: a, type: pypi, package: a}\n"
                            "    - {id: a, type: npm, package: a}\n", ["'a'", "twice"]),
}


@pytest.mark.parametrize("case", list(CLI_BAD))
def test_a_bad_config_stops_every_command(gv: Runner, vault: Path, case: str) -> None:
    text, needles = CLI_BAD[case]
    write_config(vault, text)
    before = snapshot(vault)
    assert_config_error(gv("status"), *needles)
    result = gv("status", "--json")
    assert_config_error(result, *needles)
    assert result.json()["error"]["code"] == "config"
    assert snapshot(vault) == before


@pytest.mark.parametrize("args", [
    ("doctor",), ("commit",), ("skill", "list"),
    ("skill", "create", "x", "--description", "d"),
    ("tool", '{"action": "list"}'),
    ("init",),
])
def test_every_command_validates_the_config_first(gv: Runner, vault: Path,
                                                  args: tuple[str, ...]) -> None:
    write_config(vault, "health: {flag_bellow: 0.8}\n")
    before = snapshot(vault)
    assert_config_error(gv(*args), "flag_bellow")
    assert snapshot(vault) == before


def test_fixing_the_config_makes_commands_work_again(gv: Runner, vault: Path) -> None:
    """The parsed config is cached under .git/gitvault/; an edit is always seen."""
    original = (vault / "gitvault.yaml").read_text("utf-8")
    write_config(vault, original.replace('scope: ""', 'scope: "aaa"'))
    assert gv.ok("status", "--json").json()["scope"] == "aaa"
    assert gv.ok("status", "--json").json()["scope"] == "aaa"  # cached now

    path = vault / "gitvault.yaml"
    stat = path.stat()
    write_config(vault, original.replace('scope: ""', 'scope: "bbb"'))  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same mtime
    assert gv.ok("status", "--json").json()["scope"] == "bbb"

    write_config(vault, original.replace('scope: ""', 'scope: "bbb"') + "colour: blue\n")
    assert_config_error(gv("status"), "colour")
    write_config(vault, original.replace('scope: ""', 'scope: "ccc"'))
    assert gv.ok("status", "--json").json()["scope"] == "ccc"
    write_config(vault, original)
    assert gv.ok("status", "--json").json()["scope"] == vault.name
    assert gv.ok("tool", '{"action": "list"}').json() == {"action": "list", "skills": []}


def test_a_valid_edited_config_is_used(gv: Runner, vault: Path) -> None:
    """A value set in gitvault.yaml reaches the command (here the URN scope)."""
    write_config(vault, "vault: {scope: team-memory}\nwatch:\n  sources:\n"
                        "    - {id: requests, type: pypi, package: requests, tier: 1}\n")
    result = gv.ok("skill", "create", "scoped", "--description", "d", "--json")
    assert result.json()["skill"]["urn"] == "urn:gitvault:skill:team-memory:scoped:v1"
