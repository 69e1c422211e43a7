"""One front door: the hot commands give the same output and exit code whether the
click-free path or the click CLI runs them, bad input included (SPEC §4)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from gitvault.cli.hot import COMMANDS, parse
from tests.conftest import Runner

NOW = {"GITVAULT_NOW": "2026-03-18T08:00:00.000Z"}
CLICK = "from gitvault.cli.app import main; main()"
IDS = re.compile(r"\b(pr-\d+-[0-9a-f]{8}|[0-9A-HJKMNP-TV-Z]{26})\b")


def run(env: dict[str, str], cwd: Path, args: list[str], *, click_only: bool
        ) -> tuple[int, str, str]:
    entry = ["-c", CLICK] if click_only else ["-m", "gitvault"]
    proc = subprocess.run([sys.executable, *entry, *args], capture_output=True, cwd=cwd,
                          env={**env, **NOW}, timeout=120)
    out, err = (IDS.sub("<id>", s.decode()).replace(f"{cwd}/", "<vault>/")
                for s in (proc.stdout, proc.stderr))
    return proc.returncode, out, err


def two_vaults(gv: Runner, tmp_path: Path) -> tuple[Path, Path]:
    gv.ok("init", str(tmp_path / "a"))
    shutil.copytree(tmp_path / "a", tmp_path / "b", symlinks=True)
    return tmp_path / "a", tmp_path / "b"


def pr_ids(gv: Runner, vault: Path) -> list[str]:
    import json

    out = gv("dispatch", "--max", "5", "--json", cwd=vault, env=NOW).out
    return [pr["id"] for pr in json.loads(out)["prs"]]


def test_every_hot_command_prints_the_same_on_both_paths(gv: Runner, tmp_path: Path) -> None:
    a, b = two_vaults(gv, tmp_path)
    dag_file = tmp_path / "dag.yaml"
    dag_file.write_text("dagId: d1\ntasks:\n  - {key: one, task: first}\n"
                        "  - {key: two, task: second, dependsOn: [one]}\n")
    bad_dag = tmp_path / "bad.yaml"
    bad_dag.write_text("dagId: d2\ntasks:\n  - {key: one, task: x, dependsOn: [one]}\n")
    steps: list[list[str]] = [
        ["record-run", "--skill", "s1", "--score", "0.5", "--result", "partial"],
        ["record-run", "--json", "--skill=s1", "--agent", "", "--notes", "token=abc123secret"],
        ["--json", "record-run", "--skill", "s2"],
        ["record-run", "--agent", "x"],                       # no --skill
        ["record-run", "--skill", "s1", "--json"],
        ["record-run", "--skill", "s1", "--score", "abc"],
        ["record-run", "--skill", "s1", "--score", "nan", "--json"],
        ["record-run", "--skill", "s1", "--result", "maybe"],
        ["record-run", "--skill", "s1", "--vault", str(tmp_path / "nowhere")],
        ["record-run", "--skill", "s1", "--node", "Bad Node!"],
        ["enqueue", "--task", "Fix the build", "--files", "app:a.py", "--priority", "high"],
        ["enqueue", "--task", "Fix the build", "--files", "app:a.py", "--priority", "high"],
        ["enqueue", "--task", "Other", "--priority", "urgent", "--json"],
        ["enqueue", "--json"],                                 # no task
        ["enqueue", "--task", "Later", "--depends-on", "pr-1-00000000"],
        ["dag-create", str(dag_file), "--json"],
        ["dag-create", str(bad_dag)],
        ["dag-create", str(tmp_path / "missing.yaml"), "--json"],
        ["dispatch", "--max", "3"],
        ["dispatch", "--json"],
        ["stats"], ["stats", "--json"],
        ["locks"], ["locks", "--json"], ["locks", "--release-expired", "--json"],
        ["dag", "d1"], ["dag", "d9", "--json"],
        ["start", "pr-404"], ["start", "pr-404", "--json"],
        ["complete", "pr-404", "--result", "ok"], ["fail", "pr-404", "--json"],
    ]
    for args in steps:
        assert parse(args) is not None, f"not a plain invocation: {args}"
        fast, slow = run(gv.env, a, args, click_only=False), run(gv.env, b, args, click_only=True)
        assert fast == slow, args
        assert "Traceback" not in fast[2], args
    # start, complete and fail of a real PR: ids differ between the vaults, so per vault.
    for args_of in (lambda i: ["start", i], lambda i: ["start", i, "--json"],
                    lambda i: ["complete", i, "--json"], lambda i: ["fail", i, "--reason", "r"]):
        ids_a, ids_b = pr_ids(gv, a), pr_ids(gv, b)
        assert len(ids_a) == len(ids_b)
        if not ids_a:
            break
        fast = run(gv.env, a, args_of(ids_a[0]), click_only=False)
        slow = run(gv.env, b, args_of(ids_b[0]), click_only=True)
        assert fast == slow, args_of("<id>")
    assert (a / "logs").is_dir() and run(gv.env, a, ["stats", "--json"], click_only=False) == \
        run(gv.env, b, ["stats", "--json"], click_only=True)


def test_a_machine_error_is_one_line_and_exit_2_on_both_paths(gv: Runner, tmp_path: Path) -> None:
    a, b = two_vaults(gv, tmp_path)
    for root in (a, b):  # the month folder of the runs log is a file: the write fails
        (root / "logs" / "runs").mkdir(parents=True, exist_ok=True)
        (root / "logs" / "runs" / "2026-03").write_text("in the way\n")
    args = ["record-run", "--skill", "s1", "--json"]
    fast, slow = run(gv.env, a, args, click_only=False), run(gv.env, b, args, click_only=True)
    assert fast == slow
    code, out, err = fast
    assert code == 2
    assert err.startswith("gitvault: error: ") and len(err.splitlines()) == 1
    assert err == "gitvault: error: <vault>/logs/runs/2026-03/test-node.jsonl: Not a directory\n"
    assert '"code": "os_error"' in out


def test_an_internal_error_is_exit_4_with_one_line(gv: Runner, vault: Path) -> None:
    """A bug (here: the queue's cache made unreadable as a folder) never exits 1."""
    cache = vault / ".git" / "gitvault"
    cache.mkdir(exist_ok=True)
    code = "import gitvault.cli.hot as hot\n" \
           "def boom(v, **o): raise ZeroDivisionError('planted bug')\n" \
           "hot.COMMANDS['stats'].run = boom\n" \
           "import sys; sys.argv = ['gitvault', 'stats', '--json']\n" \
           "from gitvault.cli.main import main; main()\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=vault, env=gv.env)
    assert proc.returncode == 4
    err = proc.stderr.decode()
    assert err == "gitvault: error: internal error: ZeroDivisionError: planted bug (rerun with " \
                  "GITVAULT_DEBUG=1 for the traceback)\n"
    debug = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=vault,
                           env={**gv.env, "GITVAULT_DEBUG": "1"})
    assert b"Traceback" in debug.stderr and b"planted bug" in debug.stderr


