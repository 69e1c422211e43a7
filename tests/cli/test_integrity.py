"""Issue 11, trust and integrity: inputs are capped, torn lines are moved aside, a
killed skill command leaves nothing half done, symlinks are never followed."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.conftest import Runner, snapshot


# -- inputs are capped ------------------------------------------------------------------
def test_file_from_dev_zero_is_refused_with_the_limit(gv: Runner, vault: Path) -> None:
    before = snapshot(vault)
    result = gv("skill", "create", "big", "--description", "d", "--file", "/dev/zero")
    assert result.code == 2
    assert result.err_lines == ["gitvault: error: /dev/zero: more than 1 MiB, the limit "
                                "for one input"]
    assert "MemoryError" not in result.err
    assert snapshot(vault) == before


def test_stdin_over_the_limit_is_refused(gv: Runner, vault: Path) -> None:
    before = snapshot(vault)
    result = gv("skill", "patch", "big", "--description", "d", "-", input=b"a" * (1 << 20) + b"b")
    assert result.code == 2
    assert "stdin: more than 1 MiB" in result.err
    assert snapshot(vault) == before
    # exactly the limit is fine
    gv.ok("skill", "create", "big", "--description", "d", "-", input=b"a" * (1 << 20))
    assert gv.ok("skill", "show", "big", "--json").json()["content"] == "a" * (1 << 20) + "\n"


# -- a torn line never blocks a commit ----------------------------------------------------
RUN = ["record-run", "--agent", "a", "--skill", "s", "--task", "t", "--result", "success",
       "--score", "1"]
NOW = {"GITVAULT_NOW": "2026-01-05T10:00:00Z"}


def _log(vault: Path) -> Path:
    return vault / "logs" / "runs" / "2026-01" / "test-node.jsonl"


def test_a_torn_tail_is_moved_aside_and_the_next_commit_goes_through(gv: Runner,
                                                                   vault: Path) -> None:
    gv.ok(*RUN, env=NOW)
    gv.ok("commit", env=NOW)
    torn = b'{"id":"01J","ts":"2026-01-05T10:00:01Z","agent":"a","sk'
    with open(_log(vault), "ab") as fh:  # what a writer killed mid-line leaves
        fh.write(torn)
    gv.ok(*RUN, env=NOW)
    data = _log(vault).read_bytes()
    assert torn not in data and b"\n\n" not in data
    aside = _log(vault).with_name("test-node.jsonl.torn")
    assert aside.read_bytes() == torn + b"\n"  # kept, byte for byte
    result = gv.ok("commit", env=NOW)
    assert "1 record" in result.out + result.err
    assert gv.git("status", "--porcelain", "-uall") == ""  # the .torn file is ignored
    assert gv.git("check-ignore", "logs/runs/2026-01/test-node.jsonl.torn").strip()
    assert gv("doctor").code == 0
    runs = gv.ok("health", "--json").json()["skills"]["s"]["runs"]
    assert runs == 2


def test_a_crash_tail_alone_never_blocks_gitvault_commit(gv: Runner, vault: Path) -> None:
    gv.ok(*RUN, env=NOW)
    with open(_log(vault), "ab") as fh:
        fh.write(b'{"id":"01J","ts":"2026-01-05T10:00:01Z"')
    result = gv("commit", env=NOW)
    assert result.code == 0, result.err
    assert gv.git("show", "HEAD:logs/runs/2026-01/test-node.jsonl").count("\n") == 1
    assert gv.git("status", "--porcelain", "-uall") == ""


def test_bad_pending_lines_block_the_hook_until_doctor_repair(gv: Runner, vault: Path) -> None:
    gv.ok(*RUN, env=NOW)
    gv.ok("commit", env=NOW)
    # what the old "repair" made of a torn line, then a blank line, then a good record
    with open(_log(vault), "ab") as fh:
        fh.write(b'{"id":"01J","ts":"2026-01-05T10:00:01Z","a":\n\n')
    gv.ok(*RUN, env=NOW)
    refused = gv("commit", env=NOW)
    assert refused.code != 0
    assert "logs/runs/2026-01/test-node.jsonl:3: a blank line ('gitvault doctor --repair' " \
        "moves it aside, kept)" in refused.err

    report = gv("doctor", "--json")
    assert report.code == 1
    found = {p["path"]: p["message"] for p in report.json()["problems"]}
    assert set(found) == {"logs/runs/2026-01/test-node.jsonl:2",
                          "logs/runs/2026-01/test-node.jsonl:3"}
    assert found["logs/runs/2026-01/test-node.jsonl:3"] == "blank line"

    repaired = gv("doctor", "--repair", "--json")
    assert repaired.code == 0, repaired.out
    messages = sorted(p["message"] for p in repaired.json()["problems"])
    assert messages == ["blank line; removed", "invalid JSON: Expecting value; moved to "
                        "logs/runs/2026-01/test-node.jsonl.torn"]
    aside = _log(vault).with_name("test-node.jsonl.torn")
    assert aside.read_bytes() == b'{"id":"01J","ts":"2026-01-05T10:00:01Z","a":\n'
    gv.ok("commit", env=NOW)
    assert gv("doctor").code == 0
    assert gv.ok("health", "--json").json()["skills"]["s"]["runs"] == 2
    assert gv.git("status", "--porcelain", "-uall") == ""


SLOW_WRITER = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
line = b'{"id":"01SLOW","ts":"2026-01-05T10:00:02Z","agent":"slow","skill":"s","task":"t",' \
       b'"result":"success","score":1,"notes":"' + b"x" * 40 + b'"}\n'
for i in range(0, len(line), 8):  # a writer that takes no lock, copying its line slowly
    os.write(fd, line[i:i + 8])
    time.sleep(0.03)
"""


