"""record-run and the queue commands are on agents' hot path: a well-formed call
imports neither click nor YAML nor the modules that run git (gitvault/cli/main.py).
Real processes (PYTHONPROFILEIMPORTTIME lists what one imports), never in-process,
where everything is imported already."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Runner

HEAVY = {"click", "yaml", "frontmatter", "subprocess", "msgspec", "sqlite3", "typing"}
HOT = [
    ("record-run", "--agent", "a", "--skill", "s", "--task", "t", "--result", "fail",
     "--score", "0.2", "--json"),
    ("record-run", "--skill", "s"),
    ("enqueue", "--task", "Fix", "--files", "app:a", "--dag-id", "d1", "--json"),
    ("dispatch", "--max", "3"), ("stats",), ("stats", "--json"), ("locks", "--json"),
    ("dag", "d1"), ("--node", "n2", "stats"),
]


def imported(result_err: str) -> set[str]:
    """Top-level names of the modules a process imported (PYTHONPROFILEIMPORTTIME)."""
    names = set()
    for line in result_err.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name.split(".")[0])
    return names


@pytest.mark.parametrize("args", HOT, ids=" ".join)
def test_hot_commands_import_nothing_heavy(gv: Runner, gv_proc: Runner, vault: Path,
                                           args: tuple[str, ...]) -> None:
    # A DAG to show; and the parsed config is cached now (a miss parses YAML, once).
    gv.ok("enqueue", "--task", "Seed", "--dag-id", "d1")
    result = gv_proc(*args, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert result.code == 0, result.err[-2000:]
    names = imported(result.err)
    assert {"gitvault", "json"} <= names  # the listing is what it claims to be
    assert names & HEAVY == set(), args
    assert "contextlib" not in script_imports(gv_proc, args), args


def script_imports(gv_proc: Runner, args: tuple[str, ...]) -> set[str]:
    """What the installed ``gitvault`` command imports (``python -m`` would load runpy,
    and contextlib with it, before gitvault starts)."""
    import subprocess
    import sys

    script = Path(sys.executable).parent / "gitvault"
    result = subprocess.run([str(script), *args], cwd=gv_proc.cwd, capture_output=True,
                            text=True, env={**gv_proc.env, "PYTHONPROFILEIMPORTTIME": "1"})
    assert result.returncode == 0, result.stderr[-2000:]
    return imported(result.stderr)


def test_the_node_id_from_git_config_starts_no_git_once_cached(gv_proc: Runner,
                                                                vault: Path) -> None:
    """Without --node or GITVAULT_NODE the node id is git's config: the first call asks
    git, later ones read the checked cache and import no subprocess module."""
    gv_proc.git("config", "gitvault.node", "from-config")
    no_node = {"GITVAULT_NODE": ""}
    first = gv_proc("record-run", "--skill", "s", "--json", env=no_node)
    assert first.code == 0 and first.json()["entry"]["node"] == "from-config"
    again = gv_proc("record-run", "--skill", "s", "--json",
                    env={**no_node, "PYTHONPROFILEIMPORTTIME": "1"})
    assert again.code == 0, again.err[-2000:]
    assert '"node": "from-config"' in again.out
    assert "subprocess" not in imported(again.err)


def test_the_click_path_does_import_click(gv_proc: Runner, vault: Path) -> None:
    """The check above can fail: a command that is not on the hot path imports click."""
    result = gv_proc("skill", "list", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert result.code == 0 and "click" in imported(result.err)


def test_record_run_loads_neither_datetime_nor_contextlib(gv_proc: Runner, vault: Path) -> None:
    """record-run's own work is a millisecond; loading ``datetime`` or ``contextlib``
    costs about as much again, so its path stamps ``ts`` from ``time`` and locks
    without ``contextlib`` (with GITVAULT_NOW set the clock parses it: datetime then)."""
    gv_proc("record-run", "--skill", "warm-up")  # the config cache fills (a miss parses YAML)
    result = gv_proc("record-run", "--skill", "s", "--json",
                     env={"GITVAULT_NOW": "", "PYTHONPROFILEIMPORTTIME": "1"})
    assert result.code == 0, result.err[-2000:]
    assert {"gitvault", "json"} <= imported(result.err)
    assert "datetime" not in imported(result.err)
    assert "contextlib" not in script_imports(gv_proc, ("record-run", "--skill", "s"))
    ts = result.json()["entry"]["ts"]
    assert len(ts) == 24 and ts.endswith("Z") and ts[4] == "-" and ts[10] == "T"
    log = next((vault / "logs" / "runs").glob("*/*.jsonl"))
    assert log.parent.name == ts[:7]  # the record's own month names its folder


def test_a_command_run_from_a_git_hook_keeps_the_node_cache(gv_proc: Runner, vault: Path,
                                                            tmp_path: Path) -> None:
    """Inside a hook git puts its own libexec folder first on PATH, so the candidate
    system config file differs (both absent): that must not throw the cache away, or
    every command after an autocommit's hook would start git again."""
    gv_proc.git("config", "gitvault.node", "from-config")
    no_node = {"GITVAULT_NODE": "", "GIT_CONFIG_NOSYSTEM": ""}  # system config candidates count
    gv_proc("record-run", "--skill", "s", env=no_node)  # fills the cache
    core = tmp_path / "libexec" / "git-core"
    core.mkdir(parents=True)
    import shutil

    (core / "git").write_text(f'#!/bin/sh\nexec {shutil.which("git")} "$@"\n')
    (core / "git").chmod(0o755)
    hooked = {**no_node, "PATH": f"{core}:{gv_proc.env['PATH']}"}
    assert gv_proc("record-run", "--skill", "s", "--json", env=hooked).json()["entry"]["node"] \
        == "from-config"
    again = gv_proc("record-run", "--skill", "s", env={**no_node, "PYTHONPROFILEIMPORTTIME": "1"})
    assert again.code == 0 and "subprocess" not in imported(again.err)
