"""Code skills end to end through the real CLI: the gate, its records, quarantine."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Runner, snapshot

SKILL = 'import re\n\n\ndef slugify(text):\n    return "-".join(re.findall(r"[a-z0-9]+", text.lower()))\n'
TESTS = 'from skill import *\n\nassert slugify("Hello, World!") == "hello-world"\n'
EXAMPLE = 'from skill import *\n\nprint(slugify("Procedural Memory"))\n'


def write(folder: Path, code: str = SKILL, tests: str = TESTS, example: str = EXAMPLE) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("skill.py", code), ("test_skill.py", tests), ("example.py", example)):
        (folder / name).write_text(text)
    return ["--code", str(folder / "skill.py"), "--tests", str(folder / "test_skill.py"),
            "--example", str(folder / "example.py")]


def gate_records(vault: Path) -> list[dict]:
    return [json.loads(line) for f in sorted((vault / "logs" / "gate").rglob("*.jsonl"))
            for line in f.read_text().splitlines()]


def create(gv: Runner, tmp_path: Path, name: str = "slugify", *extra: str, **files: str):
    return gv("skill", "create", name, "--description", "Make a URL slug", "--kind", "code",
              *write(tmp_path / f"src-{name}", **files), *extra)


def test_a_good_code_skill_is_stored_with_evidence(gv: Runner, vault: Path, tmp_path: Path) -> None:
    result = create(gv, tmp_path, "slugify", "--json")
    assert result.code == 0, result.err
    assert result.json()["skill"]["kind"] == "code"
    folder = vault / "skills" / "slugify"
    assert (folder / "skill.py").read_text() == SKILL
    assert (folder / "test_skill.py").read_text() == TESTS
    assert (folder / "example.py").read_text() == EXAMPLE
    assert gv.git("status", "--porcelain", "--", "skills") == ""
    message = gv.git("log", "-1", "--format=%B")
    assert "Gitvault-Op: create" in message and "Gitvault-Sandbox" not in message
    verify, store = gate_records(vault)
    assert (verify["op"], store["op"]) == ("verify", "store")
    for record in (verify, store):
        assert record["passed"] is True and record["sandbox"] in ("bwrap", "unshare")
        assert record["skill"] == "slugify" and record["version"] == 1
        assert record["urn"].endswith(":slugify:v1") and len(record["sha256"]) == 64
        assert record["reasons"] == []
        assert "slugify(" not in json.dumps(record)  # references only, never code


def test_banned_code_is_refused_and_quarantined(gv: Runner, vault: Path, tmp_path: Path) -> None:
    bad = "import os\n\n\ndef slugify(text):\n    os.system('id')\n    return text\n"
    result = create(gv, tmp_path, "slugify", code=bad)
    assert result.code == 1
    assert result.err_lines == [
        "gitvault: error: the verification gate refused 'slugify' (quarantined in "
        "skills/.rejected/slugify/): banned: skill.py:5: uses 'os.system' (verify.banned has "
        "'os.system')"]
    assert not (vault / "skills" / "slugify").exists()
    quarantine = vault / "skills" / ".rejected" / "slugify"
    assert (quarantine / "skill.py").read_text() == bad
    assert "banned: skill.py:5" in (quarantine / "REASONS.md").read_text()
    assert gv.git("status", "--porcelain", "--", "skills") == ""  # committed
    assert "Gitvault-Op: reject" in gv.git("log", "-1", "--format=%B")
    [record] = gate_records(vault)
    assert record["passed"] is False and record["reasons"] == ["banned: skill.py:5"]
    assert gv.ok("skill", "list", "--json").json()["skills"] == []


def test_failing_tests_in_the_sandbox_refuse(gv: Runner, vault: Path, tmp_path: Path) -> None:
    home_file = Path(gv.env["HOME"]) / "notes.txt"
    home_file.write_text("private")
    tests = TESTS + f"assert open({str(home_file)!r}).read()\n"
    result = create(gv, tmp_path, "slugify", tests=tests)
    assert result.code == 1
    assert "tests: test_skill.py:4: a test failed: FileNotFoundError" in result.err
    [record] = gate_records(vault)
    assert record["reasons"] == ["tests: test_skill.py:4"] and "private" not in json.dumps(record)


def test_the_example_must_exit_cleanly(gv: Runner, vault: Path, tmp_path: Path) -> None:
    result = create(gv, tmp_path, "slugify", example=EXAMPLE + "raise SystemExit(2)\n")
    assert result.code == 1 and "example: example.py:0: the example failed: exit status 2" \
        not in result.err and "example: example.py: the example failed: exit status 2" in result.err


def test_timeout_and_memory_from_config(gv: Runner, vault: Path, tmp_path: Path) -> None:
    config = vault / "gitvault.yaml"
    config.write_text(config.read_text().replace("timeout_s: 10", "timeout_s: 1")
                      .replace("memory_mb: 1024", "memory_mb: 200"))
    slow = create(gv, tmp_path, "slow", tests=TESTS + "while True:\n    pass\n")
    assert slow.code == 1 and "still running after 1 s" in slow.err
    hungry = create(gv, tmp_path, "hungry", tests=TESTS + "x = bytearray(400 * 1024 * 1024)\n")
    assert hungry.code == 1 and "memory: test_skill.py:4: ran out of memory (limit 200 MB" in hungry.err


def test_no_sandbox_refuses_unless_unsafe_and_is_recorded(gv: Runner, vault: Path,
                                                          tmp_path: Path) -> None:
    env = {"GITVAULT_SANDBOX": "none"}
    before = snapshot(vault)
    refused = gv("skill", "create", "slugify", "--description", "d", "--kind", "code",
                 *write(tmp_path / "src"), env=env)
    assert refused.code == 1 and "--unsafe-no-sandbox" in refused.err
    assert "no usable sandbox" in refused.err
    assert not (vault / "skills" / "slugify").exists()
    assert snapshot(vault) != before  # quarantined and recorded, as every refusal is
    unsafe = gv("skill", "create", "slugify", "--description", "d", "--kind", "code",
                *write(tmp_path / "src"), "--unsafe-no-sandbox", env=env)
    records = gate_records(vault)
    assert records[-1]["sandbox"] == "none" or records[-2]["sandbox"] == "none"
    if unsafe.code == 0:  # a non-root user can run without a sandbox
        assert "Gitvault-Sandbox: none" in gv.git("log", "-1", "--format=%B")
    else:  # as root, the skill could only run as root: refused, never run as root
        assert "could not start" in unsafe.err


def test_verify_one_and_all(gv: Runner, vault: Path, tmp_path: Path) -> None:
    assert create(gv, tmp_path, "slugify").code == 0
    one = gv.ok("skill", "verify", "slugify", "--json").json()
    assert one["passed"] is True and one["results"][0]["name"] == "slugify"
    (vault / "skills" / "slugify" / "test_skill.py").write_text(TESTS + "assert False\n")
    every = gv("skill", "verify", "--all", "--json")
    assert every.code == 1 and every.json()["passed"] is False
    assert every.json()["results"][0]["reasons"] == [
        "tests: test_skill.py:4: a test failed: AssertionError (an assert is false)"]
    assert gv("skill", "verify").code == 2
    assert [r["op"] for r in gate_records(vault)] == ["verify", "store", "verify", "verify"]


def test_patch_gates_the_new_version(gv: Runner, vault: Path, tmp_path: Path) -> None:
    assert create(gv, tmp_path, "slugify").code == 0
    good = SKILL + "\n\ndef shout(text):\n    return text.upper()\n"
    ok = gv("skill", "patch", "slugify", *write(tmp_path / "v2", code=good), "--json")
    assert ok.code == 0, ok.err
    assert ok.json()["skill"]["version"] == 2
    assert (vault / "skills" / "slugify" / "skill.py").read_text() == good
    bad = gv("skill", "patch", "slugify", *write(tmp_path / "v3", tests="assert 1 == 2\n"))
    assert bad.code == 1 and "tests: test_skill.py:1" in bad.err
    assert gv.ok("skill", "show", "slugify", "--json").json()["version"] == 2
    assert (vault / "skills" / "slugify" / "skill.py").read_text() == good


def test_tool_protocol_with_code_strings(gv: Runner, vault: Path) -> None:
    request = {"action": "create", "name": "slugify", "trigger": "slugs", "kind": "code",
               "code": SKILL, "tests": TESTS, "example": EXAMPLE}
    answer = gv("tool", json.dumps(request))
    assert answer.code == 0, answer.err
    assert answer.json()["status"] == "created"
    assert (vault / "skills" / "slugify" / "example.py").read_text() == EXAMPLE
    bad = gv("tool", json.dumps({**request, "name": "evil",
                                 "code": "def f():\n    return eval('1')\n"}))
    assert bad.code == 1
    assert bad.json()["error"]["code"] == "check_failed"
    assert "dynamic-code: skill.py:2" in bad.json()["error"]["message"]
    wrong = gv("tool", json.dumps({"action": "create", "name": "p", "trigger": "t",
                                   "code": SKILL}))
    assert wrong.code == 2 and "for code skills" in wrong.json()["error"]["message"]