def test_a_line_still_being_written_is_not_moved_aside(gv: Runner, vault: Path) -> None:
    import subprocess
    import sys

    gv.ok(*RUN, env=NOW)
    writer = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(_log(vault))])
    try:
        time.sleep(0.1)  # the slow line is half there: the tail looks torn
        assert not _log(vault).read_bytes().endswith(b"\n")
        gv.ok(*RUN, env=NOW)
    finally:
        assert writer.wait(timeout=60) == 0
    assert not _log(vault).with_name("test-node.jsonl.torn").exists()
    lines = _log(vault).read_bytes().split(b"\n")
    assert any(b'"agent":"slow"' in line and line.endswith(b"}") for line in lines)
    assert gv("doctor").code == 0


# -- symlinks are never followed ----------------------------------------------------------
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- top secret"


def _outside(tmp_path: Path) -> Path:
    """A skill folder outside the vault, with a private key next to it."""
    other = tmp_path / "elsewhere" / "evil"
    other.mkdir(parents=True)
    (other / "SKILL.md").write_text(
        "---\nname: evil\ndescription: deploy the docker image\nmetadata:\n  version: '1'\n"
        f"---\nDeploy the docker image. {SECRET}\n", "utf-8")
    (tmp_path / "elsewhere" / "id_rsa").write_text(SECRET + "\n", "utf-8")
    return other


def test_a_symlinked_skill_folder_is_skipped_refused_and_reported(
        gv: Runner, vault: Path, tmp_path: Path) -> None:
    gv.ok("skill", "create", "deploy", "--description", "deploy the docker image",
          "--content", "Run docker push.")
    other = _outside(tmp_path)
    (vault / "skills" / "evil").symlink_to(other)
    outside_before = (other / "SKILL.md").read_bytes()

    context = gv("context", "deploy the docker image", env=NOW)
    assert context.code == 0, context.err
    assert SECRET not in context.out and "evil" not in context.out
    assert "skills/evil: is a symlink" in context.err
    search = gv.ok("search", "docker", "--json")
    assert [r["name"] for r in search.json()["results"]] == ["deploy"]
    assert any("skills/evil: is a symlink" in w for w in search.json()["warnings"])
    listing = gv.ok("skill", "list", "--json").json()
    assert [s["name"] for s in listing["skills"]] == ["deploy"]
    assert any("skills/evil: is a symlink" in w for w in listing["warnings"])

    head = gv.git("rev-parse", "HEAD")
    patch = gv("skill", "patch", "evil", "--content", "overwritten")
    assert patch.code == 2
    assert patch.err_lines == ["gitvault: error: skills/evil: is a symlink; gitvault never "
                               "follows symlinks under skills/ or logs/ (refused, nothing "
                               "written)"]
    assert (other / "SKILL.md").read_bytes() == outside_before
    assert gv.git("rev-parse", "HEAD") == head

    doctor = gv("doctor", "--json")
    assert doctor.code == 1
    assert [p["path"] for p in doctor.json()["problems"]] == ["skills/evil"]
    assert "symlink" in doctor.json()["problems"][0]["message"]

    gv.git("add", "skills/evil")
    commit = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                             "-m", "sneak a link in"], cwd=vault,
                            env=gv.env, capture_output=True, text=True)
    assert commit.returncode != 0
    assert "skills/evil: a symlink; gitvault never follows symlinks" in commit.stderr
    assert gv.git("rev-parse", "HEAD") == head


