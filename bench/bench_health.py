"""Side-by-side benchmark of runs and health against agent-skill-bus 1.4.0 (SPEC §9).

For each size (default 10k, 100k, 1M runs) it generates one log with
bench/gen_runs.py, gives the same bytes to both tools (the peer's data
folder; a file under the vault's logs/runs/), then times whole processes:
  record-run                       (one CLI call; target <= 0.8x the peer)
  health, drift on a first run     (gitvault's cache removed; target <= 0.25x time,
                                    <= 0.2x peak memory)
  health, drift on a repeat run    (cache warm; target <= 0.05x time)
The peer's clock is frozen with faketime at the log's end, gitvault's with
GITVAULT_NOW; both outputs are compared so the bench also checks the numbers.
  --huge 10000000   also runs gitvault alone on that many runs (10 files) and
                    reports its peak memory (target < 500 MB; the peer crashes at 4M).

Usage: python bench/bench_health.py [--sizes 10000,100000,1000000] [--repeat 3] [--huge N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.peer import GEN_RUNS, gitvault_cli, gitvault_env, measure, median, peer_cli, table

END = "2026-11-30T12:00:00.000Z"
FROZEN = "2026-11-30 12:00:00"
OUT = Path(os.environ.get("GITVAULT_BENCH_DIR", Path(tempfile.gettempdir()) / "gitvault-bench"))


def generate(count: int) -> Path:
    path = OUT / f"runs-{count}.jsonl"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(GEN_RUNS), "--count", str(count), "--out",
                        str(path), "--seed", "42", "--end", END], check=True,
                       stderr=subprocess.DEVNULL)
    return path


def setup(count: int) -> tuple[Path, Path]:
    """A peer data folder and a vault holding the same runs."""
    source = generate(count)
    base = OUT / f"case-{count}"
    shutil.rmtree(base, ignore_errors=True)
    peer_dir, vault = base / "peer", base / "vault"
    runs = peer_dir / "skills" / "self-improving-skills" / "skill-runs.jsonl"
    runs.parent.mkdir(parents=True)
    os.link(source, runs) if source.stat().st_dev == runs.parent.stat().st_dev else \
        shutil.copy(source, runs)
    subprocess.run([*gitvault_cli(), "init", str(vault)], check=True, capture_output=True)
    logs = vault / "logs" / "runs" / "2026-11"
    logs.mkdir(parents=True)
    shutil.copy(source, logs / "generated.jsonl")
    text = (vault / "gitvault.yaml").read_text()  # the peer's flag threshold, for the check
    (vault / "gitvault.yaml").write_text(text.replace("flag_below: 0.7", "flag_below: 0.8"))
    return peer_dir, vault


def env_for_gitvault() -> dict[str, str]:
    return gitvault_env(GITVAULT_NOW=END, GITVAULT_NODE="bench")


def run_peer(peer_dir: Path, *args: str) -> tuple[float, int, bytes]:
    elapsed, rss, out, _, _ = measure(["faketime", "-f", FROZEN, *peer_cli(), *args,
                                       "--data-dir", str(peer_dir)])
    return elapsed, rss, out


def run_gitvault(vault: Path, *args: str, cold: bool) -> tuple[float, int, bytes]:
    if cold:
        (vault / ".git" / "gitvault" / "runs-cache.bin").unlink(missing_ok=True)
    elapsed, rss, out, _, _ = measure([*gitvault_cli(), *args, "--json"], cwd=vault,
                                      env=env_for_gitvault())
    return elapsed, rss, out


def same_numbers(command: str, ours: bytes, theirs: bytes) -> bool:
    a, b = json.loads(ours), json.loads(theirs)
    return a["skills"] == b["skills"] if command == "health" else a == b


def bench_size(count: int, repeat: int) -> list[list[str]]:
    peer_dir, vault = setup(count)
    rows = []
    for command in ("health", "drift"):
        peer_t, peer_m, gv_cold_t, gv_cold_m, gv_warm_t, gv_warm_m = [], [], [], [], [], []
        check = True
        for _ in range(repeat):  # interleaved, so both see the same machine
            t, m, theirs = run_peer(peer_dir, command)
            peer_t.append(t)
            peer_m.append(m)
            t, m, ours = run_gitvault(vault, command, cold=True)
            gv_cold_t.append(t)
            gv_cold_m.append(m)
            t, m, ours_warm = run_gitvault(vault, command, cold=False)
            gv_warm_t.append(t)
            gv_warm_m.append(m)
            check = check and same_numbers(command, ours, theirs) and ours == ours_warm
        pt, pm = median(peer_t), max(peer_m)
        for label, times, mems in (("first", gv_cold_t, gv_cold_m), ("repeat", gv_warm_t, gv_warm_m)):
            gt, gm = median(times), max(mems)
            rows.append([f"{count:,}", f"{command} ({label})", f"{pt:.3f}", f"{gt:.3f}",
                         f"{gt / pt:.3f}", f"{pm / 1024:.0f}", f"{gm / 1024:.0f}",
                         f"{gm / pm:.3f}", "yes" if check else "NO"])
    return rows


def bench_record_run(repeat: int) -> list[str]:
    peer_dir, vault = setup(10)
    argv = ["record-run", "--agent", "bench", "--skill", "api-caller", "--task", "fetch",
            "--result", "success", "--score", "0.9"]
    peer_t, gv_t, peer_m, gv_m = [], [], [], []
    for _ in range(repeat):
        t, m, _ = run_peer(peer_dir, *argv)
        peer_t.append(t)
        peer_m.append(m)
        t, m, _, _, _ = measure([*gitvault_cli(), *argv], cwd=vault, env=env_for_gitvault())
        gv_t.append(t)
        gv_m.append(m)
    pt, gt = median(peer_t), median(gv_t)
    return ["-", "record-run", f"{pt:.3f}", f"{gt:.3f}", f"{gt / pt:.3f}",
            f"{max(peer_m) / 1024:.0f}", f"{max(gv_m) / 1024:.0f}",
            f"{max(gv_m) / max(peer_m):.3f}", "-"]


def bench_huge(count: int) -> str:
    """gitvault alone on ``count`` runs in 10 node files (the peer cannot load them)."""
    per_file = count // 10
    source = generate(per_file)
    vault = OUT / f"huge-{count}"
    shutil.rmtree(vault, ignore_errors=True)
    subprocess.run([*gitvault_cli(), "init", str(vault)], check=True, capture_output=True)
    for k in range(10):
        logs = vault / "logs" / "runs" / "2026-11"
        logs.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, logs / f"node-{k}.jsonl")
    t, m, out = run_gitvault(vault, "health", cold=True)
    runs = sum(s["runs"] for s in json.loads(out)["skills"].values())
    t2, m2, _ = run_gitvault(vault, "health", cold=False)
    shutil.rmtree(vault, ignore_errors=True)
    return (f"{count:,} runs in 10 files: health first run {t:.1f} s, peak {m / 1024:.0f} MB; "
            f"repeat {t2:.2f} s, peak {m2 / 1024:.0f} MB; runs counted {runs:,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--record-runs", type=int, default=15)
    parser.add_argument("--huge", type=int, default=0)
    args = parser.parse_args()
    if shutil.which("faketime") is None:
        sys.exit("bench: faketime is needed to freeze the peer's clock (apt-get install faketime)")
    peer_cli()
    rows = [["runs", "command", "peer s", "gitvault s", "time ratio", "peer MB", "gitvault MB",
             "memory ratio", "same numbers"]]
    rows.append(bench_record_run(args.record_runs))
    for size in (int(s) for s in args.sizes.split(",") if s):
        rows += bench_size(size, args.repeat)
        print(table(rows), flush=True) if size == 1_000_000 else None
    print(table(rows))
    if args.huge:
        print(bench_huge(args.huge))


if __name__ == "__main__":
    main()
