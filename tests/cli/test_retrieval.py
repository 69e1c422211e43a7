"""``gitvault search``, ``context`` and ``outcome`` end to end: the real CLI in real
git repositories, from creating skills to the counts ``skill list`` shows."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result, Runner, snapshot, vault_runner


def events(root: Path) -> list[dict[str, Any]]:
    records = []
    for path in sorted((root / "logs" / "events").rglob("*.jsonl")):
        records += [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    return records


def create(gv: Runner, name: str, description: str, content: str = "", *extra: str) -> None:
    gv.ok("skill", "create", name, "--description", description, "--content", content, *extra)


def search(gv: Runner, query: str, *extra: str) -> list[dict[str, Any]]:
    return gv.ok("search", query, "--json", *extra).json()["results"]


def counts(gv: Runner) -> dict[str, tuple[int, int, int]]:
    listed = gv.ok("skill", "list", "--state", "all", "--json").json()["skills"]
    return {s["name"]: (s["stats"]["usage"], s["stats"]["success"], s["stats"]["failure"])
            for s in listed}


def write_code_skill(gv: Runner, root: Path, name: str, description: str, code: str,
                     tests: str, example: str) -> None:
    """A code skill written by hand, then gated here ('skill verify'): only a code skill
    this node holds gate evidence for is handed to an agent (SPEC §1 Trust)."""
    folder = root / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\nmetadata:\n  version: \"1\"\n"
        f"  kind: code\n  state: active\n---\nCall it from your code.\n", "utf-8")
    for file, text in (("skill.py", code), ("test_skill.py", tests), ("example.py", example)):
        (folder / file).write_text(text, "utf-8")
    gv.ok("skill", "verify", name)


def refused(result: Result, before: dict[str, bytes], root: Path, needle: str) -> None:
    assert result.code == 2, (result.out, result.err)
    assert len(result.err_lines) == 1 and result.err_lines[0].startswith("gitvault: error: ")
    assert needle in result.err, result.err
    assert "Traceback" not in result.err
    assert snapshot(root) == before


# -- the feedback loop ------------------------------------------------------------------

def test_full_feedback_loop(gv: Runner, vault: Path) -> None:
    create(gv, "debug-swift-actor-isolation",
           "Debug Swift 6 actor isolation errors with non-Sendable values",
           "1. Check @Sendable conformance", "--tags", "swift,concurrency")
    create(gv, "fix-flaky-pytest", "Stabilise flaky pytest tests", "1. isolate tmp_path")
    create(gv, "docker-build-cache", "Speed up Docker builds with the layer cache")

    data = gv.ok("context", "The Swift compiler says a non-Sendable value crosses an actor",
                 "--json").json()
    assert list(data) == ["injection", "skills", "text"]
    assert data["skills"] == [{"name": "debug-swift-actor-isolation", "version": 1,
                               "kind": "procedure", "score": data["skills"][0]["score"]}]
    assert data["skills"][0]["score"] > 0
    assert data["text"].startswith("### RELEVANT SKILLS\n\n#### debug-swift-actor-isolation (v1)")
    inject = events(vault)[-1]
    assert inject["id"] == data["injection"] and inject["op"] == "inject"
    assert inject["skills"] == ["debug-swift-actor-isolation@v1"]
    assert inject["prompt"].startswith("The Swift compiler") and inject["node"] == "test-node"
    assert counts(gv)["debug-swift-actor-isolation"] == (1, 0, 0)

    out = gv.ok("outcome", data["injection"], "--success", "--json").json()
    assert out["status"] == "recorded"
    record = events(vault)[-1]
    assert {k: record[k] for k in ("op", "injection", "skills", "success", "reason")} == {
        "op": "outcome", "injection": data["injection"],
        "skills": ["debug-swift-actor-isolation@v1"], "success": True, "reason": None}
    assert counts(gv)["debug-swift-actor-isolation"] == (1, 1, 0)

    gv.ok("outcome", "--skills", "fix_flaky_pytest,docker-build-cache", "--fail",
          "--reason", "tests still flaky")
    record = events(vault)[-1]
    assert record["injection"] is None and record["success"] is False
    assert record["skills"] == ["fix-flaky-pytest@v1", "docker-build-cache@v1"]
    assert record["reason"] == "tests still flaky"
    assert counts(gv) == {"debug-swift-actor-isolation": (1, 1, 0),
                          "docker-build-cache": (0, 0, 1), "fix-flaky-pytest": (0, 0, 1)}
    show = gv.ok("skill", "show", "debug-swift-actor-isolation", "--json").json()
    assert show["stats"]["usage"] == 1 and show["stats"]["success"] == 1
    listed = gv.ok("skill", "list").out
    assert "used 1, ok 1, failed 0" in listed

    # the same result again changes nothing; the opposite one is a conflict
    before = snapshot(vault)
    again = gv.ok("outcome", data["injection"], "--success", "--json").json()
    assert again["status"] == "exists" and snapshot(vault) == before
    clash = gv("outcome", data["injection"], "--fail")
    assert clash.code == 3 and "already has a success" in clash.err
    assert snapshot(vault) == before


def test_failed_outcomes_make_a_skill_stale_and_rank_it_below_active(gv: Runner,
                                                                     vault: Path) -> None:
    """The loop's last step: outcomes feed the lifecycle rules, the lifecycle feeds
    ranking."""
    create(gv, "deploy-canary", "Deploy with a canary release", "1. deploy canary first")
    create(gv, "deploy-notes", "Notes", "Sometimes we deploy on Fridays.")
    assert search(gv, "deploy canary release")[0]["name"] == "deploy-canary"
    for _ in range(3):
        data = gv.ok("context", "deploy a canary release", "-k", "1", "--json").json()
        assert [s["name"] for s in data["skills"]] == ["deploy-canary"]
        gv.ok("outcome", data["injection"], "--fail", "--reason", "rollout broke")
    assert counts(gv)["deploy-canary"] == (3, 0, 3)
    changes = gv.ok("lifecycle", "--json").json()["changes"]
    assert [(c["name"], c["to"]) for c in changes] == [("deploy-canary", "stale")]
    ranked = search(gv, "deploy canary release")
    assert [(r["name"], r["state"]) for r in ranked] == [("deploy-notes", "active"),
                                                         ("deploy-canary", "stale")]


def test_success_counts_lift_a_skill_in_search(gv: Runner, vault: Path) -> None:
    create(gv, "retry-plain", "Retry flaky network calls")
    create(gv, "retry-proven", "Retry flaky network calls")
    first = search(gv, "retry network calls")
    assert [r["name"] for r in first] == ["retry-plain", "retry-proven"]
    assert first[0]["score"] == first[1]["score"]
    for _ in range(2):
        gv.ok("outcome", "--skills", "retry-proven", "--success")
    gv.ok("outcome", "--skills", "retry-plain", "--fail")
    after = search(gv, "retry network calls")
    assert [r["name"] for r in after] == ["retry-proven", "retry-plain"]
    assert after[0]["score"] > after[1]["score"]


def test_search_shape_k_states_and_skill_alias(gv: Runner, vault: Path) -> None:
    for i in range(4):
        create(gv, f"cache-tip-{i}", f"Caching tip number {i}")
    create(gv, "cache-archived", "Caching tip archived")
    gv.ok("skill", "archive", "cache-archived")
    results = search(gv, "caching tip", "-k", "3")
    assert len(results) == 3
    assert all(set(r) == {"name", "version", "state", "score"} for r in results)
    assert all(r["state"] == "active" and r["version"] == 1 for r in results)
    assert "cache-archived" not in [r["name"] for r in search(gv, "caching tip archived")]
    alias = gv.ok("skill", "search", "caching tip", "-k", "3", "--json").json()
    assert alias["results"] == results
    text = gv.ok("search", "caching tip", "-k", "1").out
    assert "cache-tip-" in text and "active" in text
    assert gv.ok("search", "nothing-like-this", "--json").json() == {"results": []}


def test_tool_search_action(gv: Runner, vault: Path) -> None:
    create(gv, "rotate-logs", "Rotate and compress log files")
    create(gv, "resize-images", "Resize images")
    data = json.loads(gv.ok("tool", json.dumps({"action": "search", "query": "log rotation",
                                                "k": 1})).out)
    assert data["action"] == "search"
    assert [r["name"] for r in data["results"]] == ["rotate-logs"]
    assert data["results"] == search(gv, "log rotation", "-k", "1")


# -- context: pins, budgets, code skills -----------------------------------------------

def test_pin_uses_the_pinned_version(gv: Runner, vault: Path) -> None:
    create(gv, "deploy-steps", "Deploy the service", "OLD STEPS v1")
    gv.ok("skill", "patch", "deploy-steps", "--content", "NEW STEPS v2")
    latest = gv.ok("context", "deploy the service", "--json").json()
    assert "NEW STEPS v2" in latest["text"] and latest["skills"][0]["version"] == 2
    pinned = gv.ok("context", "deploy the service", "--pin", "deploy-steps@v1", "--json").json()
    assert "OLD STEPS v1" in pinned["text"] and "NEW STEPS" not in pinned["text"]
    assert "#### deploy-steps (v1)" in pinned["text"]
    assert pinned["skills"][0]["version"] == 1 and pinned["skills"][0]["score"] > 0
    assert events(vault)[-1]["skills"] == ["deploy-steps@v1"]
    gv.ok("outcome", pinned["injection"], "--fail")
    assert events(vault)[-1]["skills"] == ["deploy-steps@v1"]
    assert counts(gv)["deploy-steps"] == (2, 0, 1)
    # a pin comes first even when the prompt does not match it
    create(gv, "other-thing", "Unrelated notes")
    mixed = gv.ok("context", "deploy the service", "--pin", "other-thing@1", "-k", "2",
                  "--json").json()
    assert (mixed["skills"][0]["name"], mixed["skills"][0]["score"]) == ("other-thing", 0.0)
    assert [s["name"] for s in mixed["skills"]] == ["other-thing", "deploy-steps"]


def test_budgets_are_respected(gv: Runner, vault: Path) -> None:
    for i in range(3):
        body = "\n".join(f"{n}. check the queue worker setting number {n}" for n in range(60))
        create(gv, f"queue-worker-{i}", f"Tune queue workers, variant {i}", body)
    for budget in ("60", "150", "1000"):
        data = gv.ok("context", "tune the queue workers", "--budget", budget, "--json").json()
        assert math.ceil(len(data["text"]) / 4) <= int(budget)
        assert data["skills"] and "[... cut to fit the budget;" in data["text"]
    full = gv.ok("context", "tune the queue workers", "--json").json()
    assert math.ceil(len(full["text"]) / 4) <= 400  # the RELEVANT SKILLS block limit
    assert [s["name"] for s in full["skills"]][:1] and len(full["skills"]) <= 3
    assert len(gv.ok("context", "tune the queue workers", "-k", "1", "--json")
               .json()["skills"]) == 1


def test_code_skill_source_under_helper_functions(gv: Runner, vault: Path) -> None:
    code = "import re\n\n\ndef slugify(text):\n    return re.sub(r'[^a-z0-9]+', '-', text.lower())\n"
    code += "".join(f"\n\ndef helper_{i}(x):\n    return x + {i}  # {'padding ' * 12}\n"
                    for i in range(30))
    write_code_skill(gv, vault, "slugify-text", "Turn a title into a URL slug", code,
                     "from skill import *\n\nassert slugify('A B') == 'a-b'\n",
                     "from skill import *\n\nprint(slugify('A B'))\n")
    create(gv, "url-rules", "Rules for URL slugs in the blog", "Keep slugs short.")
    data = gv.ok("context", "make a URL slug from the title", "--json").json()
    kinds = {s["name"]: s["kind"] for s in data["skills"]}
    assert kinds == {"slugify-text": "code", "url-rules": "procedure"}
    skills_part, helpers = data["text"].split("Available helper functions:\n\n")
    assert skills_part.startswith("### RELEVANT SKILLS") and "slugify" not in skills_part
    assert helpers.startswith("# slugify-text (v1)\nimport re\n\n\ndef slugify(text):")
    assert math.ceil(len("Available helper functions:\n\n" + helpers.rstrip("\n")) / 4) <= 600
    source = helpers.split("\n", 1)[1]
    compile(source, "helpers", "exec")  # cut at a function boundary: still valid Python
    assert "helper_29" not in source  # the 600-token limit cut it
    assert events(vault)[-1]["skills"] == [f"{s['name']}@v1" for s in data["skills"]]
    assert sorted(events(vault)[-1]["skills"]) == ["slugify-text@v1", "url-rules@v1"]
    # a pinned code skill's source comes from git history, not the work tree
    gv.git("add", "skills/slugify-text")
    gv.git("-c", "user.name=Hand", "-c", "user.email=hand@example.com", "commit", "-q",
           "--no-verify", "-m", "hand-written code skill")
    (vault / "skills" / "slugify-text" / "skill.py").write_text("def changed():\n    pass\n")
    pinned = gv.ok("context", "unrelated words", "--pin", "slugify-text@v1", "--json").json()
    assert pinned["skills"] == [{"name": "slugify-text", "version": 1, "kind": "code",
                                 "score": 0.0}]
    assert "def slugify(text):" in pinned["text"] and "changed" not in pinned["text"]
    # the changed work tree has no gate evidence: never handed to an agent
    latest = gv.ok("context", "URL slug from the title", "-k", "1", "--json").json()
    assert "def changed():" not in latest["text"] and "slugify" not in latest["text"]
    assert any("unverified code skill(s) slugify-text" in w for w in latest["warnings"])


def test_prompt_from_stdin_is_kept_short_and_redacted(gv: Runner, vault: Path) -> None:
    create(gv, "rotate-tokens", "Rotate leaked API tokens")
    token = "ghp_" + "a1B2c3D4e5" * 4
    # the secret straddles the 2000-character cut: it is redacted before the cut
    prompt = "x" * 1980 + f" I leaked {token} in a commit, rotate the token."
    data = gv.ok("context", "-", "--json", input=prompt).json()
    assert [s["name"] for s in data["skills"]] == ["rotate-tokens"]
    record = events(vault)[-1]
    assert record["op"] == "inject" and len(record["prompt"]) == 2000
    assert record["prompt"].startswith("x" * 1980) and record["prompt"].endswith("...")
    assert "ghp_" not in json.dumps(record) and "a1B" not in json.dumps(record)


def test_no_match_records_nothing(gv: Runner, vault: Path) -> None:
    create(gv, "rotate-logs", "Rotate log files")
    before = snapshot(vault)
    data = gv.ok("context", "quantum chromodynamics", "--json").json()
    assert data == {"injection": None, "skills": [], "text": ""}
    assert snapshot(vault) == before


# -- the index follows the files ----------------------------------------------------------

def test_index_follows_patch_hand_edit_and_checkout(gv: Runner, vault: Path) -> None:
    create(gv, "tune-gc", "Tune the garbage collector", "Lower the heap target.")
    assert [r["name"] for r in search(gv, "garbage collector")] == ["tune-gc"]
    assert (vault / ".git" / "gitvault" / "search.sqlite").is_file()
    gv.ok("skill", "patch", "tune-gc", "--content", "Watch the pauses of zeppelin.")
    assert [(r["name"], r["version"]) for r in search(gv, "zeppelin")] == [("tune-gc", 2)]
    path = vault / "skills" / "tune-gc" / "SKILL.md"  # a hand edit, same length
    path.write_text(path.read_text().replace("zeppelin", "dirigibl"))
    assert search(gv, "zeppelin") == [] and search(gv, "dirigibl")[0]["name"] == "tune-gc"
    gv.git("checkout", "--", "skills/tune-gc/SKILL.md")
    assert search(gv, "zeppelin")[0]["name"] == "tune-gc"
    first = gv.git("rev-list", "--max-parents=0", "HEAD").strip()
    gv.git("checkout", "-q", first)  # before the skill existed
    assert search(gv, "garbage collector") == []
    gv.git("checkout", "-q", "-")
    assert search(gv, "zeppelin")[0]["version"] == 2


def test_corrupt_index_is_rebuilt_and_deleting_it_changes_nothing(gv: Runner, vault: Path) -> None:
    for i, topic in enumerate(["redis cache eviction", "redis cluster failover", "memcached"]):
        create(gv, f"cache-{i}", f"Notes on {topic}", f"About {topic}.")
    expected = search(gv, "redis cache")
    assert [r["name"] for r in expected][:1] == ["cache-0"]
    index = vault / ".git" / "gitvault" / "search.sqlite"
    index.write_bytes(b"\x00garbage\xff" * 1000)
    assert search(gv, "redis cache") == expected
    assert index.read_bytes()[:15] == b"SQLite format 3"
    index.unlink()
    assert search(gv, "redis cache") == expected and index.is_file()
    context = gv.ok("context", "redis cache", "--json").json()
    with_index = search(gv, "redis cache")  # after the injection changed the usage boost
    index.unlink()
    assert search(gv, "redis cache") == with_index
    index.unlink()
    again = gv.ok("context", "redis cache", "--json").json()
    assert again["text"] == context["text"]
    assert [s["name"] for s in again["skills"]] == [s["name"] for s in context["skills"]]


# -- bad input changes nothing ----------------------------------------------------------

@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    gv = vault_runner(tmp_path_factory.mktemp("retrieval-errors"))
    create(gv, "present", "Present skill about caching", "Cache it.")
    gv.ok("search", "caching")  # the index exists before each refusal
    return gv


BAD = {
    "search-k-zero": (["search", "caching", "-k", "0"], "-k must be at least 1"),
    "search-k-negative": (["search", "caching", "-k", "-2"], "-k must be at least 1"),
    "search-empty": (["search", "  "], "query is empty"),
    "context-k-zero": (["context", "caching", "-k", "0"], "-k must be at least 1"),
    "context-budget-small": (["context", "caching", "--budget", "10"], "too small"),
    "context-budget-negative": (["context", "caching", "--budget", "-5"], "too small"),
    "context-empty": (["context", ""], "prompt is empty"),
    "pin-no-version": (["context", "caching", "--pin", "present"], "needs a version"),
    "pin-bad-name": (["context", "caching", "--pin", "../x@v1"], "invalid skill name"),
    "pin-bad-version": (["context", "caching", "--pin", "present@vx"], "invalid version"),
    "pin-unknown-skill": (["context", "caching", "--pin", "absent@v1"], "no version 1"),
    "pin-unknown-version": (["context", "caching", "--pin", "present@v9"], "no version 9"),
    "pin-twice": (["context", "caching", "--pin", "present@v1", "--pin", "present@1"],
                  "pinned twice"),
    "pins-over-k": (["context", "caching", "-k", "1", "--pin", "present@v1", "--pin",
                     "other@v1"], "raise -k"),
    "outcome-unknown": (["outcome", "01NOTANINJECTION", "--success"], "no injection"),
    "outcome-no-result": (["outcome", "--skills", "present"], "exactly one of"),
    "outcome-both-results": (["outcome", "--skills", "present", "--success", "--fail"],
                             "exactly one of"),
    "outcome-nothing": (["outcome", "--success"], "INJECTION id or --skills"),
    "outcome-both-targets": (["outcome", "X", "--skills", "present", "--success"],
                             "INJECTION id or --skills"),
    "outcome-unknown-skill": (["outcome", "--skills", "present,absent", "--fail"],
                              "no skill named 'absent'"),
    "outcome-empty-skills": (["outcome", "--skills", " , ", "--fail"], "at least one"),
    "skill-context-k": (["skill", "context", "caching", "-k", "0"], "-k must be at least 1"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_exits_2_and_changes_nothing(shared: Runner, case: str) -> None:
    args, needle = BAD[case]
    before = snapshot(shared.cwd)
    refused(shared(*args), before, shared.cwd, needle)
    with_json = shared(*args, "--json")
    assert with_json.code == 2 and json.loads(with_json.out)["error"]["message"]
    assert snapshot(shared.cwd) == before
