"""Side-by-side benchmark of runs and health against agent-skill-bus 1.4.0 (SPEC §9).

For each size (default 10k, 100k, 1M runs) bench/gen_runs.py generates the runs once,
ending now, and each tool gets them as it really keeps them:
  peer       its data folder: skills/self-improving-skills/skill-runs.jsonl
  written    the vault's logs as record-run writes them: every record with id and node,
             in logs/runs/<YYYY-MM>/<node>.jsonl by month
  imported   the vault's logs after `gitvault import-bus` of the peer's folder (id,
             node and importedFrom on every record)
  bare       the peer's file copied as is under logs/runs/ (no id, no node): a foreign
             file, the second row
Then it times whole processes, interleaved so that both tools see the same machine
(medians of --repeat runs; "cpu ratio" compares user + system seconds, which a loaded
machine disturbs less than wall time):
  record-run                       (one CLI call; target <= 0.8x the peer)
  health, drift on a first run     (.git/gitvault/ removed; target <= 0.25x time,
                                    <= 0.2x peak memory)
  health, drift on a repeat run    (cache warm; target <= 0.05x time)
Both tools read the real clock (no faketime, no GITVAULT_NOW): the runs end when they
are generated, with no run in the hour after now - 7 days and now - 14 days, so the
windows hold the same runs for the hour a size takes. Every output of gitvault is
compared with the peer's, so the bench also checks the numbers.
  --huge 10000000   also runs gitvault alone on that many runs written by 10 nodes
                    (with ids) and reports its peak memory (target < 500 MB; the peer
                    crashes at 4M).

Usage: python bench/bench_health.py [--sizes 10000,100000,1000000] [--repeat 3] [--huge N]
       [--kinds written,imported,bare]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.peer import GEN_RUNS, gitvault_cli, gitvault_env, measure, measure_cpu, median, peer_cli, table

OUT = Path(os.environ.get("GITVAULT_BENCH_DIR", Path(tempfile.gettempdir()) / "gitvault-bench"))
RUNS_FILE = Path("skills") / "self-improving-skills" / "skill-runs.jsonl"
GAP_HOURS = 1.0  # quiet time after each window edge: a size must be measured within it
NODE = "bench-node"
KINDS = ("written", "imported", "bare")


def gen(count: int, out: Path, end: str, seed: int = 42, *extra: str) -> None:
    subprocess.run([sys.executable, str(GEN_RUNS), "--count", str(count), "--out", str(out),
                    "--seed", str(seed), "--end", end, "--gap-hours", str(GAP_HOURS), *extra],
                   check=True, stderr=subprocess.DEVNULL)


def now_text() -> str:
    """Now, floored to the second, as the generator's --end."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def new_vault(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    subprocess.run([*gitvault_cli(), "init", str(path)], check=True, capture_output=True,
                   env=gitvault_env())
    text = (path / "gitvault.yaml").read_text()  # the peer's flag threshold, for the check
    (path / "gitvault.yaml").write_text(text.replace("flag_below: 0.7", "flag_below: 0.8"))
    return path


def setup(count: int, kinds: tuple[str, ...]) -> tuple[Path, dict[str, Path], float]:
    """The peer's data folder and one vault per kind, all holding the same runs; and
    when they were generated (time.time())."""
    base = OUT / f"case-{count}"
    shutil.rmtree(base, ignore_errors=True)
    end, generated = now_text(), time.time()
    peer_dir = base / "peer"
    source = peer_dir / RUNS_FILE
    source.parent.mkdir(parents=True)
    gen(count, source, end)
    vaults = {}
    for kind in kinds:
        vault = vaults[kind] = new_vault(base / kind)
        logs = vault / "logs" / "runs"
        if kind == "written":
            gen(count, logs, end, 42, "--with-ids", NODE, "--by-month")
        elif kind == "imported":
            result = subprocess.run([*gitvault_cli(), "import-bus", str(peer_dir), "--json"],
                                    cwd=vault, check=True, capture_output=True, env=gitvault_env())
            assert json.loads(result.stdout)["runs"]["imported"] == count
        else:
            (logs / end[:7]).mkdir(parents=True, exist_ok=True)
            shutil.copy(source, logs / end[:7] / "generated.jsonl")
    return peer_dir, vaults, generated


def run_peer(peer_dir: Path, *args: str) -> tuple[float, int, bytes, float]:
    elapsed, rss, out, _, _, cpu = measure_cpu([*peer_cli(), *args, "--data-dir", str(peer_dir)])
    return elapsed, rss, out, cpu


def run_gitvault(vault: Path, *args: str, cold: bool) -> tuple[float, int, bytes, float]:
    if cold:  # the first run after a clone: nothing derived yet
        shutil.rmtree(vault / ".git" / "gitvault", ignore_errors=True)
    elapsed, rss, out, _, _, cpu = measure_cpu([*gitvault_cli(), *args, "--json"], cwd=vault,
                                               env=gitvault_env())
    return elapsed, rss, out, cpu


def same_numbers(command: str, ours: bytes, theirs: bytes) -> bool:
    a, b = json.loads(ours), json.loads(theirs)
    if command == "health":
        return a["skills"] == b["skills"] and list(a["skills"]) == list(b["skills"])
    return a == b