def test_a_symlinked_skill_file_is_never_read_into_context(
        gv: Runner, vault: Path, tmp_path: Path) -> None:
    _outside(tmp_path)
    folder = vault / "skills" / "helper"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: helper\ndescription: parse the docker config\nmetadata:\n"
        "  version: '1'\n  kind: code\n---\nParse the docker config.\n", "utf-8")
    (folder / "skill.py").symlink_to(tmp_path / "elsewhere" / "id_rsa")
    linked = vault / "skills" / "linked"
    linked.mkdir()
    (linked / "SKILL.md").symlink_to(tmp_path / "elsewhere" / "evil" / "SKILL.md")

    context = gv("context", "parse the docker config", "--json", env=NOW)
    assert context.code == 0, context.err
    assert SECRET not in context.out
    assert "helper" not in [s["name"] for s in context.json()["skills"]]
    warnings = " ".join(context.json().get("warnings", []))
    assert "skills/helper/skill.py: is a symlink" in warnings
    assert "skills/linked/SKILL.md: is a symlink" in warnings
    assert gv("skill", "patch", "helper", "--content", "x").code == 2
    assert gv("skill", "show", "linked").code == 2
    doctor = gv("doctor", "--json")
    assert doctor.code == 1
    assert {p["path"] for p in doctor.json()["problems"]} == {"skills/helper/skill.py",
                                                              "skills/linked/SKILL.md"}


def test_a_symlinked_log_folder_is_neither_written_nor_read(
        gv: Runner, vault: Path, tmp_path: Path) -> None:
    december = {"GITVAULT_NOW": "2026-12-05T10:00:00Z"}
    gv.ok(*RUN, env=december)  # a real line in logs/runs/2026-12/
    outside = tmp_path / "elsewhere-logs"
    (vault / "logs" / "runs" / "2026-12").rename(outside)
    (vault / "logs" / "runs" / "2026-12").symlink_to(outside)
    before = (outside / "test-node.jsonl").read_bytes()

    result = gv(*RUN, env=december)
    assert result.code == 2
    assert result.err_lines == ["gitvault: error: logs/runs/2026-12: is a symlink; gitvault "
                                "never follows symlinks under skills/ or logs/"]
    assert (outside / "test-node.jsonl").read_bytes() == before

    health = gv("health", "--json", env=december)
    assert health.code == 0
    assert health.json()["skills"] == {}
    assert "gitvault: warning: logs/runs/2026-12:0: a symlink: skipped" in health.err
    doctor = gv("doctor", "--json")
    assert doctor.code == 1
    assert [p["path"] for p in doctor.json()["problems"]] == ["logs/runs/2026-12"]


# -- a killed skill command leaves nothing half done -------------------------------------------
SKILL_OPS = ("create", "patch", "rollback", "archive", "restore", "lifecycle")


def _event_commits(vault: Path) -> set[str]:
    import json

    found = set()
    for path in (vault / "logs" / "events").rglob("*.jsonl"):
        for line in path.read_bytes().split(b"\n")[:-1]:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("op") in SKILL_OPS:
                found.add(record.get("commit"))
    return found


def _skill_commits(gv: Runner) -> list[tuple[str, str]]:
    """(sha, "op skill vN") of every commit with gitvault's skill trailers."""
    out = gv.git("log", "--format=%H %(trailers:key=Gitvault-Op,valueonly,separator=)"
                 " %(trailers:key=Gitvault-Skill,valueonly,separator=)"
                 " %(trailers:key=Gitvault-Version,valueonly,separator=)")
    commits = []
    for line in out.splitlines():
        sha, op, skill, version = [*line.split(" "), "", "", ""][:4]
        if op in SKILL_OPS:
            commits.append((sha, f"{op} {skill} v{version}"))
    return commits


