"""``gitvault tool``: the seed's skill_patch protocol (one JSON object in, one out),
run through the real CLI against real git repositories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import Result, Runner, snapshot, vault_runner


def front(path: Path) -> dict[str, Any]:
    text = path.read_text("utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def body(path: Path) -> str:
    return path.read_text("utf-8").split("---\n", 2)[2]


def events(root: Path) -> list[dict[str, Any]]:
    records = []
    for path in sorted((root / "logs" / "events").rglob("*.jsonl")):
        records += [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    return records


def commit_count(gv: Runner) -> int:
    return int(gv.git("rev-list", "--count", "HEAD"))


def tool(gv: Runner, request: dict[str, Any]) -> dict[str, Any]:
    """Run one request that must succeed; return the one JSON object it printed."""
    result = gv.ok("tool", json.dumps(request))
    data = json.loads(result.out)  # the whole of stdout is one JSON object
    assert isinstance(data, dict)
    return data


def skill_md(root: Path, name: str, archived: bool = False) -> Path:
    return root / "skills" / (".archive" if archived else "") / name / "SKILL.md"


def assert_refused(result: Result, before: dict[str, bytes], root: Path) -> dict[str, Any]:
    """Exit 2, exactly one JSON error object on stdout, one error line on stderr,
    and nothing changed in the vault."""
    assert result.code == 2, (result.out, result.err)
    data = json.loads(result.out)
    assert list(data) == ["error"]
    assert set(data["error"]) == {"code", "message"}
    assert isinstance(data["error"]["code"], str) and data["error"]["code"]
    assert isinstance(data["error"]["message"], str) and data["error"]["message"]
    assert len(result.err_lines) == 1, result.err
    assert result.err_lines[0] == f"gitvault: error: {data['error']['message']}"
    assert "Traceback" not in result.err
    assert snapshot(root) == before
    return data["error"]


# -- create -----------------------------------------------------------------------

def test_create_from_argument(gv: Runner, vault: Path) -> None:
    commits = commit_count(gv)
    data = tool(gv, {"action": "create", "name": "Debug_Swift_Actor",
                     "trigger": "During Swift 6 actor isolation errors",
                     "content": "## How to debug\n1. Check @Sendable conformance"})
    assert data["action"] == "create" and data["status"] == "created"
    view = data["skill"]
    assert view["name"] == "debug-swift-actor"
    assert view["version"] == 1 and view["state"] == "active" and view["kind"] == "procedure"
    assert view["provenance"] == "agent"
    assert view["trigger"] == "During Swift 6 actor isolation errors"
    # a missing description defaults to the trigger
    assert view["description"] == "During Swift 6 actor isolation errors"

    path = skill_md(vault, "debug-swift-actor")
    meta = front(path)
    assert meta["name"] == "debug-swift-actor"
    assert meta["description"] == "During Swift 6 actor isolation errors"
    assert meta["metadata"]["trigger"] == "During Swift 6 actor isolation errors"
    assert meta["metadata"]["version"] == "1"
    assert body(path) == "## How to debug\n1. Check @Sendable conformance\n"

    assert commit_count(gv) == commits + 1
    message = gv.git("log", "-1", "--format=%B")
    assert "Gitvault-Op: create" in message and "Gitvault-Skill: debug-swift-actor" in message
    (record,) = events(vault)
    assert record["op"] == "create" and record["skill"] == "debug-swift-actor"
    assert record["version"] == 1


@pytest.mark.parametrize("args", [("tool", "-"), ("tool",)], ids=["dash", "no-argument"])
def test_create_from_stdin(gv: Runner, vault: Path, args: tuple[str, ...]) -> None:
    request = {"action": "create", "name": "from-stdin", "trigger": "When reading stdin",
               "content": "read it all"}
    result = gv.ok(*args, input=json.dumps(request))
    data = json.loads(result.out)
    assert data["status"] == "created"
    assert data["skill"]["name"] == "from-stdin" and data["skill"]["version"] == 1
    path = skill_md(vault, "from-stdin")
    assert front(path)["description"] == "When reading stdin"
    assert body(path) == "read it all\n"


def test_create_with_description_tags_and_sensitive(gv: Runner, vault: Path) -> None:
    data = tool(gv, {"action": "create", "name": "tagged", "trigger": "On a tagged task",
                     "description": "Handle tagged tasks.", "tags": ["swift", "ci"],
                     "sensitive": True, "kind": "lesson", "provenance": "human"})
    view = data["skill"]
    assert view["description"] == "Handle tagged tasks."
    assert view["trigger"] == "On a tagged task"
    assert view["kind"] == "lesson" and view["provenance"] == "human"
    assert view["sensitive"] is True
    meta = front(skill_md(vault, "tagged"))["metadata"]
    assert meta["tags"] == "swift,ci" and meta["sensitive"] == "true"
    assert meta["trigger"] == "On a tagged task"


def test_create_on_existing_skill_is_a_silent_noop(gv: Runner, vault: Path) -> None:
    tool(gv, {"action": "create", "name": "once", "trigger": "First trigger",
              "content": "first body"})
    before = snapshot(vault)
    commits = commit_count(gv)
    records = events(vault)
    result = gv("tool", json.dumps({"action": "create", "name": "ONCE",
                                    "trigger": "Second trigger", "content": "second body",
                                    "description": "Another description."}))
    assert result.code == 0, result.err
    assert result.err == ""
    data = json.loads(result.out)
    assert data["status"] == "exists"
    assert data["skill"]["version"] == 1
    assert data["skill"]["trigger"] == "First trigger"
    assert commit_count(gv) == commits
    assert events(vault) == records
    assert body(skill_md(vault, "once")) == "first body\n"
    assert snapshot(vault) == before


# -- patch ------------------------------------------------------------------------

def test_patch_increments_version(gv: Runner, vault: Path) -> None:
    tool(gv, {"action": "create", "name": "evolving", "trigger": "When it evolves",
              "content": "v1 body"})
    data = tool(gv, {"action": "patch", "name": "evolving", "content": "## Updated approach"})
    assert data["action"] == "patch" and data["status"] == "patched"
    view = data["skill"]
    assert view["version"] == 2 and view["state"] == "active"
    assert view["description"] == "When it evolves"  # untouched fields are kept
    assert view["stats"]["patches"] == 1
    path = skill_md(vault, "evolving")
    assert front(path)["metadata"]["version"] == "2"
    assert body(path) == "## Updated approach\n"
    message = gv.git("log", "-1", "--format=%B")
    assert "Gitvault-Op: patch" in message and "Gitvault-Version: 2" in message
    assert [r["op"] for r in events(vault)] == ["create", "patch"]

    data = tool(gv, {"action": "patch", "name": "evolving", "trigger": "Later on"})
    assert data["skill"]["version"] == 3
    assert data["skill"]["trigger"] == "Later on"
    assert body(path) == "## Updated approach\n"  # no content given: body kept
    # version 1 is still readable from history
    old = gv.ok("skill", "show", "evolving@v1", "--json").json()
    assert old["content"] == "v1 body\n"


def test_patch_resets_a_stale_skill_to_active(gv: Runner, vault: Path) -> None:
    tool(gv, {"action": "create", "name": "old-news", "trigger": "When old"})
    path = skill_md(vault, "old-news")
    path.write_text(path.read_text("utf-8").replace("state: active", "state: stale"), "utf-8")
    gv.git("-c", "user.name=Hand", "-c", "user.email=hand@example.com",
           "commit", "-q", "--no-verify", "-am", "mark old-news stale by hand")
    listed = tool(gv, {"action": "list", "state": "stale"})
    assert [s["name"] for s in listed["skills"]] == ["old-news"]

    data = tool(gv, {"action": "patch", "name": "old-news", "content": "fresh"})
    assert data["status"] == "patched"
    assert data["skill"]["state"] == "active" and data["skill"]["version"] == 2
    assert front(path)["metadata"]["state"] == "active"
    assert tool(gv, {"action": "list", "state": "stale"})["skills"] == []


def test_patch_unarchives_an_archived_skill(gv: Runner, vault: Path) -> None:
    tool(gv, {"action": "create", "name": "retired", "trigger": "When retired",
              "content": "old body"})
    gv.ok("skill", "archive", "retired", "--reason", "not used")
    assert skill_md(vault, "retired", archived=True).is_file()
    assert not skill_md(vault, "retired").exists()

    data = tool(gv, {"action": "patch", "name": "retired", "content": "revived body"})
    assert data["status"] == "patched"
    assert data["skill"]["state"] == "active" and data["skill"]["version"] == 3
    path = skill_md(vault, "retired")
    assert path.is_file()
    assert not (vault / "skills" / ".archive" / "retired").exists()
    assert front(path)["metadata"]["state"] == "active"
    assert body(path) == "revived body\n"
    assert gv.git("ls-files", "skills/.archive").strip() == ""
    assert gv.git("ls-files", "skills/retired").strip() == "skills/retired/SKILL.md"
    assert gv.git("status", "--porcelain", "--", "skills").strip() == ""
    listed = tool(gv, {"action": "list"})
    assert [s["name"] for s in listed["skills"]] == ["retired"]


def test_patch_unarchive_drops_the_archive_reason(gv: Runner, vault: Path) -> None:
    """An active skill does not keep saying why it was archived ('restore' drops it)."""
    tool(gv, {"action": "create", "name": "retired", "trigger": "When retired"})
    gv.ok("skill", "archive", "retired", "--reason", "not used")
    assert front(skill_md(vault, "retired", archived=True))["metadata"]["archived-reason"]
    tool(gv, {"action": "patch", "name": "retired", "content": "revived"})
    assert "archived-reason" not in front(skill_md(vault, "retired"))["metadata"]


def test_patch_of_a_missing_skill_falls_back_to_create(gv: Runner, vault: Path) -> None:
    commits = commit_count(gv)
    data = tool(gv, {"action": "patch", "name": "brand_new", "trigger": "When brand new",
                     "content": "made by a patch"})
    assert data["action"] == "patch" and data["status"] == "created"
    assert data["skill"]["name"] == "brand-new"
    assert data["skill"]["version"] == 1 and data["skill"]["state"] == "active"
    assert data["skill"]["description"] == "When brand new"
    assert body(skill_md(vault, "brand-new")) == "made by a patch\n"
    assert commit_count(gv) == commits + 1
    assert "Gitvault-Op: create" in gv.git("log", "-1", "--format=%B")
    assert [(r["op"], r["version"]) for r in events(vault)] == [("create", 1)]


def test_patch_of_a_missing_skill_without_trigger_is_refused(gv: Runner, vault: Path) -> None:
    before = snapshot(vault)
    assert_refused(gv("tool", json.dumps({"action": "patch", "name": "ghost",
                                          "content": "x"})), before, vault)


# -- list -------------------------------------------------------------------------

def test_list_returns_skills(gv: Runner, vault: Path) -> None:
    assert tool(gv, {"action": "list"}) == {"action": "list", "skills": []}
    for name in ("beta", "alpha", "gamma"):
        tool(gv, {"action": "create", "name": name, "trigger": f"When {name}"})
    gv.ok("skill", "archive", "gamma")
    before = snapshot(vault)
    data = tool(gv, {"action": "list"})
    assert data["action"] == "list"
    assert [s["name"] for s in data["skills"]] == ["alpha", "beta"]
    alpha = data["skills"][0]
    assert alpha["trigger"] == "When alpha" and alpha["version"] == 1
    assert alpha["state"] == "active" and "content" not in alpha
    assert set(alpha["stats"]) == {"usage", "success", "failure", "patches"}
    everything = tool(gv, {"action": "list", "state": "all"})
    assert [s["name"] for s in everything["skills"]] == ["alpha", "beta", "gamma"]
    assert everything["skills"][2]["state"] == "archived"
    assert snapshot(vault) == before  # listing changes nothing


# -- errors -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def shared_vault(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    """One vault holding a skill, for requests that must be refused without a change
    (each test proves with a snapshot that it changed nothing)."""
    gv = vault_runner(tmp_path_factory.mktemp("tool-errors"))
    tool(gv, {"action": "create", "name": "present", "trigger": "Always"})
    return gv


# name: (request text, a word the error message must contain)
BAD_REQUESTS: dict[str, tuple[str, str]] = {
    "invalid-json": ("{not json", "JSON"),
    "empty-input": ("", "JSON"),
    "json-array": (json.dumps([{"action": "list"}]), "object"),
    "json-string": (json.dumps("create"), "object"),
    "too-deep": ("[" * 20_000 + "]" * 20_000, "JSON"),
    "lone-surrogate": ('{"action": "create", "name": "x", "trigger": "caf\\udce9"}', "UTF-8"),
    "unknown-action": (json.dumps({"action": "delete", "name": "present"}), "delete"),
    "missing-action": (json.dumps({"name": "present", "trigger": "t"}), "action"),
    "missing-name": (json.dumps({"action": "create", "trigger": "t"}), "name"),
    "missing-name-patch": (json.dumps({"action": "patch", "content": "x"}), "name"),
    "name-not-text": (json.dumps({"action": "create", "name": 7, "trigger": "t"}), "name"),
    "unknown-field": (json.dumps({"action": "create", "name": "x", "trigger": "t",
                                  "colour": "red"}), "colour"),
    "path-name": (json.dumps({"action": "create", "name": "../x", "trigger": "t"}), "../x"),
    "path-name-patch": (json.dumps({"action": "patch", "name": "../present",
                                    "content": "c"}), "../present"),
    "slash-name": (json.dumps({"action": "create", "name": "a/b", "trigger": "t"}), "a/b"),
    "tags-number": (json.dumps({"action": "create", "name": "x", "trigger": "t",
                                "tags": 5}), "tags"),
    "tags-object": (json.dumps({"action": "create", "name": "x", "trigger": "t",
                                "tags": {"a": 1}}), "tags"),
    "tags-mixed-list": (json.dumps({"action": "create", "name": "x", "trigger": "t",
                                    "tags": ["a", 1]}), "tags"),
    "content-not-text": (json.dumps({"action": "patch", "name": "present",
                                     "content": ["x"]}), "content"),
    "sensitive-not-bool": (json.dumps({"action": "patch", "name": "present",
                                       "sensitive": "yes"}), "sensitive"),
    "no-trigger-or-description": (json.dumps({"action": "create", "name": "x"}), "trigger"),
    "bad-description": (json.dumps({"action": "create", "name": "x", "trigger": "t",
                                    "description": "use <script>"}), "description"),
    "bad-kind": (json.dumps({"action": "create", "name": "x", "trigger": "t",
                             "kind": "recipe"}), "recipe"),
    "list-bad-state": (json.dumps({"action": "list", "state": "deleted"}), "deleted"),
}


@pytest.mark.parametrize("case", list(BAD_REQUESTS))
def test_bad_request_is_refused_and_changes_nothing(shared_vault: Runner, case: str) -> None:
    gv = shared_vault
    text, needle = BAD_REQUESTS[case]
    before = snapshot(gv.cwd)
    error = assert_refused(gv("tool", text), before, gv.cwd)
    assert error["code"] == "bad_input"
    assert needle in error["message"], error["message"]


@pytest.mark.parametrize("case", ["invalid-json", "missing-name", "unknown-field",
                                  "tags-number"])
def test_bad_request_on_stdin_is_refused_the_same_way(shared_vault: Runner, case: str) -> None:
    gv = shared_vault
    text, needle = BAD_REQUESTS[case]
    before = snapshot(gv.cwd)
    error = assert_refused(gv("tool", "-", input=text), before, gv.cwd)
    assert error["code"] == "bad_input"
    assert needle in error["message"], error["message"]


def test_non_utf8_stdin_is_refused_with_one_line(shared_vault: Runner) -> None:
    """Bytes that are not UTF-8 are bad input (exit 2), never a traceback, also under
    a strict UTF-8 locale (a process: the interpreter reads PYTHONIOENCODING at start)."""
    gv = shared_vault.process()
    before = snapshot(gv.cwd)
    raw = b'{"action": "create", "name": "cafe", "trigger": "caf\xe9 au lait"}'
    for env in ({}, {"PYTHONIOENCODING": "utf-8"}):
        result = gv("tool", "-", input=raw, env=env)
        assert_refused(result, before, gv.cwd)


def test_code_skills_are_refused_without_the_gate(shared_vault: Runner) -> None:
    gv = shared_vault
    before = snapshot(gv.cwd)
    request = {"action": "create", "name": "adder", "trigger": "Add numbers",
               "code": "def add(a, b):\n    return a + b\n",
               "tests": "assert add(1, 2) == 3\n", "example": "add(1, 2)\n"}
    assert_refused(gv("tool", json.dumps(request)), before, gv.cwd)


@pytest.mark.parametrize(("request_", "needle"), [
    ({"action": "search"}, "query"), ({"action": "search", "query": 3}, "query"),
    ({"action": "search", "query": "x", "k": 0}, "'k'"),
    ({"action": "search", "query": "x", "k": "3"}, "'k'")])
def test_bad_search_request_is_refused(shared_vault: Runner, request_: dict[str, Any],
                                       needle: str) -> None:
    """The search action itself is tested in tests/cli/test_retrieval.py."""
    gv = shared_vault
    before = snapshot(gv.cwd)
    error = assert_refused(gv("tool", json.dumps(request_)), before, gv.cwd)
    assert needle in error["message"], error["message"]