def bench_size(count: int, repeat: int, kinds: tuple[str, ...]) -> list[list[str]]:
    peer_dir, vaults, generated = setup(count, kinds)
    rows = []
    for command in ("health", "drift"):
        peer_t, peer_m, peer_c = [], [], []
        cases = [(kind, cold) for kind in kinds for cold in (True, False)]
        times: dict[tuple[str, bool], list[float]] = {case: [] for case in cases}
        mems: dict[tuple[str, bool], list[int]] = {case: [] for case in cases}
        cpus: dict[tuple[str, bool], list[float]] = {case: [] for case in cases}
        check = dict.fromkeys(kinds, True)
        for _ in range(repeat):  # interleaved, so both see the same machine
            t, m, theirs, c = run_peer(peer_dir, command)
            peer_t.append(t)
            peer_m.append(m)
            peer_c.append(c)
            for kind, cold in cases:
                t, m, ours, c = run_gitvault(vaults[kind], command, cold=cold)
                times[kind, cold].append(t)
                mems[kind, cold].append(m)
                cpus[kind, cold].append(c)
                check[kind] = check[kind] and same_numbers(command, ours, theirs)
        if time.time() - generated > GAP_HOURS * 3600:
            check = dict.fromkeys(kinds, False)  # a window edge may have crossed runs
        pt, pm, pc = median(peer_t), median(peer_m), median(peer_c)
        for kind, cold in cases:
            gt, gm, gc = median(times[kind, cold]), median(mems[kind, cold]), median(cpus[kind, cold])
            rows.append([f"{count:,}", kind, f"{command} ({'first' if cold else 'repeat'})",
                         f"{pt:.3f}", f"{gt:.3f}", f"{gt / pt:.3f}", f"{pm / 1024:.0f}",
                         f"{gm / 1024:.0f}", f"{gm / pm:.3f}", f"{gc / pc:.3f}",
                         "yes" if check[kind] else "NO"])
    shutil.rmtree(OUT / f"case-{count}", ignore_errors=True)
    return rows


def bench_record_run(repeat: int) -> list[str]:
    peer_dir, vaults, _ = setup(10, ("written",))
    argv = ["record-run", "--agent", "bench", "--skill", "api-caller", "--task", "fetch",
            "--result", "success", "--score", "0.9"]
    peer_t, gv_t, peer_m, gv_m = [], [], [], []
    for _ in range(repeat):
        t, m, _, _ = run_peer(peer_dir, *argv)
        peer_t.append(t)
        peer_m.append(m)
        t, m, _, _, _ = measure([*gitvault_cli(), *argv], cwd=vaults["written"], env=gitvault_env())
        gv_t.append(t)
        gv_m.append(m)
    pt, gt = median(peer_t), median(gv_t)
    return ["-", "written", "record-run", f"{pt:.3f}", f"{gt:.3f}", f"{gt / pt:.3f}",
            f"{median(peer_m) / 1024:.0f}", f"{median(gv_m) / 1024:.0f}",
            f"{median(gv_m) / median(peer_m):.3f}", "-", "-"]


def bench_huge(count: int, repeat: int) -> str:
    """gitvault alone on ``count`` runs written by 10 nodes (the peer cannot load them)."""
    vault = new_vault(OUT / f"huge-{count}")
    end = now_text()
    for k in range(10):  # each node its own runs (seed), ids and files
        gen(count // 10, vault / "logs" / "runs", end, 42 + k, "--with-ids", f"node-{k}",
            "--by-month")
    files = sorted(p.relative_to(vault) for p in (vault / "logs" / "runs").rglob("*.jsonl"))
    first, warm, counted = [], [], 0
    for _ in range(repeat):
        t, m, out, _ = run_gitvault(vault, "health", cold=True)
        first.append((t, m))
        counted = sum(s["runs"] for s in json.loads(out)["skills"].values())
        t, m, _, _ = run_gitvault(vault, "health", cold=False)
        warm.append((t, m))
    shutil.rmtree(vault, ignore_errors=True)
    return (f"{count:,} runs by 10 nodes ({len(files)} files, with ids): health first run "
            f"{median([t for t, _ in first]):.2f} s, peak {max(m for _, m in first) / 1024:.0f} MB "
            f"(median {median([m for _, m in first]) / 1024:.0f} MB); repeat "
            f"{median([t for t, _ in warm]):.2f} s, peak {max(m for _, m in warm) / 1024:.0f} MB; "
            f"runs counted {counted:,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--record-runs", type=int, default=15)
    parser.add_argument("--huge", type=int, default=0)
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args()
    kinds = tuple(k for k in args.kinds.split(",") if k)
    if not set(kinds) <= set(KINDS):
        parser.error(f"--kinds: {', '.join(KINDS)}")
    peer_cli()
    rows = [["runs", "logs", "command", "peer s", "gitvault s", "time ratio", "peer MB",
             "gitvault MB", "memory ratio", "cpu ratio", "same numbers"]]
    if args.record_runs:
        rows.append(bench_record_run(args.record_runs))
    for size in (int(s) for s in args.sizes.split(",") if s):
        rows += bench_size(size, args.repeat, kinds)
        print(table(rows), flush=True)
    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
          f"{os.getloadavg()[2]:.2f}", flush=True)
    if args.huge:
        print(bench_huge(args.huge, args.repeat))


if __name__ == "__main__":
    main()
