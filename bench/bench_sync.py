"""``gitvault sync`` timings (SPEC §9): its time must not grow with the history synced.

  one sync of 1,000 new records between two clones (A pushes, B pulls), with 100 and
  with 100,000 records already in history (target: at most 1.5x apart; median of
  --repeat rounds, each round 1,000 more records appended to A's own log file). The
  history lies where gitvault writes it: a year of records in monthly files, the new
  ones in this month's. ``--same-file`` puts the whole history in this month's file
  instead: each commit then rewrites (hashes, compresses, sends) that whole blob, so
  that case grows with the file, not with history as such.
  20 clones, each with a new record, syncing at once against one bare remote, then
  again until every clone holds every record (the time to converge)

Every sync is a whole ``gitvault sync`` process, as a user runs it.

Usage: python bench/bench_sync.py [--histories 100,100000] [--repeat 3] [--clones 20]
       [--same-file]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gen_runs import generate
from bench.peer import gitvault_cli, gitvault_env, median, table

END = "2026-11-30T12:00:00.000Z"  # the history's last record
NEW_END, NEW_MONTH = "2026-12-15T12:00:00.000Z", "2026-12"  # the new records'


def git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def env(tmp: Path, node: str) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    return gitvault_env(GITVAULT_NODE=node, HOME=str(home), GIT_CONFIG_NOSYSTEM="1",
                        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
                        GITVAULT_SYNC_TIMEOUT_S="600")


def gv(tmp: Path, clone: Path, node: str, *args: str) -> float:
    started = time.perf_counter()
    proc = subprocess.run([*gitvault_cli(), *args], cwd=clone, env=env(tmp, node),
                          capture_output=True)
    if proc.returncode != 0:
        sys.exit(f"bench: gitvault {' '.join(args)} failed: {proc.stderr.decode()}")
    return time.perf_counter() - started


def write_history(clone: Path, scratch: Path, count: int, same_file: bool) -> None:
    """``count`` earlier runs of node a, in the month files gitvault writes them to (a
    year of them), or all in the file the new records go to (``same_file``)."""
    generate(count, str(scratch), seed=1, end=NEW_END if same_file else END, days=365,
             with_ids="a")
    by_month: dict[str, list[bytes]] = {}
    for line in scratch.read_bytes().splitlines(keepends=True):
        month = NEW_MONTH if same_file else json.loads(line)["ts"][:7]
        by_month.setdefault(month, []).append(line)
    for month, lines in by_month.items():
        path = clone / "logs" / "runs" / month / "a.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(lines))


def two_clones(tmp: Path, history: int, same_file: bool = False) -> tuple[Path, Path]:
    git("init", "-q", "--bare", "-b", "main", str(tmp / "remote.git"))
    a, b = tmp / "a", tmp / "b"
    subprocess.run([*gitvault_cli(), "init", str(a), "--remote", str(tmp / "remote.git")],
                   check=True, capture_output=True, env=env(tmp, "a"))
    write_history(a, tmp / "history.jsonl", history, same_file)
    gv(tmp, a, "a", "sync")
    git("clone", "-q", str(tmp / "remote.git"), str(b))
    gv(tmp, b, "b", "sync")
    return a, b


def bench_history(history: int, repeat: int, same_file: bool) -> tuple[float, float]:
    """Median seconds of (A's sync pushing 1,000 records, B's sync taking them in)."""
    with tempfile.TemporaryDirectory(prefix="gitvault-bench-sync-") as name:
        tmp = Path(name)
        a, b = two_clones(tmp, history, same_file)
        log = a / "logs" / "runs" / NEW_MONTH / "a.jsonl"
        log.parent.mkdir(parents=True, exist_ok=True)
        pushes, pulls = [], []
        for round_ in range(repeat):
            new = tmp / f"new-{round_}.jsonl"
            generate(1000, str(new), seed=100 + round_, end=NEW_END, days=1, with_ids="a")
            with open(log, "ab") as fh:
                fh.write(new.read_bytes())
            pushes.append(gv(tmp, a, "a", "sync"))
            pulls.append(gv(tmp, b, "b", "sync"))
        ids = sum(p.read_bytes().count(b"\n") for p in (b / "logs" / "runs").rglob("a.jsonl"))
        if ids != history + 1000 * repeat:
            sys.exit(f"bench: clone b holds {ids} records, not {history + 1000 * repeat}")
        return median(pushes), median(pulls)


def bench_clones(count: int) -> tuple[float, int]:
    """Seconds for ``count`` clones, syncing at once, to all hold every record."""
    with tempfile.TemporaryDirectory(prefix="gitvault-bench-sync-") as name:
        tmp = Path(name)
        a, _ = two_clones(tmp, 0)
        clones = [a] + [tmp / f"c{i}" for i in range(1, count)]
        for clone in clones[1:]:
            git("clone", "-q", str(tmp / "remote.git"), str(clone))
        for i, clone in enumerate(clones):
            log = clone / "logs" / "runs" / "2026-11" / f"n{i}.jsonl"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text(json.dumps({"id": f"r{i}", "ts": END, "agent": "a", "skill": "s",
                                       "task": "t", "result": "success", "score": 1,
                                       "node": f"n{i}"}) + "\n")
        started = time.perf_counter()
        retries = 0
        for wave in range(2):  # all push at once; then all take in what came after them
            procs = [subprocess.Popen([*gitvault_cli(), "sync", "--json"], cwd=clone,
                                      env=env(tmp, f"n{i}"), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE)
                     for i, clone in enumerate(clones)]
            for proc in procs:
                out, err = proc.communicate()
                if proc.returncode != 0:
                    sys.exit(f"bench: a sync failed: {err.decode()}")
                retries += json.loads(out)["retries"] if wave == 0 else 0
        elapsed = time.perf_counter() - started
        for i, clone in enumerate(clones):
            found = len(list((clone / "logs" / "runs").rglob("n*.jsonl")))
            if found != count:
                sys.exit(f"bench: clone {i} holds {found} of {count} nodes' records")
        return elapsed, retries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", default="100,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--clones", type=int, default=20)
    parser.add_argument("--same-file", action="store_true",
                        help="the worst case: the whole history in the month file the new "
                             "records go to (its blob is rewritten by every commit)")
    args = parser.parse_args()
    rows = [["records in history", "sync out (A) s", "sync in (B) s", "total s", "vs smallest"]]
    first = None
    for history in (int(h) for h in args.histories.split(",") if h):
        push, pull = bench_history(history, args.repeat, args.same_file)
        first = first or push + pull
        rows.append([f"{history:,}", f"{push:.2f}", f"{pull:.2f}", f"{push + pull:.2f}",
                     f"{(push + pull) / first:.2f}x (target <= 1.5x)"])
    print(table(rows), flush=True)
    if args.clones:
        elapsed, retries = bench_clones(args.clones)
        print(f"\n{args.clones} clones syncing at once converge in {elapsed:.1f} s "
              f"({retries} rejected pushes retried)")


if __name__ == "__main__":
    main()