def _consistent(gv: Runner, vault: Path) -> None:
    """Every committed version has its events record, once; nothing is half staged."""
    assert gv.git("status", "--porcelain", "-uall", "--", "skills") == ""
    have = _event_commits(vault)
    missing = [what for sha, what in _skill_commits(gv) if sha not in have]
    assert missing == []
    assert not (vault / ".git" / "gitvault" / "skill-op.json").exists()


def _killed(gv: Runner, args: list[str], delay: float) -> None:
    """Run gitvault, SIGKILL it after ``delay`` seconds, wait for what it started (a git
    child finishes on its own) to end."""
    import os
    import signal
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "gitvault", *args], cwd=gv.cwd, env=gv.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.005)
    raise AssertionError("a child of the killed command did not end")


def test_sigkill_at_any_moment_of_a_skill_write_leaves_nothing_half_done(
        gv: Runner, vault: Path) -> None:
    import random

    gv.ok("skill", "create", "foo", "--description", "d", "--content", "v1")
    started = time.monotonic()  # the killed commands are processes: time one as a process
    gv.process().ok("skill", "patch", "foo", "--content", "timing")
    duration = time.monotonic() - started
    rng = random.Random(11)
    archived = False
    recovered = 0
    for attempt in range(40):
        if attempt % 5 == 3:
            args = ["skill", "patch" if archived else "archive", "foo"]
            if archived:
                args += ["--content", f"back {attempt}"]
            archived = not archived
        elif attempt % 5 == 1:
            args = ["skill", "create", f"new-{attempt}", "--description", "d",
                    "--content", f"made {attempt}"]
        else:
            args = ["skill", "patch", "foo", "--content", f"try {attempt}"]
        _killed(gv, args, rng.uniform(0.3, 1.05) * duration)
        if attempt % 2:  # the next skill command finishes or undoes it
            follow = gv("skill", "patch", "foo", "--content", f"after {attempt}")
            if follow.code != 0:  # git itself was killed holding index.lock
                assert "index.lock" in follow.err, follow.err
                gv.ok("doctor", "--repair")
                follow = gv.ok("skill", "patch", "foo", "--content", f"after {attempt}")
            recovered += "was interrupted" in follow.err
        else:
            repaired = gv("doctor", "--repair", "--json")
            assert repaired.code == 0, repaired.out + repaired.err
            recovered += "was interrupted" in repaired.out
        archived = (vault / "skills" / ".archive" / "foo").exists()
        _consistent(gv, vault)
    assert recovered, "no kill landed inside a write: the test exercised nothing"
    assert gv("doctor").code == 0
    versions = [v["version"] for v in gv.ok("skill", "log", "foo", "--json").json()["versions"]]
    assert versions == sorted(set(versions), reverse=True)  # unique, newest first


def test_doctor_finds_a_staged_leftover_and_a_commit_without_its_record(
        gv: Runner, vault: Path) -> None:
    gv.ok("skill", "create", "foo", "--description", "d", "--content", "v1")
    gv.ok("commit")
    gv.ok("skill", "patch", "foo", "--content", "v2")
    events = next((vault / "logs" / "events").rglob("*.jsonl"))
    committed = gv.git("show", f"HEAD:{events.relative_to(vault).as_posix()}").encode()
    events.write_bytes(committed)  # as if killed between the commit and the record
    skill_md = vault / "skills" / "foo" / "SKILL.md"
    skill_md.write_text(skill_md.read_text("utf-8").replace("version: '2'", "version: '3'"),
                        "utf-8")
    gv.git("add", "skills/foo/SKILL.md")  # a bump staged, never committed
    sha = gv.git("rev-parse", "HEAD").strip()

    report = gv("doctor", "--json")
    assert report.code == 1
    found = [(p["path"], p["message"]) for p in report.json()["problems"]]
    assert found == [("skills/foo/SKILL.md", "staged but not committed"),
                     ("skills/foo", f"v2 (patch, commit {sha[:12]}) has no events record")]

    repaired = gv("doctor", "--repair", "--json")
    assert repaired.code == 0, repaired.out
    assert all(p["repaired"] for p in repaired.json()["problems"])
    assert gv.git("diff", "--cached", "--name-only") == ""
    assert "version: '3'" in skill_md.read_text("utf-8")  # the work tree keeps the change
    assert sha in _event_commits(vault)
    again = gv("doctor", "--repair", "--json")  # idempotent: nothing appended twice
    assert [p["path"] for p in again.json()["problems"]] == []
    assert len(events.read_bytes().splitlines()) == 2  # create (committed), patch (again)
