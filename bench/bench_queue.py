"""Queue commands side by side with agent-skill-bus 1.4.0 (SPEC §9, issue 6).

Run: .venv/bin/python bench/bench_queue.py [--runs 15] [--queued 1000]

1. enqueue, dispatch, start, complete as whole CLI processes with --queued PRs queued
   (the same PRs in both tools: the peer's queue file is generated, then imported into
   the vault with import_bus_queue); medians of wall time and peak RSS, and ratios.
   gitvault is timed through its console script ("gitvault", as installed) and through
   the click-free queue entry ("gitvault try_run": gitvault.cli.hot.try_run, which
   the console script takes once gitvault/fast.py hands queue commands to it).
2. dispatch with a long history (--history finished PRs) against none: the fold is
   incremental, so gitvault should not slow down.
3. concurrency: N processes completing PRs in parallel, and enqueue racing complete;
   how many updates each tool loses.

gitvault runs with its bytecode cache (as an installed package has it), kept in
bench/out/pycache. Ratios matter, not absolute times.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from peer import gitvault_cli, gitvault_env, measure, median, peer_cli, table

from gitvault.core.paths import VaultLayout
from gitvault.queue.busimport import import_bus_queue

QUEUE_DIR = "skills/prompt-request-bus"
FAST = [sys.executable, "-c", "import sys; from gitvault.cli.hot import try_run; "
        "code = try_run(sys.argv[1:]); sys.exit(99 if code is None else code)"]
FAST_NAME = "gitvault try_run"


def environment() -> dict[str, str]:
    return gitvault_env(GITVAULT_NODE="bench", GIT_CONFIG_NOSYSTEM="1")


def write_peer_queue(data_dir: Path, queued: int, finished: int = 0, seed: int = 7) -> list[str]:
    """The peer's queue file: ``finished`` done PRs, then ``queued`` queued ones."""
    rng = random.Random(seed)
    folder = data_dir / QUEUE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    ids, lines = [], []
    for i in range(finished + queued):
        pr_id = f"pr-{1773820800000 + i}-{rng.getrandbits(32):08x}"
        done = i < finished
        pr = {"id": pr_id, "ts": f"2026-03-18T{8 + i // 3600 % 12:02d}:{i // 60 % 60:02d}:"
                                 f"{i % 60:02d}.000Z",
              "source": rng.choice(["human", "cron", "webhook"]),
              "priority": rng.choice(["critical", "high", "medium", "low"]),
              "agent": f"agent-{i % 7}", "task": f"Task number {i}: fix module {i % 97}",
              "context": "generated for the benchmark", "affectedSkills": ["api-caller"],
              "affectedFiles": [f"app:src/module{i}.py"], "deadline": "none",
              "status": "done" if done else "queued", "result": "ok" if done else None,
              "dependsOn": [], "dagId": None}
        lines.append(json.dumps(pr))
        if not done:
            ids.append(pr_id)
    (folder / "prompt-request-queue.jsonl").write_text("\n".join(lines) + "\n")
    for name in ("active-locks.jsonl", "dag-state.jsonl"):
        (folder / name).write_text("")
    return ids


def make_vault(root: Path, peer_data: Path, env: dict[str, str]) -> None:
    subprocess.run([*gitvault_cli(), "init", str(root)], env=env, check=True,
                   capture_output=True)
    cfg = root / "gitvault.yaml"
    # The peer has no queue or lock limits: lift gitvault's so both do the same work.
    cfg.write_text(cfg.read_text().replace("max_active: 100 ", "max_active: 1000000 ")
                   .replace("max_locks: 10 ", "max_locks: 100000 "))
    import_bus_queue(peer_data, VaultLayout(root), "bench")
    subprocess.run([*gitvault_cli(), "stats"], cwd=root, env=env, check=True,
                   capture_output=True)  # fold once: the cache is warm, as in use


def bench_commands(work: Path, queued: int, runs: int, env: dict[str, str]) -> list[list[str]]:
    peer_data = work / "peer"
    ids = write_peer_queue(peer_data, queued)
    vault = work / "vault"
    make_vault(vault, peer_data, env)
    tools = {"peer": (peer_data, peer_data), "gitvault": (gitvault_cli(), vault),
             FAST_NAME: (FAST, vault)}
    for tool in tools:  # warm-up: caches, bytecode
        run(tools, tool, ["stats"], env)
    rows = [["command", "tool", "median ms", "peak RSS MiB", "ratio time", "ratio RSS"]]
    # Each tool starts, then completes, PRs of its own (the two gitvault entries share a vault).
    mine = {tool: ids[k * runs:(k + 1) * runs] for k, tool in enumerate(tools)}
    for command in ("enqueue", "dispatch", "start", "complete"):
        times: dict[str, list[float]] = {t: [] for t in tools}
        rss: dict[str, list[float]] = {t: [] for t in tools}
        for n in range(runs):
            for tool in tools:
                if command == "enqueue":
                    args = ["enqueue", "--task", f"bench {tool} {n}", "--agent", "bench",
                            "--files", f"app:new/{n}.py"]
                elif command == "dispatch":
                    args = ["dispatch", "--max", "5"]
                else:
                    args = [command, mine[tool][n]]
                elapsed, peak, out = run(tools, tool, args, env)
                expect = {"enqueue": "enqueued", "start": "running", "complete": "completed"}
                if command in expect and out.get("status") != expect[command]:
                    raise RuntimeError(f"{tool} {args}: {out}")
                if command == "dispatch" and out.get("count") != 5:
                    raise RuntimeError(f"{tool} {args}: {out}")
                times[tool].append(elapsed)
                rss[tool].append(peak / 1024)
        base_t, base_r = median(times["peer"]), median(rss["peer"])
        for tool in tools:
            t, r = median(times[tool]), median(rss[tool])
            rows.append([command, tool, f"{t * 1000:.1f}", f"{r:.1f}",
                         "" if tool == "peer" else f"{t / base_t:.2f}x",
                         "" if tool == "peer" else f"{r / base_r:.2f}x"])
    return rows