def test_the_table_is_the_click_commands(gv: Runner) -> None:
    """Every hot command's click help lists exactly the table's options."""
    for name, spec in COMMANDS.items():
        page = gv.ok(name, "--help").out
        for opt in spec.options:
            assert opt.flag in page, (name, opt.flag)
    # What the click-free parser does not fully understand goes to click.
    for args in (["enqueue", "--help"], ["enqueue", "--task", "-x"], ["dispatch", "--max", "five"],
                 ["start"], ["start", "a", "b"], ["skill", "list"], ["enqueue", "--task", "a",
                 "--task", "b"], ["--vault"], ["-h"], [], ["record-run", "--skill", "s", "--", "x"],
                 ["record-run", "--json=1"], ["record-run", "--skil", "s"]):
        assert parse(args) is None, args
    parsed = parse(["--node", "n1", "enqueue", "--task=x y", "--json"])
    assert parsed is not None and parsed[2]["task"] == "x y" and parsed[1].json


def test_ctrl_c_is_exit_130_interrupted_on_the_click_path(gv_proc: Runner, vault: Path) -> None:
    """Click turns Ctrl-C into its Abort; gitvault reports it as every path does
    ("interrupted", 130), never as exit 1, which means a check found problems."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "gitvault", "search", "-"], cwd=vault,
                            env=gv_proc.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # reading the query from stdin, which stays open
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    assert err.strip().splitlines()[-1] == "gitvault: error: interrupted"
