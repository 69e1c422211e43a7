"""Issue 11, trust and integrity: inputs are capped, torn lines are moved aside, a
killed skill command leaves nothing half done, symlinks are never followed."""

from __future__ import annotations

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
