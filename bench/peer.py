"""Shared helpers for the side-by-side benchmarks: the peer (agent-skill-bus 1.4.0,
installed from npm into bench/.peer on first use), gitvault's CLI, timing and peak
memory of whole processes."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PEER_VERSION = "1.4.0"
PEER_DIR = BENCH / ".peer"
GEN_RUNS = REPO / "bench" / "gen_runs.py"  # the project's own generator


def peer_cli() -> list[str]:
    """The peer's CLI as an argv prefix, installing it with npm if needed."""
    cli = PEER_DIR / "node_modules" / "agent-skill-bus" / "src" / "cli.js"
    if not cli.exists():
        if shutil.which("npm") is None:
            sys.exit("bench: npm is needed to install agent-skill-bus (apt-get install npm)")
        PEER_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix",
                        str(PEER_DIR), f"agent-skill-bus@{PEER_VERSION}"], check=True)
    return ["node", str(cli)]


def gitvault_cli() -> list[str]:
    """gitvault's installed console script (as a user runs it), else python -m."""
    exe = Path(sys.executable).parent / "gitvault"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "gitvault"]


def gitvault_env(**extra: str) -> dict[str, str]:
    """The environment gitvault is measured in: bytecode cached (an installed package has
    it compiled; this sandbox's PYTHONDONTWRITEBYTECODE would recompile every module on
    every run), no GITVAULT_* settings from the caller, then ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith("GITVAULT_")}
    env["PYTHONPYCACHEPREFIX"] = str(BENCH / "out" / "pycache")
    env.update(extra)
    return env


def _pss_kib(pid: int, fallback: int) -> int:
    """Proportional set size: pages shared with other processes (a forked worker and its
    parent) count once across them, not once per process."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return fallback


def _descendants(root: int) -> list[int]:
    """A process and its descendants, from /proc/PID/task/TID/children (cheap: no scan
    of every process on the machine)."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as fh:
                    todo.extend(int(child) for child in fh.read().split())
        except OSError:
            continue
    return found


def _tree_rss_kib(root: int) -> int:
    """Summed memory (PSS) of a process and all its descendants."""
    return sum(_pss_kib(pid, 0) for pid in _descendants(root))


def measure(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None,
            check: bool = True) -> tuple[float, int, bytes, bytes, int]:
    """Run one whole process: (wall seconds, peak memory in KiB, stdout, stderr, exit code)."""
    elapsed, peak, stdout, stderr, code, _ = measure_cpu(argv, cwd, env, check)
    return elapsed, peak, stdout, stderr, code


def measure_cpu(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None,
                check: bool = True) -> tuple[float, int, bytes, bytes, int, float]:
    """Run one whole process: (wall seconds, peak memory in KiB, stdout, stderr, exit code,
    CPU seconds: user + system of the process and the children it waited for).

    Output goes to temp files (no pipe can fill up). Peak memory is the larger of
    wait4's peak RSS (the largest single process) and the summed PSS of the process
    tree sampled every 50 ms, so a tool that forks workers is charged for all of them
    (shared pages once).
    """
    import threading

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err)
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.05):
                peak[0] = max(peak[0], _tree_rss_kib(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if check and code != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({code}): {stderr.decode()[-500:]}")
    return elapsed, max(usage.ru_maxrss, peak[0]), stdout, stderr, code, \
        usage.ru_utime + usage.ru_stime


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in
                               enumerate(zip(r, widths, strict=True))) for r in rows)

