"""``gitvault sync`` against real remotes: transports, the first push, summaries,
skill conflicts, rescue refs, the secret scan, a push that keeps being refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Runner, isolated_env
from tests.sync.helpers import (
    Fleet,
    assert_no_markers,
    fake_ssh,
    git,
    git_daemon,
    record_ids,
    records,
    skill_files,
)


def _exchange(fleet: Fleet) -> None:
    fleet.add("node-1")
    fleet.gv("node-0").ok("record-run", "--agent", "a", "--skill", "s", "--task", "t",
                          "--result", "success", "--score", "1")
    fleet.gv("node-1").ok("skill", "create", "deploy", "--description", "Deploy it",
                          "--content", "step 1")
    out = fleet.sync("node-1")
    assert out["pushed"] and out["out"] == {"skills": 1, "versions": 1, "records": 1}
    got = fleet.sync("node-0")
    assert got["pushed"] and got["in"]["versions"] == 1 and got["out"]["records"] == 1
    fleet.converge()
    a, b = fleet.clones.values()
    assert sorted(record_ids(a)) == sorted(record_ids(b))
    assert len(record_ids(a)) == 2
    assert skill_files(a) == skill_files(b)


def test_sync_over_a_bare_path_and_file_url(tmp_path: Path) -> None:
    _exchange(Fleet(tmp_path / "path"))
    _exchange(Fleet(tmp_path / "url", url=f"file://{tmp_path / 'url' / 'remote.git'}"))


def test_sync_over_git_daemon(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    with git_daemon(tmp_path, env) as base:  # the remote is looked up per connection
        _exchange(Fleet(tmp_path, url=base + "remote.git", env=env))


def test_sync_over_an_ssh_style_remote(tmp_path: Path) -> None:
    env = {**isolated_env(tmp_path), **fake_ssh(tmp_path)}
    _exchange(Fleet(tmp_path, url=f"ssh://vault-host{tmp_path / 'remote.git'}", env=env))


def test_init_remote_then_sync_makes_the_first_push(gv: Runner, tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--bare", "-b", "main", "remote.git", env=gv.env)
    gv.ok("init", "v", "--remote", str(tmp_path / "remote.git"))
    gv.cwd = tmp_path / "work" / "v"
    gv.ok("record-run", "--agent", "a", "--skill", "s", "--task", "t", "--result", "fail",
          "--score", "0")
    result = gv.ok("sync")
    assert "pushed to origin/main" in result.out
    assert "out: 1 record" in result.out
    assert git(tmp_path, "--git-dir", "remote.git", "rev-parse", "main", env=gv.env) == \
        git(gv.cwd, "rev-parse", "HEAD", env=gv.env)
    again = gv.ok("sync", "--json").json()
    assert again["pushed"] is False and again["retries"] == 0


def test_sync_without_the_remote_is_bad_input(vault: Path, gv: Runner) -> None:
    result = gv("sync", "--remote", "nowhere")
    assert result.code == 2
    assert "no git remote named 'nowhere'" in result.err


def _concurrent_patch(tmp: Path, first: str) -> tuple[Fleet, dict[str, object]]:
    fleet = Fleet(tmp)
    fleet.add("node-1")
    fleet.gv("node-0").ok("skill", "create", "deploy", "--description", "Deploy it",
                          "--content", "step 1\n\nstep 2\n",
                          env={"GITVAULT_NOW": "2026-12-01T09:00:00Z"})
    fleet.converge()
    fleet.gv("node-0").ok("skill", "patch", "deploy", "--content", "step 1 (node 0)\n\nstep 2\n",
                          env={"GITVAULT_NOW": "2026-12-01T10:00:00Z"})
    fleet.gv("node-1").ok("skill", "patch", "deploy", "--content", "step 1\n\nstep 2 (node 1)\n",
                          env={"GITVAULT_NOW": "2026-12-01T10:00:05Z"})
    second = "node-1" if first == "node-0" else "node-0"
    fleet.sync(first)
    result = fleet.sync(second)
    fleet.converge()
    return fleet, result


@pytest.mark.parametrize("first", ["node-0", "node-1"])
def test_a_skill_patched_on_two_nodes_resolves_the_same_whoever_merges(
        tmp_path: Path, first: str) -> None:
    fleet, result = _concurrent_patch(tmp_path / "a", first)
    assert result["pushed"] and len(result["conflicts"]) == 1
    conflict = result["conflicts"][0]
    assert conflict["skill"] == "deploy" and conflict["version"] == 3
    assert conflict["winner"]["node"] == "node-1"  # the later `updated`
    a, b = fleet.clones.values()
    assert skill_files(a) == skill_files(b)
    text = (a / "skills" / "deploy" / "SKILL.md").read_text()
    assert "version: '3'" in text and "step 2 (node 1)" in text and "(node 0)" not in text
    for root in (a, b):
        assert_no_markers(root)
    logs = [[{k: v for k, v in entry.items() if k != "urn"}  # urn: scope = folder name
             for entry in fleet.gv(n).ok("skill", "log", "deploy", "--json").json()["versions"]]
            for n in fleet.clones]
    assert logs[0] == logs[1]
    assert [v["version"] for v in logs[0]] == [3, 2, 1]
    assert logs[0][0]["op"] == "conflict"
    events = [r for r in records(a, "events") if r.get("op") == "conflict"]
    assert {tuple(sorted(e["sides"])) for e in events} == {("node-0", "node-1")}
    both_v2 = git(a, "log", "--all", "--format=%H", "--grep=patch deploy v2")
    assert len(both_v2.split()) == 2  # both versions stay in history
    for ref in ("deploy@v2", "deploy@v3"):
        assert fleet.gv("node-0").ok("skill", "show", ref, "--json").json()["version"] == \
            int(ref[-1])
    # the same blob whichever node merged
    other, _ = _concurrent_patch(tmp_path / "b", "node-1" if first == "node-0" else "node-0")
    assert skill_files(next(iter(other.clones.values()))) == skill_files(a)


def test_a_plain_git_pull_of_a_concurrent_patch_is_finished_by_sync(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path)
    b = fleet.add("node-1")
    fleet.gv("node-0").ok("skill", "create", "deploy", "--description", "Deploy it",
                          "--content", "one")
    fleet.converge()
    fleet.gv("node-0").ok("skill", "patch", "deploy", "--content", "two")
    fleet.sync("node-0")
    fleet.gv("node-1").ok("skill", "patch", "deploy", "--content", "three")
    pull = __import__("subprocess").run(["git", "-c", "user.name=u", "-c", "user.email=u@x",
                                         "pull", "-q", "--no-rebase", "--no-edit"],
                                        cwd=b, env=fleet.env, capture_output=True)
    assert pull.returncode != 0  # git leaves a conflict in SKILL.md
    result = fleet.sync("node-1")
    assert result["recovered"] and len(result["conflicts"]) == 1
    fleet.converge()
    assert_no_markers(b)
    assert skill_files(b) == skill_files(fleet.clones["node-0"])


def test_what_cannot_merge_is_rescued(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path)
    b = fleet.add("node-1")
    a = fleet.clones["node-0"]
    for root, value in ((a, "alpha"), (b, "beta")):
        config = root / "gitvault.yaml"
        config.write_text(config.read_text().replace("scope: null", f"scope: {value}", 1)
                          if "scope: null" in config.read_text()
                          else config.read_text() + f"# {value}\n")
        git(root, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qam", value,
            "--no-verify", env=fleet.env)
    fleet.gv("node-1").ok("record-run", "--agent", "a", "--skill", "s", "--task", "t",
                          "--result", "success", "--score", "1")
    fleet.sync("node-0")
    result = fleet.sync("node-1")
    assert result["pushed"] and len(result["rescued"]) == 1
    kept = result["rescued"][0]
    assert kept["ref"].startswith("refs/gitvault/rescue/node-1/") and \
        kept["paths"] == ["gitvault.yaml"]
    assert "beta" in git(b, "show", f"{kept['ref']}:gitvault.yaml")
    assert (b / "gitvault.yaml").read_text() == (a / "gitvault.yaml").read_text()
    assert_no_markers(b)
    fleet.converge()
    assert len(record_ids(a)) == 1


def test_outgoing_secrets_are_refused_and_nothing_is_pushed(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path)
    token = "ghp_" + "a1B2" * 10
    fleet.gv("node-0").ok("skill", "create", "leaky", "--description", "Leaks",
                          "--content", f"first line\nexport GH={token}\n")
    before = git(fleet.bare, "rev-parse", "main")
    result = fleet.gv("node-0")("sync")
    assert result.code == 1
    assert "skills/leaky/SKILL.md:" in result.err and "GitHub token" in result.err
    assert token not in result.err + result.out
    assert git(fleet.bare, "rev-parse", "main") == before


def test_a_remote_branch_left_locked_is_named_when_sync_gives_up(tmp_path: Path) -> None:
    """A push that crashed on the remote leaves its ref's lock file there: every later
    push is refused. Sync retries as for a race, then says which file blocks it."""
    fleet = Fleet(tmp_path)
    gv = fleet.gv("node-0")
    gv.ok("record-run", "--agent", "a", "--skill", "s", "--task", "t", "--result",
          "success", "--score", "1")
    gv.ok("sync")
    lock = fleet.bare / "refs" / "heads" / "main.lock"
    lock.write_text("")
    gv.ok("record-run", "--agent", "a", "--skill", "s", "--task", "t2", "--result",
          "success", "--score", "1")
    before = git(fleet.bare, "rev-parse", "main")
    result = gv("sync", env={"GITVAULT_SYNC_TIMEOUT_S": "0.3"})
    assert result.code == 3
    assert "main.lock exists; if no push is running there, a push that crashed left it: " \
           "remove it" in result.err and str(fleet.bare) in result.err
    assert git(fleet.bare, "rev-parse", "main") == before
    lock.unlink()
    assert gv.ok("sync", "--json").json()["out"]["records"] == 1


def test_a_push_refused_until_the_cap_is_exit_3_and_loses_nothing(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path)
    hook = fleet.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho busy >&2\nexit 1\n")
    hook.chmod(0o755)
    gv = fleet.gv("node-0")
    gv.ok("record-run", "--agent", "a", "--skill", "s", "--task", "t", "--result",
          "success", "--score", "1")
    result = gv("sync", "--json", env={"GITVAULT_SYNC_TIMEOUT_S": "0.3"})
    assert result.code == 3 and "sync gave up after" in result.err
    assert result.json()["error"]["code"] == "conflict"
    hook.unlink()
    assert gv.ok("sync", "--json").json()["out"]["records"] == 1


@pytest.mark.parametrize("same_pr", [True, False])
def test_a_start_on_two_nodes_succeeds_on_one(tmp_path: Path, same_pr: bool) -> None:
    fleet = Fleet(tmp_path)
    fleet.add("node-1")
    a, b = fleet.gv("node-0"), fleet.gv("node-1")
    first = a.ok("enqueue", "--task", "fix the build", "--files", "repo:ci.yml",
                 "--json").json()["pr"]["id"]
    second = first if same_pr else a.ok("enqueue", "--task", "tune the build", "--files",
                                        "repo:ci.yml", "--json").json()["pr"]["id"]
    fleet.converge()
    a.ok("start", first)
    b.ok("start", second)  # both succeed locally: neither has seen the other's
    assert fleet.sync("node-0")["lostStarts"] == []
    lost = fleet.sync("node-1")["lostStarts"]
    assert [entry["pr"] for entry in lost] == [second]
    fleet.converge()
    for gv in (a, b):
        stats = gv.ok("stats", "--json").json()
        assert stats["activeLocks"] == 1
        assert stats["byStatus"].get("running") == 1
    answer = [r for r in records(fleet.clones["node-1"], "queue") if r.get("lostStart")]
    assert len(answer) == 1 and answer[0]["result"] == "lost_start_race"
    assert answer[0]["status"] == ("running" if same_pr else "queued")
    assert fleet.sync("node-1")["lostStarts"] == []  # answered once


def test_a_log_file_appended_on_both_sides_union_merges_whole_records(tmp_path: Path) -> None:
    """Another program's file under logs/ (or one node id on two clones) grows on both
    sides: the union merge keeps every record once, no line spliced into another."""
    fleet = Fleet(tmp_path)
    fleet.add("node-1")
    shared = Path("logs") / "runs" / "2026-12" / "importer.jsonl"

    def line(n: int) -> str:
        return json.dumps({"id": f"r{n}", "ts": f"2026-12-01T10:00:{n:02d}Z", "agent": "a",
                           "skill": "s", "task": "t", "result": "success", "score": 1,
                           "node": "importer"}) + "\n"

    for root in fleet.clones.values():
        (root / shared).parent.mkdir(parents=True, exist_ok=True)
        (root / shared).write_text(line(0))
    fleet.sync("node-0")
    fleet.converge()
    for offset, root in enumerate(fleet.clones.values()):
        with open(root / shared, "a") as fh:
            fh.write(line(1 + offset) + line(3 + offset) + line(0))  # r0 again: a copy
    fleet.sync("node-0")
    fleet.sync("node-1")
    fleet.converge()
    for root in fleet.clones.values():
        ids = record_ids(root)  # every line parses: nothing spliced
        assert sorted(set(ids)) == ["r0", "r1", "r2", "r3", "r4"]
        assert sorted(r["id"] for r in records(root, "runs")) == ["r0", "r1", "r2", "r3", "r4"]
        assert_no_markers(root)


def test_a_hand_resolved_git_pull_is_made_a_new_version_by_sync(tmp_path: Path) -> None:
    """A user's git pull conflicts (the `updated` lines differ), the user resolves it by
    hand and commits a third text still called v2; the next sync writes the resolution
    as v3 on top (nothing rewritten) and skill log lists each version once."""
    import subprocess

    fleet = Fleet(tmp_path)
    b = fleet.add("node-1")
    fleet.gv("node-0").ok("skill", "create", "deploy", "--description", "Deploy it",
                          "--content", "top\n\n\n\n\n\nbottom\n")
    fleet.converge()
    fleet.gv("node-0").ok("skill", "patch", "deploy", "--content",
                          "top (0)\n\n\n\n\n\nbottom\n", env={"GITVAULT_NOW": "2026-12-01T11:00:00Z"})
    fleet.sync("node-0")
    fleet.gv("node-1").ok("skill", "patch", "deploy", "--content",
                          "top\n\n\n\n\n\nbottom (1)\n", env={"GITVAULT_NOW": "2026-12-01T11:00:09Z"})
    user = ["-c", "user.name=u", "-c", "user.email=u@x"]
    pull = subprocess.run(["git", *user, "pull", "-q", "--no-rebase", "--no-edit"], cwd=b,
                          env=fleet.env, capture_output=True)
    assert pull.returncode == 1
    skill_md = b / "skills" / "deploy" / "SKILL.md"
    mine = subprocess.run(["git", "show", ":2:skills/deploy/SKILL.md"], cwd=b, env=fleet.env,
                          capture_output=True, check=True).stdout.decode()
    skill_md.write_text(mine.replace("top\n", "top (0)\n"))  # both edits, by hand
    subprocess.run(["git", *user, "commit", "-qam", "merge by hand", "--no-verify"], cwd=b,
                   env=fleet.env, check=True)
    result = fleet.sync("node-1")
    assert [c["version"] for c in result["conflicts"]] == [3]
    fleet.converge()
    text = skill_md.read_text()
    assert "version: '3'" in text and "bottom (1)" in text and "top (0)" not in text
    versions = fleet.gv("node-0").ok("skill", "log", "deploy", "--json").json()["versions"]
    assert [v["version"] for v in versions] == [3, 2, 1]
    assert skill_files(b) == skill_files(fleet.clones["node-0"])


def test_a_secret_committed_then_removed_is_still_refused(tmp_path: Path) -> None:
    """The push sends every commit, not only the tip: a secret that an intermediate
    commit holds goes out even when a later commit removed it."""
    fleet = Fleet(tmp_path)
    token = "ghp_" + "c3D4" * 10
    gv = fleet.gv("node-0")
    gv.ok("skill", "create", "leaky", "--description", "Leaks",
          "--content", f"first line\nexport GH={token}\n")
    gv.ok("skill", "patch", "leaky", "--content", "clean now")
    before = git(fleet.bare, "rev-parse", "main")
    result = gv("sync")
    assert result.code == 1
    assert "skills/leaky/SKILL.md:" in result.err and "GitHub token" in result.err
    assert token not in result.err + result.out
    assert git(fleet.bare, "rev-parse", "main") == before
    assert token not in git(fleet.bare, "log", "-p", "--all")


def test_a_gate_record_forged_under_this_nodes_id_is_no_evidence(tmp_path: Path) -> None:
    """A remote writes a code skill and a passing gate record claiming to be this node
    (logs/gate/.../node-0.jsonl): node-0 never gated anything here, yet must not serve
    the code; its post-merge hook gates it (and refuses it)."""
    from tests.cli.test_code_trust import EVIL, write_forged_code_skill

    fleet = Fleet(tmp_path)
    b = fleet.add("node-1")
    write_forged_code_skill(b, EVIL, "node-0", "node-0")
    ident = ("-c", "user.name=u", "-c", "user.email=u@x")
    git(b, "add", "-A", env=fleet.env)
    git(b, *ident, "commit", "-qm", "add slugify", "--no-verify", env=fleet.env)
    git(b, "push", "-q", "origin", "HEAD:main", env=fleet.env)
    synced = fleet.gv("node-0").ok("sync")
    # what the post-merge hook did reaches the user: the gate refused the pulled code
    assert "post-merge: gated slugify v1: REFUSED" in synced.err
    gv = fleet.gv("node-0")
    context = gv.ok("context", "make a URL slug", "--json").json()
    assert "os.system" not in context["text"]
    assert "slugify" not in [s["name"] for s in context["skills"]]
    listed = gv.ok("skill", "list", "--json").json()["skills"]
    assert {s["name"]: s["state"] for s in listed}["slugify"] == "unverified"


def test_a_conflict_winner_with_a_symlinked_skill_md_reads_nothing_outside(
        tmp_path: Path) -> None:
    """A remote wins a skill conflict (a later 'updated' in its archived copy) with
    skills/deploy/SKILL.md a symlink to a file outside the vault: resolving the conflict
    must not read that file through the link (SPEC §1) and commit its content."""
    import os
    import re

    fleet = Fleet(tmp_path)
    b = fleet.add("node-1")
    fleet.gv("node-0").ok("skill", "create", "deploy", "--description", "Deploy it",
                          "--content", "step 1")
    fleet.sync("node-0")
    fleet.sync("node-1")
    fleet.gv("node-0").ok("skill", "patch", "deploy", "--content", "zero")
    src = b / "skills" / "deploy" / "SKILL.md"
    text = re.sub(r"updated: .*", "updated: '2099-01-01T00:00:00Z'",
                  src.read_text().replace("version: '1'", "version: '7'"))
    outside = tmp_path / "outside.md"
    outside.write_text(text.replace("step 1", "OUTSIDE CONTENT"))
    (b / "skills" / ".archive" / "deploy").mkdir(parents=True)
    (b / "skills" / ".archive" / "deploy" / "SKILL.md").write_text(text)
    src.unlink()
    os.symlink(outside, src)
    ident = ("-c", "user.name=u", "-c", "user.email=u@x")
    git(b, "add", "-A", env=fleet.env)
    git(b, *ident, "commit", "-qm", "evil", "--no-verify", env=fleet.env)
    git(b, "push", "-q", "origin", "HEAD:main", env=fleet.env)
    a = fleet.clones["node-0"]
    fleet.sync("node-0")
    assert "OUTSIDE CONTENT" not in git(a, "show", "HEAD:skills/deploy/SKILL.md")
    assert "OUTSIDE CONTENT" not in git(fleet.bare, "log", "-p", "-m", "--all")
    assert fleet.gv("node-0")("sync").code == 0


def test_a_torn_line_a_remote_committed_in_this_nodes_log_never_blocks_a_sync(
        tmp_path: Path) -> None:
    """A careless or hostile node commits an unterminated last line in node-0's own log
    file. node-0's next append moves that tail aside as a crash's tear; the commit must
    keep the committed line (logs are append-only) rather than be refused for ever."""
    fleet = Fleet(tmp_path)
    b = fleet.add("node-1")
    gv = fleet.gv("node-0")
    run = ("record-run", "--agent", "a", "--skill", "s", "--result", "success", "--score", "1")
    gv.ok(*run, "--task", "t1")
    fleet.sync("node-0")
    fleet.sync("node-1")
    log = next((b / "logs" / "runs").rglob("node-0.jsonl"))
    with open(log, "ab") as handle:
        handle.write(b'{"id": "zz", "ts": "2026-12-01T00:00:00Z"')
    ident = ("-c", "user.name=u", "-c", "user.email=u@x")
    git(b, *ident, "commit", "-qam", "torn", "--no-verify", env=fleet.env)
    git(b, "push", "-q", "origin", "HEAD:main", env=fleet.env)
    fleet.sync("node-0")
    gv.ok(*run, "--task", "t2")
    assert fleet.sync("node-0")["pushed"]
    gv.ok(*run, "--task", "t3")
    assert fleet.sync("node-0")["pushed"]
    tasks = [r["task"] for r in records(fleet.clones["node-0"], "runs")]
    assert tasks == ["t1", "t2", "t3"]
    assert git(fleet.clones["node-0"], "status", "--porcelain") == ""


def test_a_conflict_record_never_follows_a_symlinked_month_folder(tmp_path: Path) -> None:
    """A merge may put a remote's symlink at logs/events/<month>: the conflict record
    sync appends there is refused rather than written where the link points (SPEC §1)."""
    import os

    import pytest

    from gitvault.core.clock import now
    from gitvault.core.paths import SymlinkRefused
    from gitvault.sync.engine import _record_conflict
    from gitvault.vault.facade import Vault

    fleet = Fleet(tmp_path)
    vault = Vault.open(fleet.clones["node-0"], "node-0")
    outside = tmp_path / "outside"
    outside.mkdir()
    month = vault.layout.log_file("events", "node-0", now()).parent
    month.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, month)
    side = {"node": "n", "version": 2, "updated": "2026-12-01T00:00:00Z", "commit": "c"}
    with pytest.raises(SymlinkRefused):
        _record_conflict(vault, {"skill": "s", "version": 3, "winner": side, "loser": side})
    assert list(outside.iterdir()) == []


def test_the_refusal_names_the_kind_of_the_secret_it_found() -> None:
    """The kind comes from the secret itself, not from a word near it ("task-runner"
    holds "sk-" yet is no OpenAI key)."""
    from gitvault.sync.secrets import kind_of

    assert kind_of("Run the task-runner with password=hunter2secret") == \
        "password or token value"
    assert kind_of("ask-user at https://bob:s3cretpw@example.com/x") == "password in a URL"
    assert kind_of("key sk-ant-api03-abcdefghijklmnop0123456789 here") == "Anthropic key"
    assert kind_of("use sk-proj0123456789abcdefghijkl now") == "OpenAI key"
    assert kind_of("token ghp_" + "a" * 36) == "GitHub token"
    assert kind_of("no secret in this line") is None


def test_a_sync_that_waits_for_another_says_so(tmp_path: Path) -> None:
    """One sync at a time in a clone; the second one waits and says so after a second
    (DESIGN: a lock that must wait says so), then goes on once the first is done."""
    import fcntl
    import os
    import threading

    fleet = Fleet(tmp_path)
    root = fleet.clones["node-0"]
    lock = root / ".git" / "gitvault" / "sync.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    threading.Timer(2.0, os.close, [fd]).start()  # the other sync ends
    result = fleet.gv("node-0", process=True)("sync")
    assert result.code == 0, result.err
    assert f"gitvault: waiting for another gitvault command to release its lock ({lock}; " \
        "giving up in " in result.err