def run(tools: dict[str, tuple[Any, Path]], tool: str, args: list[str], env: dict[str, str]
        ) -> tuple[float, int, Any]:
    """One whole process of ``tool``: (seconds, peak RSS KiB, its JSON output)."""
    first, cwd = tools[tool]
    # The peer reads its command from argv[2]: its flags go after it.
    argv = [*peer_cli(), *args, "--data-dir", str(first)] if tool == "peer" else [*first, *args, "--json"]
    elapsed, peak, out, _, _ = measure(argv, cwd=cwd, env=env)
    return elapsed, peak, json.loads(out)


def bench_history(work: Path, queued: int, history: int, runs: int,
                  env: dict[str, str]) -> list[list[str]]:
    rows = [["dispatch with", "tool", "median ms", "vs no history"]]
    results: dict[str, dict[int, float]] = {}
    for finished in (0, history):
        peer_data = work / f"hpeer{finished}"
        write_peer_queue(peer_data, queued, finished)
        vault = work / f"hvault{finished}"
        make_vault(vault, peer_data, env)
        tools = {"peer": (peer_data, peer_data), FAST_NAME: (FAST, vault)}
        for tool in tools:
            run(tools, tool, ["dispatch"], env)
            t = median([run(tools, tool, ["dispatch"], env)[0] for _ in range(runs)])
            results.setdefault(tool, {})[finished] = t
    for tool, by in results.items():
        for finished, t in by.items():
            rows.append([f"{queued} queued + {finished} done", tool, f"{t * 1000:.1f}",
                         f"{t / by[0]:.2f}x"])
    return rows


def _peer_statuses(peer_data: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    path = peer_data / QUEUE_DIR / "prompt-request-queue.jsonl"
    for line in path.read_text().splitlines():
        try:
            pr = json.loads(line)
            found[pr["id"]] = pr["status"]
        except (ValueError, KeyError, TypeError):
            pass  # a line torn by a concurrent rewrite
    return found


def _gitvault_statuses(vault: Path) -> dict[str, str]:
    from gitvault.core import config
    from gitvault.queue.commands import Queue

    layout = VaultLayout(vault)
    state = Queue(layout, "bench", config.load(layout.config, layout.cache).queue).state()
    return {pr_id: state.status(pr_id) or "" for pr_id in [*state.prs, *state.closed]}


def bench_concurrency(work: Path, procs: int, per_proc: int, env: dict[str, str]) -> list[list[str]]:
    rows = [["scenario", "tool", "expected", "lost updates", "PRs gone from the queue"]]
    total = procs * per_proc
    for scenario in ("complete", "enqueue+complete"):
        peer_data = work / f"cpeer-{scenario}"
        ids = write_peer_queue(peer_data, total, seed=11)
        vault = work / f"cvault-{scenario}"
        make_vault(vault, peer_data, env)
        for tool, cwd in (("peer", peer_data), ("gitvault", vault)):
            def argv(*args: str, tool: str = tool, data: Path = peer_data) -> list[str]:
                if tool == "peer":
                    return [*peer_cli(), *args, "--data-dir", str(data)]
                return [*gitvault_cli(), *args]
            scripts = []
            for w in range(procs):
                mine = ids[w::procs]
                if scenario == "complete" or w % 2 == 0:
                    cmds = [argv("complete", pr_id) for pr_id in mine]
                else:
                    cmds = [argv("enqueue", "--task", f"racer {w}-{i}", "--agent", "racer")
                            for i in range(per_proc)]
                scripts.append(" ; ".join(" ".join(f"'{a}'" for a in c) for c in cmds))
            running = [subprocess.Popen(["sh", "-c", s], cwd=cwd, env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                       for s in scripts]
            for proc in running:
                proc.wait()
            statuses = _peer_statuses(peer_data) if tool == "peer" else _gitvault_statuses(vault)
            completed = [pr_id for w in range(procs) for pr_id in ids[w::procs]
                         if scenario == "complete" or w % 2 == 0]
            lost_done = sum(statuses.get(pr_id) != "done" for pr_id in completed)
            missing = sum(pr_id not in statuses for pr_id in ids)
            racers = len(statuses) - len([i for i in ids if i in statuses])
            expected_new = 0 if scenario == "complete" else per_proc * (procs // 2)
            lost = lost_done + max(0, expected_new - racers)
            rows.append([f"{procs} procs, {scenario}", tool,
                         f"{len(completed)} done" + (f" + {expected_new} new" if expected_new else ""),
                         str(lost), str(missing)])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--queued", type=int, default=1000)
    parser.add_argument("--history", type=int, default=10000)
    parser.add_argument("--procs", type=int, default=8)
    parser.add_argument("--per-proc", type=int, default=5)
    args = parser.parse_args()
    env = environment()
    peer_cli()
    with tempfile.TemporaryDirectory(prefix="gitvault-bench-queue-") as tmp:
        work = Path(tmp)
        print(f"Queue commands with {args.queued} queued PRs ({args.runs} runs each)\n")
        print(table(bench_commands(work, args.queued, args.runs, env)))
        print(f"\nLong history ({args.history} finished PRs)\n")
        print(table(bench_history(work, args.queued, args.history, max(5, args.runs // 2), env)))
        print(f"\nConcurrency: {args.procs} processes x {args.per_proc} commands each\n")
        print(table(bench_concurrency(work, args.procs, args.per_proc, env)))


if __name__ == "__main__":
    main()
